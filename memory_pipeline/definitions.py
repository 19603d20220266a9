"""The one Definitions object: assets, checks, jobs, sensors, schedules and resources."""

from __future__ import annotations

from dagster import Definitions, ExecutorDefinition, define_asset_job, load_assets_from_modules

from memory_pipeline.assets import followthrough, ingest, recall, reflect, summarize
from memory_pipeline.jobs import friction_job, memory_job, review_apply_job
from memory_pipeline.resources import build_resources
from memory_pipeline.schedules import daily_ingest_schedule, weekly_friction_schedule
from memory_pipeline.sensors import session_files_sensor
from memory_pipeline.settings import Settings, load_settings


def build_definitions(settings: Settings, executor: ExecutorDefinition | None = None) -> Definitions:
    """Everything the UI shows, with resources for these settings (tests and benchmarks bring their own);
    `executor` adds `memory_job_<executor>`: memory_job on that executor (the executor benchmark compares them)."""
    jobs = [memory_job, friction_job, review_apply_job]
    if executor is not None:
        name = f"{memory_job.name}_{executor.name}"
        jobs.append(define_asset_job(name, selection=memory_job.selection, executor_def=executor))
    return Definitions(
        assets=load_assets_from_modules([ingest, summarize, recall, reflect, followthrough]),
        jobs=jobs,
        sensors=[session_files_sensor],
        schedules=[daily_ingest_schedule, weekly_friction_schedule],
        resources=build_resources(settings),
    )


# Invalid configuration stops the code location from loading, with a message naming the variable.
defs = build_definitions(load_settings())
