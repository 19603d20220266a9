"""Backfilling session days from the command line (the UI's "materialize missing", as few runs as possible).

A day is done when every asset of `memory_job` is materialised for it and the
latest run that covered it succeeded with every check passing. A day whose run
failed half way, or whose checks failed, is picked up again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    ExecuteInProcessResult,
    RunsFilter,
)
from dagster._core.storage.partition_status_cache import AssetPartitionStatus

from memory_pipeline.partitions import ordered_days, register_days, session_days
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.parse import Problem

JOB = "memory_job"
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


@dataclass
class Plan:
    days: list[str]  # days with sessions, within [start, end]
    todo: list[str]  # of those, the ones to run
    added: list[str]  # days that became partitions now
    problems: list[Problem] = field(default_factory=list)


def plan_backfill(
    instance: DagsterInstance, sessions_dir: Path, everything: bool, start: str | None = None, end: str | None = None
) -> Plan:
    """Every day with sessions becomes a partition; the ones not done (or all, with `everything`) are to run."""
    found, problems = scan_sessions(sessions_dir)
    days = sorted(
        {f.partition for f in found if (start is None or f.partition >= start) and (end is None or f.partition <= end)}
    )
    added = register_days(instance, days)
    todo = days if everything else [d for d in days if d not in finished_days(instance, days)]
    return Plan(days, todo, added, problems)


def job_asset_keys() -> list[AssetKey]:
    from memory_pipeline.definitions import defs

    graph = defs.resolve_job_def(JOB).asset_layer.asset_graph
    return sorted(k for k in graph.get_all_asset_keys() if graph.get(k).is_materializable)


def finished_days(instance: DagsterInstance, days: Sequence[str]) -> set[str]:
    """The days every asset of the job has materialised and whose latest run passed (status and checks)."""
    if not days:
        return set()
    complete = set(days)
    for key in job_asset_keys():
        status = instance.get_status_by_partition(key, list(days), session_days) or {}
        complete &= {d for d, s in status.items() if s == AssetPartitionStatus.MATERIALIZED}
    return complete & _days_whose_latest_run_passed(instance, complete)


def _days_whose_latest_run_passed(instance: DagsterInstance, days: set[str]) -> set[str]:
    order = ordered_days(instance)
    undecided, passed = set(days), set()
    for run in instance.get_runs(filters=RunsFilter(job_name=JOB)):  # newest first
        if not undecided:
            break
        covered = _run_days(run.tags, order) & undecided
        if not covered:
            continue
        undecided -= covered
        if run.status == DagsterRunStatus.SUCCESS and _checks_passed(instance, run.run_id):
            passed |= covered
    return passed


def _run_days(tags: dict[str, str], order: list[str]) -> set[str]:
    if "dagster/partition" in tags:
        return {tags["dagster/partition"]}
    if RANGE_START in tags and RANGE_END in tags and tags[RANGE_START] in order and tags[RANGE_END] in order:
        return set(order[order.index(tags[RANGE_START]) : order.index(tags[RANGE_END]) + 1])
    return set()


def _checks_passed(instance: DagsterInstance, run_id: str) -> bool:
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION).records
    return all(r.event_log_entry.dagster_event.event_specific_data.passed for r in records)


def day_ranges(days: list[str], order: list[str]) -> list[tuple[str, str]]:
    """Runs for `days`: stretches of neighbouring partitions (in Dagster's order, which a range follows),
    so every run covers only days that are to run."""
    wanted = set(days)
    ranges: list[tuple[str, str]] = []
    previous_wanted = False
    for day in order:
        if day in wanted:
            ranges.append((ranges.pop()[0], day) if previous_wanted else (day, day))
        previous_wanted = day in wanted
    return ranges


def run_backfill(
    instance: DagsterInstance,
    first: str,
    last: str,
    definitions: Definitions | None = None,
    run_config: dict[str, Any] | None = None,
) -> ExecuteInProcessResult:
    """One run of the job over the partitions [first, last] (the assets' single-run backfill policy), with
    the code location's definitions unless others are given."""
    if definitions is None:
        from memory_pipeline.definitions import defs as definitions

    job = definitions.resolve_job_def(JOB)
    return job.execute_in_process(
        instance=instance,
        raise_on_error=False,
        run_config=run_config,
        tags={RANGE_START: first, RANGE_END: last, "memory_pipeline/backfill": "cli"},
    )
