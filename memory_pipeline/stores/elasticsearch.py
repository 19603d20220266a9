"""The one way this project talks to Elasticsearch.

The local node is the integ-test distribution: it has no `GET /` handler (so the
client's `info()`/`ping()` fail there) but answers cluster health, which is also
where the client runs its product check (the `X-Elastic-Product` header).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError, BadRequestError, Elasticsearch, helpers

from memory_pipeline.settings import Settings, revealed


def client_kwargs(settings: Settings) -> dict[str, Any]:
    """Constructor arguments for `elasticsearch.Elasticsearch` (and dagster-elasticsearch's HostsConfig)."""
    kwargs: dict[str, Any] = {"hosts": settings.elasticsearch_hosts, "verify_certs": settings.es_verify_certs}
    if settings.es_api_key:
        kwargs["api_key"] = revealed(settings.es_api_key)
    basic = settings.es_basic_auth()  # the local node's generated password, or ES_USERNAME / ES_PASSWORD
    if basic:
        kwargs["basic_auth"] = basic
    if settings.es_ca_certs:
        kwargs["ca_certs"] = str(settings.es_ca_certs)
    return kwargs


# How every client of the project talks to Elasticsearch (the pipeline's resource, the search, the service, the
# CLI): a request may take a minute (a long day's bulk write under load), and one that timed out or lost its
# connection is tried again, three times. A caller that must answer fast passes its own (`make_client`).
CLIENT_OPTIONS: dict[str, Any] = {"request_timeout": 60, "retry_on_timeout": True, "max_retries": 3}


def make_client(settings: Settings, **overrides: Any) -> Elasticsearch:
    return Elasticsearch(**{**client_kwargs(settings), **CLIENT_OPTIONS, **overrides})


def cluster_summary(client: Elasticsearch) -> dict[str, str]:
    """Health and version of the cluster, for `local status` (raises if it does not answer)."""
    health = client.cluster.health(timeout="5s")
    nodes = client.nodes.info(node_id="_local", metric="_none")
    version = next(iter(nodes["nodes"].values()))["version"] if nodes.get("nodes") else "?"
    return {"health": str(health["status"]), "version": str(version), "cluster": str(health["cluster_name"])}


# --- writing and reading documents ------------------------------------------------------


# One primary shard (an index is small per user), and a replica wherever a second node exists: a single
# node stays green, a cluster keeps every document on two nodes, so losing one loses nothing.
INDEX_SETTINGS: dict[str, Any] = {"number_of_shards": 1, "auto_expand_replicas": "0-1"}


class IndexingError(RuntimeError):
    """Elasticsearch refused documents (after retries); the message names the index and the first reasons."""


def ensure_index(
    client: Elasticsearch, index: str, mappings: dict[str, Any], settings: dict[str, Any] | None = None
) -> bool:
    """Create `index` with explicit mappings (and `INDEX_SETTINGS`, `settings` added), or add new fields to an
    existing one; True if created."""
    if client.indices.exists(index=index):
        client.indices.put_mapping(index=index, **mappings)
        return False
    try:
        client.indices.create(index=index, mappings=mappings, settings={**INDEX_SETTINGS, **(settings or {})})
    except BadRequestError as exc:
        if exc.error != "resource_already_exists_exception":
            raise
        return False
    return True


def stored_hashes(client: Elasticsearch, index: str, query: dict[str, Any]) -> dict[str, str]:
    """`_id -> doc_hash` of every document matching `query` (a scroll: any number of documents)."""
    return {
        doc_id: source.get("doc_hash", "")
        for doc_id, source in stored_sources(client, index, query, fields=["doc_hash"]).items()
    }


def stored_sources(
    client: Elasticsearch, index: str, query: dict[str, Any], fields: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """`_id -> _source` (only `fields` when given) of every document matching `query`."""
    body: dict[str, Any] = {"query": query} if fields is None else {"query": query, "_source": fields}
    hits = helpers.scan(client, index=index, query=body, size=5000, scroll="2m")
    return {hit["_id"]: hit.get("_source") or {} for hit in hits}


# A cluster losing a node answers 503 (no master yet, shard unavailable) or drops connections for the seconds
# an election or a replica promotion takes: a chunk is sent again (ids make that idempotent) after a backoff.
TRANSIENT_STATUS = frozenset({429, 502, 503, 504})
RETRY_SECONDS = (1, 2, 4, 8, 15, 15, 15, 15)


def bulk_apply(
    client: Elasticsearch,
    index: str,
    upserts: Iterable[tuple[str, dict[str, Any] | str]],
    deletes: Iterable[str] = (),
    chunk_size: int = 1000,
    partial: bool = False,
) -> tuple[int, int]:
    """Index documents (dicts, or JSON already serialised) by id and delete ids, in bulk; (written, deleted).
    A chunk refused for a passing reason (rejections, a node lost, no master for a moment) is sent again;
    a document refused for good raises IndexingError. `partial` merges into existing documents instead of
    replacing them (fields written by another stage, such as vectors, stay)."""

    def actions() -> Iterator[dict[str, Any]]:
        for doc_id, document in upserts:
            if partial:
                yield {"_op_type": "update", "_index": index, "_id": doc_id, "doc": document, "doc_as_upsert": True}
            else:
                yield {"_op_type": "index", "_index": index, "_id": doc_id, "_source": document}
        for doc_id in deletes:
            yield {"_op_type": "delete", "_index": index, "_id": doc_id}

    written = deleted = 0
    pending = actions()
    for chunk in iter(lambda: list(islice(pending, chunk_size)), []):
        done = _apply_chunk(client, index, chunk)
        written, deleted = written + done[0], deleted + done[1]
    return written, deleted


def _apply_chunk(client: Elasticsearch, index: str, chunk: list[dict[str, Any]]) -> tuple[int, int]:
    reason: object = None
    for wait in (*RETRY_SECONDS, None):
        try:
            written = deleted = 0
            errors: list[str] = []
            passing = False
            for ok, item in helpers.streaming_bulk(
                client,
                chunk,
                chunk_size=len(chunk),
                max_chunk_bytes=50 * 2**20,
                raise_on_error=False,
                raise_on_exception=True,
                max_retries=5,
                initial_backoff=1,
            ):
                op, result = next(iter(item.items()))
                if ok:
                    written, deleted = (written, deleted + 1) if op == "delete" else (written + 1, deleted)
                elif op == "delete" and result.get("status") == 404:
                    continue  # already gone: what we wanted
                else:
                    passing |= result.get("status") in TRANSIENT_STATUS
                    errors.append(f"{result.get('_id')}: {result.get('error') or result.get('status')}")
            if not errors:
                return written, deleted
            if not passing:
                raise IndexingError(f"{index}: {len(errors)} documents failed, e.g. {errors[:3]}")
            reason = errors[0]
        except (TransportConnectionError, ConnectionTimeout) as exc:
            reason = exc
        except ApiError as exc:
            if exc.status_code not in TRANSIENT_STATUS:
                raise
            reason = exc
        if wait is None:
            break
        time.sleep(wait)
    raise IndexingError(
        f"{index}: the cluster did not take {len(chunk)} documents after {len(RETRY_SECONDS)} retries: {reason}"
    )


def with_hash(document: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The document with its `doc_hash` (sha1 of its sorted JSON), and the hash."""
    digest = hashlib.sha1(json.dumps(document, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return {**document, "doc_hash": digest}, digest


@dataclass
class SyncCounts:
    written: int
    deleted: int
    unchanged: int


def sync_documents(
    client: Elasticsearch,
    index: str,
    owned: dict[str, Any],
    documents: Iterable[tuple[str, dict[str, Any]]],
    partial: bool = False,
) -> SyncCounts:
    """Make the documents matching `owned` equal to `documents` (id, source): only new or changed ones are
    written (compared by `doc_hash`), and those no longer produced are deleted."""
    existing = stored_hashes(client, index, owned)
    upserts, unchanged = [], 0
    for doc_id, document in documents:
        hashed, digest = with_hash(document)
        if existing.pop(doc_id, None) == digest:
            unchanged += 1
        else:
            upserts.append((doc_id, hashed))
    written, deleted = bulk_apply(client, index, upserts, sorted(existing), partial=partial)
    return SyncCounts(written, deleted, unchanged)


def days_except(partitions: list[str], kept: Sequence[str] = ()) -> dict[str, Any]:
    """The documents of these days, but those of the sessions `kept` (of a folder no longer configured)."""
    days = {"terms": {"partition": partitions}}
    return {"bool": {"filter": [days], "must_not": [{"terms": {"session_id": list(kept)}}]}} if kept else days


def delete_matching(client: Elasticsearch, indices: Iterable[str], query: dict[str, Any]) -> int:
    """Delete every document matching `query` from these indices (the node has no _delete_by_query)."""
    deleted = 0
    for index in indices:
        if client.indices.exists(index=index):
            deleted += bulk_apply(client, index, [], stored_hashes(client, index, query))[1]
            client.indices.refresh(index=index)
    return deleted


def delete_days(client: Elasticsearch, indices: Iterable[str], days: list[str]) -> int:
    """Delete every document of these partitions from these indices."""
    return delete_matching(client, indices, {"terms": {"partition": days}})
