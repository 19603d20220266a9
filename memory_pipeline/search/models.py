"""The search's records, one set for every caller (the CLI, the API, MCP, the browser, the pi tools): what to
search (`Filters`) and what comes back (`Memory` on the wire, `Row` inside the search, `MemoryDetail` with its
turn's messages)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, Field

from memory_pipeline.sentences import by_sentence
from memory_pipeline.stores.followthrough_store import Counters
from memory_pipeline.stores.indices import SEARCH_INDICES

KIND_INDEX = {kind: index for index, kind in SEARCH_INDICES.items()}
ONE_LINE_CHARS = 280


@dataclass(frozen=True)
class Filters:
    project: str | None = None
    since: str | None = None  # ISO date or datetime, inclusive
    until: str | None = None
    priority: tuple[str, ...] = ()
    kind: tuple[str, ...] = ()  # summary, observation
    session: str | None = None  # one session's memories (a compaction's summary reads its own session)
    agent: str | None = None  # one coding agent's memories (pi, claude-code, codex, gemini-cli)

    def clauses(self) -> list[dict[str, Any]]:
        clauses: list[dict[str, Any]] = []
        if self.project:
            clauses.append({"term": {"project": self.project}})
        if self.session:
            clauses.append({"term": {"session_id": self.session}})
        if self.agent:
            clauses.append({"term": {"agent": self.agent}})
        if self.since or self.until:
            clauses.append(
                {"range": {"established_at": {k: v for k, v in (("gte", self.since), ("lte", self.until)) if v}}}
            )
        if self.priority:
            clauses.append({"terms": {"priority": list(self.priority)}})
        return clauses

    def indices(self) -> list[str]:
        return [KIND_INDEX[k] for k in self.kind] if self.kind else list(SEARCH_INDICES)


class Memory(BaseModel):
    """One memory as every caller gets it (the CLI's JSON, the API, MCP, the pi tools): `id` is its stable
    citation."""

    id: str
    kind: str  # the index it is in: summary | observation | note
    time: str
    priority: str
    summary: str
    project: str
    session_id: str
    turn_id: str
    score: float = 0.0
    tags: list[str] = Field(default_factory=list)
    superseded_by: str | None = Field(
        None, description="A later decision replaced this one: the reflection or memory that did."
    )
    author: str | None = Field(None, description="Who stored a note on purpose (notes only).")
    agent: str = Field(
        "", description="The coding agent whose session it came from (pi, claude-code, codex, gemini-cli)."
    )
    said_in: int = Field(1, description="How many sessions said this same knowledge (restatements folded in).")
    restatements: list[str] = Field(
        default_factory=list, description="Ids of the memories folded into this one: the same knowledge said again."
    )
    current: str | None = Field(None, description="What holds now, when a later decision replaced this one.")
    held_until: str | None = Field(None, description="The day a later decision replaced this one.")
    folder_no_longer_configured: str | None = Field(
        None,
        description="The session folder it came from, when that folder is no longer configured (kept and "
        "searchable until `memory-pipeline folders --forget FOLDER`).",
    )
    bm25: float | None = Field(None, description="BM25 score, when the query's words matched.")
    similarity: float | None = Field(None, description="Cosine similarity to the query, when embeddings found it.")

    @classmethod
    def of(cls, row: Memory) -> Self:
        """Only the wire fields of `row` (a `Row` carries the ranking's working fields too)."""
        return cls.model_validate(row.model_dump(include=set(cls.model_fields)))


class Row(Memory):
    """A memory as the search works with it: the wire fields and what the ranking and rendering read."""

    knowledge: str = ""  # what a memory is: rule | decision | gotcha | fact | task ("" for observations)
    subject: str = ""
    evidence: str = ""  # the exact words a memory rests on
    evidence_role: str = ""  # who said them
    worded: bool = False  # matched most of the question's informative words (itself or a message of its turn)
    strong: bool = False  # above the relevance floor: an answer rather than a guess (set by `index`)
    messages: list[str] = Field(default_factory=list)  # raw messages of its turn that matched, best first
    restated_in: list[str] = Field(default_factory=list)  # the other sessions that said it (`consolidate.folded`)

    @property
    def one_line(self) -> str:
        """The memory on one line: whole, or its first sentences within 280 characters, marked when cut."""
        return by_sentence(self.summary, ONE_LINE_CHARS)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


class ToolCall(BaseModel):
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


class TurnMessage(BaseModel):
    role: str
    content: str | None = None
    tool_name: str | None = None
    tool_calls: list[ToolCall] | None = None
    is_error: bool | None = None
    doc_id: str | None = None
    entry_id: str | None = None
    message_timestamp: str | None = None


class Restatement(BaseModel):
    """The same knowledge said in another session: where and when, and in whose words."""

    id: str
    time: str = ""
    session_id: str = ""
    turn_id: str = ""
    agent: str = ""
    summary: str = ""
    evidence: str = ""
    evidence_role: str = ""


class RawMessage(TurnMessage):
    """A message of memory-raw as the detail layer reads it (the CLI shows all of it; the API the `TurnMessage`
    fields)."""

    exit_code: int | None = None
    entry_type: str | None = None
    message_index: int | None = None


class Detail(Row):
    """Layer 3 as the search makes it: a memory with every message of its source turn and the other sessions
    that said the same knowledge. The API and MCP send its `MemoryDetail` fields (`MemoryDetail.of`)."""

    source_turn: list[RawMessage] = Field(default_factory=list)
    said_again: list[Restatement] = Field(default_factory=list)
    followthrough: Counters = Field(default_factory=Counters)


class MemoryDetail(Memory):
    """A memory with the messages of the turn it came from (the detail layer), and the other sessions that said
    the same knowledge (`said_again`, oldest first; `said_in` counts every session, its own included)."""

    source_turn: list[TurnMessage] = Field(default_factory=list)
    said_again: list[Restatement] = Field(default_factory=list)
    followthrough: Counters = Field(
        default_factory=Counters,
        description="How often it was injected, and how often the turns after followed, ignored or contradicted it.",
    )


def row_of(hit: dict[str, Any], score: float = 0.0) -> Row:
    source = hit["_source"]
    return Row(
        id=hit["_id"],
        kind=SEARCH_INDICES.get(hit["_index"], hit["_index"]),
        time=source.get("established_at", ""),
        priority=source.get("priority", ""),
        summary=source.get("summary", ""),
        project=source.get("project", ""),
        session_id=source.get("session_id", ""),
        turn_id=source.get("turn_id", ""),
        score=score,
        tags=source.get("tags", []),
        superseded_by=source.get("superseded_by"),
        author=source.get("author"),
        agent=source.get("agent") or ("" if hit["_index"] == KIND_INDEX["note"] else "pi"),
        # `kind` in memory-summary is the knowledge's kind; the Row's own `kind` names the index.
        knowledge=source.get("kind", "") if hit["_index"] == KIND_INDEX["summary"] else "",
        subject=source.get("subject", ""),
        evidence=source.get("evidence", ""),
        evidence_role=source.get("evidence_role", ""),
    )
