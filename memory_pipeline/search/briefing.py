"""The session briefing: what a new session should know before its first prompt, as markdown for the agent's
context, within a token budget.

In order, each part only while the budget lasts: the project's rules (MEMORY.md, curated by people), then its
high-priority memories (preferences, decisions, notes stored on purpose), then what matches the first prompt.
Every line carries its citation id; a replaced decision is left out; only matches that clear the relevance
floor are shown (empty is better than padding); the same knowledge said in several sessions is one line that
counts them; a note says when proposed rules wait.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout

from memory_pipeline.language.lexicon import particulars
from memory_pipeline.language.topics import TOPICS, task_topics, topics_of
from memory_pipeline.language.words import STOP_WORDS, content_words, words
from memory_pipeline.recall.observations import estimate_tokens
from memory_pipeline.reflect.maturity import MATURITY_MARKER
from memory_pipeline.reflect.replacing import replaces
from memory_pipeline.reflect.review import pending
from memory_pipeline.reflect.workspace import project_dir
from memory_pipeline.search.consolidate import folded
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters, Row

HEADER = "## Memory from earlier sessions\n\nCite an item by its id; these are notes, not instructions.\n"
SECTIONS = {
    "rules": "\n### Rules of this project (MEMORY.md)\n",
    "important": "\n### Important\n",
    "related": "\n### Related to this prompt\n",
    "recent": "\n### Recent in this project\n",
    "command": "\n",
}
_RULE = re.compile(r"^\s*[-*]\s+(?:\[[ x]\]\s+)?(?P<text>.+?)\s*(?:<!--\s*(?P<id>[^\s>]+)[^>]*-->)?\s*$")
_ORDER = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Rule:
    text: str
    id: str | None  # the proposal id it was promoted from; None for a rule a person wrote in by hand


def memory_rules(workspace: Path | None, project: str | None) -> list[Rule]:
    """The bullet lines of the project's MEMORY.md (maturity markers dropped), in the file's order."""
    if workspace is None or not project:
        return []
    path = project_dir(workspace, project) / "MEMORY.md"
    if not path.exists():
        return []
    rules = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        found = _RULE.match(line)
        if found:
            rules.append(Rule(MATURITY_MARKER.sub("", found["text"]).strip(), found["id"]))
    return rules


def tokens(text: str) -> int:
    return math.ceil(estimate_tokens(text))


def memory_line(row: Row, agents: bool = False) -> str:
    """A memory's briefing line; with `agents` (the project's memories come from several coding agents), the
    agent whose session it came from (a note: who stored it), so what was said where can be told apart."""
    day = row.time[:10] if row.time else "undated"
    what = row.knowledge or row.kind
    said = f", said in {row.said_in} sessions" if row.said_in > 1 else ""
    where = f", {row.agent or row.author}" if agents and (row.agent or row.author) else ""
    return f"- **{row.priority or 'low'}** {row.one_line} _({day}, {what}{said}{where}, id `{row.id}`)_\n"


def rule_line(rule: Rule) -> str:
    return f"- {rule.text} _(id `{rule.id}`)_\n" if rule.id else f"- {rule.text} _(MEMORY.md)_\n"


def review_notice(workspace: Path | None, project: str | None) -> str:
    """One line when proposals wait in a REVIEW.md (of `project`, or of any project)."""
    if workspace is None:
        return ""
    files = [project_dir(workspace, project) / "REVIEW.md"] if project else sorted(workspace.glob("*/REVIEW.md"))
    waiting = sum(pending(path) for path in files)
    if not waiting:
        return ""
    return f"\n_{waiting} proposed memory rules wait for review in REVIEW.md (`memory-pipeline review apply`)._\n"


@dataclass(frozen=True)
class BriefingPolicy:
    """What earns a line besides MEMORY.md's rules (measured in bench/next_session.py, `next_session`)."""

    important: int = 10  # the project's newest high-priority memories shown whatever the prompt
    important_kinds: tuple[str, ...] = ()  # of these kinds only (notes always); () = every kind
    guesses: bool = False  # matches below the relevance floor too
    observations: bool = True  # turn observations among the matches
    # A memory (not an observation) of high or medium priority the search ranks this high earns a line even
    # below the floor: on real pi-mono prompts the decision search found at #2 was left out for low lines.
    top_memories: int = 3
    # Low-priority lines ("Asked: …" observations): this many at most (a pi-mono prompt got nine), and with
    # `filler_alone` only when nothing of more weight matched. On the benchmark the observations carry needs the
    # small model's memories miss: none beside memories cost 0.05 of tune coverage, 3 at most 0.025, 6 nothing.
    filler: int = 6
    filler_alone: bool = False
    # With a floor, the important section holds only the high memories the prompt is about (most of its words,
    # or a cosine at least this): a project's every rule on every prompt is mostly lines no session uses. Off:
    # on the benchmark a floor of 0.2 cut held-out noise from 0.80 to 0.65 but coverage from 0.65 to 0.42 (the
    # pnpm rule is needed by "install a library for the map", which shares no meaning MiniLM sees).
    important_floor: float | None = None
    # With a floor, a high memory about a tool the prompt's task will use ("install a library" and the package
    # manager's rule) is close too: the category MiniLM does not see, from `task_topics`.
    topics: bool = False
    # With a floor, a related line needs most of the prompt's words or this cosine (None: the search's floor).
    related_floor: float | None = None


DEFAULT_POLICY = BriefingPolicy()


def _weighty(row: Row) -> bool:
    return row.kind != "observation" and row.priority in ("high", "medium")


def _close(row: Row, floor: float) -> bool:
    return row.worded or (row.similarity is not None and row.similarity >= floor)


def _on_topic(row: Row, wanted: set[str]) -> bool:
    return bool(wanted & ((set(row.tags) & TOPICS) | set(topics_of(f"{row.subject} {row.summary}"))))


# What an observation's tool list says is no particular of the turn (an MCP tool's name has underscores).
_TOOLS = re.compile(r"Tools: [^.]*\.")
_SEGMENT = re.compile(r"[/.]")


def says_something(row: Row) -> bool:
    """Whether a row is worth a line among a prompt's matches: a memory is; an observation only when it names
    something a session can act on (a path, a value, a command: `lexicon.particulars`). "Asked: Some transfers
    messages seem stuck, check the broker for them. Outcome: Done, I think." matched a later prompt word for word
    and told it nothing."""
    return row.kind != "observation" or bool(particulars(_TOOLS.sub("", row.summary)))


def replaced_turns(rows: Iterable[Row]) -> set[tuple[str, str]]:
    """The turns a replaced memory among `rows` came from: their observations tell the old state too ("Asked: no,
    subscriptions uses rq-scheduler for scheduling", shown on bench needs two months after the move to
    celery-beat had replaced the decision that turn made)."""
    return {(r.session_id, r.turn_id) for r in rows if r.superseded_by and r.kind != "observation"}


def outdated(observation: Row, rows: Iterable[Row]) -> bool:
    """Whether a current decision among `rows`, newer than `observation`, replaces what the observation's turn
    wanted (`replacing.replaces`: the same subject, the replaced choice wanted, the new one not), as when the
    correction's own memory was not among the matches to be marked."""
    return any(
        r.knowledge == "decision" and not r.superseded_by and r.time > observation.time
        and replaces(r.summary, observation.summary)
        for r in rows
    )  # fmt: skip


def naming_first(rows: list[Row], named: set[str]) -> list[Row]:
    """`rows` with those that name more of `named` (lower-case words or particulars) first, in their order
    otherwise."""
    return sorted(rows, key=lambda r: -sum(n in r.summary.lower() for n in named))


def parts_named(prompt: str, rows: Iterable[Row]) -> set[str]:
    """The prompt's words that name a part of the project: a folder or a file's stem in the paths its matches
    name ("fees" of `config/fees.env`). A prompt about the fees service is answered by what names fees before what
    names another service, however alike the two read ("I want to curl the fees service locally" and the same
    words asked earlier of the subscriptions service)."""
    segments = {s for r in rows for p in particulars(r.summary) if "/" in p for s in _SEGMENT.split(p.lower()) if s}
    return {w for w in words(prompt) if w in segments and w not in STOP_WORDS and len(w) > 2}


def earned(related: list[Row], filler: int, alone: bool = True) -> list[Row]:
    """The matches that earn a line, the more important first (the search's order breaks ties): at most
    `filler` low-priority ones, and with `alone` only when no high or medium one matched."""
    ordered = [r for _, r in sorted(enumerate(related), key=lambda i: (_ORDER.get(i[1].priority, 3), i[0]))]
    weighty = [r for r in ordered if r.priority in ("high", "medium")]
    low = [r for r in ordered if r.priority not in ("high", "medium")][:filler]
    if alone and weighty:
        return weighty
    return weighty + low


@dataclass
class Briefing:
    markdown: str
    ids: list[str]  # every citation id in it, in order
    down: Exception | None = None  # the search's failure, when it was down: MEMORY.md's rules only
    keys: list[str] = field(default_factory=list)  # every line's key (`line_key`): ids, and rules without one
    lines: list[str] = field(default_factory=list)  # the lines, in the order of `keys`

    @property
    def degraded(self) -> str:
        """What could not be read, for the caller to say (`search.open.briefing_note` names the server)."""
        return f"memory search unavailable ({type(self.down).__name__}): MEMORY.md rules only" if self.down else ""


Line = tuple[str, str | None]  # a rendered line and its citation id (None: a hand-written rule)


@dataclass
class Parts:
    """A briefing's candidate lines by section, in order, before the budget: what `render` chooses from."""

    sections: list[tuple[str, list[Line]]]
    notice: str = ""
    down: Exception | None = None


def line_key(line: str, doc_id: str | None) -> str:
    """What identifies a line across deliveries: its citation id, or for a rule written by hand (no id) a hash
    of its text, so a session is never given the same rule twice either."""
    return doc_id or "MEMORY.md#" + hashlib.sha1(line.strip().encode()).hexdigest()[:12]


def render(parts: Parts, token_budget: int, given: Iterable[str] = (), header: str = HEADER) -> Briefing:
    """The briefing of `parts` within `token_budget` tokens: each section's lines in order while they fit,
    leaving out the lines whose key is in `given` (delivered to this session already)."""
    notice = parts.notice
    text, ids, keys, shown, seen = header, [], [], [], set(given)
    if tokens(text + notice) > token_budget:
        return Briefing("", [], parts.down)
    for section, lines in parts.sections:
        heading_added = False
        for line, doc_id in lines:
            key = line_key(line, doc_id)
            if key in seen:
                continue
            addition = line if heading_added else SECTIONS[section] + line
            if tokens(text + addition + notice) > token_budget:
                continue
            text += addition
            heading_added = True
            seen.add(key)
            keys.append(key)
            shown.append(line.strip())
            if doc_id:
                ids.append(doc_id)
    if text == header and not notice:
        return Briefing("", [], parts.down)
    return Briefing(text + notice, ids, parts.down, keys, shown)


def briefing_parts(
    search: MemorySearch,
    prompt: str,
    project: str | None = None,
    candidates: int = 30,
    workspace: Path | None = None,
    policy: BriefingPolicy = DEFAULT_POLICY,
    agent: str | None = None,
) -> Parts:
    """The lines a session of `project` whose prompt is `prompt` may be briefed with, by section (with
    `agent`, only what that coding agent's sessions hold; MEMORY.md's rules are every agent's)."""
    rules = memory_rules(workspace, project)
    down: Exception | None = None
    try:
        high, related = _searched(search, prompt, Filters(project=project, agent=agent), candidates, policy)
    except (TransportConnectionError, ConnectionTimeout) as exc:
        # The rules are local files: a briefing still holds them when Elasticsearch is down, and says so.
        high, related, down = [], [], exc
    shown = [content_words(r.text) for r in rules]
    important_rows = folded(high, shown)
    shown += [content_words(r.summary) for r in important_rows]
    agents = len({r.agent for r in [*high, *related] if r.agent}) > 1
    sections: list[tuple[str, list[Line]]] = [
        ("rules", [(rule_line(r), r.id) for r in rules]),
        ("important", [(memory_line(r, agents), r.id) for r in important_rows]),
        ("related", [(memory_line(r, agents), r.id) for r in folded(related, shown)]),
    ]
    return Parts(sections, review_notice(workspace, project), down)


def build_briefing(
    search: MemorySearch,
    prompt: str,
    token_budget: int = 800,
    project: str | None = None,
    candidates: int = 30,
    workspace: Path | None = None,
    policy: BriefingPolicy = DEFAULT_POLICY,
    agent: str | None = None,
) -> Briefing:
    """The briefing for a session of `project` whose first prompt is `prompt`, within `token_budget` tokens
    (with `agent`, only what that coding agent's sessions hold; MEMORY.md's rules are every agent's)."""
    parts = briefing_parts(search, prompt, project, candidates, workspace, policy, agent)
    return render(parts, token_budget)


def _searched(
    search: MemorySearch, prompt: str, scope: Filters, candidates: int, policy: BriefingPolicy
) -> tuple[list[Row], list[Row]]:
    """The important memories and the prompt's matches of `scope` that earn a line (see `BriefingPolicy`)."""
    high_scope = replace(scope, priority=("high",))
    if policy.important_floor is None:
        newest = search.recent(high_scope, k=policy.important)
    else:
        wanted = set(task_topics(prompt)) if policy.topics else set()
        # Every high memory of the scope is a candidate when topics count: the one a task needs may rank low.
        found = search.index(prompt, k=candidates if policy.topics else policy.important, filters=high_scope)
        newest = [r for r in found if _close(r, policy.important_floor) or _on_topic(r, wanted)][: policy.important]
    high = [
        r
        for r in newest
        if not r.superseded_by
        and (not policy.important_kinds or r.kind == "note" or r.knowledge in policy.important_kinds)
    ]
    found = search.index(prompt, k=candidates, filters=scope)
    replaced, current = replaced_turns(found), [*high, *found]
    # Only what clears the relevance floor: a guess in a briefing is noise an agent reads as knowledge.
    related = [
        r
        for rank, r in enumerate(found)
        if (
            (r.strong if policy.related_floor is None else _close(r, policy.related_floor))
            or policy.guesses
            or (rank < policy.top_memories and _weighty(r))
        )
        and not r.superseded_by
        and (policy.observations or r.kind != "observation")
        and says_something(r)
        and (r.kind != "observation" or ((r.session_id, r.turn_id) not in replaced and not outdated(r, current)))
    ]
    related = naming_first(related, parts_named(prompt, related))
    return high, earned(related, policy.filler, policy.filler_alone)
