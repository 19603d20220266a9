"""A daily run for the latest complete day, in case the sensor was off; the weekly friction report."""

from datetime import timedelta

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from memory_pipeline.jobs import assets_to_run, friction_job, memory_job
from memory_pipeline.partitions import SESSION_WEEKS, register_days, week_of
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
    found, _ = scan_sessions(sessions.roots)
    if not any(f.partition == day for f in found):
        return SkipReason(f"no session under {sessions.root} started on {day}")
    register_days(context.instance, [day])
    # Without the chat model: searchable now, summarised by a later run.
    return RunRequest(run_key=f"daily:{day}", partition_key=day, asset_selection=assets_to_run(llm.enabled))


@schedule(
    job=friction_job,
    cron_schedule="0 2 * * 1",
    execution_timezone="UTC",
    name="weekly_friction_schedule",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Mondays at 02:00 UTC (after Sunday's daily run), the friction report of the week that just ended, "
    "when it had sessions.",
)
def weekly_friction_schedule(context: ScheduleEvaluationContext) -> RunRequest | SkipReason:
    """The week that ended yesterday, when any session of it was found (its week is then a partition)."""
    week = week_of((context.scheduled_execution_time - timedelta(days=7)).date().isoformat())
    if week not in context.instance.get_dynamic_partitions(SESSION_WEEKS):
        return SkipReason(f"no session found in the week of {week}")
    return RunRequest(run_key=f"friction:{week}", partition_key=week)
