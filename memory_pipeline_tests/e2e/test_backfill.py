"""`backfill` end to end: what it runs is what changed (issue 31), on the real servers.

Without the chat model first (`--no-llm`: searchable now), then a file that grew, then the same days
summarised with the model without reading their files again, then a turn whose reading failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from dagster import AssetKey

from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import LEDGER_INDEX, SUMMARY_INDEX
from memory_pipeline.summarize.journal import TurnJournal
from testkit.ingest_helpers import cli_env, copy_fixture, indexed, reset_days, stored_instance

DAY = "2024-06-11"
V1 = "handwritten-cass-v1.jsonl"  # 2 turns, 5 messages


def _backfill(env: dict[str, str], *args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "backfill", "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _ledger(settings: Settings, session_id: str) -> dict[str, dict]:
    with make_client(settings) as client:
        client.indices.refresh(index=LEDGER_INDEX)
        hits = client.search(index=LEDGER_INDEX, query={"term": {"session_id": session_id}}, size=100)["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def test_backfill_runs_what_changed_and_summarises_llm_free_days_later(local_runtime: Settings, tmp_path: Path) -> None:
    reset_days(local_runtime, [DAY])
    sessions = tmp_path / "sessions"
    sid = f"test-backfill-{uuid.uuid4().hex[:8]}"
    path = copy_fixture(V1, sessions / "a.jsonl", sid, DAY)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)
    env = cli_env(settings)

    # Without the chat model: the raw messages are searchable, no memory is made, and the day is done for that.
    first = _backfill(env, "--no-llm")
    assert first["todo"] == [DAY] and first["why"][DAY] == ["not done"] and not first["with_llm"]
    assert [r["success"] for r in first["runs"]] == [True]
    assert len(indexed(local_runtime, {"term": {"session_id": sid}})) == 5
    assert _ledger(local_runtime, sid) == {}
    assert _backfill(env, "--no-llm")["todo"] == []

    # Two messages appended to the done day's file: the next backfill sees it grew and runs that day only.
    lines = path.read_text().rstrip("\n").split("\n")
    added = [  # as v1 files hold them: no ids, one after another
        {
            "type": "message",
            "timestamp": f"{DAY}T09:05:00.000Z",
            "message": {"role": "user", "content": "And one more?"},
        },
        {
            "type": "message",
            "timestamp": f"{DAY}T09:05:05.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Here is one more."}]},
        },
    ]
    path.write_text("\n".join([*lines, *(json.dumps(e) for e in added)]) + "\n")
    os.utime(path, ns=(time.time_ns(), time.time_ns()))
    grown = _backfill(env, "--no-llm")
    assert grown["todo"] == [DAY] and grown["why"][DAY] == ["a.jsonl: grew"], grown["why"]
    assert len(indexed(local_runtime, {"term": {"session_id": sid}})) == 7

    # With the chat model: the LLM-free day is not done; it is summarised without reading its file again.
    full = _backfill(env)
    assert full["todo"] == [DAY] and full["why"][DAY] == ["not done"] and full["with_llm"]
    assert [r["success"] for r in full["runs"]] == [True]
    with stored_instance(settings, settings.memory_pipeline_state_dir / "dagster") as instance:
        files = instance.get_latest_materialization_event(AssetKey("session_files"))
        raw = instance.get_latest_materialization_event(AssetKey("memory_raw_index"))
        assert files and raw and files.run_id == full["runs"][0]["run_id"]
        assert files.asset_materialization.metadata["changed_files"].value == 0
        assert raw.asset_materialization.metadata["written"].value == 0
    ledger = _ledger(local_runtime, sid)
    assert len(ledger) == 3 and all(doc["status"] in ("summarised", "empty") for doc in ledger.values())
    settled = _backfill(env)
    assert settled["todo"] == [], settled["why"]

    # A turn whose reading failed, as a run leaves it (its journal entry and its ledger document), is read
    # again by the next plain backfill.
    failed_id, failed = next(iter(ledger.items()))
    why = "attempt 2: summary must be 1-3 sentences, got 6"
    journal = TurnJournal(settings.memory_pipeline_state_dir / "llm-journal")
    entry = journal.read([DAY])[(sid, failed["turn_id"])]
    journal.record(entry.model_copy(update={"status": "failed", "reason": why, "ideas": []}))
    with make_client(local_runtime) as client:
        client.update(
            index=LEDGER_INDEX,
            id=failed_id,
            doc={"status": "failed", "reason": why, "ideas": 0, "doc_hash": "as a failed run wrote it"},
            refresh=True,
        )
    retried = _backfill(env)
    assert retried["todo"] == [DAY] and retried["why"][DAY] == ["1 failed turn(s) to read again"]
    assert _ledger(local_runtime, sid)[failed_id]["status"] in ("summarised", "empty")
    assert _backfill(env)["todo"] == []
    with make_client(local_runtime) as client:
        client.indices.refresh(index=SUMMARY_INDEX)
        kept = client.count(index=SUMMARY_INDEX, query={"term": {"session_id": sid}})["count"]
    assert kept == sum(doc["ideas"] for doc in _ledger(local_runtime, sid).values())
