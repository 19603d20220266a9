"""A year of history in one backfill: ingest and embeddings (no LLM) of >= 100,000 messages over 365 days,
beside the raw work it amounts to, in one run.

uv run python -m bench scale

- corpus: the fixtures copied under new ids, one file a day in turn over the 365 days of 2023 (bench/ingest.py's
  builder), registered as 365 dynamic partitions;
- pipeline: one single-run backfill of the range, ingest and recall assets (session files to memory-raw, turn
  observations, their embeddings and dense vectors), through Dagster in one process, checks included;
- baseline: raw `_bulk` of the same memory-raw documents (pre-serialised, 1,000 per request) plus raw batched
  `/v1/embeddings` requests of the same observation texts (32 per request), the upper bound of both servers;
- per-step overhead: the run's wall time minus the time inside its steps.
"""

from __future__ import annotations

import json
import shutil
import time
from datetime import date, timedelta
from pathlib import Path

import httpx
import polars as pl
from dagster import DagsterEventType, materialize

from bench.ingest import build_corpus
from bench.results_file import table, write_section
from memory_pipeline.assets import ingest, recall
from memory_pipeline.partitions import RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.recall.observations import observe_turns
from memory_pipeline.resources import build_resources
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES, RAW_MAPPINGS
from memory_pipeline.stores.raw_store import RAW_SETTINGS, message_documents

WORK = Path(__file__).with_name(".work") / "scale"
DAYS = [(date(2023, 1, 1) + timedelta(days=d)).isoformat() for d in range(365)]
SCRATCH = "bench-scale-bulk"
ASSETS = [
    ingest.session_files,
    ingest.raw_messages,
    ingest.turns,
    ingest.memory_raw_index,
    recall.turn_observations,
    recall.embeddings,
    recall.es_dense_vector,
]


def _raw_bulk(client, documents: list[tuple[str, str]]) -> float:  # noqa: ANN001
    client.indices.create(index=SCRATCH, mappings=RAW_MAPPINGS, settings=RAW_SETTINGS)
    bodies = []
    for start in range(0, len(documents), 1000):
        lines = []
        for doc_id, doc in documents[start : start + 1000]:
            lines += [json.dumps({"index": {"_index": SCRATCH, "_id": doc_id}}), doc]
        bodies.append("\n".join(lines) + "\n")
    begin = time.perf_counter()
    for body in bodies:
        assert not client.bulk(operations=body)["errors"], "baseline bulk had errors"
    client.indices.refresh(index=SCRATCH)
    seconds = time.perf_counter() - begin
    client.indices.delete(index=SCRATCH)
    return seconds


def _raw_embeddings(url: str, key: str | None, texts: list[str]) -> float:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
        begin = time.perf_counter()
        for start in range(0, len(texts), 32):
            response = http.post("/v1/embeddings", json={"input": texts[start : start + 32]})
            response.raise_for_status()
        return time.perf_counter() - begin


def main(flags: list[str]) -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    corpus = WORK / "sessions"
    files, size = build_corpus(corpus, DAYS)
    frames = [to_frame(session_messages(parse_session(p), Redactor(), "x")[0]) for p in sorted(corpus.rglob("*.jsonl"))]
    messages = pl.concat(frames)
    documents = [(doc_id, doc) for doc_id, _, doc, _ in message_documents(messages)]
    texts = observe_turns(group_turns(messages), messages)["summary"].to_list()
    days_used = len({json.loads(p.open().readline())["timestamp"][:10] for p in corpus.rglob("*.jsonl")})
    print(f"corpus: {files} files, {messages.height} messages over {days_used} days, {len(texts)} turns")

    settings = isolated_settings(load_settings(), WORK, sessions_dir=corpus)
    with make_client(settings, request_timeout=300) as client:
        delete_days(client, PIPELINE_INDICES, DAYS)
        if client.indices.exists(index=SCRATCH):
            client.indices.delete(index=SCRATCH)
        bulk_seconds = _raw_bulk(client, documents)
    embed_seconds = _raw_embeddings(settings.embeddings_url, settings.api_key("embed"), texts)
    print(f"baseline: bulk {bulk_seconds:.1f} s, embeddings {embed_seconds:.1f} s")

    instance = instance_with_days(DAYS)
    begin = time.perf_counter()
    result = materialize(
        ASSETS,
        resources=build_resources(settings),
        instance=instance,
        tags={RANGE_START: DAYS[0], RANGE_END: DAYS[-1]},
    )
    total = time.perf_counter() - begin
    assert result.success, "the backfill failed"
    starts = {e.step_key: e.timestamp for e in instance.all_logs(result.run_id, of_type=DagsterEventType.STEP_START)}
    steps = {
        e.step_key: e.timestamp - starts[e.step_key]
        for e in instance.all_logs(result.run_id, of_type=DagsterEventType.STEP_SUCCESS)
    }
    metadata = {
        ev.asset_key.path[-1]: {k: v.value for k, v in ev.materialization.metadata.items()}
        for ev in result.get_asset_materialization_events()
    }
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    with make_client(settings, request_timeout=300) as client:
        delete_days(client, PIPELINE_INDICES, DAYS)
    shutil.rmtree(WORK, ignore_errors=True)

    baseline = bulk_seconds + embed_seconds
    overhead = total - sum(steps.values())
    rows = [[name, f"{seconds:.1f}"] for name, seconds in steps.items()]
    embedded = metadata["embeddings"]["embedded"]
    rate, raw_rate = float(metadata["embeddings"]["texts_per_second"]), len(texts) / embed_seconds
    body = (
        f"Corpus: {files} session files ({size / 2**20:.0f} MB), {messages.height:,} messages over {days_used} days "
        f"of 2023 ({len(DAYS)} dynamic partitions), {len(documents):,} memory-raw documents, {len(texts):,} turn "
        "observations. One single-run backfill of the range, in one process, checks included.\n\n"
        + table(
            ["figure", "seconds", "vs baseline"],
            [
                ["raw `_bulk` of the documents (pre-serialised)", f"{bulk_seconds:.1f}", "-"],
                [f"raw `/v1/embeddings` of the {len(texts):,} texts, 32 a request", f"{embed_seconds:.1f}", "-"],
                ["baseline: the sum", f"{baseline:.1f}", "1.00x"],
                ["pipeline: ingest + observations + embeddings + vectors", f"{total:.1f}", f"{total / baseline:.2f}x"],
                ["of which outside the steps (Dagster's own)", f"{overhead:.1f}", f"{overhead / total:.0%} of it"],
            ],
        )
        + "\n\nPer step:\n\n"
        + table(["step", "seconds"], rows)
        + f"\n\nEmbedded {embedded:,} texts at {rate:.0f} texts/s, {rate / raw_rate:.2f}x the raw rate "
        f"({raw_rate:.0f} texts/s; target 0.9x); checks: {sum(checks.values())} of {len(checks)} passed. "
        "Target: the pipeline within 1.5x of the baseline.\n"
    )
    write_section("scale", "uv run python -m bench scale", body)
    print(body)
