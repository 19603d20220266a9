"""Set-up times of the scale-out parts: the 3-node local Elasticsearch and the local PostgreSQL for Dagster.

uv run python -m bench scaleout

Each on a private state folder and free ports (the shared servers are not touched), from an empty data folder
(cold) and again with the data in place (warm); for the cluster also a node killed (SIGKILL) and brought back
until the cluster is green. The fault itself (a node killed in the middle of a bulk ingest: 0 lost, 0
duplicated) is the test `memory_pipeline_tests/e2e/test_es_cluster.py`; Dagster's storage on PostgreSQL is
`test_dagster_postgres.py` plus the `dagster_storage` tests run again on it by `make test`.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import psutil

from bench.results_file import table, write_section
from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.settings import Settings, load_settings
from memory_pipeline.stores.elasticsearch import make_client
from testkit.servers import free_port, free_port_range

WORK = Path(__file__).with_name(".work") / "scaleout"


def _settings(shared: Settings, **overrides: object) -> Settings:
    return load_settings(
        memory_pipeline_state_dir=WORK / "state",
        memory_pipeline_cache_dir=shared.memory_pipeline_cache_dir,
        local_es_port=free_port_range(3),
        local_llama_port=free_port(),
        local_embed_port=free_port(),
        **overrides,
    )


def _timed(action) -> float:  # noqa: ANN001
    begin = time.perf_counter()
    action()
    return time.perf_counter() - begin


def _green(settings: Settings) -> None:
    with make_client(settings, request_timeout=200) as client:
        health = client.cluster.health(wait_for_status="green", timeout="180s")
        assert health["status"] == "green" and health["number_of_nodes"] == settings.es_node_count, health


def cluster_rows(shared: Settings) -> list[list[str]]:
    settings = _settings(shared, local_es_nodes=3, local_postgres=False)
    runtime = LocalRuntime(settings, progress=lambda m: None)
    try:
        cold = _timed(lambda: (runtime.up(["elasticsearch"]), _green(settings)))
        runtime.down()
        warm = _timed(lambda: (runtime.up(["elasticsearch"]), _green(settings)))
        with make_client(settings) as client:
            client.indices.create(
                index="bench-scaleout", settings={"number_of_shards": 1, "auto_expand_replicas": "0-1"}
            )
            client.bulk(
                operations=[
                    {"index": {"_index": "bench-scaleout", "_id": str(i)}} if j == 0 else {"n": i}
                    for i in range(2000)
                    for j in range(2)
                ],
                refresh=True,
            )
        pid = next(s.pid for s in runtime.status() if s.name == "elasticsearch-3")
        assert pid
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        psutil.wait_procs([psutil.Process(pid)], timeout=30)
        back = _timed(lambda: (runtime.up(["elasticsearch"]), _green(settings)))
        with make_client(settings) as client:
            assert client.count(index="bench-scaleout")["count"] == 2000
    finally:
        runtime.down()
    return [
        ["3-node Elasticsearch, empty data folders, up until green", f"{cold:.1f}"],
        ["3-node Elasticsearch, data in place, up until green", f"{warm:.1f}"],
        ["one node SIGKILLed, started again, until green (2,000 documents kept)", f"{back:.1f}"],
    ]


def postgres_rows(shared: Settings) -> list[list[str]]:
    settings = _settings(shared, local_postgres=True, local_postgres_port=free_port())
    runtime = LocalRuntime(settings, progress=lambda m: None)
    try:
        cold = _timed(lambda: runtime.up(["postgres"]))
        runtime.down()
        warm = _timed(lambda: runtime.up(["postgres"]))
    finally:
        runtime.down()
    return [
        ["PostgreSQL for Dagster, initdb + start until it answers", f"{cold:.1f}"],
        ["PostgreSQL for Dagster, data in place, start until it answers", f"{warm:.1f}"],
    ]


def main(flags: list[str]) -> None:
    shared = load_settings()
    shutil.rmtree(WORK, ignore_errors=True)
    try:
        rows = cluster_rows(shared)
        shutil.rmtree(WORK, ignore_errors=True)
        rows += postgres_rows(shared)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    body = (
        "Private state folder and ports; the Elasticsearch distribution and Debian's PostgreSQL already on the "
        "machine (the first `local up` fetches or apt-installs them once).\n\n"
        + table(["set-up", "seconds"], rows)
        + "\n\nThe fault test (`pytest memory_pipeline_tests/e2e/test_es_cluster.py`) kills the node holding "
        "memory-raw's primary in the middle of the pipeline's bulk ingest of 20,412 messages and finds 0 lost, "
        "0 duplicated, every check passing, and the cluster green after the node returns.\n"
    )
    write_section("scaleout", "uv run python -m bench scaleout", body)
    print(body)
