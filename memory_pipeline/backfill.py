"""Backfilling session days from the command line (the UI's "materialize missing"), the most recent first.

A day is done when every asset of `memory_job` is materialised for it and the
latest run that covered it ran the whole job and succeeded with every check
passing. A day is run again when it is not done (never run, failed half way, a
failed check, ingested without the chat model), when its files changed since
`memory-raw` indexed them (new, grown, rewritten, moved or gone), or when turns
of it failed and wait to be read again, or when `memory-raw` holds fewer (or more)
documents of a file than its manifest recorded (deleted behind the pipeline's
back: the run writes them back). Without the chat model (`--no-llm`) the
runs leave out the LLM's assets and a day is done when the rest is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
from dagster._core.utils import make_new_run_id
from elasticsearch import Elasticsearch

from memory_pipeline.jobs import LLM_FREE_ASSETS, assets_to_run
from memory_pipeline.partitions import RANGE_END, RANGE_START, ordered_days, register_days, run_days, session_days
from memory_pipeline.sessions.discovery import Roots, agent_roots, as_roots, scan_sessions
from memory_pipeline.sessions.load import changes_since_indexed
from memory_pipeline.sessions.parse import Problem
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.raw_store import index_shortfalls, read_manifest
from memory_pipeline.stores.summary_store import failed_turns_by_day
from memory_pipeline.summarize.progress import PREFIX

JOB = "memory_job"


@dataclass
class Plan:
    days: list[str]  # days with sessions, within [start, end]
    todo: list[str]  # of those, the ones to run, the most recent first
    added: list[str]  # days that became partitions now
    problems: list[Problem] = field(default_factory=list)
    why: dict[str, list[str]] = field(default_factory=dict)  # each day to run: why


def plan_backfill(
    instance: DagsterInstance,
    sessions_dir: Roots,
    everything: bool,
    start: str | None = None,
    end: str | None = None,
    *,
    es: Elasticsearch | None = None,
    with_llm: bool = True,
) -> Plan:
    """Every day with sessions becomes a partition; the ones to run (all, with `everything`) are those not
    done, and, with `es` to compare against, done days whose files changed or whose turns failed."""
    found, problems = scan_sessions(sessions_dir)
    days = sorted(
        {f.partition for f in found if (start is None or f.partition >= start) and (end is None or f.partition <= end)}
    )
    added = register_days(instance, days)
    done = finished_days(instance, days, None if with_llm else LLM_FREE_ASSETS)
    why: dict[str, list[str]] = {
        d: ["--all" if everything else "not done"] for d in days if everything or d not in done
    }
    if es is not None and done:
        recorded = read_manifest(es, sorted(done))
        folders = {str(root.path) for root in as_roots(sessions_dir)}
        for day, changes in changes_since_indexed(found, recorded, done, folders).items():
            why.setdefault(day, []).extend(changes)
        # The index checked against what the manifest recorded: documents deleted behind the pipeline's back.
        for shortfall in index_shortfalls(es, sorted(done)).values():
            if shortfall.partition in done:
                why.setdefault(shortfall.partition, []).append(str(shortfall))
        if with_llm:
            for day, failed in failed_turns_by_day(es, sorted(done)).items():
                why.setdefault(day, []).append(f"{failed} failed turn(s) to read again")
    return Plan(days, sorted(why, reverse=True), added, problems, why)


def job_asset_keys() -> list[AssetKey]:
    from memory_pipeline.definitions import defs

    graph = defs.resolve_job_def(JOB).asset_layer.asset_graph
    return sorted(k for k in graph.get_all_asset_keys() if graph.get(k).is_materializable)


def finished_days(instance: DagsterInstance, days: Sequence[str], assets: Sequence[AssetKey] | None = None) -> set[str]:
    """The days every asset of the job (or of `assets`, a part of it) has materialised and whose latest run
    passed (status and checks) and ran those assets."""
    if not days:
        return set()
    keys = list(assets) if assets is not None else job_asset_keys()
    complete = set(days)
    for key in keys:
        status = instance.get_status_by_partition(key, list(days), session_days) or {}
        complete &= {d for d, s in status.items() if s == AssetPartitionStatus.MATERIALIZED}
    return complete & _days_whose_latest_run_passed(instance, complete, set(keys))


def _days_whose_latest_run_passed(instance: DagsterInstance, days: set[str], keys: set[AssetKey]) -> set[str]:
    order = ordered_days(instance)
    undecided, passed = set(days), set()
    for run in instance.get_runs(filters=RunsFilter(job_name=JOB)):  # newest first
        if not undecided:
            break
        covered = run_days(run.tags, order) & undecided
        if not covered:
            continue
        undecided -= covered
        # A run without the chat model does not finish a day that needs it.
        ran_all = not run.asset_selection or keys <= set(run.asset_selection)  # none: the whole job
        if run.status == DagsterRunStatus.SUCCESS and ran_all and _checks_passed(instance, run.run_id):
            passed |= covered
    return passed


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


def newest_first_runs(days: list[str], order: list[str]) -> list[tuple[str, str]]:
    """Runs for `days`, the most recent day first, so a long history is useful within minutes: the newest day
    alone, then the next 2, 4, 8… days (few runs still: a year of days is 9), each run a range of neighbouring
    partitions (`day_ranges`: only days that are to run; a tier that crosses a gap is two runs)."""
    tier = {day: (rank + 1).bit_length() - 1 for rank, day in enumerate(sorted(days, reverse=True))}
    position = {day: i for i, day in enumerate(order)}
    runs: list[tuple[str, str]] = []
    for level in sorted(set(tier.values())):
        ranges = day_ranges([d for d in days if tier[d] == level], order)
        runs += sorted(ranges, key=lambda r: max(order[position[r[0]] : position[r[1]] + 1]), reverse=True)
    return runs


StepProgress = Callable[[int, int], None]  # (steps finished, steps in the run)
TurnsProgress = Callable[[str], None]  # the newest "turns: … done, … left, about … to go" line of the run
_STEP_ENDS = {DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE, DagsterEventType.STEP_SKIPPED}


def _watch(
    instance: DagsterInstance,
    run_id: str,
    total: int,
    on_step: StepProgress | None,
    on_turns: TurnsProgress | None,
    done: threading.Event,
) -> None:
    """Report finished steps of `run_id`, and the summarising's progress lines, as they land in the event log
    (read on from where the last look stopped), until `done`, and once more then."""
    cursor, steps = None, 0
    while True:
        finished = done.wait(0.5)
        page = instance.get_records_for_run(run_id, cursor=cursor)
        cursor = page.cursor or cursor
        entries = [record.event_log_entry for record in page.records]
        steps += sum(e.dagster_event is not None and e.dagster_event.event_type in _STEP_ENDS for e in entries)
        if on_step:
            on_step(min(steps, total), total)
        lines = [e.user_message for e in entries if e.dagster_event is None and e.user_message.startswith(PREFIX)]
        if on_turns and lines:
            on_turns(lines[-1])
        if finished:
            return


def run_backfill(
    instance: DagsterInstance,
    first: str,
    last: str,
    definitions: Definitions | None = None,
    run_config: dict[str, Any] | None = None,
    on_step: StepProgress | None = None,
    on_turns: TurnsProgress | None = None,
    log_level: str = "DEBUG",
    asset_selection: Sequence[AssetKey] | None = None,
    tags: dict[str, str] | None = None,
) -> ExecuteInProcessResult:
    """One run of the job over the partitions [first, last] (the assets' single-run backfill policy), with
    the code location's definitions unless others are given; `on_step` hears of each finished step and
    `on_turns` of the summarising's progress (turns done, left, time to go), and the console shows the run's
    events from `log_level` up; `asset_selection` runs a part of the job (`assets_to_run`); `tags` name who
    asked (the CLI's backfill by default)."""
    if definitions is None:
        from memory_pipeline.definitions import defs as definitions

    job = definitions.resolve_job_def(JOB)
    config = {"loggers": {"console": {"config": {"log_level": log_level}}}} | (run_config or {})
    run_id = make_new_run_id()
    done = threading.Event()
    watcher = None
    if on_step or on_turns:
        watcher = threading.Thread(
            target=_watch,
            args=(instance, run_id, len(job.nodes_in_topological_order), on_step, on_turns, done),
            daemon=True,
        )
        watcher.start()
    try:
        return job.execute_in_process(
            instance=instance,
            raise_on_error=False,
            run_config=config,
            run_id=run_id,
            tags={RANGE_START: first, RANGE_END: last, **(tags or {"memory_pipeline/backfill": "cli"})},
            asset_selection=list(asset_selection) if asset_selection is not None else None,
        )
    finally:
        done.set()
        if watcher:
            watcher.join()


class Unreachable(RuntimeError):
    """Elasticsearch does not answer: what the backfill compares against is not there to read."""


Say = Callable[[str], None]


def plan_for(
    settings: Settings, instance: DagsterInstance, everything: bool, start: str | None, end: str | None, with_llm: bool
) -> Plan:
    """The plan over every agent's sessions, compared with what Elasticsearch's file manifest and turn ledger
    say was indexed. Raises `Unreachable`."""
    from elasticsearch import ConnectionError as ElasticsearchConnectionError

    roots = agent_roots(*settings.agent_folders)
    try:
        with make_client(settings, request_timeout=10, max_retries=1) as es:
            return plan_backfill(instance, roots, everything, start, end, es=es, with_llm=with_llm)
    except ElasticsearchConnectionError as exc:
        raise Unreachable(
            f"Elasticsearch at {', '.join(settings.elasticsearch_hosts)} does not answer ({exc.message}): "
            "start it with `memory-pipeline local up`, or check ES_URL"
        ) from None


def run_plan(
    instance: DagsterInstance,
    plan: Plan,
    definitions: Definitions,
    *,
    with_llm: bool,
    verbose: bool,
    quiet: bool,
    out: Say,
    err: Say,
) -> list[dict[str, object]]:
    """Run the plan's days, the most recent first (`newest_first_runs`), and say why each day runs (on `err`)
    and each run's outcome (on `out`, unless `quiet`: the caller prints JSON instead). A bar per run on a
    terminal (steps done of the job's), with the turns read, left and the time to go beside it (a plain line
    each when not a terminal); the event log only when `verbose`. Each run's outcome, in order."""
    from rich.console import Console
    from rich.progress import Progress

    ranges = newest_first_runs(plan.todo, ordered_days(instance))
    err(
        f"backfilling {len(plan.todo)} of {len(plan.days)} day(s) in {len(ranges)} run(s)"
        + ("" if with_llm else ", without the chat model")
    )
    for day in plan.todo:
        err(f"  {day}: {'; '.join(plan.why[day])}")
    runs: list[dict[str, object]] = []
    console = Console(stderr=True)
    plain = not quiet and not console.is_terminal
    with Progress(*Progress.get_default_columns(), console=console, disable=quiet or not console.is_terminal) as bar:
        for first, last in ranges:
            task = bar.add_task(f"{first}..{last}", total=None)

            def turns(line: str, task: int = task, days: str = f"{first}..{last}") -> None:
                bar.update(task, description=f"{days} {line}")
                if plain:
                    err(f"{days} {line}")

            result = run_backfill(
                instance,
                first,
                last,
                definitions,
                on_step=lambda done, total, task=task: bar.update(task, completed=done, total=total),
                on_turns=turns,
                log_level="DEBUG" if verbose else "WARNING",
                asset_selection=assets_to_run(with_llm),
            )
            bar.update(task, completed=bar.tasks[task].total or 1, total=bar.tasks[task].total or 1)
            # A failed check does not fail the run: it is said, never hidden behind "success".
            failed_checks = sorted({c.check_name for c in result.get_asset_check_evaluations() if not c.passed})
            runs.append(
                {
                    "first": first,
                    "last": last,
                    "run_id": result.run_id,
                    "success": result.success,
                    "failed_checks": failed_checks,
                }
            )
            if not quiet:  # the outcome is the command's output: stdout, whatever the bar does on stderr
                outcome = "success" if result.success else "FAILED"
                if failed_checks:
                    outcome += f", checks failed: {', '.join(failed_checks)}"
                out(f"{first}..{last}: run {result.run_id} {outcome}")
    return runs
