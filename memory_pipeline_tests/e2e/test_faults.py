"""Faults against the real servers: each server killed in the middle of its stage, a folder taken away in the
middle of a run. After the restart and a re-run: nothing lost, nothing twice, finished LLM turns not read again.

The servers killed are private copies (own ports and data), so the rest of the suite never sees a fault.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize

from memory_pipeline.assets import ingest, summarize
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.load import catalog, load_messages
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores import elasticsearch as es_store
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.indices import RAW_INDEX, SUMMARY_INDEX
from memory_pipeline.summarize.journal import TurnJournal
from testkit.ingest_helpers import (
    INGEST_ASSETS,
    RECALL_ASSETS,
    copy_fixture,
    reset_days,
    run_metadata,
)
from testkit.servers import kill, private_server, settings_on

SUMMARIZE_ASSETS = [*INGEST_ASSETS, summarize.llm_ideas, summarize.memory_summary_index]
# Fault tests write to the shared Elasticsearch under a project of their own, and clean their days after:
# other tests search by project and must never see these copies.
PROJECT = "/fault-tests"
DAYS = ["2024-08-01", "2024-08-02", "2024-08-03", "2024-08-04", "2024-08-05"]


@pytest.fixture(autouse=True)
def _clean_days(local_runtime: Settings):  # noqa: ANN202
    yield
    reset_days(local_runtime, DAYS)


def _run(settings: Settings, assets: list, day: str, run_config: dict | None = None):  # noqa: ANN202
    result = materialize(
        assets,
        resources=build_resources(settings),
        partition_key=day,
        instance=instance_with_days([day]),
        run_config=run_config,
        raise_on_error=False,
    )
    return result, *run_metadata(result)


def _expected_documents(sessions: Path, tmp: Path) -> dict[str, int]:
    """Documents per session the files hold, from the pure parser: what the index must equal."""
    messages, _ = load_messages(catalog(scan_sessions(sessions)[0], {}), tmp, Redactor())
    return dict(messages.filter(pl.col("doc_id").is_not_null()).group_by("session_id").len().iter_rows())


def _indexed(settings: Settings, sessions: list[str]) -> dict[str, int]:
    with make_client(settings) as es:
        es.indices.refresh(index=RAW_INDEX)
        buckets = es.search(
            index=RAW_INDEX,
            size=0,
            query={"terms": {"session_id": sessions}},
            aggs={"s": {"terms": {"field": "session_id", "size": 1000}}},
        )["aggregations"]["s"]["buckets"]
    return {b["key"]: b["doc_count"] for b in buckets}


def _long_sessions(root: Path, day: str, sessions: int, turns: int) -> None:
    for s in range(sessions):
        lines = [{"type": "session", "version": 3, "id": f"bulk-{s:03d}", "timestamp": f"{day}T09:00:00Z", "cwd": "/w"}]
        parent = None
        for t in range(turns):
            for role, text in (("user", f"question {t} of session {s}"), ("assistant", f"answer {t} " * 20)):
                eid = f"{role[0]}{t:05d}"
                content = text if role == "user" else [{"type": "text", "text": text}]
                lines.append(
                    {
                        "type": "message",
                        "id": eid,
                        "parentId": parent,
                        "timestamp": f"{day}T09:00:01Z",
                        "message": {"role": role, "content": content, "timestamp": 1},
                    }
                )
                parent = eid
        path = root / "--w--" / f"bulk-{s:03d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_elasticsearch_killed_mid_bulk_loses_and_doubles_nothing(
    local_runtime: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with private_server(tmp_path, local_runtime, "elasticsearch") as runtime:
        settings = settings_on(runtime, "elasticsearch", local_runtime, tmp_path)
        day = "2024-08-01"
        _long_sessions(settings.sessions_dir, day, sessions=15, turns=100)  # 3,000 messages, 3 bulk chunks
        expected = _expected_documents(settings.sessions_dir, tmp_path / "parse")
        real_bulk, seen = es_store.helpers.streaming_bulk, []

        def bulk_then_crash(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            for item in real_bulk(*args, **kwargs):
                seen.append(item)
                if len(seen) == 1500:  # some chunks stored, the rest not: the node dies mid-bulk
                    kill(runtime, "elasticsearch")
                yield item

        monkeypatch.setattr(es_store.helpers, "streaming_bulk", bulk_then_crash)
        # The dead node stays dead until the run gives up: its retries (75 s of waits in all, there for a
        # cluster's election; their count and the give-up are unit/test_bulk_retry.py's) are kept, not waited.
        monkeypatch.setattr(es_store, "RETRY_SECONDS", (0.1,) * len(es_store.RETRY_SECONDS))
        crashed, _, _, _ = _run(settings, INGEST_ASSETS, day)
        assert not crashed.success
        monkeypatch.setattr(es_store.helpers, "streaming_bulk", real_bulk)

        runtime.up(["elasticsearch"])  # same data folder: what was acknowledged is still there
        partial = _indexed(settings, list(expected))
        assert 0 < sum(partial.values()) < sum(expected.values())
        again, metadata, checks, _ = _run(settings, INGEST_ASSETS, day)
        assert again.success and all(checks.values()), checks
        assert _indexed(settings, list(expected)) == expected  # 0 lost, 0 duplicated (ids are positions)
        assert metadata["memory_raw_index"]["written"] == sum(expected.values()) - sum(partial.values())
        with make_client(settings) as es:
            assert es.cluster.health(wait_for_status="yellow", timeout="30s")["status"] in ("green", "yellow")


def test_chat_server_killed_mid_llm_ideas_reads_no_finished_turn_again(
    local_runtime: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with private_server(tmp_path, local_runtime, "chat") as runtime:
        settings = settings_on(runtime, "chat", local_runtime, tmp_path)
        day = "2024-08-02"
        reset_days(settings, [day])
        copy_fixture("generated-pi-0.73.1-branches-labels-compaction.v3.jsonl",
                     settings.sessions_dir / "a.jsonl", "fault-chat-a", day, PROJECT)  # fmt: skip
        copy_fixture("handwritten-cass-v1.jsonl", settings.sessions_dir / "b.jsonl", "fault-chat-b", day, PROJECT)
        config = {"ops": {"llm_ideas": {"config": {"context_tokens": 2048, "max_output_tokens": 384}}}}
        real_record, recorded = TurnJournal.record, []

        def record_then_crash(self, entry):  # noqa: ANN001, ANN202
            real_record(self, entry)
            recorded.append(entry)
            if len(recorded) == 2:
                kill(runtime, "chat")

        monkeypatch.setattr(TurnJournal, "record", record_then_crash)
        crashed, _, _, _ = _run(settings, SUMMARIZE_ASSETS, day, config)
        assert not crashed.success
        failure = next(e for e in crashed.all_events if e.event_type_value == "STEP_FAILURE")
        assert failure.step_key == "llm_ideas" and settings.chat_url in str(failure.event_specific_data.error)
        monkeypatch.setattr(TurnJournal, "record", real_record)

        runtime.up(["chat"])
        again, metadata, checks, _ = _run(settings, SUMMARIZE_ASSETS, day, config)
        assert again.success and all(checks.values()), checks
        ideas = metadata["llm_ideas"]
        # The 2 turns finished before the crash are not read again (unless the model failed one of them: a
        # failed turn is retried by design); the 4 unfinished ones are, each with at most one retry.
        finished = sum(entry.status != "failed" for entry in recorded[:2])
        assert ideas["turns"] == 6 and ideas["from_journal"] == finished and ideas["attempted"] == 6 - finished
        # The gate before the model spares it the turns that hold no knowledge: those make no request.
        read = 6 - finished - ideas["not_read_by_model"]
        assert read <= ideas["llm_calls"] <= 2 * read
        with make_client(settings) as es:
            es.indices.refresh(index=SUMMARY_INDEX)
            stored = es.search(index=SUMMARY_INDEX, size=100, query={"term": {"partition": day}})["hits"]["hits"]
        assert len(stored) == len({h["_id"] for h in stored}) == metadata["memory_summary_index"]["summaries"]


def test_embedding_server_killed_mid_embeddings_leaves_every_memory_with_a_vector(
    local_runtime: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with private_server(tmp_path, local_runtime, "embed") as runtime:
        settings = settings_on(runtime, "embed", local_runtime, tmp_path)
        day = "2024-08-03"
        reset_days(settings, [day])
        copy_fixture("pi-mono-large-session.v1.jsonl", settings.sessions_dir / "a.jsonl", "fault-embed", day, PROJECT)
        real_vectors, batches = EmbeddingsClient._vectors, []

        def vectors_then_crash(self, model, batch):  # noqa: ANN001, ANN202
            vectors = real_vectors(self, model, batch)
            batches.append(len(batch))
            if len(batches) == 2:
                kill(runtime, "embed")
            return vectors

        monkeypatch.setattr(EmbeddingsClient, "_vectors", vectors_then_crash)
        crashed, _, _, _ = _run(settings, RECALL_ASSETS, day)
        assert not crashed.success and len(batches) >= 2
        failure = next(e for e in crashed.all_events if e.event_type_value == "STEP_FAILURE")
        assert failure.step_key == "embeddings" and settings.embeddings_url in str(failure.event_specific_data.error)
        monkeypatch.setattr(EmbeddingsClient, "_vectors", real_vectors)

        runtime.up(["embed"])
        again, metadata, checks, check_meta = _run(settings, RECALL_ASSETS, day)
        knn = check_meta.get("knn_finds_itself")
        assert again.success and checks["every_memory_has_a_vector"] and checks["knn_finds_itself"], knn
        observations = metadata["turn_observations"]["observations"]
        assert metadata["embeddings"]["embedded"] == metadata["embeddings"]["memories"] >= observations > 64
        assert metadata["embeddings"]["refused"] == 0


def test_folder_taken_away_mid_run_is_read_when_it_is_back(
    local_runtime: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = isolated_settings(local_runtime, tmp_path)
    day = "2024-08-04"
    reset_days(settings, [day])
    stay, away = settings.sessions_dir / "--stay--", settings.sessions_dir / "--away--"
    copy_fixture("handwritten-kuato.v3.jsonl", stay / "a.jsonl", "fault-dir-a", day, PROJECT)
    for n in range(3):
        copy_fixture("handwritten-cass-v1.jsonl", away / f"b{n}.jsonl", f"fault-dir-b{n}", day, PROJECT)
    expected = _expected_documents(settings.sessions_dir, tmp_path / "parse")
    real_catalog = ingest.catalog

    def catalog_then_move(found, recorded):  # noqa: ANN001, ANN202
        files = real_catalog(found, recorded)
        shutil.move(away, tmp_path / "elsewhere")  # after the scan, before the files are read
        return files

    def faulty_run():  # noqa: ANN202
        monkeypatch.setattr(ingest, "catalog", catalog_then_move)
        run = _run(settings, INGEST_ASSETS, day)
        monkeypatch.setattr(ingest, "catalog", real_catalog)
        shutil.move(tmp_path / "elsewhere", away)
        return run

    result, metadata, checks, check_metadata = faulty_run()
    assert result.success and all(checks.values()), checks
    assert sorted(metadata["memory_raw_index"]["unread_sessions"]) == [f"fault-dir-b{n}" for n in range(3)]
    assert sorted(check_metadata["every_file_represented"]["unread_listed"]) == [
        f"--away--/b{n}.jsonl" for n in range(3)
    ]
    assert _indexed(settings, list(expected)) == {"fault-dir-a": expected["fault-dir-a"]}

    result, metadata, checks, _ = _run(settings, INGEST_ASSETS, day)  # the folder is back
    assert result.success and all(checks.values()) and metadata["session_files"]["changed_files"] == 3
    assert _indexed(settings, list(expected)) == expected

    # A file that grew, then vanished mid-run: its documents stay as they were until it can be read.
    with (away / "b0.jsonl").open("a") as grown:
        grown.write(json.dumps({"type": "message", "message": {"role": "user", "content": "one more thing"}}) + "\n")
    result, metadata, checks, _ = faulty_run()
    assert result.success and all(checks.values()) and metadata["memory_raw_index"]["deleted"] == 0
    assert _indexed(settings, list(expected)) == expected
    result, metadata, checks, _ = _run(settings, INGEST_ASSETS, day)
    assert result.success and metadata["memory_raw_index"]["written"] == 1
    assert _indexed(settings, list(expected)) == expected | {"fault-dir-b0": expected["fault-dir-b0"] + 1}


def test_a_day_whose_run_failed_is_backfilled_again(local_runtime: Settings, tmp_path: Path) -> None:
    from dagster import instance_for_test

    from memory_pipeline.backfill import plan_backfill, run_backfill
    from memory_pipeline.definitions import build_definitions

    day = "2024-08-05"
    healthy = isolated_settings(local_runtime, tmp_path)
    reset_days(healthy, [day])
    copy_fixture("handwritten-kuato.v3.jsonl", healthy.sessions_dir / "a.jsonl", "fault-backfill", day, PROJECT)
    config = {"ops": {"llm_ideas": {"config": {"context_tokens": 2048, "max_output_tokens": 384}}}}
    with instance_for_test() as instance:
        assert plan_backfill(instance, healthy.sessions_dir, everything=False).todo == [day]
        dead_llm = isolated_settings(local_runtime, tmp_path, llama_url="http://127.0.0.1:9")
        failed = run_backfill(instance, day, day, build_definitions(dead_llm), config)
        assert not failed.success
        # memory_raw_index was materialised, the rest was not: the day is not done.
        assert plan_backfill(instance, healthy.sessions_dir, everything=False).todo == [day]
        heard: list[tuple[int, int]] = []
        again = run_backfill(instance, day, day, build_definitions(healthy), config, on_step=lambda *p: heard.append(p))
        assert again.success
        # The progress bar's source: steps finished so far, never going back, up to the job's number of steps.
        finished, totals = [done for done, _ in heard], {total for _, total in heard}
        steps = {e.step_key for e in again.all_events if e.is_step_success or e.is_step_failure or e.is_step_skipped}
        assert finished == sorted(finished) and finished[-1] == len(steps) > 0 and totals == {len(steps)}
        # Done now, unless a check failed (the small model may fail the one turn twice): then it stays to do.
        checks_passed = all(c.passed for c in again.get_asset_check_evaluations())
        assert plan_backfill(instance, healthy.sessions_dir, everything=False).todo == ([] if checks_passed else [day])
