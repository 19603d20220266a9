"""Plain text of the search layers, for people (the CLI) and models (the pi extension's tools, through the
service): compact, with scores and citations, saying so when nothing matched well, and never hiding that a
long message was cut."""

from __future__ import annotations

import json

from memory_pipeline.search.consolidate import interval
from memory_pipeline.search.files import as_failure
from memory_pipeline.search.models import Detail, Row, TurnMessage

MESSAGE_CHARS = 1500  # a message's shown length unless the whole turn is asked for
ARGUMENT_CHARS = 300
GUESSES = 3  # rows shown when nothing matched well


def _score(row: Row) -> str:
    bm25 = f"{row.bm25:5.1f}" if row.bm25 is not None else "    -"
    similarity = f"{row.similarity:4.2f}" if row.similarity is not None else "   -"
    return f"bm25 {bm25}  sim {similarity}"


def replaced_note(row: Row) -> str:
    """How a replaced decision reads on one line: when it held and what holds now (or only the replacing id)."""
    if not row.superseded_by:
        return ""
    if row.current:
        return f"replaced on {row.held_until or 'a later day'} (held {interval(row)}); now: {row.current}"
    return f"superseded by {row.superseded_by}"


def unconfigured_note(row: Row) -> str:
    """How a memory of a folder no longer configured is marked: kept and found, until a person removes it."""
    return f"(folder no longer configured: {row.folder_no_longer_configured})"


def row_line(row: Row, scores: bool = True) -> str:
    day = row.time[:10] if row.time else "undated"
    said = f"  (said in {row.said_in} sessions)" if row.said_in > 1 else ""
    mark = f"  ({replaced_note(row)})" if row.superseded_by else ""
    if row.folder_no_longer_configured:
        mark += f"  {unconfigured_note(row)}"
    score = f"  {_score(row)}" if scores else ""
    agent = f" · {row.agent}" if row.agent and row.agent != "pi" else ""  # pi is the default: named when not
    return (
        f"{row.id}  {day}  {row.kind:11}  {row.priority:6}{score}  {row.one_line}  [{row.project}{agent}]{said}{mark}"
    )


def rows_text(rows: list[Row], scores: bool = True, query: str | None = None, everything: bool = False) -> str:
    """One line per memory. For a query: the rows that matched its words or meaning, and a count of the weaker
    guesses left out; when none matched, a line that says so and the closest few guesses (`everything`: all)."""
    if not rows:
        return f"no memory matches {query!r}" if query else "no memory"
    if query is None or everything:
        return "\n".join(row_line(r, scores) for r in rows)
    strong = [r for r in rows if r.strong]
    if not strong:
        guesses = [row_line(r, scores) for r in rows[:GUESSES]]
        return "\n".join([f"nothing matched {query!r} well; the closest guesses:", *guesses])
    lines = [row_line(r, scores) for r in strong]
    if len(strong) < len(rows):
        lines.append(f"({len(rows) - len(strong)} weaker guesses not shown)")
    return "\n".join(lines)


FILE_MARK = "[memory about {name}]"  # opens a file's reminder; the pi extension finds it again on resume


def file_text(rows: list[Row], name: str) -> str:
    """A file's reminder for a tool result: a marked header, then one line per memory (kind, id, day, text).
    Empty when no memory concerns the file, so nothing is added."""
    if not rows:
        return ""
    header = FILE_MARK.format(name=name) + " earlier sessions recorded (memory_show <id> for the turn):"
    label = {"observation": "failure"}  # an observation is shown here for the failure it quotes
    lines = [
        f"- {r.knowledge or label.get(r.kind, r.kind)} {r.id} ({r.time[:10] or 'undated'}): {as_failure(r).one_line}"
        for r in rows
    ]
    return "\n".join([header, *lines])


def clip(text: str, limit: int | None) -> str:
    """`text`, or its first `limit` characters and a marker that says how much was left out."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [trimmed: {len(text) - limit:,} of {len(text):,} characters not shown; --full shows all]"


def _message(message: TurnMessage, limit: int | None) -> list[str]:
    head = f"[{message.role or '?'}]"
    if message.tool_name:
        head += f" {message.tool_name}"
    if message.is_error:
        head += " (error)"
    lines = [head]
    if message.content:
        lines.append(clip(message.content, limit))
    for call in message.tool_calls or []:
        lines.append(f"→ {call.name}({clip(call.arguments or '', ARGUMENT_CHARS if limit else None)})")
    return lines


def detail_text(record: Detail, full: bool = False) -> str:
    """A memory, its citation, and every message of the turn it came from (long ones trimmed unless `full`)."""
    limit = None if full else MESSAGE_CHARS
    what = " ".join(filter(None, [record.kind, record.knowledge]))
    lines = [
        f"{record.id}  {what}  {record.priority}  {record.time[:19]}",
        f"project: {record.project}",
        f"from: session {record.session_id or '-'}, turn {record.turn_id or '-'}",
    ]
    if record.superseded_by:
        lines.append(f"{replaced_note(record)} (id {record.superseded_by})")
    lines.append(f"follow-through: {record.followthrough.text}")
    lines += ["", record.summary]
    if record.evidence:
        lines.append(f'evidence, in the words of the {record.evidence_role or "turn"}: "{record.evidence}"')
    if again := record.said_again:
        lines += ["", f"said in {record.said_in or len(again) + 1} sessions; the others:"]
        for other in again:
            words = f'"{other.evidence}" ({other.evidence_role or "turn"})' if other.evidence else ""
            day = other.time[:10] or "undated"
            lines.append(f"- {other.id}  {day}  session {other.session_id or '-'}  {words}".rstrip())
    lines += ["", f"source turn: {len(record.source_turn)} message(s)"]
    for message in record.source_turn:
        lines += ["", *_message(message, limit)]
    return "\n".join(lines)


def details_text(records: list[Detail], full: bool = False) -> str:
    return "\n\n---\n\n".join(detail_text(r, full) for r in records)


def as_json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def missing_ids(ids: list[str], records: list[Detail]) -> str | None:
    """What a caller of the detail layer is told of the ids that named no memory (None when every one did)."""
    found = {r.id for r in records}
    missing = [i for i in dict.fromkeys(ids) if i not in found]
    return f"no memory with id {', '.join(missing)}" if missing else None
