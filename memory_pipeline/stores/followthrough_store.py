"""`memory-followthrough`: what happened after each memory was injected, one document per (memory, turn) with
a signal (followed, ignored, contradicted) and one per delivery of the memory to a session (`injected`).

Ids come from what a document is about (memory, session, turn; or memory, session, time of delivery), so a
re-run writes nothing new and a day's run owns its day's documents (`partition`). Evidence is a redacted
snippet of the message that shows the outcome; no other text of the session is kept here.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from elasticsearch import Elasticsearch
from pydantic import BaseModel, Field

from memory_pipeline.stores.elasticsearch import SyncCounts, ensure_index, stored_sources, sync_documents

FOLLOWTHROUGH_INDEX = "memory-followthrough"
# `corrected`: a person's correction no injected memory says (its `memory_id` names what it says, `correction:…`).
Signal = Literal["injected", "followed", "ignored", "contradicted", "corrected"]
SIGNALS: tuple[Signal, ...] = ("injected", "followed", "ignored", "contradicted")  # a memory's counters
DEMOTE_AFTER = 2  # distinct sessions whose person contradicted a memory before it stops being injected
_KEYWORD = {"type": "keyword"}
MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "memory_id": _KEYWORD,
        "signal": _KEYWORD,
        "project": _KEYWORD,
        "agent": _KEYWORD,
        "partition": _KEYWORD,
        "session_id": _KEYWORD,
        "turn_id": _KEYWORD,
        "at": {"type": "date"},
        "memory_kind": _KEYWORD,
        "memory_text": {"type": "text"},
        "evidence": {"type": "text"},
        "evidence_index": {"type": "integer"},
        "decided_by": _KEYWORD,
        "restated": {"type": "boolean"},
        "doc_hash": {"type": "keyword", "index": False},
    },
}


class FollowThrough(BaseModel):
    """One signal about one memory: a delivery, or a later turn that followed, ignored or contradicted it."""

    memory_id: str
    signal: Signal
    project: str = ""
    agent: str = ""
    partition: str
    session_id: str
    turn_id: str = Field("", description="The evidence turn (empty for a delivery).")
    at: datetime
    memory_kind: str = ""
    memory_text: str = ""
    evidence: str = ""
    evidence_index: int | None = None
    decided_by: str = ""
    restated: bool = False

    @property
    def doc_id(self) -> str:
        what = self.turn_id if self.signal != "injected" else f"injected@{self.at.isoformat()}"
        return hashlib.sha1(f"{self.memory_id}\x00{self.session_id}\x00{what}".encode()).hexdigest()


class Counters(BaseModel):
    """How often a memory was given to a session, and what the turns after did with it."""

    injected: int = 0
    followed: int = 0
    ignored: int = 0
    contradicted: int = 0
    contradicted_sessions: int = Field(0, description="The distinct sessions whose person contradicted it.")
    demoted: bool = Field(False, description=f"Contradicted in {DEMOTE_AFTER} sessions or more: no longer injected.")
    text: str = Field("never injected", description="`injected 12×, followed 9×, contradicted 1×`.")

    @classmethod
    def of(cls, counts: dict[str, int], contradicted_sessions: int = 0) -> Counters:
        seen = {name: counts.get(name, 0) for name in SIGNALS}
        text = ", ".join(f"{name} {n}×" for name, n in seen.items() if n) or "never injected"
        demoted = contradicted_sessions >= DEMOTE_AFTER
        if demoted:
            text += f"; contradicted in {contradicted_sessions} sessions: no longer injected"
        return cls(**seen, contradicted_sessions=contradicted_sessions, demoted=demoted, text=text)


def ensure_followthrough_index(client: Elasticsearch) -> None:
    ensure_index(client, FOLLOWTHROUGH_INDEX, MAPPINGS)


def sync_followthrough(client: Elasticsearch, days: Sequence[str], records: Iterable[FollowThrough]) -> SyncCounts:
    """Make the documents of `days` equal to `records`: new ones written, vanished ones deleted, same ones kept."""
    ensure_followthrough_index(client)
    documents = [(r.doc_id, r.model_dump(mode="json")) for r in records]
    counts = sync_documents(client, FOLLOWTHROUGH_INDEX, {"terms": {"partition": list(days)}}, documents)
    client.indices.refresh(index=FOLLOWTHROUGH_INDEX)
    return counts


def read_followthrough(client: Elasticsearch, query: dict[str, Any]) -> list[FollowThrough]:
    """Every stored signal matching `query` (none when the index does not exist yet)."""
    if not client.indices.exists(index=FOLLOWTHROUGH_INDEX):
        return []
    found = stored_sources(client, FOLLOWTHROUGH_INDEX, query)
    return sorted((FollowThrough.model_validate(s) for s in found.values()), key=lambda r: (r.at, r.doc_id))


def counters(client: Elasticsearch, memory_ids: Sequence[str]) -> dict[str, Counters]:
    """The counters of each of `memory_ids` (zeros for one never injected)."""
    result = {memory_id: Counters() for memory_id in memory_ids}
    if not memory_ids or not client.indices.exists(index=FOLLOWTHROUGH_INDEX):
        return result
    response = client.search(
        index=FOLLOWTHROUGH_INDEX,
        size=0,
        query={"terms": {"memory_id": list(memory_ids)}},
        aggs={
            "memory": {
                "terms": {"field": "memory_id", "size": len(memory_ids)},
                "aggs": {
                    "signal": {"terms": {"field": "signal", "size": len(SIGNALS)}},
                    "against": {
                        "filter": {"term": {"signal": "contradicted"}},
                        "aggs": {"sessions": {"cardinality": {"field": "session_id"}}},
                    },
                },
            }
        },
    )
    for bucket in response["aggregations"]["memory"]["buckets"]:
        counts = {b["key"]: b["doc_count"] for b in bucket["signal"]["buckets"]}
        result[bucket["key"]] = Counters.of(counts, int(bucket["against"]["sessions"]["value"]))
    return result


def contradictions(client: Elasticsearch, project: str | None = None) -> dict[str, list[FollowThrough]]:
    """Each memory contradicted by people in at least `DEMOTE_AFTER` distinct sessions: its contradicting turns,
    one per session (the first), oldest first. Such a memory is no longer injected."""
    filters: list[dict[str, Any]] = [{"term": {"signal": "contradicted"}}]
    if project:
        filters.append({"term": {"project": project}})
    by_memory: dict[str, dict[str, FollowThrough]] = defaultdict(dict)
    for record in read_followthrough(client, {"bool": {"filter": filters}}):
        by_memory[record.memory_id].setdefault(record.session_id, record)
    return {m: list(s.values()) for m, s in by_memory.items() if len(s) >= DEMOTE_AFTER}


def demoted_ids(client: Elasticsearch, project: str | None = None) -> set[str]:
    """The memories no longer injected: contradicted in `DEMOTE_AFTER` sessions or more."""
    return set(contradictions(client, project))


def repeated_corrections(client: Elasticsearch, project: str) -> dict[str, list[FollowThrough]]:
    """The corrections with no memory behind them that the person made in `DEMOTE_AFTER` sessions or more (one
    turn per session, the first), by what they say: each is worth a proposal."""
    query = {"bool": {"filter": [{"term": {"signal": "corrected"}}, {"term": {"project": project}}]}}
    by_key: dict[str, dict[str, FollowThrough]] = defaultdict(dict)
    for record in read_followthrough(client, query):
        by_key[record.memory_id].setdefault(record.session_id, record)
    return {k: list(s.values()) for k, s in by_key.items() if len(s) >= DEMOTE_AFTER}


def restated_ids(client: Elasticsearch, project: str | None = None) -> set[str]:
    """The memories the agent ignored and the person then said again: raised where they rank."""
    filters: list[dict[str, Any]] = [{"term": {"signal": "ignored"}}, {"term": {"restated": True}}]
    if project:
        filters.append({"term": {"project": project}})
    return {r.memory_id for r in read_followthrough(client, {"bool": {"filter": filters}})}
