"""The sessions-directory sensor and the daily schedule, evaluated without a daemon."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    RunRequest,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    instance_for_test,
)

from memory_pipeline.jobs import LLM_FREE_ASSETS
from memory_pipeline.resources import LlamaResource, SessionsResource
from memory_pipeline.schedules import daily_ingest_schedule
from memory_pipeline.sensors import session_files_sensor


def _session(path: Path, session_id: str, day: str, lines: int = 1, age_seconds: float = 600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "version": 3, "id": session_id, "timestamp": f"{day}T10:00:00Z", "cwd": "/w"}
    body = [
        json.dumps(
            {
                "type": "message",
                "id": f"m{i}",
                "parentId": f"m{i - 1}" if i else None,
                "timestamp": f"{day}T10:00:0{i % 10}Z",
                "message": {"role": "user", "content": f"hello {i}", "timestamp": i},
            }
        )
        for i in range(lines)
    ]
    path.write_text("\n".join([json.dumps(header), *body]) + "\n")
    old = time.time() - age_seconds
    os.utime(path, (old, old))
    return path


def _llm(with_llm: bool = True) -> LlamaResource:
    return LlamaResource(url="http://127.0.0.1:1", journal_dir="/nonexistent", enabled=with_llm)


def _tick(root: Path, cursor: str | None, with_llm: bool = True) -> tuple[list[RunRequest] | SkipReason, str | None]:
    resource = SessionsResource(sessions_dir=str(root), cache_dir=str(root / ".cache"), debounce_seconds=30)
    context = build_sensor_context(
        cursor=cursor, resources={"sessions": resource, "llm": _llm(with_llm)}, instance=DagsterInstance.ephemeral()
    )
    result = session_files_sensor(context)
    if isinstance(result, SensorResult):
        # New days become partitions in the same tick as their runs.
        added = {k for r in result.dynamic_partitions_requests for k in r.partition_keys}
        assert added >= {r.partition_key for r in result.run_requests} - set(
            context.instance.get_dynamic_partitions("session_days")
        )
        return list(result.run_requests), context.cursor
    return result, context.cursor


def test_new_file_requests_its_day_and_a_repeat_tick_requests_nothing(tmp_path: Path) -> None:
    _session(tmp_path / "--w--" / "a.jsonl", "a", "2026-01-05")
    first, cursor = _tick(tmp_path, None)
    assert [r.partition_key for r in first] == ["2026-01-05"]
    again, same_cursor = _tick(tmp_path, cursor)
    assert isinstance(again, SkipReason) and same_cursor == cursor
    # A tick that lost its cursor asks again, under the same run key: Dagster drops the duplicate.
    replay, _ = _tick(tmp_path, None)
    assert [r.run_key for r in replay] == [r.run_key for r in first]


def test_without_the_chat_model_runs_leave_out_the_llm_assets(tmp_path: Path) -> None:
    _session(tmp_path / "a.jsonl", "a", "2026-01-05")
    [full], _ = _tick(tmp_path, None)
    [llm_free], _ = _tick(tmp_path, None, with_llm=False)
    assert full.asset_selection is None  # the whole job
    assert llm_free.asset_selection == LLM_FREE_ASSETS
    assert not {"llm_ideas", "memory_summary_index", "reflections"} & {k.path[-1] for k in LLM_FREE_ASSETS}


def test_changed_file_requests_again_with_a_new_run_key(tmp_path: Path) -> None:
    path = _session(tmp_path / "a.jsonl", "a", "2026-01-05", lines=1)
    first, cursor = _tick(tmp_path, None)
    _session(path, "a", "2026-01-05", lines=3)
    second, _ = _tick(tmp_path, cursor)
    assert [r.partition_key for r in second] == ["2026-01-05"]
    assert second[0].run_key != first[0].run_key


def test_unchanged_files_are_not_read(tmp_path: Path) -> None:
    _session(tmp_path / "a.jsonl", "a", "2026-01-05")
    _, cursor = _tick(tmp_path, None)
    _session(tmp_path / "b.jsonl", "b", "2026-01-07")
    result, _ = _tick(tmp_path, cursor)
    assert [r.partition_key for r in result] == ["2026-01-07"]


def test_file_being_written_waits_for_the_debounce(tmp_path: Path) -> None:
    path = _session(tmp_path / "a.jsonl", "a", "2026-01-05", age_seconds=0)
    result, cursor = _tick(tmp_path, None)
    assert isinstance(result, SkipReason)
    assert json.loads(cursor) == {}
    old = time.time() - 120
    os.utime(path, (old, old))
    result, _ = _tick(tmp_path, cursor)
    assert [r.partition_key for r in result] == ["2026-01-05"]


def test_deleted_file_requests_its_day(tmp_path: Path) -> None:
    path = _session(tmp_path / "a.jsonl", "a", "2026-01-05")
    _, cursor = _tick(tmp_path, None)
    path.unlink()
    result, cursor = _tick(tmp_path, cursor)
    assert [r.partition_key for r in result] == ["2026-01-05"]
    assert json.loads(cursor) == {}


def test_non_session_files_are_remembered_not_requested(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text('{"a": 1}\n')
    old = time.time() - 600
    os.utime(tmp_path / "notes.jsonl", (old, old))
    result, cursor = _tick(tmp_path, None)
    assert isinstance(result, SkipReason)
    assert json.loads(cursor)["notes.jsonl"][2] is None


def test_empty_or_missing_directory_skips(tmp_path: Path) -> None:
    result, _ = _tick(tmp_path / "nothing-here", None)
    assert isinstance(result, SkipReason)


def test_daily_schedule_targets_the_latest_complete_day_when_it_has_sessions(tmp_path: Path) -> None:
    resource = SessionsResource(sessions_dir=str(tmp_path), cache_dir=str(tmp_path / ".cache"))
    # A schedule context needs an instance with a ref, and opens its own copy from it:
    # entered as a context, that copy is closed before the instance, not when it is
    # collected during a later test (which left Dagster pointing at a dead instance).
    with (
        instance_for_test() as instance,
        build_schedule_context(
            scheduled_execution_time=datetime(2026, 3, 1, 0, 30, tzinfo=UTC),
            resources={"sessions": resource, "llm": _llm()},
            instance=instance,
        ) as context,
    ):
        assert isinstance(daily_ingest_schedule(context), SkipReason)
        _session(tmp_path / "a.jsonl", "a", "2026-02-28")
        request = daily_ingest_schedule(context)
        assert request.partition_key == "2026-02-28" and request.run_key == "daily:2026-02-28"
        assert instance.get_dynamic_partitions("session_days") == ["2026-02-28"]


def test_sessions_from_any_year_get_a_partition(tmp_path: Path) -> None:
    _session(tmp_path / "old.jsonl", "old", "2019-03-02")
    _session(tmp_path / "ahead.jsonl", "ahead", "9999-12-31")
    result, _ = _tick(tmp_path, None)
    assert [r.partition_key for r in result] == ["9999-12-31", "2019-03-02"]


def test_a_history_found_at_once_is_requested_the_most_recent_day_first(tmp_path: Path) -> None:
    days = ["2026-01-05", "2025-12-31", "2026-02-01", "2024-07-14"]
    for i, day in enumerate(days):
        _session(tmp_path / f"s{i}.jsonl", f"s{i}", day)
    result, _ = _tick(tmp_path, None)
    assert [r.partition_key for r in result] == sorted(days, reverse=True)


def test_symlink_loops_are_logged_not_followed_forever(tmp_path: Path, capfd: pytest.CaptureFixture) -> None:
    _session(tmp_path / "real" / "a.jsonl", "a", "2026-01-05")
    (tmp_path / "real" / "loop").symlink_to(tmp_path)
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "missing.jsonl")
    result, _ = _tick(tmp_path, None)
    assert [r.partition_key for r in result] == ["2026-01-05"]
    logged = capfd.readouterr().err
    assert "symlink loop" in logged and "dangling.jsonl: broken or looping symlink" in logged


def test_weeks_follow_the_days_however_old_and_the_friction_schedule_runs_a_week_with_sessions(tmp_path: Path) -> None:
    from memory_pipeline.partitions import register_days, week_of
    from memory_pipeline.schedules import weekly_friction_schedule

    assert week_of("2019-05-02") == "2019-04-29" and week_of("2026-03-09") == "2026-03-09"  # a Monday is its own
    with instance_for_test() as instance:
        register_days(instance, ["2019-05-02", "2019-05-05", "2026-02-25"])
        assert instance.get_dynamic_partitions("session_weeks") == ["2019-04-29", "2026-02-23"]
        for when, expected in ((datetime(2026, 3, 2, 2, 0, tzinfo=UTC), "2026-02-23"), (None, None)):
            at = when or datetime(2026, 3, 9, 2, 0, tzinfo=UTC)  # the week of 2026-03-02 had no session
            with build_schedule_context(scheduled_execution_time=at, instance=instance) as context:
                result = weekly_friction_schedule(context)
            if expected:
                assert isinstance(result, RunRequest) and result.partition_key == expected
            else:
                assert isinstance(result, SkipReason)
    # The sensor registers the weeks of the days it finds.
    _session(tmp_path / "old.jsonl", "old", "2019-05-02")
    resource = SessionsResource(sessions_dir=str(tmp_path), cache_dir=str(tmp_path / ".cache"), debounce_seconds=30)
    context = build_sensor_context(
        resources={"sessions": resource, "llm": _llm()}, instance=DagsterInstance.ephemeral()
    )
    result = session_files_sensor(context)
    assert {k for r in result.dynamic_partitions_requests for k in r.partition_keys} == {"2019-05-02", "2019-04-29"}


def test_other_agents_folders_request_their_days_and_a_broken_one_stops_nothing(tmp_path: Path) -> None:
    """A Claude Code transcript and a Codex rollout in their own folders request their days in the same tick as
    pi's files; a file of one agent that is no session is logged, never the end of the tick."""
    fixtures = Path(__file__).parents[1] / "fixtures"
    pi, claude, codex = tmp_path / "pi", tmp_path / "claude", tmp_path / "codex"
    _session(pi / "a.jsonl", "a", "2026-01-05")
    claude_file = next((fixtures / "claude-code" / "codemie-2.0.64").glob("4c2ddfdc*.jsonl"))
    codex_file = next((fixtures / "codex" / "synthetic").glob("rollout-2026-*.jsonl"))
    (claude / "-tmp-private").mkdir(parents=True)
    (codex / "2026" / "03" / "02").mkdir(parents=True)
    copies = [
        claude / "-tmp-private" / claude_file.name,
        codex / "2026" / "03" / "02" / codex_file.name,
        claude / "-tmp-private" / "broken.jsonl",
    ]
    copies[0].write_bytes(claude_file.read_bytes())
    copies[1].write_bytes(codex_file.read_bytes())
    copies[2].write_text("{not json\n")
    old = time.time() - 600
    for copy in copies:
        os.utime(copy, (old, old))
    resource = SessionsResource(
        sessions_dir=str(pi), claude_dir=str(claude), codex_dir=str(codex), cache_dir=str(tmp_path / ".cache")
    )
    context = build_sensor_context(
        cursor=None, resources={"sessions": resource, "llm": _llm()}, instance=DagsterInstance.ephemeral()
    )
    result = session_files_sensor(context)
    assert isinstance(result, SensorResult)
    assert sorted(r.partition_key for r in result.run_requests) == ["2025-12-10", "2026-01-05", "2026-03-02"]
    cursor = json.loads(context.cursor)
    assert {key.split("/")[0] for key in cursor} >= {"a.jsonl", "claude-code", "codex"}
    assert cursor["claude-code/-tmp-private/broken.jsonl"][2] is None  # seen, not a session: not asked again
