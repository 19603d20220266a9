"""Ingest: pi session files -> message rows -> turns -> the `memory-raw` index.

Each asset is a thin wrapper: the logic lives in `memory_pipeline.sessions`
(pure) and `memory_pipeline.stores.raw_store` (Elasticsearch). All are daily
partitioned by session start; a range backfill runs as one run, so every asset
works on `context.partition_keys`, never on a single key.
"""

import time
from collections import Counter
from pathlib import Path

import polars as pl
from dagster import (
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)
from dagster_elasticsearch import ElasticsearchResource

from memory_pipeline.assets.metadata import preview, problems_markdown
from memory_pipeline.assets.when import DAILY, runs
from memory_pipeline.checks import (
    every_file_represented,
    every_message_placed,
    index_equals_manifest,
    index_equals_messages,
    rerun_changes_nothing,
    specs,
    turn_integrity,
)
from memory_pipeline.curation.corrections import drop_forgotten_turns
from memory_pipeline.curation.trail import read_corrections
from memory_pipeline.partitions import daily_assets
from memory_pipeline.resources import DayLocksResource, MemoryWorkspaceResource, SessionsResource
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.exclude import excluded
from memory_pipeline.sessions.load import catalog, load_messages, unread_sessions
from memory_pipeline.sessions.messages import TRUNCATED
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.stores.raw_store import elsewhere_sessions, read_manifest, sync_partitions

INGEST = "ingest"
_common = daily_assets(INGEST)


@asset(**_common, kinds={"polars"})
@runs(DAILY)
def session_files(
    context: AssetExecutionContext,
    sessions: SessionsResource,
    es: ElasticsearchResource,
    day_locks: DayLocksResource,  # held for the whole run: no other run of these days meanwhile
) -> Output[pl.DataFrame]:
    """The pi session files of the partition's days, identified by the session id in their header.

    Each row carries size, mtime and a content fingerprint, and whether the file
    changed since `memory-raw` last indexed it: unchanged files are not read again
    downstream. Files that are not sessions are logged with the reason and skipped.
    """
    keys = context.partition_keys
    found, problems = scan_sessions(sessions.roots)
    for problem in problems:
        context.log.warning(str(problem))
    folders = ", ".join(str(root.path) for root in sessions.roots)
    if not found:
        context.log.info(f"no session files under {folders}")
    in_days = [f for f in found if f.partition in set(keys)]
    # Projects a person keeps out of the memory: never read, so nothing of them is stored anywhere.
    patterns = sessions.exclusion_patterns()
    in_range = [f for f in in_days if not excluded(f.project, patterns)]
    with es.get_client() as client:
        recorded = {sid: rec for sid, (_, rec) in read_manifest(client, keys).items()}
    files = catalog(in_range, recorded)
    changed = int(files["changed"].sum())
    context.log.info(
        f"{files.height} session files for {keys[0]}..{keys[-1]} ({changed} new or changed) "
        f"of {len(found)} under {folders}"
    )
    return Output(
        files,
        metadata={
            "sessions_dir": str(sessions.root),
            "folders": folders,
            "files_by_agent": dict(sorted(Counter(f.agent for f in in_range).items())),
            "files_found": len(found),
            "files": files.height,
            "changed_files": changed,
            "excluded_files": len(in_days) - len(in_range),
            "not_sessions": len(problems),
            "problems": problems_markdown(problems),
            "bytes": int(files["size"].sum()),
            "preview": preview(files, ["partition", "agent", "session_id", "session_file", "size", "changed"]),
        },
    )


@asset(**_common, kinds={"polars"})
@runs(DAILY)
def raw_messages(
    context: AssetExecutionContext,
    session_files: pl.DataFrame,
    sessions: SessionsResource,
    workspace: MemoryWorkspaceResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> Output[pl.DataFrame]:
    """One row per message entry of the partition's sessions, parsed tolerantly and with secrets masked.

    Covers v1-v3 files (deterministic ids for v1), the active path and the
    abandoned branches (flagged), compaction and branch summaries, bash
    executions, custom and system messages, tool calls linked to their results.
    Unchanged files come from the parse cache. Bad lines are skipped and listed.
    The turns people forgot whole are left out: never indexed, observed or summarised again.
    """
    begin = time.perf_counter()
    parsed, report = load_messages(session_files, Path(sessions.cache_dir), sessions.redactor())
    messages = drop_forgotten_turns(parsed, read_corrections(workspace.root))
    for problem in report.problems:
        context.log.warning(str(problem))
    problem_kinds = Counter(p.kind for p in report.problems)
    seconds = time.perf_counter() - begin
    return Output(
        messages,
        metadata={
            "messages": messages.height,
            "forgotten_by_people": parsed.height - messages.height,
            "sessions": messages["session_id"].n_unique(),
            "parsed_files": report.parsed_files,
            "cached_files": report.cached_files,
            "failed_files": report.failed_files,
            "on_active_path": int(messages["on_active_path"].sum()),
            "abandoned_branch_messages": int((~messages["on_active_path"]).sum()),
            "metadata_messages": int(messages["is_metadata"].sum()),
            "problems": problems_markdown(report.problems),
            "problem_counts": MetadataValue.json(dict(problem_kinds)),
            # Texts over MAX_TEXT_CHARS were cut (each logged above with its file and line).
            "truncated_messages": len({(p.file, p.line) for p in report.problems if p.kind == TRUNCATED}),
            "skipped": MetadataValue.json(dict(report.skipped)),
            "masked_secrets": sum(report.redactions.values()),
            "masked_by_rule": MetadataValue.json(dict(report.redactions)),
            "parse_mb_per_s": round(report.bytes_parsed / 2**20 / report.parse_seconds, 2)
            if report.parse_seconds
            else 0,
            "seconds": round(seconds, 3),
            "preview": preview(messages, ["session_id", "turn_id", "message_index", "role", "content"]),
        },
    )


@asset(**_common, kinds={"polars"})
@runs(DAILY)
def turns(
    raw_messages: pl.DataFrame,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> Output[pl.DataFrame]:
    """The active path's turns (pi's definition: from a user message, bash execution, custom message or
    branch summary to the next), with the first message, tools used and a content hash that decides
    whether a turn must be summarised again."""
    frame = group_turns(raw_messages)
    return Output(
        frame,
        metadata={
            "turns": frame.height,
            "sessions": frame["session_id"].n_unique(),
            "turns_with_errors": int(frame["has_error"].sum()),
            "preview": preview(frame, ["session_id", "turn_index", "start_role", "message_count", "prompt"]),
        },
    )


@asset(**_common, kinds={"elasticsearch"}, check_specs=specs("memory_raw_index"), deps=[turns])
@runs(DAILY)
def memory_raw_index(
    context: AssetExecutionContext,
    raw_messages: pl.DataFrame,
    session_files: pl.DataFrame,
    sessions: SessionsResource,
    es: ElasticsearchResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """`memory-raw`: one document per message (id `{session_id}_{turn_id}_{message_index}`), kept equal to
    the session files: new and changed messages are written, vanished ones deleted, unchanged files cost
    no write at all. A file that could not be read this time changes nothing (its documents and manifest
    entry stay, so the next run reads it). Checked after every materialisation."""
    keys = context.partition_keys
    unread = unread_sessions(session_files, Path(sessions.cache_dir), sessions.redactor())
    for session_id in sorted(unread):
        context.log.warning(f"{session_id}: not read this run; its documents stay as they were and it is retried")
    folders = {str(root.path) for root in sessions.roots}
    with es.get_client() as client:
        report = sync_partitions(client, raw_messages, session_files, keys, unread, folders)
        kept = set(elsewhere_sessions(client, keys, folders))
        if kept:
            context.log.info(f"memory-raw: {len(kept)} session(s) of folders no longer configured kept as they are")
        context.log.info(
            f"memory-raw: {report.written} written, {report.deleted} deleted, "
            f"{report.unchanged_documents} unchanged; {report.changed_sessions} changed sessions, "
            f"{report.unchanged_sessions} unchanged, {report.gone_sessions} gone"
        )
        if report.restored:
            context.log.warning(
                f"memory-raw: {report.restored} document(s) were missing from the index and are written back "
                f"(sessions {', '.join(report.restored_sessions[:20])})"
            )
        elif report.restored_sessions:  # fewer documents than recorded, none to write: a turn people forgot
            context.log.info(f"memory-raw: counts recorded again for {', '.join(report.restored_sessions[:20])}")
        if report.left_file:
            context.log.info(f"memory-raw: {report.left_file} message(s) no longer in their files: kept, marked")
        checks = [
            turn_integrity(raw_messages),
            index_equals_messages(client, raw_messages, keys, unread | kept),
            index_equals_manifest(client, keys),
            every_file_represented(client, session_files, raw_messages, keys, unread),
            rerun_changes_nothing(client, session_files, keys, report),
            every_message_placed(raw_messages),
        ]
    documents = int(raw_messages["doc_id"].is_not_null().sum())
    return MaterializeResult(
        metadata={
            "documents": documents,
            "written": report.written,
            "deleted": report.deleted,
            "manifest_writes": report.manifest_writes,
            "unchanged_documents": report.unchanged_documents,
            "changed_sessions": report.changed_sessions,
            "unchanged_sessions": report.unchanged_sessions,
            "gone_sessions": report.gone_sessions,
            "restored": report.restored,
            "restored_sessions": MetadataValue.json(report.restored_sessions[:50]),
            "left_file": report.left_file,
            "kept_from_unconfigured_folders": len(kept),
            "unread_sessions": MetadataValue.json(report.unread_sessions[:50]),
            "index_seconds": round(report.seconds, 3),
            "docs_per_second": round(report.written / report.seconds, 1) if report.seconds and report.written else 0,
        },
        check_results=checks,
    )
