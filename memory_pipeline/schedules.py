"""A daily run for the latest complete day, in case the sensor was off."""

from datetime import timedelta

from dagster import RunRequest, ScheduleEvaluationContext, schedule

from memory_pipeline.jobs import memory_job


@schedule(job=memory_job, cron_schedule="30 0 * * *", execution_timezone="UTC")
def daily_ingest_schedule(context: ScheduleEvaluationContext) -> RunRequest:
    """At 00:30 UTC: (re)ingest yesterday, the latest complete day."""
    day = (context.scheduled_execution_time - timedelta(days=1)).date().isoformat()
    return RunRequest(run_key=f"daily:{day}", partition_key=day)
