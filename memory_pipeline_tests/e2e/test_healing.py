"""Every store heals what it can check (issue 45), on the real Elasticsearch through the real `backfill`:
documents deleted from `memory-raw` come back, a session file cut short keeps what was indexed from it
(marked as no longer in the file), a lost parse-cache entry is rebuilt, a cut message is counted and logged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from dagster import AssetKey, DagsterEventType

from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import delete_matching, make_client
from memory_pipeline.stores.indices import LEFT_FILE, OBSERVATION_INDEX, RAW_INDEX
from testkit.ingest_helpers import cli_env, copy_fixture, indexed, reset_days, stored_instance

V1 = "handwritten-cass-v1.jsonl"  # 2 turns, 5 messages
DELETED_DAY, SHRUNK_DAY, CACHE_DAY, LONG_DAY = "2024-09-21", "2024-09-22", "2024-09-23", "2024-09-24"
MOVED_DAY = "2024-09-25"


def _backfill(env: dict[str, str], *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "backfill", "--json", "--no-llm", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    report["stderr"] = done.stderr
    return report


def _setup(local_runtime: Settings, tmp_path: Path, day: str) -> tuple[Settings, dict[str, str], str, Path]:
    reset_days(local_runtime, [day])
    sessions = tmp_path / "sessions"
    sid = f"test-heal-{uuid.uuid4().hex[:8]}"
    path = copy_fixture(V1, sessions / "a.jsonl", sid, day)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)
    return settings, cli_env(settings), sid, path


def _check_results(settings: Settings, run_id: str) -> dict[str, bool]:
    with stored_instance(settings, settings.memory_pipeline_state_dir / "dagster") as instance:
        records = instance.get_records_for_run(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION).records
        evaluations = [r.event_log_entry.dagster_event.event_specific_data for r in records]
        return {e.check_name: e.passed for e in evaluations}


def _latest_metadata(settings: Settings, asset: str) -> dict:
    with stored_instance(settings, settings.memory_pipeline_state_dir / "dagster") as instance:
        event = instance.get_latest_materialization_event(AssetKey(asset))
        assert event is not None and event.asset_materialization is not None
        return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def _delete_documents(settings: Settings, sid: str) -> None:
    with make_client(settings) as client:
        assert delete_matching(client, [RAW_INDEX], {"term": {"session_id": sid}}) == 5


def test_documents_deleted_from_memory_raw_are_restored_by_backfill(local_runtime: Settings, tmp_path: Path) -> None:
    settings, env, sid, _ = _setup(local_runtime, tmp_path, DELETED_DAY)
    first = _backfill(env)
    assert [r["success"] for r in first["runs"]] == [True]
    assert len(indexed(local_runtime, {"term": {"session_id": sid}})) == 5

    # A person (or a lost shard) removes the day's documents: the plain backfill sees it and repairs the day.
    _delete_documents(local_runtime, sid)
    plain = _backfill(env)
    assert plain["todo"] == [DELETED_DAY], plain
    assert plain["why"][DELETED_DAY] == ["a.jsonl: memory-raw holds 0 of its 5 documents"], plain["why"]
    assert len(indexed(local_runtime, {"term": {"session_id": sid}})) == 5
    checks = _check_results(settings, plain["runs"][0]["run_id"])
    assert checks and all(checks.values()), checks
    assert _latest_metadata(settings, "memory_raw_index")["restored"] == 5
    assert _backfill(env)["todo"] == []

    # The same with --all: the run writes the missing documents back instead of reporting success over none.
    _delete_documents(local_runtime, sid)
    everything = _backfill(env, "--all")
    assert [(r["success"], r["failed_checks"]) for r in everything["runs"]] == [(True, [])]
    assert len(indexed(local_runtime, {"term": {"session_id": sid}})) == 5
    checks = _check_results(settings, everything["runs"][0]["run_id"])
    assert checks and all(checks.values()), checks


def test_a_file_cut_short_keeps_what_was_indexed_from_it(local_runtime: Settings, tmp_path: Path) -> None:
    settings, env, sid, path = _setup(local_runtime, tmp_path, SHRUNK_DAY)
    _backfill(env)
    before = {d["_id"]: d for d in indexed(local_runtime, {"term": {"session_id": sid}})}
    assert len(before) == 5

    # Truncated after indexing: the header and the first turn's two messages stay in the file.
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:3]) + b"\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns()))
    shrank = _backfill(env)
    assert shrank["todo"] == [SHRUNK_DAY]
    [why] = shrank["why"][SHRUNK_DAY]
    assert why.startswith("a.jsonl: shrank") and "kept, marked as no longer in the file" in why, why
    checks = _check_results(settings, shrank["runs"][0]["run_id"])
    assert checks and all(checks.values()), checks

    after = {d["_id"]: d for d in indexed(local_runtime, {"term": {"session_id": sid}})}
    assert set(after) == set(before)  # nothing deleted
    left = {doc_id for doc_id, doc in after.items() if doc.get(LEFT_FILE)}
    assert len(left) == 3 and all(after[d]["content"] == before[d]["content"] for d in left)
    metadata = _latest_metadata(settings, "memory_raw_index")
    assert metadata["left_file"] == 3 and metadata["deleted"] == 0
    assert _backfill(env)["todo"] == []  # kept documents are not a difference to repair


def test_a_lost_parse_cache_entry_is_rebuilt(local_runtime: Settings, tmp_path: Path) -> None:
    settings, env, sid, _ = _setup(local_runtime, tmp_path, CACHE_DAY)
    _backfill(env)
    cache = settings.memory_pipeline_state_dir / "parsed"
    entries = [p for p in cache.rglob(f"{sid}-*") if p.suffix in (".parquet", ".json")]
    assert entries, sorted(cache.rglob("*"))
    for entry in entries:
        entry.unlink()
    again = _backfill(env, "--all")
    assert [r["success"] for r in again["runs"]] == [True]
    assert "not read this run" not in again["stderr"]
    metadata = _latest_metadata(settings, "memory_raw_index")
    assert metadata["unread_sessions"] == []
    assert _latest_metadata(settings, "raw_messages")["parsed_files"] == 1
    assert all(p.exists() for p in entries)  # the entry is there again


def test_a_message_cut_to_fit_is_counted_and_logged(local_runtime: Settings, tmp_path: Path) -> None:
    settings, env, sid, path = _setup(local_runtime, tmp_path, LONG_DAY)
    lines = path.read_text().rstrip("\n").split("\n")
    huge = {
        "type": "message",
        "timestamp": f"{LONG_DAY}T09:05:00.000Z",
        "message": {"role": "user", "content": "x" * 300_000},
    }
    path.write_text("\n".join([*lines, json.dumps(huge)]) + "\n")
    run = _backfill(env)
    assert [r["success"] for r in run["runs"]] == [True]
    metadata = _latest_metadata(settings, "raw_messages")
    assert metadata["truncated_messages"] == 1
    line = len(lines) + 1
    with stored_instance(settings, settings.memory_pipeline_state_dir / "dagster") as instance:
        logs = [
            r.event_log_entry.user_message
            for r in instance.get_records_for_run(run["runs"][0]["run_id"]).records
            if r.event_log_entry.dagster_event is None
        ]
    assert any(f"a.jsonl:{line}: truncated" in m and "300,000" in m for m in logs), logs
    [doc] = [d for d in indexed(local_runtime, {"term": {"session_id": sid}}) if d["line"] == line]
    assert doc["content_truncated"] and len(doc["content"]) < 101_000


def _count(settings: Settings, index: str, sid: str) -> int:
    with make_client(settings) as client:
        client.indices.refresh(index=index)
        return client.count(index=index, query={"term": {"session_id": sid}})["count"]


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "memory_pipeline", *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _folders(env: dict[str, str], *args: str) -> str:
    return _cli(env, "folders", *args)


def test_memories_of_a_folder_no_longer_configured_stay_until_a_person_removes_them(
    local_runtime: Settings, tmp_path: Path
) -> None:
    reset_days(local_runtime, [MOVED_DAY])
    old, new = tmp_path / "old-sessions", tmp_path / "new-sessions"
    kept, other = f"test-heal-old-{uuid.uuid4().hex[:8]}", f"test-heal-new-{uuid.uuid4().hex[:8]}"
    # A project each, for the search below: the same words in one project fold into one row (said in 2 sessions).
    project = f"/work/heal-moved-{uuid.uuid4().hex[:8]}"
    copy_fixture(V1, old / "a.jsonl", kept, MOVED_DAY, f"{project}-old")
    copy_fixture(V1, new / "b.jsonl", other, MOVED_DAY, f"{project}-new")
    before = isolated_settings(local_runtime, tmp_path, sessions_dir=old)
    _backfill(cli_env(before))
    observed = _count(local_runtime, OBSERVATION_INDEX, kept)
    assert _count(local_runtime, RAW_INDEX, kept) == 5 and observed > 0

    # SESSIONS_DIR pointed elsewhere, with a session of the same day: the day runs for the new file only.
    after = isolated_settings(local_runtime, tmp_path, sessions_dir=new)
    env = cli_env(after)
    moved = _backfill(env)
    assert moved["why"][MOVED_DAY] == ["b.jsonl: new file"], moved["why"]
    checks = _check_results(after, moved["runs"][0]["run_id"])
    assert checks and all(checks.values()), checks
    assert _count(local_runtime, RAW_INDEX, kept) == 5 and _count(local_runtime, OBSERVATION_INDEX, kept) == observed
    assert _count(local_runtime, RAW_INDEX, other) == 5
    assert _latest_metadata(after, "memory_raw_index")["kept_from_unconfigured_folders"] == 1
    listed = {row["folder"]: row for row in json.loads(_folders(env, "--json"))}
    assert listed[str(old)]["configured"] is False and listed[str(new)]["configured"] is True
    assert _backfill(env)["todo"] == []

    # Searchable, and marked in every search row as of a folder no longer configured (the CLI's JSON and text).
    query = ["search", "Rust struct generic lifetime parameter", "--k", "20"]
    marks = {
        (r["session_id"], r["folder_no_longer_configured"])
        for side in ("old", "new")
        for r in json.loads(_cli(env, *query, "--project", f"{project}-{side}", "--json"))
    }
    assert marks == {(kept, str(old)), (other, None)}, marks
    lines = _cli(env, *query, "--project", f"{project}-old", "--all").splitlines()
    assert any(f"(folder no longer configured: {old})" in line for line in lines), lines
    assert "folder no longer configured" not in _cli(env, *query, "--project", f"{project}-new", "--all")

    # Only the person's command removes them.
    removed = json.loads(_folders(env, "--forget", str(old), "--json"))
    assert removed["sessions"] == 1 and removed["documents"] >= 5 + observed
    assert _count(local_runtime, RAW_INDEX, kept) == 0 and _count(local_runtime, OBSERVATION_INDEX, kept) == 0
    assert _count(local_runtime, RAW_INDEX, other) == 5
    assert str(old) not in {row["folder"] for row in json.loads(_folders(env, "--json"))}
    assert _backfill(env)["todo"] == []
