"""From found files to the frames of a partition, re-reading only what changed.

A file whose size and mtime match what was indexed last time keeps its recorded
fingerprint without being read; a file whose fingerprint matches has its parsed
frame loaded from the cache instead of being parsed again.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Set
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from memory_pipeline.sessions.discovery import FoundFile
from memory_pipeline.sessions.messages import MESSAGE_SCHEMA, empty_messages, session_messages, to_frame
from memory_pipeline.sessions.parse import Problem, fingerprint
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.secret_rule import Rule
from memory_pipeline.sessions.sources import parse_any

# Bump when parsing or the row shape changes: every file is then parsed (and diffed) again.
PARSER_VERSION = "5"

FILE_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "partition": pl.String,
    "session_id": pl.String,
    "session_file": pl.String,
    "agent": pl.String,
    "path": pl.String,
    "project": pl.String,
    "started_at": pl.String,
    "size": pl.Int64,
    "mtime_ns": pl.Int64,
    "fingerprint": pl.String,
    "changed": pl.Boolean,
    "folder": pl.String,
}


@dataclass(frozen=True)
class Recorded:
    """What the index's file manifest says about a session file."""

    session_file: str
    size: int
    mtime_ns: int
    fingerprint: str
    parser_version: str
    project: str | None = None  # None: recorded before the manifest kept it (not compared)
    folder: str | None = None  # the configured folder it was found under; None: recorded before it was kept


def elsewhere(recorded: Recorded, folders: Set[str] | None) -> bool:
    """A recorded file not found because its folder is no longer configured (SESSIONS_DIR pointed elsewhere):
    its memories stay (only `memory-pipeline folders --forget` removes them), unlike a file deleted from a
    folder still read."""
    return folders is not None and recorded.folder is not None and recorded.folder not in folders


def catalog(found: list[FoundFile], recorded: dict[str, Recorded]) -> pl.DataFrame:
    """One row per file, with its fingerprint and whether it changed since it was last indexed."""
    rows = []
    for item in found:
        before = recorded.get(item.session_id)
        same_stat = (
            before is not None
            and before.session_file == item.relative_path
            and (before.size, before.mtime_ns) == (item.size, item.mtime_ns)
        )
        try:
            digest = before.fingerprint if same_stat and before else fingerprint(item.path)
        except OSError:
            digest = None  # gone or unreadable since the scan: raw_messages reports it, nothing records it
        changed = (
            before is None
            or before.fingerprint != digest
            or before.parser_version != PARSER_VERSION
            or before.session_file != item.relative_path
            or _project_moved(before, item)
        )
        rows.append(
            {
                "partition": item.partition,
                "session_id": item.session_id,
                "session_file": item.relative_path,
                "agent": item.agent,
                "path": str(item.path),
                "project": item.project,
                "started_at": item.started_at_iso,
                "size": item.size,
                "mtime_ns": item.mtime_ns,
                "fingerprint": digest,
                "changed": changed,
                "folder": item.folder,
            }
        )
    return pl.DataFrame(rows, schema=FILE_SCHEMA) if rows else pl.DataFrame(schema=FILE_SCHEMA)


def _project_moved(before: Recorded, item: FoundFile) -> bool:
    """The project a file is read under changed without the file changing (a Gemini chat's `.project_root`)."""
    return before.project is not None and before.project != item.project


def changes_since_indexed(
    found: list[FoundFile],
    recorded: dict[str, tuple[str, Recorded]],
    days: set[str],
    folders: Set[str] | None = None,
) -> dict[str, list[str]]:
    """Per day of `days`, what changed in its files since `memory-raw` indexed them (`recorded`: the manifest,
    session id -> (day, entry)): new, grown, rewritten, moved or gone files; files whose size and mtime are
    as recorded cost no read."""
    in_days = [f for f in found if f.partition in days]
    files = catalog(in_days, {sid: rec for sid, (_, rec) in recorded.items()})
    changes: dict[str, list[str]] = {}
    for item, row in zip(in_days, files.iter_rows(named=True), strict=True):
        if not row["changed"]:
            continue
        before = recorded.get(item.session_id)
        if before is None:
            what = "new file"
        elif before[1].session_file != item.relative_path:
            what = f"moved from {before[1].session_file}"
        elif before[1].parser_version != PARSER_VERSION:
            what = "read by a newer parser"
        elif _project_moved(before[1], item):
            what = f"now in project {item.project} (was {before[1].project})"
        elif item.size > before[1].size:
            what = "grew"
        elif item.size < before[1].size:
            what = (
                f"shrank from {before[1].size:,} to {item.size:,} bytes: what was indexed from it is kept, "
                "marked as no longer in the file"
            )
        else:
            what = "rewritten"
        changes.setdefault(item.partition, []).append(f"{item.relative_path}: {what}")
    present = {f.session_id for f in found}
    for session_id, (day, entry) in recorded.items():
        if day in days and session_id not in present and not elsewhere(entry, folders):
            changes.setdefault(day, []).append(f"{entry.session_file}: gone")
    return changes


@dataclass
class LoadReport:
    parsed_files: int = 0
    cached_files: int = 0
    failed_files: int = 0
    bytes_parsed: int = 0
    parse_seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)


# Below this much changed data a process pool costs more (spawn + imports) than it saves.
PARALLEL_MIN_BYTES = 16 * 2**20


def load_messages(
    files: pl.DataFrame,
    cache_dir: Path,
    redactor: Redactor,
    workers: int | None = None,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> tuple[pl.DataFrame, LoadReport]:
    """The message rows of every file in `files`, parsed or from the cache; bad files are reported, not fatal.

    Changed files are parsed in a process pool (one worker per core) when there is enough of them."""
    report = LoadReport()
    cache_dir.mkdir(parents=True, exist_ok=True)
    jobs = _parse_jobs(files, cache_dir, redactor)
    # The whole set unchanged (a re-run): one combined file instead of hundreds of small ones.
    combined = cache_dir / f"set-{hashlib.sha1(chr(10).join(sorted(j.stem for j in jobs)).encode()).hexdigest()}"
    # Only while every file's own entry is there too: a lost entry is parsed again below, never reported as
    # unread run after run (the sync reads the per-file entries to know what was read).
    if jobs and all(job.cached for job in jobs) and combined.with_suffix(".json").exists():
        notes = json.loads(combined.with_suffix(".json").read_text())
        report.cached_files = len(jobs)
        _add_notes(report, notes)
        return pl.read_parquet(combined.with_suffix(".parquet")), report
    to_parse = [job for job in jobs if not job.cached]
    for job in to_parse:
        if job.fingerprint is None:
            report.problems.append(
                Problem(job.display, None, "unreadable session", "vanished or unreadable since the scan")
            )
    to_parse = [job for job in to_parse if job.fingerprint is not None]
    begin = time.perf_counter()
    workers = workers or min(os.cpu_count() or 1, len(to_parse))
    if workers > 1 and sum(job.size for job in to_parse) >= parallel_min_bytes:
        with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            failures = list(pool.map(_parse_to_cache, to_parse, chunksize=4))
    else:
        failures = [_parse_to_cache(job) for job in to_parse]
    report.parse_seconds = time.perf_counter() - begin
    report.parsed_files = len(to_parse) - sum(1 for f in failures if f)
    report.bytes_parsed = sum(job.size for job, failed in zip(to_parse, failures, strict=True) if not failed)
    report.cached_files = sum(1 for job in jobs if job.cached) - report.parsed_files
    report.failed_files = len(jobs) - report.cached_files - report.parsed_files
    for job, failure in zip(to_parse, failures, strict=True):
        if failure:
            report.problems.append(Problem(job.display, None, "unreadable session", failure))
    readable = [job for job in jobs if job.cached]  # the unreadable ones were reported above
    for job in readable:
        _add_notes(report, json.loads(job.notes_path.read_text()))
    # One multi-threaded scan reads hundreds of small cache files several times faster than a loop.
    messages = pl.scan_parquet([job.frame_path for job in readable]).collect() if readable else empty_messages()
    messages = messages.cast(MESSAGE_SCHEMA)  # type: ignore[arg-type]
    if jobs and not report.failed_files:
        messages.write_parquet(combined.with_suffix(".parquet"))
        combined.with_suffix(".json").write_text(
            json.dumps(
                {
                    "skipped": report.skipped,
                    "redactions": report.redactions,
                    "problems": [p.__dict__ for p in report.problems],
                }
            )
        )
    return messages, report


def _parse_jobs(files: pl.DataFrame, cache_dir: Path, redactor: Redactor) -> list[_ParseJob]:
    redaction_key = _redaction_key(redactor)
    return [
        _ParseJob(
            Path(row["path"]),
            row["session_file"],
            row["partition"],
            row["size"],
            str(
                cache_dir
                / (
                    f"{row['session_id']}-{(row['fingerprint'] or 'unread')[:16]}-{PARSER_VERSION}-{redaction_key}"
                    f"-{_reading_key(row)}"
                )
            ),
            redactor.extra_rules,
            row["session_id"],
            row["fingerprint"],
        )
        for row in files.iter_rows(named=True)
    ]


def unread_sessions(files: pl.DataFrame, cache_dir: Path, redactor: Redactor) -> set[str]:
    """The sessions of `files` that `load_messages` could not read (no cache entry for their content):
    their recorded state must not change, nor their documents be removed, until a run reads them."""
    return {job.session_id for job in _parse_jobs(files, cache_dir, redactor) if not job.cached}


def _add_notes(report: LoadReport, notes: dict) -> None:
    report.skipped.update(notes["skipped"])
    report.redactions.update(notes["redactions"])
    report.problems.extend(Problem(**p) for p in notes["problems"])


@dataclass(frozen=True)
class _ParseJob:
    path: Path
    display: str
    partition: str
    size: int
    stem: str
    extra_rules: tuple[Rule, ...]
    session_id: str
    fingerprint: str | None

    @property
    def frame_path(self) -> Path:
        return Path(self.stem + ".parquet")

    @property
    def notes_path(self) -> Path:
        return Path(self.stem + ".json")

    @property
    def cached(self) -> bool:
        return self.fingerprint is not None and self.frame_path.exists() and self.notes_path.exists()


def _parse_to_cache(job: _ParseJob) -> str | None:
    """Parse one file into its cache entry (frame + notes); the error text if it is not a session."""
    try:
        session = parse_any(job.path, display_path=job.display)
    except (OSError, ValueError) as exc:
        return str(exc)
    rows, redactions = session_messages(session, Redactor(job.extra_rules), job.partition, display_path=job.display)
    to_frame(rows).write_parquet(job.frame_path)
    # Notes last: an entry counts as cached only once both files are complete.
    job.notes_path.write_text(
        json.dumps(
            {"skipped": session.skipped, "redactions": redactions, "problems": [p.__dict__ for p in session.problems]}
        )
    )
    return None


def _reading_key(row: dict) -> str:
    """What a parse depends on beside the file's bytes, the parser and the rules: where the file is (its name
    in problems and rows), its day, and its project (a Gemini chat's is the `.project_root` file beside it,
    which changes without the chat changing)."""
    context = "\n".join(str(row[k]) for k in ("session_file", "partition", "project"))
    return hashlib.sha1(context.encode()).hexdigest()[:8]


def _redaction_key(redactor: Redactor) -> str:
    """Cached frames hold redacted text: a different rule set must not reuse them."""
    rules = "\n".join(f"{r.name}={r.pattern.pattern}" for r in redactor.rules)
    return hashlib.sha1(rules.encode()).hexdigest()[:8]
