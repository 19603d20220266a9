"""A day's LLM-free run for the fast path: the same job, assets and checks as every other run, in the shared
Dagster instance (so it shows in the UI beside the sensor's runs), tagged as the fast path's."""

from __future__ import annotations

from functools import cached_property, partial
from typing import TYPE_CHECKING

from memory_pipeline.fresh.queue import FreshIngest
from memory_pipeline.locks import day_held
from memory_pipeline.settings import Settings

if TYPE_CHECKING:
    from dagster import Definitions

FAST_TAG = "memory_pipeline/fast"


class DayRunner:
    """Runs a day through the LLM-free assets (`jobs.LLM_FREE_ASSETS`) with the service's settings (its sessions
    folder, its servers), not whatever the environment of the process would give the code location."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @cached_property
    def definitions(self) -> Definitions:
        # Built on the first notice: a service that is never notified never loads Dagster's job machinery.
        from memory_pipeline.definitions import build_definitions

        return build_definitions(self.settings)

    def __call__(self, day: str) -> tuple[str, bool]:
        """The run's id and success."""
        from memory_pipeline.backfill import run_backfill
        from memory_pipeline.instance import open_instance
        from memory_pipeline.jobs import LLM_FREE_ASSETS
        from memory_pipeline.partitions import register_days

        with open_instance(self.settings) as instance:
            register_days(instance, [day])
            result = run_backfill(
                instance,
                day,
                day,
                definitions=self.definitions,
                log_level="WARNING",
                asset_selection=LLM_FREE_ASSETS,
                tags={FAST_TAG: "turn-end"},
            )
        return result.run_id, result.success


def fresh_ingest(settings: Settings) -> FreshIngest:
    """The service's queue, running days with these settings and seeing the day locks every run takes."""
    return FreshIngest(DayRunner(settings), partial(day_held, settings.memory_pipeline_state_dir / "locks"))
