"""Daily partitions by session date: the day (UTC) the session started."""

from __future__ import annotations

from typing import Any

from dagster import BackfillPolicy, DailyPartitionsDefinition, WeeklyPartitionsDefinition

# pi's oldest sessions (early 2024 in the wild) fit; end_offset=1 includes today, which the sensor
# ingests while it is still going on.
session_days = DailyPartitionsDefinition(start_date="2024-01-01", end_offset=1, timezone="UTC")

# Friction is a weekly look back: ISO weeks (Monday to Sunday), the current one included.
session_weeks = WeeklyPartitionsDefinition(start_date="2024-01-01", day_offset=1, end_offset=1, timezone="UTC")


def daily_assets(group: str) -> dict[str, Any]:
    """What every pipeline asset shares: the session days, one run per backfilled range, its stage group."""
    return {"partitions_def": session_days, "backfill_policy": BackfillPolicy.single_run(), "group_name": group}
