"""`memory-reflections`: condensed memories per project and day, with their sources and supersession marks.

A day's reflections are kept equal to what its last run produced (new written, vanished deleted). Marks
set by a later day (`superseded_by`) are written as partial updates and never overwritten by the marked
day's own re-run, so a backfill of an old day does not resurrect a replaced decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from elasticsearch import Elasticsearch
from pydantic import BaseModel, Field

from memory_pipeline.stores.elasticsearch import bulk_apply, ensure_index, stored_sources, sync_documents
from memory_pipeline.stores.indices import (
    RAW_INDEX,
    REFLECTION_INDEX,
    REFLECTION_MAPPINGS,
    SUMMARY_INDEX,
    vector_field,
    vector_mapping,
)

Tier = Literal["recent", "older", "old"]


class Memory(BaseModel):
    """A `memory-summary` document with its vector, as reflection reads it."""

    doc_id: str
    summary: str
    tags: list[str] = Field(default_factory=list)
    priority: str = "low"
    session_id: str
    turn_id: str = ""
    project: str
    partition: str
    established_at: datetime
    vector: list[float]


class Reflection(BaseModel):
    """A `memory-reflections` document: one condensed memory and the memories it came from."""

    reflection_id: str
    project: str
    partition: str
    summary: str
    tags: list[str]
    priority: str
    kind: Literal["memory", "merged", "digest"]
    tier: Tier
    source_ids: list[str]
    session_ids: list[str]
    established_at: datetime  # the newest source: when this became true
    first_established_at: datetime
    supersedes: list[str] = Field(default_factory=list)
    superseded_by: str | None = None  # set by the later window that replaced it, never by its own
    method: str  # how the text was made: verbatim | llm-merge | llm-compress | fallback-* | digest
    window_hash: str = ""
    vector: list[float] = Field(default_factory=list, exclude=True)

    @property
    def active(self) -> bool:
        return self.superseded_by is None


class Supersession(BaseModel):
    old_id: str
    new_id: str
    similarity: float
    reason: str  # llm | cue | llm+cue


def ensure_reflections(client: Elasticsearch, dims: int) -> None:
    ensure_index(client, REFLECTION_INDEX, REFLECTION_MAPPINGS)
    client.indices.put_mapping(
        index=REFLECTION_INDEX,
        properties={vector_field(dims): vector_mapping(dims)},
    )


def read_memories(client: Elasticsearch, partitions: list[str], dims: int) -> tuple[list[Memory], int]:
    """The memories of these days that have a vector of this size, and how many have none (not embedded yet)."""
    if not client.indices.exists(index=SUMMARY_INDEX):
        return [], 0
    field = vector_field(dims)
    memories, missing = [], 0
    for doc_id, source in stored_sources(client, SUMMARY_INDEX, {"terms": {"partition": partitions}}).items():
        vector = source.get(field)
        if not vector:
            missing += 1
            continue
        memories.append(Memory.model_validate({**source, "doc_id": doc_id, "vector": vector}))
    return memories, missing


def _reflection(doc_id: str, source: dict[str, Any], field: str) -> Reflection:
    return Reflection.model_validate({**source, "reflection_id": doc_id, "vector": source.get(field) or []})


def read_reflections(client: Elasticsearch, query: dict[str, Any], dims: int) -> list[Reflection]:
    if not client.indices.exists(index=REFLECTION_INDEX):
        return []
    field = vector_field(dims)
    return [_reflection(i, s, field) for i, s in stored_sources(client, REFLECTION_INDEX, query).items()]


def active_reflections_before(
    client: Elasticsearch, projects: list[str], day: str, dims: int, recomputing: Sequence[str] = ()
) -> list[Reflection]:
    """The projects' reflections of windows before `day` that nothing has superseded yet, or that only one of
    the `recomputing` reflections did (its window is read again: whether the replacement still holds is for
    the new reading to say)."""
    if not projects:
        return []
    active: list[dict[str, Any]] = [{"bool": {"must_not": [{"exists": {"field": "superseded_by"}}]}}]
    if recomputing:
        active.append({"terms": {"superseded_by": sorted(recomputing)}})
    query = {
        "bool": {
            "filter": [{"terms": {"project": projects}}, {"range": {"partition": {"lt": day}}}],
            "should": active,
            "minimum_should_match": 1,
        }
    }
    return read_reflections(client, query, dims)


def sync_reflections(
    client: Elasticsearch,
    reflections: Sequence[Reflection],
    recomputed: Iterable[tuple[str, str]],
    supersessions: Sequence[Supersession],
    dims: int,
    unmarked: Sequence[str] = (),
) -> dict[str, int]:
    """Write the recomputed (project, day) windows' reflections, delete their vanished ones, clear the marks
    they no longer make (`unmarked`, and any naming a reflection now gone), and mark what was superseded (on
    the reflection and on its source memories)."""
    ensure_reflections(client, dims)
    windows = [
        {"bool": {"filter": [{"term": {"project": project}}, {"term": {"partition": partition}}]}}
        for project, partition in recomputed
    ]
    owned = {"bool": {"should": windows, "minimum_should_match": 1}} if windows else {"match_none": {}}
    documents = (
        # `superseded_by` is written by the later window that replaced a reflection, never by its own.
        (r.reflection_id, {**r.model_dump(mode="json", exclude={"superseded_by"}), vector_field(dims): r.vector})
        for r in reflections
    )
    counts = sync_documents(client, REFLECTION_INDEX, owned, documents, partial=True)
    client.indices.refresh(index=REFLECTION_INDEX)
    cleared = clear_marks(client, unmarked) + clear_dangling_marks(client, sorted({p for p, _ in recomputed}))
    marked = mark_superseded(client, supersessions)
    return {
        "written": counts.written,
        "deleted": counts.deleted,
        "unchanged": counts.unchanged,
        "superseded": marked,
        "marks_cleared": cleared,
    }


def dangling_marks(client: Elasticsearch, projects: Sequence[str]) -> dict[str, list[str]]:
    """Index -> ids of the projects' reflections and memories whose `superseded_by` names a reflection or a
    memory that no longer exists (a recomputed window deleted it; the model's reading replaced the own words
    that replaced it, `reflect.replacing`)."""
    if not projects:
        return {}
    query = {"bool": {"filter": [{"terms": {"project": list(projects)}}, {"exists": {"field": "superseded_by"}}]}}
    marks = {
        index: stored_sources(client, index, query, fields=["superseded_by"])
        for index in (REFLECTION_INDEX, SUMMARY_INDEX)
        if client.indices.exists(index=index)
    }
    targets = sorted({source["superseded_by"] for hits in marks.values() for source in hits.values()})
    existing = {
        doc_id
        for index in marks
        for doc_id in (stored_sources(client, index, {"ids": {"values": targets}}, fields=[]) if targets else {})
    }
    found = {
        index: sorted(doc_id for doc_id, source in hits.items() if source["superseded_by"] not in existing)
        for index, hits in marks.items()
    }
    return {index: ids for index, ids in found.items() if ids}


def clear_marks(client: Elasticsearch, reflection_ids: Sequence[str]) -> int:
    """Clear the supersession marks of these reflections and of the memories they came from."""
    if not reflection_ids:
        return 0
    sources = reflection_sources(client, reflection_ids)
    bulk_apply(client, REFLECTION_INDEX, [(rid, {"superseded_by": None}) for rid in sources], partial=True)
    wanted = sorted({memory_id for ids in sources.values() for memory_id in ids})
    # Only memories still stored: a partial update of a forgotten one would bring a husk of it back.
    existing = (
        stored_sources(client, SUMMARY_INDEX, {"ids": {"values": wanted}}, fields=["superseded_by"]) if wanted else {}
    )
    # A mark naming a memory is replacement by words' (`reflect.replacing`), not this reflection's: it stays.
    targets = sorted({str(s["superseded_by"]) for s in existing.values() if s.get("superseded_by")})
    by_words = set(stored_sources(client, SUMMARY_INDEX, {"ids": {"values": targets}}, fields=[])) if targets else set()
    cleared = [memory_id for memory_id, s in existing.items() if s.get("superseded_by") not in by_words]
    bulk_apply(client, SUMMARY_INDEX, [(memory_id, {"superseded_by": None}) for memory_id in cleared], partial=True)
    client.indices.refresh(index=[REFLECTION_INDEX, SUMMARY_INDEX])
    return len(sources)


def clear_dangling_marks(client: Elasticsearch, projects: Sequence[str]) -> int:
    """Clear the marks `dangling_marks` finds: the recomputed window's own supersessions (`mark_superseded`,
    right after) mark again what it still replaces, so a mark never names a reflection nobody can read."""
    dangling = dangling_marks(client, projects)
    for index, ids in dangling.items():
        bulk_apply(client, index, [(doc_id, {"superseded_by": None}) for doc_id in ids], partial=True)
    if dangling:
        client.indices.refresh(index=list(dangling))
    return sum(len(ids) for ids in dangling.values())


def reflection_sources(client: Elasticsearch, reflection_ids: Iterable[str]) -> dict[str, list[str]]:
    """The memory ids each of these reflections came from (reflections that no longer exist are left out)."""
    if not client.indices.exists(index=REFLECTION_INDEX):
        return {}
    query = {"ids": {"values": sorted(reflection_ids)}}
    hits = stored_sources(client, REFLECTION_INDEX, query, fields=["source_ids"])
    return {rid: source.get("source_ids", []) for rid, source in hits.items()}


def mark_superseded(client: Elasticsearch, supersessions: Sequence[Supersession]) -> int:
    if not supersessions:
        return 0
    marks = {s.old_id: s.new_id for s in supersessions}
    sources = reflection_sources(client, marks)
    bulk_apply(client, REFLECTION_INDEX, [(old, {"superseded_by": new}) for old, new in marks.items()], partial=True)
    memory_marks = [(memory_id, {"superseded_by": marks[old]}) for old, ids in sources.items() for memory_id in ids]
    bulk_apply(client, SUMMARY_INDEX, memory_marks, partial=True)
    client.indices.refresh(index=[REFLECTION_INDEX, SUMMARY_INDEX])
    return len(marks)


_MESSAGE_FIELDS = [
    "doc_id", "session_id", "turn_id", "turn_index", "message_index", "project", "role", "content", "tool_calls",
    "tool_name", "tool_call_id", "is_error", "exit_code", "message_timestamp",
]  # fmt: skip


def read_messages(client: Elasticsearch, partitions: list[str]) -> list[dict[str, Any]]:
    """Active-path conversation messages of these days (what friction analysis reads)."""
    if not client.indices.exists(index=RAW_INDEX):
        return []
    query = {
        "bool": {
            "filter": [
                {"terms": {"partition": partitions}},
                {"term": {"on_active_path": True}},
                {"terms": {"role": ["user", "assistant", "toolResult", "bashExecution"]}},
            ]
        }
    }
    return list(stored_sources(client, RAW_INDEX, query, fields=_MESSAGE_FIELDS).values())


def read_summary_sources(client: Elasticsearch, query: dict[str, Any]) -> list[dict[str, Any]]:
    """`memory-summary` documents (without vectors) matching `query`, each with its id."""
    if not client.indices.exists(index=SUMMARY_INDEX):
        return []
    fields = ["summary", "tags", "priority", "session_id", "project", "established_at", "superseded_by"]
    return [{**s, "doc_id": i} for i, s in stored_sources(client, SUMMARY_INDEX, query, fields=fields).items()]


def supporting_memories(
    client: Elasticsearch, project: str, vector: list[float], dims: int, min_cosine: float, before: str
) -> list[dict[str, Any]]:
    """Memories of `project` established before `before` whose vector is within `min_cosine` of `vector`."""
    if not client.indices.exists(index=SUMMARY_INDEX):
        return []
    response = client.search(
        index=SUMMARY_INDEX,
        knn={
            "field": vector_field(dims),
            "query_vector": vector,
            "k": 50,
            "num_candidates": 200,
            "similarity": min_cosine,  # the raw cosine, not the (1 + cos) / 2 score
            "filter": {
                "bool": {"filter": [{"term": {"project": project}}, {"range": {"established_at": {"lt": before}}}]}
            },
        },
        source=["session_id", "established_at", "superseded_by"],
        size=50,
    )
    return [{**hit["_source"], "doc_id": hit["_id"]} for hit in response["hits"]["hits"]]


@dataclass
class RuleEvidence:
    """What a promoted rule rests on: the memories that support it (its own evidence and later ones close to
    it), and the decision that replaced it with that decision's sources, when one did."""

    memories: list[dict[str, Any]]
    contradicted_by: str | None
    against: set[str]
    current: str | None = None  # the replacing decision's text: what holds now
    replaced_on: str | None = None  # its day


def rule_evidence(
    client: Elasticsearch,
    project: str,
    vector: list[float],
    dims: int,
    min_cosine: float,
    before: str,
    evidence_ids: list[str],
) -> RuleEvidence:
    """The evidence of one promoted rule, as `rule_maturity` weighs it."""
    hits = supporting_memories(client, project, vector, dims, min_cosine, before)
    own = read_summary_sources(client, {"ids": {"values": evidence_ids}})
    contradicted = next((h["superseded_by"] for h in [*own, *hits] if h.get("superseded_by")), None)
    if not contradicted:
        return RuleEvidence([*hits, *own], None, set())
    fields = ["source_ids", "summary", "established_at"]
    found = stored_sources(client, REFLECTION_INDEX, {"ids": {"values": [contradicted]}}, fields=fields)
    if contradicted not in found:  # replaced by a memory's words (`reflect.replacing`): it is its own source
        found = {
            doc_id: {**source, "source_ids": [doc_id]}
            for doc_id, source in stored_sources(
                client, SUMMARY_INDEX, {"ids": {"values": [contradicted]}}, fields=["summary", "established_at"]
            ).items()
        }
    replacement = found.get(contradicted, {})
    return RuleEvidence(
        [*hits, *own],
        contradicted,
        set(replacement.get("source_ids", [])),
        replacement.get("summary") or None,
        str(replacement.get("established_at") or "")[:10] or None,
    )


def superseded_memories(client: Elasticsearch, project: str) -> dict[str, str]:
    """Memory id -> the reflection (or, replaced by its words, the memory) that replaced it, for every replaced
    memory of a project."""
    if not client.indices.exists(index=SUMMARY_INDEX):
        return {}
    query = {"bool": {"filter": [{"term": {"project": project}}, {"exists": {"field": "superseded_by"}}]}}
    hits = stored_sources(client, SUMMARY_INDEX, query, fields=["superseded_by"])
    return {doc_id: source["superseded_by"] for doc_id, source in hits.items()}
