"""Backfilling session days from the command line (the UI's "materialize missing", as one run)."""

from __future__ import annotations

from collections.abc import Set
from datetime import date
from pathlib import Path

from dagster import DagsterInstance, ExecuteInProcessResult

from memory_pipeline.partitions import session_days
from memory_pipeline.sessions.discovery import scan_sessions


def days_to_backfill(sessions_dir: Path, done: Set[str], start: str | None = None, end: str | None = None) -> list[str]:
    """Days with session files, within the partitions and [start, end], not in `done`."""
    found, _ = scan_sessions(sessions_dir)
    valid = set(session_days.get_partition_keys())
    days = {f.partition for f in found if f.partition in valid}
    return sorted(d for d in days - set(done) if (start is None or d >= start) and (end is None or d <= end))


def day_ranges(days: list[str], max_gap_days: int = 7) -> list[tuple[str, str]]:
    """Contiguous-enough stretches of days, each one run: a single run beats one per day, but a
    range over a quiet year would spend its time on empty days."""
    ranges: list[tuple[str, str]] = []
    for day in sorted(days):
        if ranges and (date.fromisoformat(day) - date.fromisoformat(ranges[-1][1])).days <= max_gap_days:
            ranges[-1] = (ranges[-1][0], day)
        else:
            ranges.append((day, day))
    return ranges


def run_backfill(instance: DagsterInstance, first: str, last: str) -> ExecuteInProcessResult:
    """One run of the ingest job over [first, last] (the assets' single-run backfill policy)."""
    from memory_pipeline.definitions import defs

    job = defs.resolve_job_def("memory_job")
    return job.execute_in_process(
        instance=instance,
        raise_on_error=False,
        tags={
            "dagster/asset_partition_range_start": first,
            "dagster/asset_partition_range_end": last,
            "memory_pipeline/backfill": "cli",
        },
    )
