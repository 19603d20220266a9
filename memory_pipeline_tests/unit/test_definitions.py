"""The one Definitions object loads and holds what the UI shows."""

from __future__ import annotations

from dagster import AssetKey, Definitions

from memory_pipeline.definitions import defs


def test_definitions_are_loadable() -> None:
    Definitions.validate_loadable(defs)


def test_ingest_assets_checks_sensor_schedule_and_job() -> None:
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys >= {"session_files", "raw_messages", "turns", "memory_raw_index"}
    checks = {c.name for c in graph.asset_check_keys if c.asset_key == AssetKey("memory_raw_index")}
    assert checks == {"turn_integrity", "index_equals_messages", "every_file_represented", "rerun_changes_nothing"}
    assert defs.resolve_sensor_def("session_files_sensor").job_name == "memory_job"
    assert defs.resolve_schedule_def("daily_ingest_schedule").cron_schedule == "30 0 * * *"
    for key in ("session_files", "raw_messages", "turns", "memory_raw_index"):
        assert graph.get(AssetKey(key)).partitions_def is not None
