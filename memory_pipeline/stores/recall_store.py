"""Vectors on the searchable memories: `memory-summary` ideas and `memory-observations` turns.

Each document keeps the hash of the text it was embedded from (with the model,
dimension and prefix), so an unchanged text is never embedded twice; vectors
live in `vector_<dims>`, so a model of another size adds a field beside the old
one instead of failing halfway through a write.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl
from elasticsearch import Elasticsearch

from memory_pipeline.stores.elasticsearch import (
    SyncCounts,
    bulk_apply,
    days_except,
    ensure_index,
    stored_hashes,
    stored_sources,
    sync_documents,
    with_hash,
)
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.indices import (
    EMBED_FIELDS,
    OBSERVATION_INDEX,
    OBSERVATION_MAPPINGS,
    RECALL_INDICES,
    SUMMARY_INDEX,
    vector_field,
    vector_mapping,
)


def embed_hash(text: str, model: str, dims: int | None, prefix: str) -> str:
    return hashlib.sha1(f"{model}\x1f{dims}\x1f{prefix}\x1f{text}".encode()).hexdigest()


def vector_fields(vector: list[float], model: str, text_hash: str | None = None) -> dict[str, object]:
    """A memory's vector and what it was made with, as every writer stores them (the recall stage, an edit, a
    note): `vector_<dims>`, `embed_model` and, when known, `embed_hash` (what a re-run compares)."""
    fields: dict[str, object] = {vector_field(len(vector)): vector, "embed_model": model}
    if text_hash:
        fields["embed_hash"] = text_hash
    return fields


def ensure_vectors(client: Elasticsearch, dims: int) -> None:
    """Both recall indices exist and have `vector_<dims>` (indexed, cosine) and the embed bookkeeping fields."""
    ensure_index(client, OBSERVATION_INDEX, OBSERVATION_MAPPINGS)
    properties = {
        **EMBED_FIELDS,
        vector_field(dims): vector_mapping(dims),
    }
    for index in RECALL_INDICES:
        if client.indices.exists(index=index):
            client.indices.put_mapping(index=index, properties=properties)


def texts_to_embed(client: Elasticsearch, observations: pl.DataFrame, partitions: list[str]) -> list[dict[str, str]]:
    """(index, doc_id, text, partition, stored embed hash) of every memory of these days. The observations are
    the run's frame; the summaries are what `memory-summary` holds, because every writer of that index leaves
    them there (a day's `memory_summary_index`, an import, the memories of a folder no longer configured, which
    no run writes again) and a run without the chat model has no summary frame: whatever the index holds without
    this model's vector is embedded, whoever wrote it."""
    items = [
        {"index": OBSERVATION_INDEX, "doc_id": r["doc_id"], "text": r["summary"], "partition": r["partition"]}
        for r in observations.iter_rows(named=True)
    ]
    if client.indices.exists(index=SUMMARY_INDEX):
        summaries = stored_sources(client, SUMMARY_INDEX, {"terms": {"partition": partitions}})
        items += [
            {"index": SUMMARY_INDEX, "doc_id": doc_id, "text": doc["summary"], "partition": doc["partition"]}
            for doc_id, doc in summaries.items()
        ]
    stored: dict[tuple[str, str], str] = {}
    for index in RECALL_INDICES:
        if client.indices.exists(index=index):
            hits = stored_sources(client, index, {"terms": {"partition": partitions}}, fields=["embed_hash"])
            stored |= {(index, doc_id): src.get("embed_hash", "") for doc_id, src in hits.items()}
    return [item | {"stored_hash": stored.get((item["index"], item["doc_id"]), "")} for item in items]


def write_observations(
    client: Elasticsearch, observations: pl.DataFrame, partitions: list[str], kept: Sequence[str] = ()
) -> SyncCounts:
    """Observation documents equal to the frame for these days (vectors on them are kept), but those of the
    sessions `kept` (of a folder no longer configured), left as they are."""
    ensure_index(client, OBSERVATION_INDEX, OBSERVATION_MAPPINGS)
    return sync_documents(
        client, OBSERVATION_INDEX, days_except(partitions, kept), _documents(observations), partial=True
    )


def observation_hashes(
    client: Elasticsearch, observations: pl.DataFrame, partitions: list[str], kept: Sequence[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """(id -> hash) of the frame's observation documents as `write_observations` writes them, and of those
    the index holds for these days (but the sessions `kept`): equal when the index is the frame."""
    expected = {doc_id: with_hash(row)[1] for doc_id, row in _documents(observations)}
    if not client.indices.exists(index=OBSERVATION_INDEX):
        return expected, {}
    return expected, stored_hashes(client, OBSERVATION_INDEX, days_except(partitions, kept))


def _documents(observations: pl.DataFrame) -> Iterator[tuple[str, dict[str, object]]]:
    return ((row["doc_id"], row) for row in observations.iter_rows(named=True))


def write_vectors(client: Elasticsearch, vectors: pl.DataFrame, dims: int) -> int:
    """The vectors merged into their memories' documents (partial updates: the rest of each document stays)."""
    if vectors.is_empty():
        return 0
    # An update reads its document first; one written since the last refresh (the observations just synced)
    # makes Elasticsearch refresh for that read. One refresh here instead: the bulk measured 1.7x faster.
    client.indices.refresh(index=list(RECALL_INDICES), ignore_unavailable=True)
    written = 0
    for index in RECALL_INDICES:
        part = vectors.filter(pl.col("index") == index)
        updates = [
            (r["doc_id"], vector_fields(r["vector"], r["model"], r["embed_hash"])) for r in part.iter_rows(named=True)
        ]
        written += bulk_apply(client, index, updates, partial=True)[0]
    return written


def vector_coverage(client: Elasticsearch, partitions: list[str], dims: int) -> dict[str, tuple[int, int]]:
    """Per recall index: (documents of these days, those with a `vector_<dims>` of the expected size)."""
    coverage = {}
    for index in RECALL_INDICES:
        if not client.indices.exists(index=index):
            coverage[index] = (0, 0)
            continue
        days = {"terms": {"partition": partitions}}
        total = client.count(index=index, query=days)["count"]
        with_vector = client.count(
            index=index, query={"bool": {"filter": [days, {"exists": {"field": vector_field(dims)}}]}}
        )["count"]
        coverage[index] = (total, with_vector)
    return coverage


TIE = 1e-4  # scores of identical vectors differ by float noise in the HNSW graph (about 1e-7)


def self_retrieval(
    es: Elasticsearch, embedder: EmbeddingsClient, partitions: list[str], dims: int, sample: int = 5
) -> tuple[int, int]:
    """(found first, tried): kNN with a memory's own text (up to `sample` of each recall index: summaries
    and observations, so an LLM-free day is tried too) should return that memory first."""
    sampled: list[tuple[str, dict]] = []
    for index in RECALL_INDICES:
        if not es.indices.exists(index=index):
            continue
        hits = es.search(
            index=index,
            size=sample,
            source=["summary"],
            sort=[{"doc_id": "asc"}],
            query={
                "bool": {"filter": [{"terms": {"partition": partitions}}, {"exists": {"field": vector_field(dims)}}]}
            },
        )["hits"]["hits"]
        sampled += [(index, hit) for hit in hits]
    if not sampled:
        return 0, 0
    # One embedding request and one multi-search for the whole sample: on a busy embedding server each
    # request waits its turn, and one request a memory made this check most of the step's time.
    vectors = embedder.embed([hit["_source"]["summary"] for _, hit in sampled], purpose="document")
    searches: list[dict] = []
    for (index, _), vector in zip(sampled, vectors, strict=True):
        # Among the days checked only: another day may hold the same text, embedded by another server
        # (floats differ in the last places), and come first for it.
        searches += [
            {"index": index},
            {
                "size": 10,
                "_source": ["summary"],
                "knn": {
                    "field": vector_field(dims),
                    "query_vector": vector,
                    "k": 10,
                    "num_candidates": 50,
                    "filter": {"terms": {"partition": partitions}},
                },
            },
        ]
    answers = es.msearch(searches=searches)["responses"]
    found = 0
    for (_, hit), answer in zip(sampled, answers, strict=True):
        if "error" in answer:
            raise RuntimeError(f"kNN self-retrieval of {hit['_id']} failed: {answer['error']}")
        top = answer["hits"]["hits"]
        # First, or tied first; or the first is the same text stored twice (same vector): either may come back.
        text = hit["_source"]["summary"]
        first = {h["_id"] for h in top if h["_score"] >= top[0]["_score"] - TIE} if top else set()
        if top and top[0]["_source"].get("summary") == text:
            first |= {h["_id"] for h in top if h["_source"].get("summary") == text}
        found += hit["_id"] in first
    tried = len(sampled)
    return found, tried


def observations_marked_or_naming(
    client: Elasticsearch, projects: Sequence[str], names: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The projects' observations that name one of `names` (what later decisions replaced) or carry a mark of
    replacement: doc id -> project, summary, established_at and superseded_by."""
    if not projects or not client.indices.exists(index=OBSERVATION_INDEX):
        return {}
    should = [{"exists": {"field": "superseded_by"}}, *({"match_phrase": {"summary": name}} for name in names)]
    query = {"bool": {"filter": [{"terms": {"project": list(projects)}}], "should": should, "minimum_should_match": 1}}
    fields = ["project", "summary", "established_at", "superseded_by"]
    return stored_sources(client, OBSERVATION_INDEX, query, fields=fields)
