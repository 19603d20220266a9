"""One way to open the search layers from settings, for the CLI, the service, the MCP server and tests, and one
way to say which of their servers is down and what starts it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from elastic_transport import ConnectionError as ESConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import AuthenticationException

from memory_pipeline.search.briefing import Briefing
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.folders import configured_folders
from memory_pipeline.stores.openai_compat import ServerError


@contextmanager
def open_search(settings: Settings) -> Iterator[MemorySearch]:
    """The search over these settings' Elasticsearch and embedding server; both clients closed after."""
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        yield MemorySearch(es, embedder, configured_folders(settings))


# The failures that mean a server is down or refuses us (for exception handlers).
DOWN: tuple[type[Exception], ...] = (ESConnectionError, ConnectionTimeout, AuthenticationException, ServerError)


def unavailable(exc: BaseException, settings: Settings) -> str | None:
    """What a failure means to a person: the server that is down and the command that starts it (None when
    `exc` is not a server being down)."""
    if isinstance(exc, (ESConnectionError, ConnectionTimeout)):
        return (
            f"Elasticsearch at {settings.elasticsearch_url} is unreachable ({type(exc).__name__}): start it with "
            "`memory-pipeline local up`, or set ES_URL to your cluster"
        )
    if isinstance(exc, AuthenticationException):
        return (
            f"Elasticsearch at {settings.elasticsearch_url} refused the credentials: check ES_API_KEY "
            "(or ES_USERNAME / ES_PASSWORD; the local node's password is in LOCAL_ES_PASSWORD_FILE)"
        )
    if isinstance(exc, ServerError):
        return f"{exc}: start the local servers with `memory-pipeline local up`, or check LLAMA_URL / EMBED_URL"
    return None


def briefing_note(made: Briefing, settings: Settings) -> str | None:
    """What a briefing could not read: the server that is down and what starts it, when one was."""
    reason = unavailable(made.down, settings) if made.down is not None else None
    return f"{reason}; the briefing holds MEMORY.md's rules only" if reason else made.degraded or None
