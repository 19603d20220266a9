"""From the injection ledger and a day's turns to follow-through records: which memories each turn had been
given before it (in its own session, or in an earlier session of its project), and what the turn did with them.

Pure: the asset reads the ledger, memory-raw's rows and writes the records; nothing here does I/O. A memory's
kind and text are read from the line the session was given (what the agent saw), so a memory forgotten or
edited since is judged by what was injected.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl

from memory_pipeline.language.kinds import Kind, kind_of
from memory_pipeline.reflect.followthrough import correction, decide, restates, stance
from memory_pipeline.reflect.turn_messages import Outcome, TurnMessage, turn_of
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.stores.followthrough_store import FollowThrough
from memory_pipeline.stores.injections import Injection

# A briefing line: `- **high** <text> _(2026-11-30, rule, said in 2 sessions, id `…`)_`, or a MEMORY.md rule
# `- <text> _(MEMORY.md)_` / `_(id `p-…`)_`.
_LINE = re.compile(r"^\s*-\s+(?:\*\*\w+\*\*\s+)?(?P<text>.*?)\s*(?:_\((?P<about>[^\n]*)\)_)?\s*$", re.S)
_KINDS = "|".join(k.value for k in Kind)


@dataclass(frozen=True)
class Given:
    """A memory as a session was given it."""

    memory_id: str
    kind: str
    text: str
    session_id: str
    project: str
    at: datetime


@dataclass(frozen=True)
class Turn:
    session_id: str
    turn_id: str
    project: str
    agent: str
    partition: str
    at: datetime  # its last message: a memory given before then could shape it
    messages: list[TurnMessage]


def memory_of_line(key: str, line: str) -> tuple[str, str]:
    """(kind, text) of a delivered line: the memory's words without the briefing's marks around them."""
    found = _LINE.match(line)
    text = (found["text"] if found else line).strip()
    about = (found["about"] or "") if found else ""
    kind = re.search(rf"\b({_KINDS})\b", about)
    if kind:
        return kind[1], text
    if key.startswith("MEMORY.md") or "MEMORY.md" in about or key.startswith("p-"):
        return Kind.RULE.value, text
    return (kind_of(text) or Kind.FACT).value, text


def given(injections: Iterable[Injection]) -> list[Given]:
    """Each memory each session was given, at its first delivery there."""
    first: dict[tuple[str, str], Given] = {}
    for injection in sorted(injections, key=lambda i: i.at):
        for line in injection.lines:
            if (line.key, injection.session_id) in first:
                continue
            kind, text = memory_of_line(line.key, line.text)
            at = injection.at if injection.at.tzinfo else injection.at.replace(tzinfo=UTC)
            first[(line.key, injection.session_id)] = Given(
                line.key, kind, text, injection.session_id, injection.project or "", at
            )
    return list(first.values())


def turns_of(messages: pl.DataFrame) -> list[Turn]:
    """The active path's turns of memory-raw rows (metadata left out), messages in order."""
    if messages.is_empty():
        return []
    rows = messages.filter(pl.col("on_active_path").fill_null(True) & ~pl.col("is_metadata").fill_null(False))
    rows = rows.filter(pl.col("turn_id").is_not_null()).sort("session_id", "turn_id", "message_index")
    turns = []
    for (session_id, turn_id), group in rows.group_by(["session_id", "turn_id"], maintain_order=True):
        items = group.to_dicts()
        times = [m["message_timestamp"] or m["entry_timestamp"] for m in items]
        stamps = [t for t in times if t is not None]
        if not stamps:
            continue
        at = max(stamps)
        for m in items:
            m["tool_calls"] = m.get("tool_calls") or []
        turns.append(
            Turn(
                session_id=str(session_id),
                turn_id=str(turn_id),
                project=items[0].get("project") or "",
                agent=items[0].get("agent") or "",
                partition=items[0].get("partition") or "",
                at=at if at.tzinfo else at.replace(tzinfo=UTC),
                messages=turn_of(items),
            )
        )
    return turns


def _before(turn: Turn, memories: Sequence[Given]) -> dict[str, Given]:
    """The memories given before `turn` ended, in its session or an earlier one of its project (first each)."""
    found: dict[str, Given] = {}
    for memory in memories:
        same = memory.session_id == turn.session_id or (memory.project and memory.project == turn.project)
        if same and memory.at <= turn.at and memory.memory_id not in found:
            found[memory.memory_id] = memory
    return found


def _next_prompts(turns: Sequence[Turn]) -> dict[tuple[str, str], TurnMessage]:
    """The person's message that starts the next turn of each turn's session (in time), by (session, turn)."""
    by_session: dict[str, list[Turn]] = {}
    for turn in turns:
        by_session.setdefault(turn.session_id, []).append(turn)
    found = {}
    for session in by_session.values():
        ordered = sorted(session, key=lambda t: t.at)
        for turn, following in zip(ordered, ordered[1:], strict=False):
            first = following.messages[0] if following.messages else None
            if first is not None and first.role == "user":
                found[(turn.session_id, turn.turn_id)] = first
    return found


Decider = Callable[[str, str, Sequence[TurnMessage]], Outcome]


def follow_records(
    turns: Sequence[Turn], memories: Sequence[Given], redactor: Redactor, decider: Decider = decide
) -> list[FollowThrough]:
    """What each turn did with each memory given before it (the rules' `decide`, or the model's pass over them):
    one record per signal (no signal, no record). An ignored memory the person says again in the next turn's
    message is marked `restated`."""
    records = []
    next_prompt = _next_prompts(turns)
    for turn in turns:
        for memory in _before(turn, memories).values():
            outcome = decider(memory.kind, memory.text, turn.messages)
            if outcome.outcome == "no_signal":
                continue
            following = next_prompt.get((turn.session_id, turn.turn_id))
            if outcome.outcome == "ignored" and following is not None and restates(memory.text, following):
                outcome = outcome.model_copy(update={"restated": True})
            records.append(
                FollowThrough(
                    memory_id=memory.memory_id,
                    signal=outcome.outcome,
                    project=turn.project,
                    agent=turn.agent,
                    partition=turn.partition,
                    session_id=turn.session_id,
                    turn_id=turn.turn_id,
                    at=turn.at,
                    memory_kind=memory.kind,
                    memory_text=redactor.redact(memory.text),
                    evidence=redactor.redact(outcome.evidence),
                    evidence_index=outcome.evidence_index,
                    decided_by=outcome.decided_by,
                    restated=outcome.restated,
                )
            )
    return records


def delivery_records(injections: Iterable[Injection], days: Sequence[str]) -> list[FollowThrough]:
    """One record per memory per delivery made on one of `days` (UTC): the `injected` counter."""
    records = []
    wanted = set(days)
    for injection in injections:
        at = injection.at if injection.at.tzinfo else injection.at.replace(tzinfo=UTC)
        day = at.astimezone(UTC).date().isoformat()
        if day not in wanted:
            continue
        for line in dict.fromkeys(line.key for line in injection.lines):
            records.append(
                FollowThrough(
                    memory_id=line,
                    signal="injected",
                    project=injection.project or "",
                    agent=injection.agent,
                    partition=day,
                    session_id=injection.session_id,
                    at=at,
                )
            )
    return records


def correction_records(turns: Sequence[Turn], memories: Sequence[Given], redactor: Redactor) -> list[FollowThrough]:
    """Each person's correction that names what is wanted or rejected and that no memory given to the project
    says (nor goes against): keyed by what it says, so the same correction in two sessions is one proposal."""
    said_by_memories = {}
    for memory in memories:
        mine = stance(memory.text)
        said_by_memories.setdefault(memory.project, set()).update(mine.wants | mine.rejects)
    records = []
    for turn in turns:
        known = said_by_memories.get(turn.project, set())
        for index, message in enumerate(turn.messages):
            found = correction(message) if message.role == "user" else None
            if found is None or (found.wants | found.rejects) & known:
                continue
            key = "|".join(
                ["+" + " ".join(p) for p in sorted(found.wants)] + ["-" + " ".join(p) for p in sorted(found.rejects)]
            )
            records.append(
                FollowThrough(
                    memory_id="correction:" + hashlib.sha1(key.encode()).hexdigest()[:16],
                    signal="corrected",
                    project=turn.project,
                    agent=turn.agent,
                    partition=turn.partition,
                    session_id=turn.session_id,
                    turn_id=turn.turn_id,
                    at=turn.at,
                    memory_kind="rule",
                    memory_text=redactor.redact(found.text),
                    evidence=redactor.redact(found.text),
                    evidence_index=index,
                    decided_by="rule",
                )
            )
            break  # one correction per turn
    return records
