"""The search's records, one set for every caller (the CLI, the API, MCP, the browser, the pi tools): what to
search (`Filters`) and what comes back (`Row`, one memory; its detail adds the turn's messages)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memory_pipeline.sentences import by_sentence
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

    def clauses(self) -> list[dict[str, Any]]:
        clauses: list[dict[str, Any]] = []
        if self.project:
            clauses.append({"term": {"project": self.project}})
        if self.session:
            clauses.append({"term": {"session_id": self.session}})
        if self.since or self.until:
            clauses.append(
                {"range": {"established_at": {k: v for k, v in (("gte", self.since), ("lte", self.until)) if v}}}
            )
        if self.priority:
            clauses.append({"terms": {"priority": list(self.priority)}})
        return clauses

    def indices(self) -> list[str]:
        return [KIND_INDEX[k] for k in self.kind] if self.kind else list(SEARCH_INDICES)


@dataclass
class Row:
    id: str
    kind: str
    time: str
    priority: str
    summary: str
    project: str
    session_id: str
    turn_id: str
    score: float = 0.0
    tags: list[str] = field(default_factory=list)
    superseded_by: str | None = None  # a later decision replaced this one (reflection's mark)
    author: str | None = None  # who stored a note on purpose (notes only)
    knowledge: str = ""  # what a memory is: rule | decision | gotcha | fact | task ("" for observations)
    subject: str = ""
    evidence: str = ""  # the exact words a memory rests on
    evidence_role: str = ""  # who said them
    bm25: float | None = None  # the BM25 score, when the words matched (the memory's, else its turn's messages)
    similarity: float | None = None  # the cosine similarity to the query, when the embeddings found it
    worded: bool = False  # matched most of the question's informative words (itself or a message of its turn)
    strong: bool = False  # above the relevance floor: an answer rather than a guess (set by `index`)
    messages: list[str] = field(default_factory=list)  # raw messages of its turn that matched, best first

    @property
    def one_line(self) -> str:
        """The memory on one line: whole, or its first sentences within 280 characters, marked when cut."""
        return by_sentence(self.summary, ONE_LINE_CHARS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
        # `kind` in memory-summary is the knowledge's kind; the Row's own `kind` names the index.
        knowledge=source.get("kind", "") if hit["_index"] == KIND_INDEX["summary"] else "",
        subject=source.get("subject", ""),
        evidence=source.get("evidence", ""),
        evidence_role=source.get("evidence_role", ""),
    )
