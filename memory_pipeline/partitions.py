"""Partitions: the days that have sessions, and the ISO weeks that have them, for the friction report.

Session days are dynamic partitions: a day exists once a session started on it
(UTC) has been found, by the sensor, the daily schedule or `memory-pipeline
backfill`. So a history from 2019 or a clock set to year 9999 is ingested like
any other day, and "missing" in the UI means a day with sessions not processed
yet, never one of a thousand empty days. Weeks follow the days: registering a
day registers its ISO week (keyed by its Monday), so a history older than any
fixed start still gets its friction report.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from dagster import BackfillPolicy, DagsterInstance, DynamicPartitionsDefinition

SESSION_DAYS = "session_days"
session_days = DynamicPartitionsDefinition(name=SESSION_DAYS)

# Friction is a weekly look back: ISO weeks (Monday to Sunday) that have sessions, keyed by their Monday.
SESSION_WEEKS = "session_weeks"
session_weeks = DynamicPartitionsDefinition(name=SESSION_WEEKS)


def week_of(day: str) -> str:
    """The Monday (ISO week start) of `day`, both YYYY-MM-DD."""
    when = date.fromisoformat(day)
    return (when - timedelta(days=when.weekday())).isoformat()


# What a day's run does without the chat model (`jobs.LLM_FREE_ASSETS`, the fast path's run): a run of these
# alone needs no `llm` day lock (locks.py).
LLM_FREE_ASSET_NAMES = (
    "session_files",
    "raw_messages",
    "turns",
    "memory_raw_index",
    "own_word_memories",
    "turn_observations",
    "memory_observations_index",
    "embeddings",
    "es_dense_vector",
    "memory_followthrough",
)


def uses_llm(selection: Iterable[Any] | None) -> bool:
    """Whether a run of these assets (a run's `asset_selection` of AssetKeys; None or empty: its whole job, so
    taken to have the chat model's work in it) does LLM work."""
    keys = list(selection or [])
    return not keys or any(key.path[-1] not in LLM_FREE_ASSET_NAMES for key in keys)


def daily_assets(group: str) -> dict[str, Any]:
    """What every pipeline asset shares: the session days, one run per backfilled range, its stage group."""
    return {"partitions_def": session_days, "backfill_policy": BackfillPolicy.single_run(), "group_name": group}


def new_days(instance: DagsterInstance, days: Iterable[str]) -> list[str]:
    """The days not yet partitions, sorted (added in order, the UI lists them by date)."""
    known = set(instance.get_dynamic_partitions(SESSION_DAYS))
    return sorted(set(days) - known)


def new_weeks(instance: DagsterInstance, days: Iterable[str]) -> list[str]:
    """The weeks of `days` not yet partitions, sorted."""
    known = set(instance.get_dynamic_partitions(SESSION_WEEKS))
    return sorted({week_of(d) for d in days} - known)


def register_days(instance: DagsterInstance, days: Iterable[str]) -> list[str]:
    """Make every day in `days` a partition, and its week; the days that were new."""
    days = list(days)
    added = new_days(instance, days)
    if added:
        instance.add_dynamic_partitions(SESSION_DAYS, added)
    weeks = new_weeks(instance, days)
    if weeks:
        instance.add_dynamic_partitions(SESSION_WEEKS, weeks)
    return added


def ordered_days(instance: DagsterInstance) -> list[str]:
    """The partitions in Dagster's order (insertion), the order a partition range runs in."""
    return list(instance.get_dynamic_partitions(SESSION_DAYS))


def instance_with_days(days: Iterable[str], instance: DagsterInstance | None = None) -> DagsterInstance:
    """An instance (a new ephemeral one unless given) on which `days` are partitions, for in-process runs
    (tests, benchmarks) that materialise them."""
    instance = instance or DagsterInstance.ephemeral()
    register_days(instance, days)
    return instance


RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"


def run_days(tags: dict[str, str], order: list[str]) -> set[str]:
    """The session days a run covers, from its tags: one partition, or a range in partition `order`."""
    if "dagster/partition" in tags:
        return {tags["dagster/partition"]}
    if RANGE_START in tags and RANGE_END in tags and tags[RANGE_START] in order and tags[RANGE_END] in order:
        return set(order[order.index(tags[RANGE_START]) : order.index(tags[RANGE_END]) + 1])
    return set()
