"""The one Definitions object loads and holds what the UI shows; a snapshot of all of it (assets, checks, jobs,
schedules, sensors, partitions) makes every change to the graph a visible diff. After an intended change:
`MEMORY_PIPELINE_UPDATE_SNAPSHOT=1 uv run pytest memory_pipeline_tests/unit/test_definitions.py`."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dagster import AssetKey, DefaultScheduleStatus, Definitions, PartitionsDefinition

from memory_pipeline.definitions import defs
from memory_pipeline.partitions import session_days


def test_definitions_are_loadable() -> None:
    Definitions.validate_loadable(defs)


def test_ingest_assets_checks_sensor_schedule_and_job() -> None:
    graph = defs.resolve_asset_graph()
    keys = {key.to_user_string() for key in graph.get_all_asset_keys()}
    assert keys >= {"session_files", "raw_messages", "turns", "memory_raw_index"}
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


SNAPSHOT = Path(__file__).with_name("definitions_snapshot.json")


def _partitions(partitions: PartitionsDefinition | None) -> str | None:
    if partitions is None:
        return None
    return getattr(partitions, "name", None) or type(partitions).__name__


def snapshot(definitions: Definitions) -> dict[str, Any]:
    """What the Dagster UI shows of the code location, as plain data in a stable order."""
    graph = definitions.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "partitions": _partitions(node.partitions_def),
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "kinds": sorted(node.kinds),
            "checks": sorted(c.name for c in node.check_keys),
            "resources": sorted(node.assets_def.required_resource_keys) if node.is_executable else [],
        }
    jobs = {
        job.name: sorted(k.to_user_string() for k in job.asset_layer.executable_asset_keys)
        for job in sorted(definitions.resolve_all_job_defs(), key=lambda j: j.name)
        if not job.name.startswith("__")
    }
    schedules = {
        s.name: {"cron": s.cron_schedule, "job": s.job_name, "status": s.default_status.value}
        for s in sorted((definitions.resolve_schedule_def(s.name) for s in definitions.schedules), key=lambda s: s.name)
    }
    sensors = {
        s.name: {"job": s.job_name, "status": s.default_status.value}
        for s in sorted((definitions.resolve_sensor_def(s.name) for s in definitions.sensors), key=lambda s: s.name)
    }
    partitions = sorted({p for a in assets.values() if (p := a["partitions"])})
    return {"assets": assets, "jobs": jobs, "schedules": schedules, "sensors": sensors, "partitions": partitions}


def test_the_definitions_are_what_the_snapshot_says() -> None:
    now = snapshot(defs)
    if os.environ.get("MEMORY_PIPELINE_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    assert now == json.loads(SNAPSHOT.read_text()), "the Definitions changed: see the module's docstring"
    # The snapshot holds what it is for: every check, on its asset.
    assert now["assets"]["memory_raw_index"]["checks"] == sorted(
        ["turn_integrity", "index_equals_messages", "index_equals_manifest", "every_file_represented",
         "rerun_changes_nothing", "every_message_placed"]
    )  # fmt: skip
