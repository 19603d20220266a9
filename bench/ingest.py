"""Ingest figures on a corpus of >= 100,000 messages made from the real fixtures (new session ids).

    uv run python -m bench ingest

Measured in one run, against the local Elasticsearch:
- parse throughput (MB/s, messages/s) of the pure parser;
- the pipeline end to end (session_files -> raw_messages -> turns -> memory_raw_index, checks included, one
  single-run backfill over the corpus' days) next to the raw `_bulk` rate of the same documents,
  pre-serialised and sent to a scratch index with the same mappings: the upper bound;
- a re-run with nothing changed: its time, and how many Elasticsearch writes it made.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import polars as pl
from dagster import materialize

from bench.results_file import table, write_section
from memory_pipeline.assets import ingest
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES, RAW_MAPPINGS
from memory_pipeline.stores.raw_store import RAW_SETTINGS, message_documents
from testkit.corpora.bulk import DAYS, build_corpus

WORK = Path(__file__).with_name(".work") / "ingest"
SCRATCH = "bench-raw-bulk"


def reset(client) -> None:  # noqa: ANN001
    delete_days(client, PIPELINE_INDICES, DAYS)
    if client.indices.exists(index=SCRATCH):
        client.indices.delete(index=SCRATCH)


def main(argv: list[str]) -> None:
    shared = load_settings()
    corpus = WORK / "sessions"
    files, size = build_corpus(corpus)
    paths = sorted(corpus.rglob("*.jsonl"))

    begin = time.perf_counter()
    frames = [to_frame(session_messages(parse_session(p), Redactor(), "x")[0]) for p in paths]
    parse_seconds = time.perf_counter() - begin
    messages = pl.concat(frames)
    documents = [(doc_id, doc) for doc_id, _, doc, _ in message_documents(messages)]
    print(f"corpus: {files} files, {size / 2**20:.0f} MB, {messages.height} messages, parsed in {parse_seconds:.1f}s")

    settings = isolated_settings(shared, WORK, sessions_dir=corpus)
    with make_client(settings, request_timeout=120) as client:
        reset(client)
        # Baseline: the same documents, serialised before the clock starts, one _bulk request per 1000.
        client.indices.create(index=SCRATCH, mappings=RAW_MAPPINGS, settings=RAW_SETTINGS)
        bodies = []
        for start in range(0, len(documents), 1000):
            lines = []
            for doc_id, doc in documents[start : start + 1000]:
                lines.append(json.dumps({"index": {"_index": SCRATCH, "_id": doc_id}}))
                lines.append(doc)
            bodies.append("\n".join(lines) + "\n")
        begin = time.perf_counter()
        for body in bodies:
            response = client.bulk(operations=body)
            assert not response["errors"], "baseline bulk had errors"
        client.indices.refresh(index=SCRATCH)
        raw_seconds = time.perf_counter() - begin
        assert client.count(index=SCRATCH)["count"] == len(documents)

    def run() -> tuple[float, dict]:
        start = time.perf_counter()
        result = materialize(
            [ingest.session_files, ingest.raw_messages, ingest.turns, ingest.memory_raw_index],
            resources=build_resources(settings),
            instance=instance_with_days(DAYS),
            tags={"dagster/asset_partition_range_start": DAYS[0], "dagster/asset_partition_range_end": DAYS[-1]},
        )
        seconds = time.perf_counter() - start
        assert result.success and all(c.passed for c in result.get_asset_check_evaluations())
        meta = {
            ev.asset_key.path[-1]: {k: v.value for k, v in ev.materialization.metadata.items()}
            for ev in result.get_asset_materialization_events()
        }
        return seconds, meta["memory_raw_index"]

    shutil.rmtree(WORK / "state", ignore_errors=True)
    first_seconds, first = run()
    rerun_seconds, rerun = run()
    rerun_writes = rerun["written"] + rerun["deleted"] + rerun["manifest_writes"]
    with make_client(settings) as client:
        client.indices.delete(index=SCRATCH)
        reset(client)
    shutil.rmtree(WORK, ignore_errors=True)

    n = len(documents)
    body = "\n\n".join(
        [
            f"Corpus: {files} session files ({size / 2**20:.0f} MB) copied from the 7 fixtures under new ids over "
            f"{len(DAYS)} days: {messages.height:,} messages, {n:,} documents.",
            table(
                ["figure", "seconds", "rate", "vs raw _bulk"],
                [
                    [
                        "parse (pure parser, 1 core)",
                        f"{parse_seconds:.1f}",
                        f"{size / 2**20 / parse_seconds:.1f} MB/s, {messages.height / parse_seconds:,.0f} messages/s",
                        "-",
                    ],
                    [
                        "raw `_bulk`, pre-serialised (baseline)",
                        f"{raw_seconds:.1f}",
                        f"{n / raw_seconds:,.0f} docs/s",
                        "1.00x",
                    ],
                    [
                        "pipeline end to end, first run (parse + index + checks)",
                        f"{first_seconds:.1f}",
                        f"{n / first_seconds:,.0f} docs/s",
                        f"{first_seconds / raw_seconds:.2f}x the time",
                    ],
                    [
                        "re-run, nothing changed",
                        f"{rerun_seconds:.1f}",
                        f"{rerun_writes} Elasticsearch writes",
                        f"{rerun_seconds / first_seconds:.1%} of the first run",
                    ],
                ],
            ),
            f"First run wrote {first['written']:,} documents; the re-run read no file (fingerprints from the "
            f"manifest), parsed nothing (parse cache) and wrote {rerun_writes}. Targets: pipeline within 2x of raw "
            f"bulk; re-run zero writes and under 5% of the first run.",
        ]
    )
    write_section("ingest", "uv run python -m bench ingest", body)
    print(body)


if __name__ == "__main__":
    main([])
