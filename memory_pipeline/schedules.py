"""A daily run for the latest complete day, in case the sensor was off; the weekly friction report."""

from datetime import timedelta

from dagster import RunRequest, ScheduleEvaluationContext, build_schedule_from_partitioned_job, schedule

from memory_pipeline.jobs import friction_job, memory_job


@schedule(job=memory_job, cron_schedule="30 0 * * *", execution_timezone="UTC")
def daily_ingest_schedule(context: ScheduleEvaluationContext) -> RunRequest:
    """At 00:30 UTC: (re)ingest yesterday, the latest complete day."""
    day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
    return RunRequest(run_key=f"daily:{day}", partition_key=day)


# Monday 02:00 UTC, for the week that just ended (after that Sunday's daily run).
weekly_friction_schedule = build_schedule_from_partitioned_job(
    friction_job, hour_of_day=2, minute_of_hour=0, name="weekly_friction_schedule"
)
