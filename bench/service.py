"""Latency of the memory service at scale: search, timeline, show and briefing through `memory-pipeline serve`
(HTTP, warm), beside the same calls in-process, in one run, on a private Elasticsearch holding N memories.

uv run python -m bench service                 # 100,000 memories
uv run python -m bench service --memories=20000

The memories are generated: sentences from a coding-work vocabulary, 20 projects over a year, a third of them
turn observations with three raw messages per turn (what `show` reads). Their vectors are real embeddings of
2,000 distinct sentences from the local embedding server, each memory's a noisy copy (embedding 100k texts would
take 20 minutes and change nothing here: kNN cost depends on the graph's size, not on the texts). Queries are
embedded for real on every call, as in use.
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
from elasticsearch import Elasticsearch, helpers

from bench.results_file import table, write_section
from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.search.briefing import build_briefing
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import ensure_index, make_client
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.indices import (
    OBSERVATION_INDEX,
    OBSERVATION_MAPPINGS,
    RAW_INDEX,
    RAW_MAPPINGS,
    SUMMARY_INDEX,
    SUMMARY_MAPPINGS,
    vector_field,
    vector_mapping,
)

WORK = Path(__file__).with_name(".work") / "service"
CALLS = 200
TOPICS = [
    "webhook signature check", "pnpm workspace install", "vitest config", "postgres migration", "redis cache ttl",
    "docker compose healthcheck", "CI flaky test", "eslint flat config", "react hydration error", "rust borrow checker",
    "kubernetes readiness probe", "oauth token refresh", "s3 upload retries", "graphql schema stitching",
    "terraform state lock", "python packaging with uv", "go module proxy", "nginx reverse proxy headers",
    "timezone bug in reports", "memory leak in the worker", "rate limiter", "feature flag rollout",
]  # fmt: skip
VERBS = ["decided to", "fixed", "found that", "prefers to", "agreed to", "reverted", "measured", "documented"]
DETAILS = [
    "because the old approach broke on CI", "after the incident last week", "to keep builds reproducible",
    "since the tests kept timing out", "so that deploys stay green", "which halved the latency",
    "as the user asked", "to avoid the N+1 queries",
]  # fmt: skip
QUERIES = [
    "which package manager do we use", "why did the webhook tests fail", "how do we configure vitest",
    "what was decided about the redis cache", "the flaky CI test root cause", "postgres migration plan",
    "docker healthcheck settings", "timezone bug fix", "oauth refresh token problem", "rate limiter decision",
]  # fmt: skip


def _sentence(rng: random.Random) -> str:
    return f"We {rng.choice(VERBS)} change the {rng.choice(TOPICS)} {rng.choice(DETAILS)}."


def _vectors(settings: Settings, rng: random.Random, distinct: int) -> tuple[list[str], np.ndarray]:
    texts = [_sentence(rng) for _ in range(distinct)]
    with embeddings_client(settings) as embedder:
        vectors = np.array(embedder.embed(texts, batch_size=64), dtype=np.float32)
    return texts, vectors


def _documents(n: int, texts: list[str], vectors: np.ndarray, rng: random.Random) -> Iterator[dict]:
    dims = vectors.shape[1]
    field = vector_field(dims)
    projects = [f"/work/project-{i:02d}" for i in range(20)]
    noise = np.random.default_rng(7)
    for i in range(n):
        pick = rng.randrange(len(texts))
        vector = vectors[pick] + noise.normal(0, 0.02, dims).astype(np.float32)
        vector /= np.linalg.norm(vector)
        turn = i // 3
        project = projects[turn % len(projects)]
        day = f"2026-{1 + turn % 12:02d}-{1 + turn % 28:02d}"
        when = f"{day}T{turn % 24:02d}:{i % 60:02d}:00Z"
        base = {
            "project": project,
            "partition": day,
            "session_id": f"s{turn // 10}",
            "turn_id": f"t{turn}",
            "established_at": when,
            field: vector.tolist(),
        }
        if i % 3 == 0:
            summary = f"Asked: {texts[pick]} Outcome: done."
            observation = {"doc_id": f"obs_{turn}", "kind": "observation", "summary": summary, "priority": "low"}
            yield {"_index": OBSERVATION_INDEX, "_id": f"obs_{turn}", "tags": ["turn"], **observation, **base}
            session = f"s{turn // 10}"
            for m, role in enumerate(["user", "assistant", "toolResult"]):
                doc_id = f"{session}_t{turn}_{m}"
                message = {"role": role, "content": texts[pick] * (1 + m), "message_index": m}
                where = {"session_id": session, "turn_id": f"t{turn}", "partition": day, "project": project}
                yield {"_index": RAW_INDEX, "_id": doc_id, "doc_id": doc_id, **message, **where}
        else:
            idea = {"doc_id": f"sum_{i}", "summary": texts[pick], "priority": rng.choice(["high", "medium", "low"])}
            yield {"_index": SUMMARY_INDEX, "_id": f"sum_{i}", "tags": [], **idea, **base}


def _load(es: Elasticsearch, n: int, texts: list[str], vectors: np.ndarray) -> float:
    dims = vectors.shape[1]
    settings = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}
    for index, mappings in ((SUMMARY_INDEX, SUMMARY_MAPPINGS), (OBSERVATION_INDEX, OBSERVATION_MAPPINGS)):
        ensure_index(es, index, mappings, settings)
        es.indices.put_mapping(index=index, properties={vector_field(dims): vector_mapping(dims)})
    ensure_index(es, RAW_INDEX, RAW_MAPPINGS, settings)
    begin = time.perf_counter()
    helpers.bulk(es, _documents(n, texts, vectors, random.Random(3)), chunk_size=1000, request_timeout=300)
    for index in (SUMMARY_INDEX, OBSERVATION_INDEX, RAW_INDEX):
        es.indices.put_settings(index=index, settings={"refresh_interval": "1s"})
    es.indices.refresh()
    # One segment per index, as a long-lived index settles: the figures then do not depend on merge timing.
    es.indices.forcemerge(index=[SUMMARY_INDEX, OBSERVATION_INDEX], max_num_segments=1, request_timeout=1800)
    return time.perf_counter() - begin


def _percentiles(call: Callable[[int], object], calls: int) -> tuple[float, float]:
    for i in range(10):  # warm-up: caches, connections, the JIT of the HNSW graph
        call(i)
    times = []
    for i in range(calls):
        begin = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - begin) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * len(times)) - 1]


def _serve(settings: Settings, port: int) -> subprocess.Popen:
    from testkit.ingest_helpers import cli_env

    log = (WORK / "serve.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "memory_pipeline", "serve", "--port", str(port)],
        env=cli_env(settings),
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"memory-pipeline serve did not start: see {WORK / 'serve.log'}")


def main(flags: list[str]) -> None:
    n = next((int(f.split("=", 1)[1]) for f in flags if f.startswith("--memories=")), 100_000)
    from testkit.servers import free_port

    shutil.rmtree(WORK, ignore_errors=True)
    shared = load_settings()
    settings = isolated_settings(shared, WORK, local_es_port=free_port())
    settings.sessions_dir.mkdir(parents=True)  # none are read: the memories are written straight to the indices
    runtime = LocalRuntime(settings, progress=lambda m: print(m, flush=True))
    began = time.perf_counter()
    runtime.up(["elasticsearch"])
    es_start = time.perf_counter() - began
    try:
        texts, vectors = _vectors(settings, random.Random(1), 2000)
        with make_client(settings, request_timeout=1800) as es:
            load_seconds = _load(es, n, texts, vectors)
            counts = {i: es.count(index=i)["count"] for i in (SUMMARY_INDEX, OBSERVATION_INDEX, RAW_INDEX)}
        memories = counts[SUMMARY_INDEX] + counts[OBSERVATION_INDEX]
        port = free_port()
        server = _serve(settings, port)
        base = f"http://127.0.0.1:{port}/api/v1"
        http = httpx.Client(timeout=30)
        project = "/work/project-03"
        ids = [f"obs_{3 * k}" for k in range(0, 30000, 97)][: CALLS + 10]
        rows = []
        with open_search(settings) as search:
            calls: dict[str, tuple[Callable[[int], object], Callable[[int], object]]] = {
                "search (hybrid)": (
                    lambda i: http.get(f"{base}/search", params={"q": QUERIES[i % 10], "project": project}).json(),
                    lambda i: search.index(QUERIES[i % 10], filters=Filters(project=project)),
                ),
                "timeline": (
                    lambda i: http.get(f"{base}/timeline", params={"anchor": ids[i % len(ids)]}).json(),
                    lambda i: search.timeline(ids[i % len(ids)]),
                ),
                "show": (
                    lambda i: http.get(f"{base}/memories/{ids[i % len(ids)]}").json(),
                    lambda i: search.detail([ids[i % len(ids)]]),
                ),
                "briefing": (
                    lambda i: http.get(
                        f"{base}/briefing", params={"prompt": QUERIES[i % 10], "project": project}
                    ).json(),
                    lambda i: build_briefing(search, QUERIES[i % 10], project=project),
                ),
            }
            for name, (through_service, in_process) in calls.items():
                s50, s95 = _percentiles(through_service, CALLS)
                p50, p95 = _percentiles(in_process, CALLS)
                rows.append([name, f"{s50:.1f}", f"{s95:.1f}", f"{p50:.1f}", f"{p95:.1f}", f"{s95 / p95:.2f}x"])
            assert isinstance(search, MemorySearch)
        http.close()
        server.terminate()
        server.wait(timeout=20)
    finally:
        runtime.down()
    body = (
        f"{memories:,} memories ({counts[SUMMARY_INDEX]:,} summaries, {counts[OBSERVATION_INDEX]:,} observations) "
        f"and {counts[RAW_INDEX]:,} raw messages on a private single-node Elasticsearch (started in {es_start:.0f} s, "
        f"loaded and merged in {load_seconds:.0f} s); {CALLS} calls each after 10 warm-up calls, one project's filter "
        f"({memories // 20:,} of them), the query embedded by the local embedding server on every search and "
        "briefing.\n\n"
        + table(
            [
                "call",
                "service p50 ms",
                "service p95 ms",
                "in-process p50 ms",
                "in-process p95 ms",
                "p95 service / in-process",
            ],
            rows,
        )
        + "\n\nThe service adds HTTP and JSON on top of the same call; every figure is a warm process (a CLI call "
        "pays a 2-8 s process start on top).\n"
    )
    write_section("service", "uv run python -m bench service", body)
    print(body)
