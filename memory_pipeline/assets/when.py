"""When each asset runs, said in its description (the Dagster UI shows it on the asset's page and in the graph):
a person who sees "Never materialized" learns whether that is expected and what would start it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

# A day's assets (memory_job): the sensor, the nightly safety net, a backfill, or a person.
DAILY = (
    "for each day that has sessions, in `memory_job`: `session_files_sensor` starts a run about 30 s after a "
    "session file of that day is written, `daily_ingest_schedule` re-runs yesterday at 00:30 UTC, and "
    "`memory-pipeline backfill` or Materialize here runs any day on request."
)
# The same, but it needs the chat model.
DAILY_WITH_LLM = (
    f"{DAILY} It needs the chat model: with MEMORY_PIPELINE_NO_LLM set, runs leave it out and a later full run "
    'does it (so it can show "Never materialized" for days that are searchable already).'
)
WEEKLY = (
    "once a week, in `friction_job`: `weekly_friction_schedule` runs it on Mondays at 02:00 UTC for the week "
    "that just ended (Monday to Sunday), when that week had sessions. Until the first Monday after your first "
    'session it shows "Never materialized": that is expected. Materialize here runs any week on request.'
)


def runs(when: str) -> Callable[[F], F]:
    """Appends when the asset runs to its docstring (its description in the UI); put it under `@asset`."""

    def mark(fn: F) -> F:
        fn.__doc__ = f"{inspect.cleandoc(fn.__doc__ or '')}\n\nWhen it runs: {when}"
        return fn

    return mark
