"""A compaction summary from memory: what pi keeps of a long session's earlier part when it compacts, built from
the memory the pipeline made of that very session instead of a fresh summary by the model.

pi's own compaction asks the session's model to summarise the messages it drops; a small or busy model loses
rules and failures there. This summary is assembled, not generated: the knowledge of the session (its rules,
decisions, gotchas, facts, tasks and notes), the project's rules from MEMORY.md (the briefing that carried them
is among the dropped messages), then the session's turns, one line each from its observation (what was asked,
what failed, the outcome): the first turn (the session's goal) and the newest that fit, in order. Every line
cites its id; within `token_budget`, cut by whole lines and said so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.search.briefing import memory_rules, rule_line, tokens
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters, Row

HEADER = (
    "## This session so far, from memory\n\n"
    "The earlier part of this session, as memory_pipeline recorded it; `memory_show <id>` gives a turn whole.\n"
)
KNOWLEDGE = "\n### What this session established\n"
RULES = "\n### Rules of this project (MEMORY.md)\n"
TURNS = "\n### Turns\n"
_ORDER = {"rule": 0, "decision": 1, "gotcha": 2, "fact": 3, "task": 4}
SESSION_ROWS = 1000  # a session's memories read at most (years of one session would still be cut by budget)


@dataclass(frozen=True)
class Compaction:
    markdown: str  # "" when the memory holds nothing of the session yet (pi then makes its own)
    ids: list[str]
    turns: int  # turns of the session the memory knew, shown or not
    left_out: int  # turns not shown for the budget


def _knowledge_line(row: Row) -> str:
    what = row.knowledge or row.kind
    return f"- **{what}** {row.one_line} _({row.time[:16].replace('T', ' ')}, id `{row.id}`)_\n"


def _turn_line(row: Row) -> str:
    return f"- {row.time[11:16] or '--:--'} {row.one_line} _(id `{row.id}`)_\n"


def compaction_summary(
    session_rows: list[Row], rules: list[str], token_budget: int, rule_ids: list[str | None] | None = None
) -> Compaction:
    """The summary of a session from its memories (`session_rows`: memories, notes and observations of the
    session, any order) and the project's rules (lines of MEMORY.md), within `token_budget` tokens. Pure."""
    current = [r for r in session_rows if not r.superseded_by]
    knowledge = sorted(
        (r for r in current if r.kind != "observation"),
        key=lambda r: (_ORDER.get(r.knowledge, len(_ORDER)), r.time),
    )
    turns = sorted((r for r in current if r.kind == "observation"), key=lambda r: r.time)
    if not knowledge and not turns:
        return Compaction("", [], 0, 0)
    text, ids = HEADER, []
    for heading, lines in (
        (KNOWLEDGE, [(_knowledge_line(r), r.id) for r in knowledge]),
        (RULES, list(zip(rules, rule_ids or [None] * len(rules), strict=True))),
    ):
        added = False
        for line, doc_id in lines:
            addition = line if added else heading + line
            if tokens(text + addition) > token_budget:
                continue
            text, added = text + addition, True
            if doc_id:
                ids.append(doc_id)
    # The turns: the first (what the session set out to do), then the newest that fit, shown in order.
    chosen: list[Row] = []
    left = token_budget - tokens(text + TURNS) - tokens("- (99999 earlier turns are in memory, not shown)\n")
    for row in [turns[0], *reversed(turns[1:])] if turns else []:
        cost = tokens(_turn_line(row))
        if cost > left:
            break
        chosen.append(row)
        left -= cost
    chosen.sort(key=lambda r: r.time)
    left_out = len(turns) - len(chosen)
    if chosen:
        text += TURNS
        for index, row in enumerate(chosen):
            text += _turn_line(row)
            ids.append(row.id)
            if index == 0 and left_out:
                text += f"- ({left_out} earlier turns are in memory, not shown)\n"
    return Compaction(text, ids, len(turns), left_out)


def build_compaction(
    search: MemorySearch,
    session_id: str,
    project: str | None,
    until: str | None,
    token_budget: int,
    workspace: Path | None = None,
) -> Compaction:
    """The compaction summary of `session_id` for what it said before `until` (the first entry pi keeps)."""
    rows = search.recent(Filters(project=project, until=until, session=session_id), k=SESSION_ROWS)
    rules = memory_rules(workspace, project)
    return compaction_summary(rows, [rule_line(r) for r in rules], token_budget, [r.id for r in rules])
