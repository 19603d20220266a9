"""Two runs of the same day launched at once (two `memory-pipeline backfill` commands, as a sensor run and a
manual one would): the second waits for the first, then finds its work done; nothing is read twice by the LLM
and nothing is written twice. A fast (LLM-free) run of a day is not one of them: it indexes the day while the
day's LLM run waits for the chat model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance

from memory_pipeline.locks import LLM, day_held
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import RAW_INDEX, SUMMARY_INDEX
from testkit.ingest_helpers import cli_env, copy_fixture, reset_days, stored_instance

pytestmark = pytest.mark.dagster_storage

DAY = "2024-09-02"


def _steps(instance: DagsterInstance, run_id: str) -> tuple[float, float]:
    """When the run's first step started and its last step ended."""
    starts = [e.timestamp for e in instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)]
    ends = [e.timestamp for e in instance.all_logs(run_id, of_type=DagsterEventType.STEP_SUCCESS)]
    return min(starts), max(ends)


def test_two_runs_of_one_day_at_once_run_one_after_the_other(local_runtime: Settings, tmp_path: Path) -> None:
    settings = isolated_settings(local_runtime, tmp_path)
    reset_days(settings, [DAY])
    copy_fixture("telegram-bot-errors.v3.jsonl", settings.sessions_dir / "a.jsonl", "concurrent-day", DAY)
    env = cli_env(settings, DAGSTER_HOME=str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    command = [sys.executable, "-m", "memory_pipeline", "backfill", "--all", "--json"]
    launched = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outputs = [p.communicate(timeout=900) for p in launched]
    assert all(p.returncode == 0 for p in launched), [err[-2000:] for _, err in outputs]
    runs = [json.loads(out)["runs"][0] for out, _ in outputs]
    assert all(r["success"] for r in runs) and runs[0]["run_id"] != runs[1]["run_id"]
    assert any("is being run by run" in err for _, err in outputs)  # one of them said it waited

    with stored_instance(settings, tmp_path / "dagster") as instance:
        first, second = sorted((_steps(instance, r["run_id"]) for r in runs), key=lambda window: window[0])
        assert first[1] <= second[0]  # no step of one ran while the other was running
        calls = []
        for run in runs:
            for event in instance.all_logs(run["run_id"], of_type=DagsterEventType.ASSET_MATERIALIZATION):
                materialization = event.dagster_event.event_specific_data.materialization
                if materialization.asset_key.path[-1] == "llm_ideas":
                    calls.append(materialization.metadata["llm_calls"].value)
    assert len(calls) == 2 and min(calls) == 0  # the later run read no turn again

    with make_client(settings) as es:
        es.indices.refresh(index=[RAW_INDEX, SUMMARY_INDEX])
        raw = es.search(index=RAW_INDEX, query={"term": {"session_id": "concurrent-day"}}, size=1000)["hits"]["hits"]
        ids = [h["_id"] for h in raw]
    assert ids and len(ids) == len(set(ids))


def test_a_fast_run_indexes_a_day_while_its_llm_run_waits_for_the_model(
    local_runtime: Settings, tmp_path: Path
) -> None:
    settings = isolated_settings(local_runtime, tmp_path)
    reset_days(settings, [DAY])
    locks = settings.memory_pipeline_state_dir / "locks"
    for n, name in enumerate(
        ["generated-pi-0.73.1-branches-labels-compaction.v3.jsonl", "telegram-bot-errors.v3.jsonl"]
    ):
        copy_fixture(name, settings.sessions_dir / f"read-{n}.jsonl", f"llm-day-{n}", DAY)
    env = cli_env(settings, DAGSTER_HOME=str(tmp_path / "dagster"))
    (tmp_path / "dagster").mkdir()
    backfill = [sys.executable, "-m", "memory_pipeline", "backfill", "--json"]
    log = (tmp_path / "llm-run.log").open("w")
    llm_run = subprocess.Popen(backfill, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        # The LLM run is reading turns: it holds the day's `llm` lock and has let the LLM-free lock go.
        while not (day_held(locks, DAY, LLM) and not day_held(locks, DAY)):
            assert llm_run.poll() is None, (tmp_path / "llm-run.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the LLM run never reached its model's calls"
            time.sleep(0.2)
        # A person's new session of the same day, and the fast path's run of it.
        copy_fixture("telegram-bot-errors.v3.jsonl", settings.sessions_dir / "fresh.jsonl", "fresh-day", DAY)
        begin = time.monotonic()
        fast = subprocess.run([*backfill, "--no-llm"], env=env, capture_output=True, text=True, timeout=300)
        seconds = time.monotonic() - begin
        assert fast.returncode == 0, fast.stderr[-3000:]
        assert json.loads(fast.stdout)["runs"][0]["success"]
        assert "is being run by" not in fast.stderr  # it never waited for the LLM run
        assert llm_run.poll() is None and day_held(locks, DAY, LLM), "the LLM run ended first: nothing overlapped"
        with make_client(settings) as es:
            es.indices.refresh(index=RAW_INDEX)
            hits = es.search(index=RAW_INDEX, query={"term": {"session_id": "fresh-day"}}, size=1000)["hits"]["hits"]
        ids = [h["_id"] for h in hits]
        assert ids and len(ids) == len(set(ids)), f"fast run of {seconds:.0f} s"
    finally:
        os.killpg(llm_run.pid, signal.SIGTERM)  # its lock goes with it; the day is simply not done
        llm_run.wait(60)
        log.close()
