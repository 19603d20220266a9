"""Summarize end to end: a fixture partition through the real chat llama-server into the real Elasticsearch."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from dagster import materialize

from memory_pipeline.assets import reflect, summarize
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import LlamaResource, build_resources
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.summary_store import read_ledger, read_summaries
from testkit.ingest_helpers import INGEST_ASSETS, copy_fixture, reset_days, run_metadata

DAY = "2024-06-10"
ASSETS = [
    *INGEST_ASSETS,
    summarize.llm_ideas,
    summarize.memory_summary_index,
    reflect.daily_log,
]


def _run(settings: Settings, run_config: dict | None = None, resources: dict | None = None):  # noqa: ANN202
    result = materialize(
        ASSETS,
        resources={**build_resources(settings), **(resources or {})},
        partition_key=DAY,
        instance=instance_with_days([DAY]),
        run_config=run_config,
        raise_on_error=False,
    )
    metadata, checks, _ = run_metadata(result)
    return result, metadata, checks


@pytest.fixture
def partition(local_runtime: Settings, tmp_path: Path) -> Settings:
    reset_days(local_runtime, [DAY])
    sessions = tmp_path / "sessions"
    # Three small real sessions: 2 + 1 + 2 turns on their active paths.
    copy_fixture("handwritten-cass-v1.jsonl", sessions / "a.jsonl", f"sum-a-{uuid.uuid4().hex[:6]}", DAY)
    copy_fixture("handwritten-kuato.v3.jsonl", sessions / "b.jsonl", f"sum-b-{uuid.uuid4().hex[:6]}", DAY)
    copy_fixture("telegram-bot-errors.v3.jsonl", sessions / "c.jsonl", f"sum-c-{uuid.uuid4().hex[:6]}", DAY)
    return isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)


def test_partition_twice_second_run_makes_no_llm_call(partition: Settings) -> None:
    result, meta, checks = _run(partition)
    assert result.success, meta
    assert set(checks) >= {"source_refs_exist", "no_duplicate_summaries", "summaries_well_formed", "attempts_add_up"}
    assert all(checks.values()), checks
    ideas = meta["llm_ideas"]
    assert ideas["attempted"] == ideas["turns"] == 5
    assert ideas["summarised"] + ideas["skipped_empty"] + ideas["failed"] == 5 and ideas["failed"] < 5
    assert ideas["llm_calls"] >= 5 and ideas["model"]
    with make_client(partition) as client:
        ledger = read_ledger(client, [DAY])
        stored = read_summaries(client, [DAY])
    assert len(ledger) == 5 and {e.status for e in ledger.values()} <= {"summarised", "empty", "failed"}
    assert len(stored) == meta["memory_summary_index"]["summaries"] == ideas["ideas"]
    for doc in stored:
        assert doc.source_refs == [{"session_id": doc.session_id, "turn_id": doc.turn_id}]
        assert doc.model == ideas["model"] and doc.established_at.startswith("20")
    # The daily logs are written from the same ideas, one file per project and day.
    logs = sorted(partition.memory_workspace.glob(f"*/daily/{DAY}.md"))
    assert meta["daily_log"]["written"] == len(logs) == 3  # three sessions, three projects
    text = "".join(path.read_text() for path in logs)
    assert all(doc.doc_id[:12] in text for doc in stored)

    again, meta2, checks2 = _run(partition)
    assert meta2["daily_log"]["written"] == 0 or ideas["failed"] > 0
    assert again.success and all(checks2.values()), checks2
    if ideas["failed"] == 0:
        assert meta2["llm_ideas"]["llm_calls"] == 0 and meta2["llm_ideas"]["reused"] == 5
    else:  # failed turns, and only those, are tried again
        assert meta2["llm_ideas"]["attempted"] == ideas["failed"]
    assert meta2["memory_summary_index"]["written"] == 0 or ideas["failed"] > 0
    assert meta2["memory_summary_index"]["ledger_writes"] == 0 or ideas["failed"] > 0


def test_rebuild_reads_every_turn_again(partition: Settings) -> None:
    _run(partition)
    _, meta, checks = _run(partition, run_config={"ops": {"llm_ideas": {"config": {"rebuild": True}}}})
    assert meta["llm_ideas"]["attempted"] == 5 and meta["llm_ideas"]["llm_calls"] >= 5 and all(checks.values())


def test_unreachable_llm_fails_the_run_and_names_the_url(partition: Settings) -> None:
    dead = "http://127.0.0.1:9"
    llm = build_resources(partition)["llm"]
    result, _, _ = _run(
        partition, resources={"llm": LlamaResource(**{**llm.model_dump(), "url": dead, "timeout_seconds": 2})}
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.step_key == "llm_ideas" and dead in str(failure.event_specific_data.error)


def test_summary_index_replaces_a_turns_changed_ideas_and_checks_catch_bad_refs(
    local_runtime: Settings, tmp_path: Path
) -> None:
    """The store path without the LLM's whims: fixed outcomes into the real index."""
    import polars as pl

    from memory_pipeline.checks import no_duplicate_summaries, source_refs_exist, summaries_well_formed
    from memory_pipeline.stores.summary_store import sync_summaries
    from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, ledger_rows, summary_documents
    from testkit.ingest_helpers import run_ingest

    day = "2024-06-11"
    reset_days(local_runtime, [day])
    sid = f"store-{uuid.uuid4().hex[:6]}"
    copy_fixture("handwritten-cass-v1.jsonl", tmp_path / "s" / "a.jsonl", sid, day)
    assert run_ingest(local_runtime, tmp_path / "s", tmp_path / "state", day).success

    def outcomes(first_turn_ideas: list[dict], second_turn: str = "L000004") -> pl.DataFrame:
        base = {
            "partition": day,
            "session_id": sid,
            "project": "/p",
            "established_at": "2024-06-11T09:00:00.000Z",
            "prompt_version": "1",
            "model": "m",
            "reason": None,
            "summarized_at": "2024-06-11T10:00:00+00:00",
            "llm_calls": 1,
            "seconds": 1.0,
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "generation_seconds": 0.5,
        }
        return pl.DataFrame(
            [
                base | {"turn_id": "L000002", "content_hash": "h1", "status": "summarised", "ideas": first_turn_ideas},
                base | {"turn_id": second_turn, "content_hash": "h2", "status": "empty", "ideas": []},
            ],
            schema=OUTCOME_SCHEMA,
        )

    lifetime = {
        "summary": "Rust structs holding references need a lifetime parameter.",
        "priority": "medium",
        "tags": ["rust", "lifetimes", "structs"],
    }
    question = {
        "summary": "The user asked how generic lifetimes work.",
        "priority": "low",
        "tags": ["rust", "question", "lifetimes"],
    }
    with make_client(local_runtime) as client:
        first = outcomes([lifetime, question])
        report = sync_summaries(client, summary_documents(first), ledger_rows(first), [day])
        assert (report.written, report.deleted, report.ledger_writes) == (2, 0, 2)
        again = sync_summaries(client, summary_documents(first), ledger_rows(first), [day])
        assert (again.written, again.deleted, again.unchanged, again.ledger_writes) == (0, 0, 2, 0)
        changed = outcomes([lifetime | {"summary": "Structs that borrow data need an explicit lifetime."}, question])
        replaced = sync_summaries(client, summary_documents(changed), ledger_rows(changed), [day])
        assert (replaced.written, replaced.deleted) == (1, 1)
        assert source_refs_exist(client, [day]).passed
        assert no_duplicate_summaries(client, summary_documents(changed), [day]).passed
        assert summaries_well_formed(client, [day]).passed
        # A summary citing a turn that is not in memory-raw must fail the check.
        orphan = outcomes([lifetime], second_turn="NOPE").with_columns(
            pl.when(pl.col("turn_id") == "L000002").then(pl.lit("NOT-A-TURN")).otherwise("turn_id").alias("turn_id")
        )
        sync_summaries(client, summary_documents(orphan), ledger_rows(orphan), [day])
        assert not source_refs_exist(client, [day]).passed


def test_when_every_turn_fails_a_check_says_so_and_the_day_goes_on(
    partition: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that only ever answers prose (driven through httpx.MockTransport): no empty success, yet no
    stopped day either. Every turn is listed as failed, a check fails, the assets after it still run."""
    import httpx

    from memory_pipeline.stores.llm import ChatClient

    def prose(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/props":
            return httpx.Response(200, json={"default_generation_settings": {"n_ctx": 4096}})
        return httpx.Response(
            200,
            json={
                "model": "m",
                "choices": [{"message": {"content": "Sure! Here are the ideas."}, "finish_reason": "stop"}],
            },
        )

    monkeypatch.setattr(
        LlamaResource,
        "get_client",
        lambda self: ChatClient(self.url, model="m", retries=0, transport=httpx.MockTransport(prose)),
    )
    result, meta, checks = _run(partition)
    assert result.success
    assert meta["llm_ideas"]["failed"] == meta["llm_ideas"]["attempted"] == 5
    assert len(meta["llm_ideas"]["failures"]) == 5 and "not JSON" in meta["llm_ideas"]["failures"][0]
    assert checks["llm_answers_usable"] is False and checks["attempts_add_up"] is True
    assert meta["memory_summary_index"]["summaries"] == 0 and "daily_log" in meta
