"""Two runs of the same day launched at once (two `memory-pipeline backfill` commands, as a sensor run and a
manual one would): the second waits for the first, then finds its work done; nothing is read twice by the LLM
and nothing is written twice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterInstance

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
