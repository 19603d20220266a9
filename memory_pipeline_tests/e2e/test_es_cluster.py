"""Elasticsearch as a 3-node local cluster (`local up --nodes 3`): a node killed in the middle of a bulk
ingest loses and duplicates nothing, and the cluster is green again once the node is back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import polars as pl
import pytest
from dagster import materialize
from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch

from memory_pipeline.assets import ingest
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client, stored_hashes
from memory_pipeline.stores.indices import RAW_INDEX
from testkit.corpora.bulk import build_corpus
from testkit.servers import kill, private_runtime

pytestmark = pytest.mark.e2e

DAYS = ["2024-05-01", "2024-05-02", "2024-05-03"]
NODES = ["elasticsearch", "elasticsearch-2", "elasticsearch-3"]


def expected_ids(corpus: Path) -> set[str]:
    """The id of every message document the corpus should give, from the pure parser alone."""
    frames = [to_frame(session_messages(parse_session(p), Redactor(), "x")[0]) for p in sorted(corpus.rglob("*.jsonl"))]
    return set(pl.concat(frames).filter(pl.col("doc_id").is_not_null())["doc_id"])


def settle(client: Elasticsearch, timeout: float = 120) -> None:
    """Wait until the two nodes left have noticed the third is gone and hold every primary again.

    When the killed node was the elected master, the others answer 503 (no master) until one of them is elected,
    and a read in that window fails on every node (CI saw `_refresh` fail that way). A person's read would be tried
    again; the test waits for what the cluster says, not a fixed time.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            health = client.cluster.health(wait_for_nodes="2", wait_for_status="yellow", timeout="10s")
            if not health["timed_out"]:
                return
        except (TransportError, ApiError):
            pass
        assert time.monotonic() < deadline, "the two nodes left never settled"
        time.sleep(1)


def test_a_node_killed_mid_bulk_loses_and_duplicates_nothing(local_runtime: Settings, tmp_path: Path) -> None:
    runtime = private_runtime(tmp_path, local_runtime, es_nodes=3)
    begin = time.monotonic()
    rows = runtime.up(["elasticsearch"])
    print(f"3-node cluster set up in {time.monotonic() - begin:.1f}s")
    try:
        assert [r.name for r in rows] == NODES and {r.state for r in rows} == {"started"}
        corpus = tmp_path / "sessions"
        build_corpus(corpus, DAYS, target=10_000)  # killed at 3,000: about a third in
        wanted = expected_ids(corpus)
        settings = isolated_settings(
            local_runtime,
            tmp_path / "run",
            sessions_dir=corpus,
            local_es_port=runtime.settings.local_es_port,
            local_es_password_file=runtime.settings.es_password_path,
            local_es_nodes=3,
        )
        assert len(settings.elasticsearch_hosts) == 3, "clients must know every node to go on without one"
        resources = build_resources(settings)
        assert resources["es"].connection_config.hosts == settings.elasticsearch_hosts  # type: ignore[attr-defined]

        with make_client(settings, request_timeout=120) as client:
            health = client.cluster.health()
            assert health["number_of_nodes"] == 3 and health["status"] == "green"
            killed: dict[str, object] = {}

            def kill_the_primary_mid_bulk() -> None:
                # The node holding memory-raw's primary is the hardest to lose: the write fails over to the
                # replica. Killed once a few thousand documents are in, long before the last.
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline:
                    try:
                        count = client.count(index=RAW_INDEX)["count"]
                    except Exception:  # noqa: BLE001 - the index may not exist yet
                        count = 0
                    if count >= 3_000:
                        shards = client.cat.shards(index=RAW_INDEX, format="json")
                        primary = next(s["node"] for s in shards if s["prirep"] == "p" and s["state"] == "STARTED")
                        name = NODES[int(primary.rsplit("-", 1)[1]) - 1]
                        killed.update(name=name, pid=kill(runtime, name), at=count)
                        return
                    time.sleep(0.05)

            killer = threading.Thread(target=kill_the_primary_mid_bulk, daemon=True)
            killer.start()
            result = materialize(
                [ingest.session_files, ingest.raw_messages, ingest.turns, ingest.memory_raw_index],
                resources=resources,
                instance=instance_with_days(DAYS),
                tags={"dagster/asset_partition_range_start": DAYS[0], "dagster/asset_partition_range_end": DAYS[-1]},
                raise_on_error=False,
            )
            killer.join(timeout=10)
            assert killed, "the node was never killed: the ingest ended before 3,000 documents were counted"
            assert int(killed["at"]) < len(wanted), "killed after the bulk had finished"
            print(f"killed {killed['name']} (pid {killed['pid']}) at {killed['at']} of {len(wanted)} documents")
            assert result.success, "the ingest failed when one node of three died"
            assert all(c.passed for c in result.get_asset_check_evaluations())

            settle(client)
            client.indices.refresh(index=RAW_INDEX)
            stored = stored_hashes(client, RAW_INDEX, {"match_all": {}})
            assert client.count(index=RAW_INDEX)["count"] == len(wanted), "lost or duplicated documents"
            assert set(stored) == wanted
            assert client.cluster.health()["status"] == "yellow", "with a node gone, replicas are missing"

            begin = time.monotonic()
            again = {r.name: r.state for r in runtime.up(["elasticsearch"])}
            assert again[str(killed["name"])] == "started" and list(again.values()).count("running") == 2
            health = client.cluster.health(wait_for_status="green", timeout="120s")
            print(f"node back and cluster green in {time.monotonic() - begin:.1f}s")
            assert health["status"] == "green" and health["number_of_nodes"] == 3
            assert client.count(index=RAW_INDEX)["count"] == len(wanted)
    finally:
        runtime.down()


def test_a_single_node_and_a_cluster_never_mix(local_runtime: Settings, tmp_path: Path) -> None:
    """`up --nodes 3` over a running single node is refused with what to do, not half-joined."""
    from memory_pipeline.local.process import RuntimeProblem
    from memory_pipeline.local.runtime import LocalRuntime

    single = private_runtime(tmp_path, local_runtime)
    single.up(["elasticsearch"])
    try:
        as_cluster = LocalRuntime(single.settings.model_copy(update={"local_es_nodes": 3}), progress=lambda m: None)
        with pytest.raises(RuntimeProblem, match="single node is running.*local down --only elasticsearch"):
            as_cluster.up(["elasticsearch"])
        assert [s.name for s in single.status() if s.state == "running"] == ["elasticsearch"]
    finally:
        assert single.down() == ["elasticsearch"]
