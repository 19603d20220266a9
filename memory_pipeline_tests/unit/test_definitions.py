"""The one Definitions object loads and holds what the UI shows."""

from __future__ import annotations

from dagster import AssetKey, DefaultScheduleStatus, Definitions

from memory_pipeline.definitions import defs
from memory_pipeline.partitions import session_days


def test_definitions_are_loadable() -> None:
    Definitions.validate_loadable(defs)


def test_ingest_assets_checks_sensor_schedule_and_job() -> None:
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys >= {"session_files", "raw_messages", "turns", "memory_raw_index"}
    checks = {c.name for c in graph.asset_check_keys if c.asset_key == AssetKey("memory_raw_index")}
    assert checks == {
        "turn_integrity",
        "index_equals_messages",
        "every_file_represented",
        "rerun_changes_nothing",
        "every_message_placed",
    }
    assert defs.resolve_sensor_def("session_files_sensor").job_name == "memory_job"
    assert defs.resolve_schedule_def("daily_ingest_schedule").cron_schedule == "30 0 * * *"
    for key in ("session_files", "raw_messages", "turns", "memory_raw_index"):
        assert graph.get(AssetKey(key)).partitions_def == session_days  # dynamic: days that have sessions
    for name in ("session_files_sensor",):
        assert defs.resolve_sensor_def(name).description
    for name in ("daily_ingest_schedule", "weekly_friction_schedule"):
        schedule = defs.resolve_schedule_def(name)
        assert schedule.description and schedule.default_status == DefaultScheduleStatus.RUNNING


def test_reflect_assets_checks_weekly_friction_job_and_schedule() -> None:
    graph = defs.resolve_asset_graph()
    for key in ("daily_log", "reflections", "review_proposals", "rule_maturity"):
        assert graph.get(AssetKey(key)).partitions_def is not None
        assert AssetKey(key) in {
            k for k in defs.resolve_job_def("memory_job").asset_layer.asset_graph.get_all_asset_keys()
        }
    checks = {c.name for c in graph.asset_check_keys if c.asset_key == AssetKey("reflections")}
    assert checks == {"every_memory_reflected_once", "supersession_marks_consistent"}
    weekly = graph.get(AssetKey("friction_report")).partitions_def
    assert weekly.name == "session_weeks"  # the weeks that have sessions, however old
    schedule = defs.resolve_schedule_def("weekly_friction_schedule")
    assert schedule.job_name == "friction_job" and schedule.cron_schedule == "0 2 * * 1"


def test_every_daily_asset_holds_its_days_however_its_run_starts() -> None:
    """A run from an asset's page or the Dagster CLI that materialises only, say, `rule_maturity` still takes
    the day locks: every asset of the session days needs the `day_locks` resource (issue 30)."""
    daily = [a for a in defs.assets if getattr(a, "partitions_def", None) == session_days]
    assert len(daily) >= 13
    for asset in daily:
        assert "day_locks" in asset.required_resource_keys, asset.key
