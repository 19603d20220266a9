"""The pipeline's Elasticsearch indices: names, explicit mappings, document shapes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

RAW_INDEX = "memory-raw"
RAW_FILES_INDEX = "memory-raw-files"

_KEYWORD = {"type": "keyword"}
# Filtered (keyword) and searched (text) at once.
_KEYWORD_TEXT = {"type": "keyword", "ignore_above": 2048, "fields": {"text": {"type": "text"}}}
_DATE = {"type": "date"}
# Set on a `memory-raw` document whose message is no longer in its session file (cut short after indexing):
# the memory is the record, so the message stays, marked with when the pipeline found it gone.
LEFT_FILE = "left_file_at"

RAW_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "doc_id": _KEYWORD,
        "doc_hash": {"type": "keyword", "index": False},
        "doc_checksum": {"type": "long"},
        "partition": _KEYWORD,
        "session_id": _KEYWORD,
        "session_file": _KEYWORD_TEXT,
        # The coding agent that wrote the session (pi, claude-code, codex, gemini-cli): every search can filter by it.
        "agent": _KEYWORD,
        "project": _KEYWORD_TEXT,
        "session_name": _KEYWORD_TEXT,
        "session_started_at": _DATE,
        "parent_session": _KEYWORD,
        "format_version": {"type": "byte"},
        "entry_id": _KEYWORD,
        "parent_id": _KEYWORD,
        "line": {"type": "integer"},
        "entry_type": _KEYWORD,
        "entry_timestamp": _DATE,
        "message_timestamp": _DATE,
        "role": _KEYWORD,
        "content": {"type": "text"},
        "thinking": {"type": "text"},
        "tool_calls": {"properties": {"id": _KEYWORD, "name": _KEYWORD_TEXT, "arguments": {"type": "text"}}},
        "tool_name": _KEYWORD_TEXT,
        "tool_call_id": _KEYWORD,
        "tool_call_entry_id": _KEYWORD,
        "is_error": {"type": "boolean"},
        "has_image": {"type": "boolean"},
        "image_mime_types": _KEYWORD,
        "provider": _KEYWORD,
        "model": _KEYWORD_TEXT,
        "api": _KEYWORD,
        "stop_reason": _KEYWORD,
        "error_message": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 1024}}},
        "input_tokens": {"type": "long"},
        "output_tokens": {"type": "long"},
        "cache_read_tokens": {"type": "long"},
        "cache_write_tokens": {"type": "long"},
        "total_tokens": {"type": "long"},
        "cost_total": {"type": "double"},
        "exit_code": {"type": "integer"},
        "custom_type": _KEYWORD,
        "labels": _KEYWORD_TEXT,
        "on_active_path": {"type": "boolean"},
        "excluded_from_context": {"type": "boolean"},
        "context_edited": {"type": "boolean"},
        "content_truncated": {"type": "boolean"},
        "redactions": {"type": "integer"},
        "turn_id": _KEYWORD,
        "turn_index": {"type": "integer"},
        "message_index": {"type": "integer"},
        LEFT_FILE: _DATE,
    },
}

RAW_FILES_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "session_id": _KEYWORD,
        "session_file": _KEYWORD,
        "partition": _KEYWORD,
        "size": {"type": "long"},
        "mtime_ns": {"type": "long"},
        "fingerprint": _KEYWORD,
        "parser_version": _KEYWORD,
        "message_count": {"type": "integer"},
        # What a parse of the file depends on beside its bytes (a Gemini chat's project is a file beside it).
        "project": _KEYWORD,
        "folder": _KEYWORD,  # the configured folder the file was found under
    },
}


SUMMARY_INDEX = "memory-summary"
LEDGER_INDEX = "memory-summary-turns"

SUMMARY_MAPPINGS: dict[str, Any] = {
    # Not strict: the recall stage adds vector fields to the same documents.
    "dynamic": "false",
    "properties": {
        "doc_id": _KEYWORD,
        "doc_hash": {"type": "keyword", "index": False},
        "summary": {"type": "text"},
        "tags": _KEYWORD_TEXT,
        "priority": _KEYWORD,
        # One piece of knowledge: its kind, what it is about, the files it concerns, the words it rests on.
        "kind": _KEYWORD,
        "subject": {"type": "text"},
        "files": _KEYWORD,
        "evidence": {"type": "text"},
        "evidence_role": _KEYWORD,
        "source_refs": {"properties": {"session_id": _KEYWORD, "turn_id": _KEYWORD}},
        "session_id": _KEYWORD,
        "turn_id": _KEYWORD,
        "project": _KEYWORD_TEXT,
        "agent": _KEYWORD,
        "partition": _KEYWORD,
        "established_at": {"type": "date"},
        "summarized_at": {"type": "date"},
        "model": _KEYWORD,
        "prompt_version": _KEYWORD,
        "turn_content_hash": _KEYWORD,
        # Set when a later decision replaced this one (the memory itself is kept): by reflection (a reflection's
        # id), or at once by the later decision's words (its memory id, `reflect.replacing`).
        "superseded_by": _KEYWORD,
    },
}
LEDGER_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "session_id": _KEYWORD,
        "turn_id": _KEYWORD,
        "partition": _KEYWORD,
        "content_hash": _KEYWORD,
        "prompt_version": _KEYWORD,
        "model": _KEYWORD,
        "status": _KEYWORD,
        "reason": {"type": "text"},
        "ideas": {"type": "integer"},
        "summarized_at": {"type": "date"},
        "doc_hash": {"type": "keyword", "index": False},
    },
}


OBSERVATION_INDEX = "memory-observations"
OBSERVATION_MAPPINGS: dict[str, Any] = {
    "dynamic": "false",
    "properties": {
        "doc_id": _KEYWORD,
        "doc_hash": {"type": "keyword", "index": False},
        "kind": _KEYWORD,
        "summary": {"type": "text"},
        "tags": _KEYWORD_TEXT,
        "priority": _KEYWORD,
        "project": _KEYWORD_TEXT,
        "agent": _KEYWORD,
        "partition": _KEYWORD,
        "session_id": _KEYWORD,
        "turn_id": _KEYWORD,
        "established_at": {"type": "date"},
        "context": {"type": "text"},  # the turn before's request: searched, with less weight
        # Set when a later decision replaced what this turn chose ("Set up echarts for charts in invoices").
        "superseded_by": _KEYWORD,
    },
}
REFLECTION_INDEX = "memory-reflections"
REFLECTION_MAPPINGS: dict[str, Any] = {
    # Not strict: the vector field is added beside, as on the recall indices.
    "dynamic": "false",
    "properties": {
        "reflection_id": _KEYWORD,
        "doc_hash": {"type": "keyword", "index": False},
        "project": _KEYWORD_TEXT,
        "partition": _KEYWORD,
        "summary": {"type": "text"},
        "tags": _KEYWORD_TEXT,
        "priority": _KEYWORD,
        "kind": _KEYWORD,
        "tier": _KEYWORD,
        "source_ids": _KEYWORD,
        "session_ids": _KEYWORD,
        "established_at": _DATE,
        "first_established_at": _DATE,
        "supersedes": _KEYWORD,
        "superseded_by": _KEYWORD,
        "method": _KEYWORD,
        "window_hash": _KEYWORD,
    },
}

# Every index the pipeline writes, all partitioned by session day.
PIPELINE_INDICES = (RAW_INDEX, RAW_FILES_INDEX, SUMMARY_INDEX, LEDGER_INDEX, OBSERVATION_INDEX, REFLECTION_INDEX)
# Both kinds of memory the pipeline makes searchable, and the fields every one of their documents has.
RECALL_INDICES = {SUMMARY_INDEX: "summary", OBSERVATION_INDEX: "observation"}

# Notes stored on purpose (`memory_remember`): not made by the pipeline, so no day's re-run touches them.
NOTES_INDEX = "memory-notes"
NOTE_MAPPINGS: dict[str, Any] = {
    "dynamic": "false",
    "properties": {
        "doc_id": _KEYWORD,
        "summary": {"type": "text"},
        "tags": _KEYWORD_TEXT,
        "priority": _KEYWORD,
        "project": _KEYWORD_TEXT,
        "session_id": _KEYWORD,
        "turn_id": _KEYWORD,
        "author": _KEYWORD,
        "agent": _KEYWORD,
        "established_at": {"type": "date"},
        "embed_model": _KEYWORD,
    },
}
# A forgotten memory, kept whole for its undo (`UNDO_DAYS`, limits.py) and no longer: never searched.
FORGOTTEN_INDEX = "memory-forgotten"
FORGOTTEN_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "memory_id": _KEYWORD,
        "index": _KEYWORD,
        "forgotten_at": _DATE,
        "document": {"type": "object", "enabled": False},  # kept as it was, never indexed
    },
}
# Everything the search layers read, by the kind a result shows.
SEARCH_INDICES = {**RECALL_INDICES, NOTES_INDEX: "note"}
EMBED_FIELDS = {"embed_hash": _KEYWORD, "embed_model": _KEYWORD}


def vector_field(dims: int) -> str:
    """One dense_vector field per dimension: a model with another size writes beside, never over, the old one."""
    return f"vector_{dims}"


def vector_mapping(dims: int) -> dict[str, Any]:
    """The mapping of `vector_field(dims)`: indexed for kNN, cosine similarity."""
    return {"type": "dense_vector", "dims": dims, "index": True, "similarity": "cosine"}


class ToolCallDoc(TypedDict):
    id: str
    name: str
    arguments: str


class RawMessageDoc(TypedDict):
    """A `memory-raw` document: one message (see RAW_MAPPINGS)."""

    doc_id: str
    partition: str
    session_id: str
    session_file: str
    agent: str
    project: str
    session_name: str | None
    session_started_at: datetime
    parent_session: str | None
    format_version: int
    entry_id: str
    parent_id: str | None
    line: int
    entry_type: str
    entry_timestamp: datetime | None
    message_timestamp: datetime | None
    role: str
    content: str
    thinking: str | None
    tool_calls: list[ToolCallDoc]
    tool_name: str | None
    tool_call_id: str | None
    tool_call_entry_id: str | None
    is_error: bool | None
    has_image: bool
    image_mime_types: list[str]
    provider: str | None
    model: str | None
    api: str | None
    stop_reason: str | None
    error_message: str | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    total_tokens: int | None
    cost_total: float | None
    exit_code: int | None
    custom_type: str | None
    labels: list[str]
    on_active_path: bool
    excluded_from_context: bool
    context_edited: bool
    content_truncated: bool
    redactions: int
    turn_id: str
    turn_index: int
    message_index: int


class RawFileDoc(TypedDict):
    """A `memory-raw-files` document: what was indexed from one session file, to skip it next time."""

    session_id: str
    session_file: str
    partition: str
    size: int
    mtime_ns: int
    fingerprint: str
    parser_version: str
    message_count: int
    project: str
    folder: str


RAW_MESSAGE_DOC = TypeAdapter(RawMessageDoc)
RAW_DOC_FIELDS = tuple(RawMessageDoc.__annotations__)
