"""Acceptance checks of the PRD, as Dagster asset check results.

Each takes what a run produced and asks Elasticsearch independently; each
returns a failing result with the evidence rather than raising.
"""

from __future__ import annotations

import polars as pl
from dagster import AssetCheckResult, MetadataValue
from elasticsearch import Elasticsearch

from memory_pipeline.stores.raw_store import SyncReport, indexed_counts, read_manifest, session_checksums


def turn_integrity(messages: pl.DataFrame) -> AssetCheckResult:
    """Every turn's messages share one session and have message_index 0..n-1 without gaps."""
    indexed = messages.filter(pl.col("doc_id").is_not_null())
    per_turn = indexed.group_by("session_id", "turn_id").agg(
        pl.len().alias("n"),
        pl.col("message_index").min().alias("lo"),
        pl.col("message_index").max().alias("hi"),
        pl.col("message_index").n_unique().alias("distinct"),
    )
    bad = per_turn.filter((pl.col("lo") != 0) | (pl.col("hi") != pl.col("n") - 1) | (pl.col("distinct") != pl.col("n")))
    # turn ids embed the session's entry ids: one turn id in two sessions would be a grouping bug.
    shared = indexed.group_by("turn_id").agg(pl.col("session_id").n_unique().alias("sessions"))
    duplicate_docs = indexed.height - indexed["doc_id"].n_unique()
    return AssetCheckResult(
        check_name="turn_integrity",
        passed=bad.is_empty() and duplicate_docs == 0,
        metadata={"turns": per_turn.height, "turns_with_gaps": bad.height, "duplicate_doc_ids": duplicate_docs,
                  "turn_ids_in_several_sessions": int((shared["sessions"] > 1).sum()),
                  "examples": MetadataValue.json(bad.head(5).to_dicts())},
    )


def index_equals_messages(client: Elasticsearch, messages: pl.DataFrame, partitions: list[str]) -> AssetCheckResult:
    """Per session, the documents in memory-raw for these days equal the parsed messages in number."""
    expected = dict(messages.filter(pl.col("doc_id").is_not_null()).group_by("session_id").len().iter_rows())
    actual = indexed_counts(client, partitions)
    differing = {s: {"expected": expected.get(s, 0), "indexed": actual.get(s, 0)}
                 for s in set(expected) | set(actual) if expected.get(s, 0) != actual.get(s, 0)}
    return AssetCheckResult(
        check_name="index_equals_messages",
        passed=not differing,
        metadata={"expected_documents": sum(expected.values()), "indexed_documents": sum(actual.values()),
                  "differing_sessions": MetadataValue.json(dict(list(differing.items())[:20]))},
    )


def files_represented(client: Elasticsearch, files: pl.DataFrame, messages: pl.DataFrame,
                      partitions: list[str]) -> AssetCheckResult:
    """Every session file found is in the manifest with its fingerprint, and its messages are indexed."""
    manifest = read_manifest(client, partitions)
    counts = indexed_counts(client, partitions)
    with_messages = set(messages.filter(pl.col("doc_id").is_not_null())["session_id"].to_list())
    missing = []
    for row in files.iter_rows(named=True):
        recorded = manifest.get(row["session_id"])
        if recorded is None or recorded[1].fingerprint != row["fingerprint"]:
            missing.append(f"{row['session_file']}: not recorded with its current fingerprint")
        elif row["session_id"] in with_messages and not counts.get(row["session_id"]):
            missing.append(f"{row['session_file']}: no documents in memory-raw")
    return AssetCheckResult(check_name="every_file_represented", passed=not missing,
                            metadata={"files": files.height, "missing": MetadataValue.json(missing[:20])})


def rerun_changes_nothing(client: Elasticsearch, files: pl.DataFrame, partitions: list[str],
                          report: SyncReport) -> AssetCheckResult:
    """A run now would write nothing: every file is in the manifest with its current fingerprint (so it
    would be skipped), and the sessions just written hold exactly the expected documents (count and a
    checksum of their content hashes, per session, aggregated by Elasticsearch)."""
    manifest = read_manifest(client, partitions)
    stale_files = [row["session_file"] for row in files.iter_rows(named=True)
                   if row["session_id"] not in manifest
                   or manifest[row["session_id"]][1].fingerprint != row["fingerprint"]]
    expected = report.expected
    stored = session_checksums(client, {"terms": {"session_id": report.changed}}) if report.changed else {}
    differing = sorted(s for s in expected if stored.get(s, (0, 0)) != expected[s])
    return AssetCheckResult(
        check_name="rerun_changes_nothing",
        passed=not stale_files and not differing,
        metadata={"files_not_recorded": MetadataValue.json(stale_files[:20]),
                  "sessions_differing": MetadataValue.json(differing[:20]),
                  "sessions_compared": len(report.changed)},
    )
