"""Daily partitions by session date: the day (UTC) the session started."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition

# pi's oldest sessions (early 2024 in the wild) fit; end_offset=1 includes today, which the sensor
# ingests while it is still going on.
session_days = DailyPartitionsDefinition(start_date="2024-01-01", end_offset=1, timezone="UTC")
