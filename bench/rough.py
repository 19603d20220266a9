"""The rough-history corpus end to end (`python -m bench rough`): the whole job as `backfill` runs it, then a
second pass; counts per case, and how much of the wall time is spent outside the servers.

Time inside a server is the time its client waits on a request (Elasticsearch through elastic-transport,
the chat and embedding servers through the one OpenAI-compatible client), measured around the real calls.
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter, defaultdict
from pathlib import Path

import elastic_transport
from dagster import instance_for_test

from bench.results_file import table, write_section
from memory_pipeline.backfill import day_ranges, plan_backfill, run_backfill
from memory_pipeline.definitions import build_definitions
from memory_pipeline.partitions import ordered_days
from memory_pipeline.settings import isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES
from memory_pipeline.stores.openai_compat import OpenAICompatibleClient

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "bench" / "corpus" / "rough"
WORK = ROOT / "bench" / ".work" / "rough"
DAYS = ["2019-05-02", "2026-03-10", "9999-12-31"]
RUN_CONFIG = {"ops": {"llm_ideas": {"config": {"context_tokens": 2048, "max_output_tokens": 384}}}}


class ServerClock:
    """Seconds spent waiting on each server, by wrapping the two request paths every client goes through."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()

    def __enter__(self) -> ServerClock:
        self._es, self._http = elastic_transport.Transport.perform_request, OpenAICompatibleClient.request
        clock = self

        def es_request(transport, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            begin = time.perf_counter()
            try:
                return clock._es(transport, *args, **kwargs)
            finally:
                clock.seconds["elasticsearch"] += time.perf_counter() - begin
                clock.calls["elasticsearch"] += 1

        def http_request(client, method, path, json=None, **options):  # noqa: ANN001, ANN003, ANN202
            name = "embed" if "embed" in type(client).__name__.lower() else "chat"
            begin = time.perf_counter()
            try:
                return clock._http(client, method, path, json=json, **options)
            finally:
                clock.seconds[name] += time.perf_counter() - begin
                clock.calls[name] += 1

        elastic_transport.Transport.perform_request = es_request
        OpenAICompatibleClient.request = http_request
        return self

    def __exit__(self, *exc: object) -> None:
        elastic_transport.Transport.perform_request = self._es
        OpenAICompatibleClient.request = self._http


def main(flags: list[str]) -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(CORPUS / "sessions", WORK / "sessions", symlinks=True)
    settings = isolated_settings(load_settings(), WORK)
    with make_client(settings) as es:
        delete_days(es, PIPELINE_INDICES, DAYS)
    definitions = build_definitions(settings)
    passes = []
    with instance_for_test() as instance:
        for everything in (False, True):
            with ServerClock() as clock:
                begin = time.perf_counter()
                plan = plan_backfill(instance, settings.sessions_dir, everything)
                results = [
                    run_backfill(instance, first, last, definitions, RUN_CONFIG)
                    for first, last in day_ranges(plan.todo, ordered_days(instance))
                ]
                wall = time.perf_counter() - begin
            assert all(r.success for r in results), "a backfill run failed"
            metadata = {
                ev.asset_key.path[-1]: {k: v.value for k, v in ev.materialization.metadata.items()}
                for r in results
                for ev in r.get_asset_materialization_events()
            }
            checks = [c for r in results for c in r.get_asset_check_evaluations()]
            passes.append((wall, dict(clock.seconds), dict(clock.calls), metadata, checks))

    cases = json.loads((CORPUS / "cases.json").read_text())
    first_meta = passes[0][3]
    listed = {stage: str(first_meta[stage]["problems"]) for stage in ("session_files", "raw_messages")}
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case in cases:
        if case["kind"] == "ingested":
            continue
        where = f"`{case['file']}{':' + str(case['line']) if case['line'] else ''}` **{case['kind']}**"
        by_kind[case["kind"]][0] += 1
        by_kind[case["kind"]][1] += where in listed[case["stage"]]
    good = [c for c in cases if c["kind"] == "ingested"]

    rows = []
    for name, (wall, seconds, calls, metadata, checks) in zip(["first pass", "second pass"], passes, strict=True):
        inside = sum(seconds.values())
        rows.append(
            [
                name,
                f"{wall:.1f}",
                f"{seconds.get('elasticsearch', 0):.1f} ({calls.get('elasticsearch', 0)})",
                f"{seconds.get('chat', 0):.1f} ({calls.get('chat', 0)})",
                f"{seconds.get('embed', 0):.1f} ({calls.get('embed', 0)})",
                f"{wall - inside:.1f}",
                f"{(wall - inside) / wall:.0%}",
                f"{sum(c.passed for c in checks)}/{len(checks)}",
                metadata["memory_raw_index"]["written"],
                metadata["llm_ideas"]["llm_calls"],
                metadata["embeddings"]["embedded"],
            ]
        )
    body = (
        f"The rough-history corpus (`bench/corpus/rough`, {len(cases)} cases: {len(cases) - len(good)} bad input, "
        f"{len(good)} files that must arrive whole) through `memory_job` as `backfill` runs it "
        f"(days {', '.join(DAYS)}, one run), then `backfill --all` again. Seconds (requests) spent waiting on "
        "each server, and what is left: Dagster, parsing, polars, our own code.\n\n"
        + table(
            [
                "pass",
                "wall s",
                "Elasticsearch s",
                "chat s",
                "embed s",
                "outside s",
                "outside share",
                "checks passed",
                "raw docs written",
                "LLM calls",
                "texts embedded",
            ],
            rows,
        )
        + "\n\nBad-input cases by kind, and how many were listed in the run's metadata with their file and line:\n\n"
        + table(["kind", "cases", "listed"], [[k, n, listed_n] for k, (n, listed_n) in sorted(by_kind.items())])
        + f"\n\nFiles that must arrive whole: {len(good)}; documents in memory-raw: "
        f"{first_meta['memory_raw_index']['documents']}, turns: {first_meta['turns']['turns']}, LLM failures "
        f"listed: {first_meta['llm_ideas']['failed']}, texts cut to the embedding model's context: "
        f"{first_meta['embeddings']['truncated_to_fit']}.\n"
    )
    write_section("rough", "uv run python -m bench rough", body)
    print(body)
