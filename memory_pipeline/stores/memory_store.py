"""Every write to the searchable memories made outside a pipeline run: notes stored on purpose (`memory-notes`,
which no run writes or clears) and people's edits and forgets; plus the reads those need (the text of a cited
turn, the glance page's counts). `MemorySearch` only reads; the service, MCP and the CLI write through this."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from elasticsearch import Elasticsearch

from memory_pipeline.settings import Settings
from memory_pipeline.stores.activity import Series, glance
from memory_pipeline.stores.elasticsearch import delete_matching, ensure_index, make_client
from memory_pipeline.stores.embeddings import EmbeddingsClient, embeddings_client
from memory_pipeline.stores.indices import (
    LEDGER_INDEX,
    NOTE_MAPPINGS,
    NOTES_INDEX,
    RAW_INDEX,
    SEARCH_INDICES,
    vector_field,
    vector_mapping,
)
from memory_pipeline.stores.openai_compat import ServerError
from memory_pipeline.stores.raw_store import turn_texts
from memory_pipeline.stores.recall_store import embed_hash, vector_fields


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

    def update(self, index: str, memory_id: str, text: str | None = None, priority: str | None = None) -> None:
        """A person's edit: a new text (with its new vector when the embedding server is up) or priority."""
        change: dict[str, object] = {}
        if text:
            change["summary"] = text
            change |= self._vector(text, hashed=True)[0]
        if priority:
            change["priority"] = priority
        self._es.update(index=index, id=memory_id, doc=change, refresh="wait_for")

    def delete(self, index: str, memory_id: str) -> None:
        self._es.delete(index=index, id=memory_id, refresh="wait_for")

    def delete_turn(self, session_id: str, turn_id: str) -> None:
        """One turn gone from every index: its raw messages, its ledger entry, its observation, its memories."""
        turn = {"bool": {"filter": [{"term": {"session_id": session_id}}, {"term": {"turn_id": turn_id}}]}}
        delete_matching(self._es, [RAW_INDEX, LEDGER_INDEX, *SEARCH_INDICES], turn)

    def activity(self, project: str | None = None) -> list[Series]:
        """The glance page's series, over every memory (of `project`, when given)."""
        return glance(self._es, project)


@contextmanager
def open_store(settings: Settings) -> Iterator[MemoryStore]:
    """The store over these settings' Elasticsearch and embedding server; both clients closed after."""
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        yield MemoryStore(es, embedder)
