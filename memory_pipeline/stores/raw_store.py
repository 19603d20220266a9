"""Keeping `memory-raw` equal to the session files of a partition, with the fewest writes.

Three kinds of session per run: unchanged (the manifest in `memory-raw-files`
has the file's fingerprint: nothing is read or written), changed (documents are
compared by content hash: only new or different ones are written; the ones a
file cut short no longer holds stay, marked `left_file_at`, for the memory is
the record; the ones a rewrite gave new ids are deleted), and gone (recorded for
the partition but no longer found: all their documents go). An unchanged session
whose documents in the index no longer number what the manifest recorded
(deleted by hand, a lost shard) is compared as a changed one, so the run writes
them back.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl
from elasticsearch import Elasticsearch

from memory_pipeline.sessions.load import PARSER_VERSION, Recorded, elsewhere
from memory_pipeline.stores.elasticsearch import INDEX_SETTINGS, bulk_apply, ensure_index, stored_sources
from memory_pipeline.stores.indices import (
    LEFT_FILE,
    RAW_DOC_FIELDS,
    RAW_FILES_INDEX,
    RAW_FILES_MAPPINGS,
    RAW_INDEX,
    RAW_MAPPINGS,
    RawFileDoc,
    RawMessageDoc,
)

RAW_SETTINGS = {**INDEX_SETTINGS, "refresh_interval": "1s"}


def ensure_raw_indices(client: Elasticsearch) -> None:
    ensure_index(client, RAW_INDEX, RAW_MAPPINGS, RAW_SETTINGS)
    ensure_index(client, RAW_FILES_INDEX, RAW_FILES_MAPPINGS)


def read_manifest(client: Elasticsearch, partitions: list[str]) -> dict[str, tuple[str, Recorded]]:
    """session_id -> (partition, what was indexed) for the given days."""
    if not client.indices.exists(index=RAW_FILES_INDEX):
        return {}
    hits = stored_sources(client, RAW_FILES_INDEX, {"terms": {"partition": partitions}})
    return {
        doc["session_id"]: (
            doc["partition"],
            Recorded(
                doc["session_file"],
                doc["size"],
                doc["mtime_ns"],
                doc["fingerprint"],
                doc["parser_version"],
                doc.get("project"),
                doc.get("folder"),
            ),
        )
        for doc in hits.values()
    }


@dataclass(frozen=True)
class Shortfall:
    """A session whose documents in `memory-raw` (those still in its file) differ in number from what the
    manifest recorded when it was indexed."""

    partition: str
    session_file: str
    indexed: int
    recorded: int

    def __str__(self) -> str:
        return f"{self.session_file}: memory-raw holds {self.indexed} of its {self.recorded} documents"


def elsewhere_sessions(client: Elasticsearch, partitions: list[str], folders: Set[str]) -> list[str]:
    """The sessions of these days recorded under a folder no longer among `folders`: every stage leaves their
    documents as they are (they are memories still; `memory-pipeline folders --forget` removes them)."""
    return sorted(s for s, (_, rec) in read_manifest(client, partitions).items() if elsewhere(rec, folders))


def index_shortfalls(client: Elasticsearch, partitions: list[str]) -> dict[str, Shortfall]:
    """session_id -> how its indexed documents differ from the manifest, for the recorded sessions of these days
    that differ: two reads (the manifest, one aggregation), whatever the number of documents."""
    if not partitions or not client.indices.exists(index=RAW_FILES_INDEX):
        return {}
    fields = ["session_id", "session_file", "partition", "message_count"]
    manifest = stored_sources(client, RAW_FILES_INDEX, {"terms": {"partition": partitions}}, fields=fields)
    counts = indexed_counts(client, partitions)
    return {
        doc["session_id"]: Shortfall(
            doc["partition"], doc["session_file"], counts.get(doc["session_id"], 0), doc["message_count"]
        )
        for doc in manifest.values()
        if doc.get("message_count") is not None and counts.get(doc["session_id"], 0) != doc["message_count"]
    }


_DATETIME_FIELDS = [name for name, kind in RawMessageDoc.__annotations__.items() if "datetime" in str(kind)]


def message_documents(messages: pl.DataFrame) -> Iterator[tuple[str, str, str, str]]:
    """`(doc_id, session_id, JSON document, content hash)` for every conversation message (metadata rows have none).

    Polars serialises the rows in Rust; per-document validation in Python would cost more than the
    indexing. The frame's columns are typed by `MESSAGE_SCHEMA`, the contract with `RawMessageDoc` is a
    test, and the index's strict mapping refuses any stray field. What is hashed is exactly what is stored.
    """
    frame = (
        messages.filter(pl.col("doc_id").is_not_null())
        .select(RAW_DOC_FIELDS)
        .with_columns(pl.col(_DATETIME_FIELDS).dt.to_string("%Y-%m-%dT%H:%M:%S%.3fZ"))
    )
    for batch in frame.iter_slices(5000):
        for doc_id, session, line in zip(
            batch["doc_id"], batch["session_id"], batch.write_ndjson().splitlines(), strict=True
        ):
            digest = hashlib.sha1(line.encode()).hexdigest()
            yield doc_id, session, f'{line[:-1]},"doc_hash":"{digest}","doc_checksum":{checksum(digest)}}}', digest


def checksum(digest: str) -> int:
    """32 bits of a document's hash: summed per session by Elasticsearch, exact in a double below 2^52."""
    return int(digest[:8], 16)


@dataclass
class SyncPlan:
    upserts: list[tuple[str, str]] = field(default_factory=list)
    # session -> (documents, checksum sum) the compared sessions must hold once the plan is applied
    expected: dict[str, tuple[int, int]] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    # documents whose message is no longer in its file: kept, marked with LEFT_FILE (a partial update)
    left_file: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    restored_sessions: list[str] = field(default_factory=list)  # unchanged files, documents missing
    restored: int = 0  # documents written back for those
    manifest: list[tuple[str, RawFileDoc]] = field(default_factory=list)
    manifest_deletes: list[str] = field(default_factory=list)
    changed_sessions: list[str] = field(default_factory=list)
    gone_sessions: list[str] = field(default_factory=list)
    unchanged_documents: int = 0

    @property
    def writes(self) -> int:
        return (
            len(self.upserts)
            + len(self.deletes)
            + len(self.left_file)
            + len(self.manifest)
            + len(self.manifest_deletes)
        )


def plan_sync(
    client: Elasticsearch,
    messages: pl.DataFrame,
    files: pl.DataFrame,
    partitions: list[str],
    unread: Set[str] = frozenset(),
    now: datetime | None = None,
    folders: Set[str] | None = None,
) -> SyncPlan:
    """What to write so the index equals the files of `partitions`. Files found but not read this time
    (`unread`: vanished or unreadable since the scan) keep their documents and their manifest entry, so
    the next run still sees them as changed. Messages a changed file no longer holds stay in the index,
    marked as having left it (`now`), and count among what the session holds. A recorded file of a folder no
    longer among `folders` is not gone: its documents and its entry stay."""
    recorded = read_manifest(client, partitions)
    present = set(files["session_id"].to_list())
    plan = SyncPlan()
    plan.gone_sessions = sorted(s for s in set(recorded) - present if not elsewhere(recorded[s][1], folders))
    short = set(index_shortfalls(client, partitions))
    readable = ~pl.col("session_id").is_in(list(unread))
    changed = files.filter((pl.col("changed") | pl.col("session_id").is_in(list(short))) & readable)
    plan.restored_sessions = sorted(set(changed.filter(~pl.col("changed"))["session_id"].to_list()))
    plan.changed_sessions = changed["session_id"].to_list()
    comparing = plan.changed_sessions + plan.gone_sessions
    if comparing:
        existing = stored_sources(
            client, RAW_INDEX, {"terms": {"session_id": comparing}}, fields=["session_id", "doc_hash", LEFT_FILE]
        )
        wanted = messages.filter(pl.col("session_id").is_in(plan.changed_sessions))
        plan.expected = {session: (0, 0) for session in plan.changed_sessions}
        restoring = set(plan.restored_sessions)
        for doc_id, session, document, digest in message_documents(wanted):
            count, total = plan.expected[session]
            plan.expected[session] = (count + 1, total + checksum(digest))
            stored = existing.pop(doc_id, None)
            if stored is not None and stored.get("doc_hash") == digest and not stored.get(LEFT_FILE):
                plan.unchanged_documents += 1
            else:
                plan.upserts.append((doc_id, document))
                plan.restored += session in restoring
        # A file cut short (smaller than when indexed) keeps what was indexed from it: the memory is the record.
        # A file rewritten otherwise (pi migrating a v1 file gives every message a new id) holds its messages
        # under new ids: the old documents go, or the index would hold them twice.
        shrank = {
            row["session_id"]
            for row in changed.iter_rows(named=True)
            if row["session_id"] in recorded and row["size"] < recorded[row["session_id"]][1].size
        }
        gone = set(plan.gone_sessions)
        left_at = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for doc_id, stored in sorted(existing.items()):  # stored but no longer produced by any file
            session = stored["session_id"]
            if session in gone or not (stored.get(LEFT_FILE) or session in shrank):
                plan.deletes.append(doc_id)
                continue
            count, total = plan.expected[session]
            plan.expected[session] = (count + 1, total + checksum(stored.get("doc_hash", "")))
            if not stored.get(LEFT_FILE):
                plan.left_file.append((doc_id, {LEFT_FILE: left_at}))
        in_file = dict(wanted.filter(pl.col("doc_id").is_not_null()).group_by("session_id").len().iter_rows())
        for row in changed.iter_rows(named=True):
            doc = RawFileDoc(
                session_id=row["session_id"],
                session_file=row["session_file"],
                partition=row["partition"],
                size=row["size"],
                mtime_ns=row["mtime_ns"],
                fingerprint=row["fingerprint"],
                parser_version=PARSER_VERSION,
                message_count=in_file.get(row["session_id"], 0),
                project=row["project"],
                folder=row["folder"],
            )
            before = recorded.get(row["session_id"])
            now_recorded = Recorded(
                doc["session_file"],
                doc["size"],
                doc["mtime_ns"],
                doc["fingerprint"],
                PARSER_VERSION,
                doc["project"],
                doc["folder"],
            )
            # A session compared for a shortfall records its count again (a turn a person forgot is gone
            # from the index and from the frame: the count it was recorded with is then too high).
            if (
                before is None
                or before[1] != now_recorded
                or before[0] != doc["partition"]
                or row["session_id"] in short
            ):
                plan.manifest.append((row["session_id"], doc))
    plan.manifest_deletes = plan.gone_sessions
    return plan


@dataclass
class SyncReport:
    expected: dict[str, tuple[int, int]]  # per changed session: (documents, checksum sum) it must hold now
    changed: list[str]
    written: int
    deleted: int
    manifest_writes: int
    unchanged_documents: int
    changed_sessions: int
    unchanged_sessions: int
    gone_sessions: int
    seconds: float
    unread_sessions: list[str] = field(default_factory=list)
    left_file: int = 0  # documents newly marked as no longer in their file (kept)
    restored: int = 0  # documents of unchanged files written back (they had gone from the index)
    restored_sessions: list[str] = field(default_factory=list)


def sync_partitions(
    client: Elasticsearch,
    messages: pl.DataFrame,
    files: pl.DataFrame,
    partitions: list[str],
    unread: Set[str] = frozenset(),
    folders: Set[str] | None = None,
) -> SyncReport:
    """Make `memory-raw` (and its manifest) equal the files of `partitions` that could be read (those of folders
    no longer among `folders` stay as they are)."""
    begin = time.perf_counter()
    ensure_raw_indices(client)
    plan = plan_sync(client, messages, files, partitions, unread, folders=folders)
    written, deleted = bulk_apply(client, RAW_INDEX, plan.upserts, plan.deletes)
    marked, _ = bulk_apply(client, RAW_INDEX, plan.left_file, partial=True)
    # The manifest last: a run that fails before here re-reads those files next time.
    manifest_written, manifest_deleted = bulk_apply(client, RAW_FILES_INDEX, plan.manifest, plan.manifest_deletes)
    if plan.writes:
        client.indices.refresh(index=[RAW_INDEX, RAW_FILES_INDEX])
    return SyncReport(
        expected=plan.expected,
        changed=plan.changed_sessions,
        written=written,
        deleted=deleted,
        manifest_writes=manifest_written + manifest_deleted,
        unchanged_documents=plan.unchanged_documents,
        changed_sessions=len(plan.changed_sessions),
        unchanged_sessions=files.filter(~pl.col("changed") & ~pl.col("session_id").is_in(list(unread))).height,
        unread_sessions=sorted(unread),
        gone_sessions=len(plan.gone_sessions),
        seconds=time.perf_counter() - begin,
        left_file=marked,
        restored=plan.restored,
        restored_sessions=plan.restored_sessions,
    )


def indexed_counts(client: Elasticsearch, partitions: list[str]) -> dict[str, int]:
    """Documents per session in `memory-raw` for the given days, of messages still in their files (those kept
    after leaving their file are the memory's, not the file's)."""
    query = {"bool": {"filter": [{"terms": {"partition": partitions}}], "must_not": [{"exists": {"field": LEFT_FILE}}]}}
    return {session: count for session, (count, _) in session_checksums(client, query).items()}


def session_checksums(client: Elasticsearch, query: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """session_id -> (documents, sum of their checksums), computed by Elasticsearch in one aggregation."""
    if not client.indices.exists(index=RAW_INDEX):
        return {}
    response = client.search(
        index=RAW_INDEX,
        size=0,
        query=query,
        aggs={
            "sessions": {
                "terms": {"field": "session_id", "size": 65536},
                "aggs": {"sum": {"sum": {"field": "doc_checksum"}}},
            }
        },
    )
    return {b["key"]: (b["doc_count"], int(b["sum"]["value"])) for b in response["aggregations"]["sessions"]["buckets"]}


def raw_turns(client: Elasticsearch, sessions: list[str]) -> set[tuple[str, str]]:
    """The (session_id, turn_id) pairs that have messages in `memory-raw`, for these sessions."""
    if not sessions or not client.indices.exists(index=RAW_INDEX):
        return set()
    response = client.search(
        index=RAW_INDEX,
        size=0,
        query={"terms": {"session_id": sessions}},
        aggs={
            "sessions": {
                "terms": {"field": "session_id", "size": 65536},
                "aggs": {"turns": {"terms": {"field": "turn_id", "size": 65536}}},
            }
        },
    )
    return {
        (s["key"], t["key"]) for s in response["aggregations"]["sessions"]["buckets"] for t in s["turns"]["buckets"]
    }


def turn_texts(client: Elasticsearch, sessions: list[str]) -> dict[tuple[str, str], dict[str, list[str]]]:
    """(session_id, turn_id) -> role -> the texts of its messages in `memory-raw` (content, thinking, tool
    arguments, errors): what the trust checks read a stored idea against."""
    if not sessions or not client.indices.exists(index=RAW_INDEX):
        return {}
    fields = ["session_id", "turn_id", "role", "content", "thinking", "tool_calls", "error_message"]
    texts: dict[tuple[str, str], dict[str, list[str]]] = {}
    for doc in stored_sources(client, RAW_INDEX, {"terms": {"session_id": sessions}}, fields=fields).values():
        calls = " ".join(str(c.get("arguments") or "") for c in doc.get("tool_calls") or [])
        text = "\n".join(t for t in (doc.get("content"), doc.get("thinking"), calls, doc.get("error_message")) if t)
        texts.setdefault((doc["session_id"], doc["turn_id"]), {}).setdefault(doc["role"], []).append(text)
    return texts
