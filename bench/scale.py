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

uv run python -m bench scale --two-years

The same on a history shaped like the one in issue 14 (272 sessions, about 5,900 messages, spread over 722
days: four copies of the large real session and 268 small ones), against mem0's 73 s for the same 5,882
messages quoted there (mem0 is not run here).
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

from bench.results_file import table, write_section
from memory_pipeline.assets import ingest, recall
from memory_pipeline.partitions import RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.recall.observations import observe_turns
from memory_pipeline.resources import build_resources
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES, RAW_MAPPINGS
from memory_pipeline.stores.raw_store import RAW_SETTINGS, message_documents
from testkit.corpora.bulk import FIXTURES, build_corpus

WORK = Path(__file__).with_name(".work") / "scale"
DAYS = [(date(2023, 1, 1) + timedelta(days=d)).isoformat() for d in range(365)]
# Two years: 272 sessions on 272 days spread over 722.
SPAN = [(date(2023, 1, 1) + timedelta(days=d)).isoformat() for d in range(722)]
TWO_YEARS = [SPAN[i * 722 // 272] for i in range(271)] + [SPAN[-1]]
MEM0_SECONDS = 73.0
SCRATCH = "bench-scale-bulk"
ASSETS = [
    ingest.session_files,
    ingest.raw_messages,
    ingest.turns,
    ingest.memory_raw_index,
    recall.turn_observations,
    recall.memory_observations_index,
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


def two_year_sources() -> list[Path]:
    """272 sessions: the large real one four times, then the small fixtures in turn (about 5,900 messages)."""
    fixtures = sorted(FIXTURES.glob("*.jsonl"))
    large = [p for p in fixtures if p.stat().st_size > 100_000]
    small = [p for p in fixtures if p not in large]
    return large[:1] * 4 + [small[i % len(small)] for i in range(268)]


def main(flags: list[str]) -> None:
    two_years = "--two-years" in flags
    days = TWO_YEARS if two_years else DAYS
    shutil.rmtree(WORK, ignore_errors=True)
    corpus = WORK / "sessions"
    if two_years:
        sources = two_year_sources()
        files, size = build_corpus(corpus, days, target=1, sources=sources)
    else:
        files, size = build_corpus(corpus, days)
    frames = [to_frame(session_messages(parse_session(p), Redactor(), "x")[0]) for p in sorted(corpus.rglob("*.jsonl"))]
    messages = pl.concat(frames)
    documents = [(doc_id, doc) for doc_id, _, doc, _ in message_documents(messages)]
    texts = observe_turns(group_turns(messages), messages)["summary"].to_list()
    days_used = len({found.partition for found in scan_sessions(corpus)[0]})
    print(f"corpus: {files} files, {messages.height} messages over {days_used} days, {len(texts)} turns")

    settings = isolated_settings(load_settings(), WORK, sessions_dir=corpus)
    with make_client(settings, request_timeout=300) as client:
        delete_days(client, PIPELINE_INDICES, days)
        if client.indices.exists(index=SCRATCH):
            client.indices.delete(index=SCRATCH)
        bulk_seconds = _raw_bulk(client, documents)
    embed_seconds = _raw_embeddings(settings.embeddings_url, settings.api_key("embed"), texts)
    print(f"baseline: bulk {bulk_seconds:.1f} s, embeddings {embed_seconds:.1f} s")

    instance = instance_with_days(days)
    begin = time.perf_counter()
    result = materialize(
        ASSETS,
        resources=build_resources(settings),
        instance=instance,
        tags={RANGE_START: days[0], RANGE_END: days[-1]},
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
        delete_days(client, PIPELINE_INDICES, days)
    shutil.rmtree(WORK, ignore_errors=True)

    baseline = bulk_seconds + embed_seconds
    overhead = total - sum(steps.values())
    rows = [[name, f"{seconds:.1f}"] for name, seconds in steps.items()]
    embedded = metadata["embeddings"]["embedded"]
    rate, raw_rate = float(metadata["embeddings"]["texts_per_second"]), len(texts) / embed_seconds
    if two_years:
        body = (
            f"Corpus: {files} session files ({size / 2**20:.1f} MB), {messages.height:,} messages on {days_used} "
            f"days spread over 722 ({days[0]}..{days[-1]}), {len(documents):,} memory-raw documents, {len(texts):,} "
            "turn observations; one single-run backfill of the range, in one process, checks included.\n\n"
            + table(
                ["figure", "seconds", "vs mem0"],
                [
                    ["raw `_bulk` + raw `/v1/embeddings` (baseline)", f"{baseline:.1f}", "-"],
                    [
                        "pipeline: ingest + observations + embeddings + vectors",
                        f"{total:.1f}",
                        f"{total / MEM0_SECONDS:.2f}x",
                    ],
                    ["mem0, as quoted in issue 14 (not run here)", f"{MEM0_SECONDS:.0f}", "1.00x"],
                ],
            )
            + f"\n\nPipeline {total / baseline:.2f}x the baseline; checks: {sum(checks.values())} of {len(checks)} "
            "passed. Target: under mem0's 73 s.\n"
        )
        write_section("scale-two-years", "uv run python -m bench scale --two-years", body)
        print(body)
        return
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
