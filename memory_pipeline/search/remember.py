"""Notes stored on purpose: what an agent or a person asks to keep (`memory_remember`), cited to the session
and turn where it was said.

A note lives in its own index, `memory-notes`, which no pipeline run writes or clears: re-running a day never
loses one. Its id comes from its content and citation, so storing the same note twice keeps one. Its text is
redacted like any session text before it is stored, and embedded when the embedding server is up (a note
stored while it is down is still found by BM25).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from memory_pipeline.search.engine import MemorySearch, Row
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.stores.elasticsearch import ensure_index
from memory_pipeline.stores.indices import NOTE_MAPPINGS, NOTES_INDEX, vector_field, vector_mapping
from memory_pipeline.stores.openai_compat import ServerError

MAX_NOTE_CHARS = 4000


class Note(BaseModel):
    """A note to keep: `project` is the working directory it belongs to; the session and turn cite its origin."""

    text: str = Field(min_length=1, max_length=MAX_NOTE_CHARS, description="What to remember, in one or two lines.")
    project: str = Field(min_length=1, description="The project (working directory) the note belongs to.")
    session_id: str | None = Field(None, max_length=200, description="The session where it was said.")
    turn_id: str | None = Field(None, max_length=200, description="The turn (its first entry id) in that session.")
    priority: Literal["high", "medium", "low"] = "high"
    tags: list[str] = Field(default_factory=list, max_length=10)
    author: Literal["agent", "person"] = "agent"

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("the note is empty")
        return text.strip()


def note_id(note: Note) -> str:
    """Stable for the same text in the same place: storing a note again never makes a second one."""
    key = "\x1f".join([note.project, note.session_id or "", note.turn_id or "", " ".join(note.text.split())])
    return "note-" + hashlib.sha1(key.encode()).hexdigest()[:20]


def note_document(note: Note, redactor: Redactor, now: datetime | None = None) -> tuple[str, dict[str, object]]:
    """(id, document) of a note, its text and tags redacted."""
    doc_id = note_id(note)
    return doc_id, {
        "doc_id": doc_id,
        "summary": redactor.redact(note.text),
        "tags": [redactor.redact(t) for t in note.tags],
        "priority": note.priority,
        "project": note.project,
        "session_id": note.session_id or "",
        "turn_id": note.turn_id or "",
        "author": note.author,
        "established_at": (now or datetime.now(UTC)).isoformat(),
    }


def remember(search: MemorySearch, note: Note, redactor: Redactor, now: datetime | None = None) -> Row:
    """Store `note` (idempotent) and return it as a search row; visible to the next search at once."""
    doc_id, document = note_document(note, redactor, now)
    existing = search.get([doc_id])
    if existing:
        return existing[0]  # the first time it was said stays its date
    ensure_index(search.es, NOTES_INDEX, NOTE_MAPPINGS)
    try:
        [vector] = search.embedder.embed([str(document["summary"])], purpose="document")
    except ServerError:
        vector = []  # found by BM25 until it is stored again with the embedder up
    if vector:
        field = vector_field(len(vector))
        search.es.indices.put_mapping(index=NOTES_INDEX, properties={field: vector_mapping(len(vector))})
        document |= {field: vector, "embed_model": search.embedder.model_id()}
    search.es.index(index=NOTES_INDEX, id=doc_id, document=document, refresh="wait_for")
    return search.get([doc_id])[0]
