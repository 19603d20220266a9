"""One row per message of a parsed session: the shape of `raw_messages` and of `memory-raw` documents.

Rows are plain dicts in the column order of `MESSAGE_SCHEMA`, so a whole
partition becomes one polars frame without per-row objects. Text is redacted
here, before anything leaves the parser; image payloads and thinking signatures
are never copied; very long texts are cut with a visible marker.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import polars as pl

from memory_pipeline.names import safe_id
from memory_pipeline.sessions.models import (
    BranchSummaryEntry,
    CompactionEntry,
    Content,
    ContextEditEntry,
    CustomMessageEntry,
    ImageBlock,
    LabelEntry,
    Message,
    MessageEntry,
    SessionInfoEntry,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from memory_pipeline.sessions.parse import ParsedSession, Problem, parse_timestamp
from memory_pipeline.sessions.private import PRIVATE_MARK, hide_private, hide_private_value, private_turn
from memory_pipeline.sessions.redact import Redactor, masked_project, secret_argument
from memory_pipeline.sessions.turns import Node, assign_turns

MAX_TEXT_CHARS = 100_000
KNOWN_ROLES = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom", "system"})
METADATA_ROLES = frozenset({"system"})
# custom_message types that are this project's own injected context (the briefing), not something anyone said:
# metadata, never part of a turn, so nothing is learned from them again.
OWN_CUSTOM_TYPES = frozenset({"memory-briefing", "memory_pipeline.briefing"})
# This project's tools for agents (pi extension, MCP: `mcp__<server>__memory_search`): what they return is
# memory already, and is never read as new evidence.
OWN_TOOLS = frozenset({"memory_search", "memory_timeline", "memory_show", "memory_remember", "memory_briefing"})


def is_own_tool(name: str | None) -> bool:
    return bool(name) and str(name).rsplit("__", 1)[-1] in OWN_TOOLS


def is_metadata(fields: dict[str, Any]) -> bool:
    return fields["role"] in METADATA_ROLES or fields.get("custom_type") in OWN_CUSTOM_TYPES


_TOOL_CALL = pl.Struct({"id": pl.String, "name": pl.String, "arguments": pl.String})
MESSAGE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "doc_id": pl.String,
    "partition": pl.String,
    "session_id": pl.String,
    "session_file": pl.String,
    "agent": pl.String,
    "project": pl.String,
    "session_name": pl.String,
    "session_started_at": pl.Datetime("ms", "UTC"),
    "parent_session": pl.String,
    "format_version": pl.Int8,
    "entry_id": pl.String,
    "parent_id": pl.String,
    "line": pl.Int32,
    "entry_type": pl.String,
    "entry_timestamp": pl.Datetime("ms", "UTC"),
    "message_timestamp": pl.Datetime("ms", "UTC"),
    "role": pl.String,
    "content": pl.String,
    "thinking": pl.String,
    "tool_calls": pl.List(_TOOL_CALL),
    "tool_name": pl.String,
    "tool_call_id": pl.String,
    "tool_call_entry_id": pl.String,
    "is_error": pl.Boolean,
    "has_image": pl.Boolean,
    "image_mime_types": pl.List(pl.String),
    "provider": pl.String,
    "model": pl.String,
    "api": pl.String,
    "stop_reason": pl.String,
    "error_message": pl.String,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "cache_read_tokens": pl.Int64,
    "cache_write_tokens": pl.Int64,
    "total_tokens": pl.Int64,
    "cost_total": pl.Float64,
    "exit_code": pl.Int32,
    "custom_type": pl.String,
    "labels": pl.List(pl.String),
    "on_active_path": pl.Boolean,
    "excluded_from_context": pl.Boolean,
    "context_edited": pl.Boolean,
    "is_metadata": pl.Boolean,
    "content_truncated": pl.Boolean,
    "redactions": pl.Int32,
    "turn_id": pl.String,
    "turn_index": pl.Int32,
    "message_index": pl.Int32,
}


def empty_messages() -> pl.DataFrame:
    return pl.DataFrame(schema=MESSAGE_SCHEMA)


TRUNCATED = "truncated"  # the kind of problem a cut text is listed as


def _cut(text: str, cuts: list[str] | None = None, what: str = "text") -> tuple[str, bool]:
    """The text, cut to MAX_TEXT_CHARS with a marker saying how much went; each cut is named in `cuts` (the
    caller lists it with the file and line: a 50 MB line must not shrink without a word)."""
    if len(text) <= MAX_TEXT_CHARS:
        return text, False
    if cuts is not None:
        cuts.append(f"{what} cut from {len(text):,} to {MAX_TEXT_CHARS:,} characters")
    return text[:MAX_TEXT_CHARS] + f"\n[… truncated {len(text) - MAX_TEXT_CHARS:,} characters]", True


def _blocks(content: Content) -> tuple[list[str], list[str], list[ToolCallBlock], list[str]]:
    """(texts, thinkings, tool calls, image mime types) of string-or-block content."""
    if content is None:
        return [], [], [], []
    if isinstance(content, str):
        return [content], [], [], []
    texts, thinking, calls, images = [], [], [], []
    for block in content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ThinkingBlock):
            thinking.append(block.thinking or ("[redacted thinking]" if block.redacted else ""))
        elif isinstance(block, ToolCallBlock):
            calls.append(block)
        elif isinstance(block, ImageBlock):
            images.append(block.mimeType)
    return texts, thinking, calls, images


def _message_fields(message: Message) -> dict[str, Any]:
    texts, thinking, calls, images = _blocks(message.content)
    role = message.role
    if role == "bashExecution":
        texts = [f"$ {message.command or ''}\n{message.output or ''}"]
    elif role == "system" and message.sections:
        texts += [f"## {k}\n{v}" for k, v in message.sections.items() if v]
    usage = message.usage
    return {
        "role": role,
        "texts": texts,
        "thinking": thinking,
        "calls": calls,
        "images": images,
        "tool_name": message.toolName,
        "tool_call_id": message.toolCallId,
        "is_error": message.isError,
        "provider": message.provider,
        "model": message.model,
        "api": message.api,
        "stop_reason": message.stopReason,
        "error_message": message.errorMessage,
        "usage": usage,
        "exit_code": message.exitCode,
        "custom_type": message.customType,
        "excluded": bool(message.excludeFromContext),
        "message_timestamp": message.timestamp,
    }


def session_messages(
    session: ParsedSession, redactor: Redactor, partition: str, display_path: str | None = None
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Rows of every message entry (active path and abandoned branches), and the redaction counts."""
    name = display_path or str(session.path)
    header = session.header
    redactions: Counter[str] = Counter()
    on_path = set(session.active_path)
    labels: dict[str, str | None] = {}
    session_name: str | None = None
    edits: dict[str, bool] = {}  # target -> excluded (True) or replaced (False)
    parent_of = {e.id: e.parent_id for e in session.entries}
    for parsed in session.entries:
        entry = parsed.entry
        if isinstance(entry, LabelEntry):
            label = _private_hidden(entry.label, redactions) if entry.label else entry.label
            labels[safe_id(entry.targetId)] = redactor.redact(label, redactions) if label else label
        elif isinstance(entry, SessionInfoEntry):
            # Names and labels are free text a person typed: they are scanned like everything else.
            name_text = _private_hidden(entry.name, redactions) if entry.name else None
            session_name = redactor.redact(name_text, redactions) if name_text else None
        elif isinstance(entry, ContextEditEntry) and safe_id(entry.targetId) in _ancestors(parsed.id, parent_of):
            # Branch-relative: an edit changes what the model saw on its own branch only.
            edits[safe_id(entry.targetId)] = entry.replacement is None

    fields_of: dict[str, dict[str, Any]] = {}
    nodes: list[Node] = []
    for parsed in session.entries:
        entry = parsed.entry
        fields: dict[str, Any] | None = None
        if isinstance(entry, MessageEntry):
            if entry.message.role not in KNOWN_ROLES:
                session.skipped[f"role {entry.message.role}"] += 1
                session.problems.append(Problem(name, parsed.line, "unknown role", entry.message.role))
            else:
                fields = _message_fields(entry.message)
        elif isinstance(entry, CustomMessageEntry):
            texts, _, _, images = _blocks(entry.content)
            fields = {"role": "custom", "texts": texts, "images": images, "custom_type": entry.customType}
        elif isinstance(entry, BranchSummaryEntry):
            fields = {"role": "branchSummary", "texts": [entry.summary]}
        elif isinstance(entry, CompactionEntry):
            fields = {"role": "compactionSummary", "texts": [entry.summary]}
        if fields is not None:
            fields_of[parsed.id] = fields
        role = fields["role"] if fields is not None and not is_metadata(fields) else None
        nodes.append(Node(parsed.id, parsed.parent_id, role))

    places = assign_turns(nodes, session.active_path)
    # What a person marked private goes before anything is masked, counted or stored (sessions/private.py).
    private = _private_entries(fields_of, places)
    fields_of = {eid: _without_private(f, eid in private, redactions) for eid, f in fields_of.items()}
    call_owner = {call.id: entry_id for entry_id, f in fields_of.items() for call in f.get("calls", [])}
    started_at = session.started_at
    rows: list[dict[str, Any]] = []
    for parsed in session.entries:
        fields = fields_of.get(parsed.id)
        if fields is None:
            continue
        counts: Counter[str] = Counter()
        cuts: list[str] = []
        texts = "\n".join(t for t in fields.get("texts", []) if t)
        content, cut_content = _cut(redactor.redact(texts, counts), cuts, "content")
        thinking, cut_thinking = _cut(
            redactor.redact("\n".join(t for t in fields.get("thinking", []) if t), counts), cuts, "thinking"
        )
        calls = [
            {
                "id": c.id,
                "name": c.name,
                "arguments": _cut(
                    json.dumps(redact_arguments(c.arguments, redactor, counts), ensure_ascii=False),
                    cuts,
                    f"arguments of tool call {c.name}",
                )[0],
            }
            for c in fields.get("calls", [])
        ]
        session.problems.extend(Problem(name, parsed.line, TRUNCATED, cut) for cut in cuts)
        error = fields.get("error_message")
        usage = fields.get("usage")
        place = places.get(parsed.id)
        message_ms = fields.get("message_timestamp")
        rows.append(
            {
                "doc_id": f"{session.session_id}_{place.turn_id}_{place.message_index}" if place else None,
                "partition": partition,
                "session_id": session.session_id,
                "session_file": name,
                "agent": session.agent,
                "project": masked_project(header.cwd),
                "session_name": session_name,
                "session_started_at": started_at,
                "parent_session": header.parentSession or header.branchedFrom,
                "format_version": session.format_version,
                "entry_id": parsed.id,
                "parent_id": parsed.parent_id,
                "line": parsed.line,
                "entry_type": parsed.entry.type,
                "entry_timestamp": _safe_time(parsed.entry.timestamp, session, name, parsed.line),
                "message_timestamp": _safe_time(message_ms, session, name, parsed.line),
                "role": fields["role"],
                "content": content,
                "thinking": thinking or None,
                "tool_calls": calls,
                "tool_name": fields.get("tool_name"),
                "tool_call_id": fields.get("tool_call_id"),
                "tool_call_entry_id": call_owner.get(fields.get("tool_call_id") or ""),
                "is_error": fields.get("is_error"),
                "has_image": bool(fields.get("images")),
                "image_mime_types": fields.get("images", []),
                "provider": fields.get("provider"),
                "model": fields.get("model"),
                "api": fields.get("api"),
                "stop_reason": fields.get("stop_reason"),
                "error_message": redactor.redact(error, counts) if error else None,
                "input_tokens": usage.input if usage else None,
                "output_tokens": usage.output if usage else None,
                "cache_read_tokens": usage.cacheRead if usage else None,
                "cache_write_tokens": usage.cacheWrite if usage else None,
                "total_tokens": (
                    usage.totalTokens
                    if usage.totalTokens is not None
                    else usage.input + usage.output + usage.cacheRead + usage.cacheWrite
                )
                if usage
                else None,
                "cost_total": (usage.cost or {}).get("total") if usage else None,
                "exit_code": fields.get("exit_code"),
                "custom_type": fields.get("custom_type"),
                "labels": [label for target, label in labels.items() if target == parsed.id and label],
                "on_active_path": parsed.id in on_path,
                "excluded_from_context": fields.get("excluded", False) or edits.get(parsed.id) is True,
                "context_edited": parsed.id in edits,
                "is_metadata": is_metadata(fields),
                "content_truncated": cut_content or cut_thinking,
                "redactions": sum(counts.values()),
                "turn_id": place.turn_id if place else None,
                "turn_index": place.turn_index if place else None,
                "message_index": place.message_index if place else None,
            }
        )
        redactions.update(counts)
    return rows, redactions


def _private_hidden(text: str, counts: Counter[str]) -> str:
    hidden, spans = hide_private(text)
    if spans:
        counts["private"] += spans
    return hidden


def _private_entries(fields_of: dict[str, dict[str, Any]], places: dict[str, Any]) -> set[str]:
    """The entries of private turns: every message of a turn whose user message starts with `#private`."""
    opened = {eid for eid, f in fields_of.items() if f["role"] == "user" and private_turn("\n".join(f["texts"]))}
    turns = {places[eid].turn_id for eid in opened if eid in places}
    return opened | {eid for eid in fields_of if eid in places and places[eid].turn_id in turns}


def _without_private(fields: dict[str, Any], whole: bool, counts: Counter[str]) -> dict[str, Any]:
    """A message's text fields with private spans hidden, or all of them (`whole`: a private turn's message)."""
    calls: list[ToolCallBlock] = fields.get("calls", [])
    if whole:
        counts["private"] += 1
        return {
            **fields,
            "texts": [PRIVATE_MARK],
            "thinking": [],
            "calls": [c.model_copy(update={"arguments": PRIVATE_MARK}) for c in calls],
            "error_message": PRIVATE_MARK if fields.get("error_message") else None,
        }
    hidden = dict(fields)
    hidden["texts"] = [_private_hidden(t, counts) for t in fields.get("texts", []) if t]
    hidden["thinking"] = [_private_hidden(t, counts) for t in fields.get("thinking", []) if t]
    error = fields.get("error_message")
    hidden["error_message"] = _private_hidden(error, counts) if error else error
    hidden["calls"] = []
    for call in calls:
        arguments, spans = hide_private_value(call.arguments)
        if spans:
            counts["private"] += spans
        hidden["calls"].append(call.model_copy(update={"arguments": arguments}) if spans else call)
    return hidden


def redact_arguments(value: Any, redactor: Redactor, counts: Counter[str]) -> Any:
    """Every string inside tool-call arguments, scanned as the text it is: once JSON-encoded, quotes turn
    into `\\"` and line breaks into `\\n`, and a rule looking for `"…"` or a wrapped line would miss it."""
    if isinstance(value, str):
        return redactor.redact(value, counts)
    if isinstance(value, list):
        return [redact_arguments(v, redactor, counts) for v in value]
    if isinstance(value, dict):
        masked = {}
        for key, item in value.items():
            if secret_argument(key, item):
                counts["secret-argument"] += 1
                masked[key] = "[REDACTED:secret-argument]"
            else:
                masked[key] = redact_arguments(item, redactor, counts)
        return masked
    return value


def _ancestors(entry_id: str, parent_of: dict[str, str | None]) -> set[str]:
    seen: set[str] = set()
    node = parent_of.get(entry_id)
    while node is not None and node not in seen:
        seen.add(node)
        node = parent_of.get(node)
    return seen


def _safe_time(value: str | float | None, session: ParsedSession, name: str, line: int):  # noqa: ANN202
    """The time, or None (listed with its file and line) when it is no time at all: one bad value costs that
    field, never the message, the file or the day."""
    try:
        return parse_timestamp(value) if value is not None else None
    except ValueError as exc:
        session.problems.append(Problem(name, line, "bad timestamp", f"{exc}; left empty"))
        return None


def to_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=MESSAGE_SCHEMA) if rows else empty_messages()
