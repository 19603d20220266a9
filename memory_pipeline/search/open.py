"""One way to open the search layers from settings, for the CLI, the service, the MCP server and tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.embeddings import embeddings_client


@contextmanager
def open_search(settings: Settings) -> Iterator[MemorySearch]:
    """The search over these settings' Elasticsearch and embedding server; both clients closed after."""
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        yield MemorySearch(es, embedder)
