"""Every write to the searchable memories made outside a pipeline run: notes stored on purpose (`memory-notes`,
which no run writes or clears) and people's edits and forgets; plus the reads those need (the text of a cited
turn, the glance page's counts). `MemorySearch` only reads; the service, MCP and the CLI write through this."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError
from pydantic import BaseModel

from memory_pipeline.settings import Settings
from memory_pipeline.stores.activity import Series, glance
from memory_pipeline.stores.elasticsearch import bulk_apply, delete_matching, ensure_index, make_client, stored_sources
from memory_pipeline.stores.embeddings import EmbeddingsClient, embeddings_client
from memory_pipeline.stores.indices import (
    FORGOTTEN_INDEX,
    FORGOTTEN_MAPPINGS,
    LEDGER_INDEX,
    NOTE_MAPPINGS,
    NOTES_INDEX,
    OBSERVATION_INDEX,
    OBSERVATION_MAPPINGS,
    RAW_INDEX,
    RECALL_INDICES,
    SEARCH_INDICES,
    SUMMARY_INDEX,
    SUMMARY_MAPPINGS,
    vector_field,
    vector_mapping,
)
from memory_pipeline.stores.openai_compat import ServerError
from memory_pipeline.stores.raw_store import turn_texts
from memory_pipeline.stores.recall_store import embed_hash, vector_fields

# Every index of memories (what search reads), with the mapping each is made with.
MEMORY_MAPPINGS: dict[str, dict[str, Any]] = {
    SUMMARY_INDEX: SUMMARY_MAPPINGS,
    OBSERVATION_INDEX: OBSERVATION_MAPPINGS,
    NOTES_INDEX: NOTE_MAPPINGS,
}
VECTOR_KEYS = ("embed_hash", "embed_model")


class HeldMemory(BaseModel):
    """A forgotten memory kept so its forget can be undone: what it said, where, and when it was forgotten."""

    memory_id: str
    kind: str  # the index it came from, as search names it: summary | observation | note
    forgotten_at: str
    summary: str = ""
    project: str = ""


def without_vectors(document: dict[str, Any]) -> dict[str, Any]:
    """A memory without its vector fields (`vector_<dims>`, what it was embedded with)."""
    return {k: v for k, v in document.items() if not k.startswith("vector_") and k not in VECTOR_KEYS}


class MemoryStore:
    def __init__(self, es: Elasticsearch, embedder: EmbeddingsClient) -> None:
        self._es = es
        self._embedder = embedder

    def _vector(self, text: str, hashed: bool) -> tuple[dict[str, object], int]:
        """The vector fields of `text` (with the hash the pipeline compares when `hashed`) and their size; none
        while the embedding server is down (BM25 finds it until it is stored again, or the next run embeds it)."""
        try:
            [vector] = self._embedder.embed([text], purpose="document")
        except ServerError:
            return {}, 0
        model = self._embedder.model_id()
        digest = embed_hash(text, model, self._embedder.dims, self._embedder.prefix("document")) if hashed else None
        return vector_fields(vector, model, digest), len(vector)

    def turn_roles(self, session_id: str, turn_id: str) -> dict[str, Any] | None:
        """What each role said in one turn, as `memory-raw` holds it (None when it is not indexed)."""
        return turn_texts(self._es, [session_id]).get((session_id, turn_id))

    def add_note(self, doc_id: str, document: dict[str, object]) -> None:
        """Stores a note (same id, same document: storing it again changes nothing), embedded when the embedding
        server is up; visible to the next search at once."""
        ensure_index(self._es, NOTES_INDEX, NOTE_MAPPINGS)
        fields, dims = self._vector(str(document["summary"]), hashed=False)
        if dims:
            self._es.indices.put_mapping(index=NOTES_INDEX, properties={vector_field(dims): vector_mapping(dims)})
        self._es.index(index=NOTES_INDEX, id=doc_id, document=document | fields, refresh="wait_for")

    def memories(self, index: str) -> dict[str, dict[str, Any]]:
        """Every memory of `index` (id -> document), vectors included; none when the index is not made yet."""
        if not self._es.indices.exists(index=index):
            return {}
        return stored_sources(self._es, index, {"match_all": {}})

    def put_memories(self, index: str, documents: dict[str, dict[str, Any]]) -> tuple[int, int]:
        """Writes memories by id (an id stored already is replaced: writing twice stores once); one without a
        vector of the embedding server's model is embedded now, when the server is up (else the next run of its
        day embeds it, as after an edit). (written, embedded)."""
        ensure_index(self._es, index, MEMORY_MAPPINGS[index])
        try:
            model: str | None = self._embedder.model_id()
        except ServerError:
            model = None
        stale = [i for i, d in documents.items() if d.get("embed_model") != model or not _has_vector(d)]
        documents = {i: (without_vectors(d) if i in stale else d) for i, d in documents.items()}
        embedded = 0
        if stale and model:
            try:
                vectors = self._embedder.embed([str(documents[i].get("summary") or "") for i in stale])
            except ServerError:
                vectors = []
            prefix = self._embedder.prefix("document")
            for doc_id, vector in zip(stale, vectors, strict=False):
                text = str(documents[doc_id].get("summary") or "")
                digest = embed_hash(text, model, self._embedder.dims, prefix) if index in RECALL_INDICES else None
                documents[doc_id] = documents[doc_id] | vector_fields(vector, model, digest)
                embedded += 1
        for dims in {len(v) for d in documents.values() for k, v in d.items() if k.startswith("vector_")}:
            self._es.indices.put_mapping(index=index, properties={vector_field(dims): vector_mapping(dims)})
        written, _ = bulk_apply(self._es, index, documents.items())
        self._es.indices.refresh(index=index)
        return written, embedded

    def update(self, index: str, memory_id: str, text: str | None = None, priority: str | None = None) -> None:
        """A person's edit: a new text (with its new vector when the embedding server is up) or priority."""
        change: dict[str, object] = {}
        if text:
            change["summary"] = text
            change |= self._vector(text, hashed=True)[0]
        if priority:
            change["priority"] = priority
        self._es.update(index=index, id=memory_id, doc=change, refresh="wait_for")

    def hold(self, index: str, memory_id: str, at: datetime) -> None:
        """Keeps the memory whole, out of every search, so a forget can be undone (`restore`)."""
        document = self._es.get(index=index, id=memory_id)["_source"]
        ensure_index(self._es, FORGOTTEN_INDEX, FORGOTTEN_MAPPINGS)
        held = {"memory_id": memory_id, "index": index, "forgotten_at": at.isoformat(), "document": document}
        self._es.index(index=FORGOTTEN_INDEX, id=memory_id, document=held, refresh="wait_for")

    def restore(self, memory_id: str, since: datetime) -> str | None:
        """Puts back a memory held since `since` or later (its index, id, text and vector as they were); the
        index it went back to, or None when nothing is held for it."""
        if not self._es.indices.exists(index=FORGOTTEN_INDEX):
            return None
        try:
            held = self._es.get(index=FORGOTTEN_INDEX, id=memory_id)["_source"]
        except NotFoundError:
            return None
        if datetime.fromisoformat(held["forgotten_at"]) < since:
            return None
        self._es.index(index=held["index"], id=memory_id, document=held["document"], refresh="wait_for")
        self._es.delete(index=FORGOTTEN_INDEX, id=memory_id, refresh="wait_for")
        return str(held["index"])

    def held(self, since: datetime, size: int = 100) -> list[HeldMemory]:
        """The memories forgotten since `since` and kept for their undo, the latest forgotten first."""
        if not self._es.indices.exists(index=FORGOTTEN_INDEX):
            return []
        hits = self._es.search(
            index=FORGOTTEN_INDEX,
            size=size,
            sort=[{"forgotten_at": "desc"}],
            query={"range": {"forgotten_at": {"gte": since.isoformat()}}},
        )["hits"]["hits"]
        return [
            HeldMemory(
                memory_id=hit["_source"]["memory_id"],
                kind=SEARCH_INDICES.get(hit["_source"]["index"], hit["_source"]["index"]),
                forgotten_at=hit["_source"]["forgotten_at"],
                summary=hit["_source"]["document"].get("summary", ""),
                project=hit["_source"]["document"].get("project", ""),
            )
            for hit in hits
        ]

    def purge_held(self, before: datetime) -> int:
        """Forgotten memories held longer than their undo allows, deleted for good."""
        expired = {"range": {"forgotten_at": {"lt": before.isoformat()}}}
        return delete_matching(self._es, [FORGOTTEN_INDEX], expired)

    def delete(self, index: str, memory_id: str) -> None:
        self._es.delete(index=index, id=memory_id, refresh="wait_for")

    def delete_turn(self, session_id: str, turn_id: str) -> list[str]:
        """One turn gone from every index: its raw messages, its ledger entry, its observation, its memories; the
        ids of the memories and the observation it removed (what sessions may have been given)."""
        turn = {"bool": {"filter": [{"term": {"session_id": session_id}}, {"term": {"turn_id": turn_id}}]}}
        gone = [
            memory_id
            for index in SEARCH_INDICES
            if self._es.indices.exists(index=index)
            for memory_id in stored_sources(self._es, index, turn, fields=["session_id"])
        ]
        delete_matching(self._es, [RAW_INDEX, LEDGER_INDEX, *SEARCH_INDICES], turn)
        return gone

    def activity(self, project: str | None = None) -> list[Series]:
        """The glance page's series, over every memory (of `project`, when given)."""
        return glance(self._es, project)


@contextmanager
def open_store(settings: Settings) -> Iterator[MemoryStore]:
    """The store over these settings' Elasticsearch and embedding server; both clients closed after."""
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        yield MemoryStore(es, embedder)


def _has_vector(document: dict[str, Any]) -> bool:
    return any(k.startswith("vector_") for k in document)
