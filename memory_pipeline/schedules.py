"""A daily run for the latest complete day, in case the sensor was off; the weekly friction report."""

from datetime import timedelta

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    build_schedule_from_partitioned_job,
    schedule,
)

from memory_pipeline.jobs import assets_to_run, friction_job, memory_job
from memory_pipeline.partitions import register_days
from memory_pipeline.resources import LlamaResource, SessionsResource
from memory_pipeline.sessions.discovery import scan_sessions


@schedule(
    job=memory_job,
    cron_schedule="30 0 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.RUNNING,
    description="At 00:30 UTC, (re)ingests yesterday if it has sessions: a safety net for a sensor that was off.",
)
def daily_ingest_schedule(
    context: ScheduleEvaluationContext, sessions: SessionsResource, llm: LlamaResource
) -> RunRequest | SkipReason:
    """At 00:30 UTC: (re)ingest yesterday, the latest complete day, when any session started on it."""
    day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
    found, _ = scan_sessions(sessions.root)
    if not any(f.partition == day for f in found):
        return SkipReason(f"no session under {sessions.root} started on {day}")
    register_days(context.instance, [day])
    # Without the chat model: searchable now, summarised by a later run.
    return RunRequest(run_key=f"daily:{day}", partition_key=day, asset_selection=assets_to_run(llm.enabled))


# Monday 02:00 UTC, for the week that just ended (after that Sunday's daily run).
weekly_friction_schedule = build_schedule_from_partitioned_job(
    friction_job,
    hour_of_day=2,
    minute_of_hour=0,
    name="weekly_friction_schedule",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Mondays at 02:00 UTC, the friction report of the week that just ended.",
)
