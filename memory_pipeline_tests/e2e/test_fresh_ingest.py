"""Fresh within seconds, end to end: session A in a project ends; the pi extension has told the service, which
ran A's day through the LLM-free assets; session B in the same project, started right after (no day run in
between), is briefed with what A did. The day's normal run then adds the LLM's memories and ingests nothing twice.

Real parts only: pi from npm with the project's extension, its model the local chat server; `memory-pipeline
serve` as a subprocess; the real Elasticsearch and embedding server; the Dagster instance in the test's state.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from dagster import DagsterEventType, RunsFilter

from memory_pipeline.fresh.run import FAST_TAG
from memory_pipeline.instance import STORAGE_URL_VARIABLE, open_instance
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import RAW_INDEX, SUMMARY_INDEX
from memory_pipeline.stores.summary_store import OWN_WORDS
from testkit.agent_loop import backfill_all, ingested_day
from testkit.pi_agent import entries, finished, session_of

FACT = "Note for this project: the staging database listens on port 6543, not 5432."


def _raw_count(settings: Settings, session_id: str) -> int:
    with make_client(settings) as es:
        es.indices.refresh(index=RAW_INDEX)
        return es.count(index=RAW_INDEX, query={"term": {"session_id": session_id}})["count"]


def test_the_next_session_knows_what_the_last_one_did_without_a_day_run(
    loop,  # noqa: ANN001
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings, base, pi = loop
    project = tmp_path / "api"
    before = time.time()
    first = pi.run(project, FACT)
    assert finished(first), first.stderr
    session_a = session_of(pi.last_session(project))
    day = session_a["timestamp"][:10]

    # The extension told the service at the turn's end and at shutdown; its run of the day is done.
    ingested = ingested_day(base, day, after=before)
    assert ingested["state"] == "done" and ingested["error"] is None, ingested
    assert str(pi.last_session(project)) in ingested["files"] and ingested["notices"] >= 2
    assert _raw_count(settings, session_a["id"]) >= 2  # the prompt and the reply, in memory-raw
    with make_client(settings) as es:  # no LLM in between: no memory of the chat model yet (its own words may be)
        by_model = {
            "bool": {
                "filter": [{"term": {"session_id": session_a["id"]}}],
                "must_not": [{"term": {"model": OWN_WORDS}}],
            }
        }
        assert not es.indices.exists(index=SUMMARY_INDEX) or not es.count(index=SUMMARY_INDEX, query=by_model)["count"]
    # The run is the pipeline's own, in the shared instance, tagged as the fast path's, its checks passed.
    # The service's instance, opened as it opens it (the variables it sets are this test's only).
    monkeypatch.setenv("DAGSTER_HOME", str(settings.memory_pipeline_state_dir / "dagster"))
    monkeypatch.setenv(STORAGE_URL_VARIABLE, "")  # recorded, so whatever opening the instance sets is undone
    with open_instance(settings) as instance:
        [run] = instance.get_runs(RunsFilter(tags={FAST_TAG: "turn-end"}), limit=1)
        assert run.run_id == ingested["run_id"] and run.is_success
        records = instance.get_records_for_run(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION).records
        checks = [r.event_log_entry.dagster_event.event_specific_data for r in records]
        assert len(checks) >= 5 and all(c.passed for c in checks), [(c.check_name, c.passed) for c in checks]
        # The turn's observation is in memory-observations, written by its own asset in the fast path's run.
        assert "index_equals_observations" in {c.check_name for c in checks}

    # Session B in the same project, started within seconds of A's end, is briefed with what A did.
    second = pi.run(project, "Which port does the staging database listen on?")
    assert finished(second), second.stderr
    log = entries(pi.last_session(project))
    [brief] = [e for e in log if e.get("customType") == "memory-briefing"]
    assert "6543" in brief["content"], brief["content"]
    cited = httpx.get(f"{base}/api/v1/memories", params={"ids": brief["details"]["ids"]}).json()["data"]
    assert session_a["id"] in {m["session_id"] for m in cited}

    # The day's normal run adds the LLM's part and finds A indexed: nothing is written twice.
    indexed = _raw_count(settings, session_a["id"])
    report = backfill_all(settings)
    assert day in report["todo"]
    assert _raw_count(settings, session_a["id"]) == indexed
