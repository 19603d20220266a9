"""The rough-history corpus through the whole job, as `memory-pipeline backfill` runs it, on the real servers:
every case listed with its file and line, every good message indexed with an observation and a vector,
and a second pass that has nothing to do and writes nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from dagster import instance_for_test

from memory_pipeline.backfill import day_ranges, plan_backfill, run_backfill
from memory_pipeline.definitions import build_definitions
from memory_pipeline.partitions import ordered_days
from memory_pipeline.reflect.workspace import daily_log_path, project_of
from memory_pipeline.search import MemorySearch
from memory_pipeline.search.models import Filters
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.load import catalog, load_messages
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import OBSERVATION_INDEX, RAW_INDEX, vector_field
from testkit.ingest_helpers import cli_env, reset_days, run_metadata

ROUGH = Path(__file__).resolve().parents[2] / "bench" / "corpus" / "rough"
CASES = json.loads((ROUGH / "cases.json").read_text())
DAYS = ["2019-05-02", "2026-03-10", "9999-12-31"]
# Small prompts keep the 23 LLM calls of the corpus to a few minutes on two cores.
RUN_CONFIG = {"ops": {"llm_ideas": {"config": {"context_tokens": 2048, "max_output_tokens": 384}}}}


def _backfill(instance, settings: Settings, everything: bool) -> list:  # noqa: ANN001
    plan = plan_backfill(instance, settings.sessions_dir, everything)
    definitions = build_definitions(settings)
    return [
        run_backfill(instance, first, last, definitions, RUN_CONFIG)
        for first, last in day_ranges(plan.todo, ordered_days(instance))
    ]


@pytest.fixture(scope="module")
def rough(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("rough")
    shutil.copytree(ROUGH / "sessions", root / "sessions", symlinks=True)
    settings = isolated_settings(local_runtime, root)
    reset_days(settings, DAYS)
    with instance_for_test() as instance:
        first = _backfill(instance, settings, everything=False)
        left = plan_backfill(instance, settings.sessions_dir, everything=False).todo
        second = _backfill(instance, settings, everything=True)
        yield settings, root, first, left, second


def test_backfill_runs_every_day_with_every_check_passing(rough) -> None:  # noqa: ANN001
    _, _, first, left, _ = rough
    assert len(first) == 1 and first[0].success  # 2019, 2026 and 9999 in one run
    failed = [c.check_name for c in first[0].get_asset_check_evaluations() if not c.passed]
    assert failed == []
    assert left == []  # done means done: nothing is left for a plain `backfill`


def test_every_bad_case_is_listed_with_its_file_and_line(rough) -> None:  # noqa: ANN001
    _, _, first, _, _ = rough
    metadata, _, _ = run_metadata(first[0])
    listed = {stage: str(metadata[stage]["problems"]) for stage in ("session_files", "raw_messages")}
    for case in (c for c in CASES if c["kind"] != "ingested"):
        where = f"`{case['file']}{':' + str(case['line']) if case['line'] else ''}` **{case['kind']}**"
        assert where in listed[case["stage"]], case["case"]


def test_every_good_message_is_indexed_with_an_observation_and_a_vector(rough, tmp_path: Path) -> None:  # noqa: ANN001
    settings, _, _, _, _ = rough
    files = catalog(scan_sessions(settings.sessions_dir)[0], {})
    messages, _ = load_messages(files, tmp_path, Redactor())
    expected = dict(messages.filter(pl.col("doc_id").is_not_null()).group_by("session_id").len().iter_rows())
    turns = group_turns(messages)
    observation_ids = [f"obs_{s}_{t}" for s, t in turns.select("session_id", "turn_id").iter_rows()]
    with make_client(settings) as es:
        es.indices.refresh(index=[RAW_INDEX, OBSERVATION_INDEX])
        counts = es.search(
            index=RAW_INDEX,
            size=0,
            query={"terms": {"partition": DAYS}},
            aggs={"s": {"terms": {"field": "session_id", "size": 1000}}},
        )["aggregations"]["s"]["buckets"]
        assert {b["key"]: b["doc_count"] for b in counts} == expected
        found = es.search(
            index=OBSERVATION_INDEX,
            size=len(observation_ids),
            query={
                "bool": {"filter": [{"ids": {"values": observation_ids}}, {"exists": {"field": vector_field(384)}}]}
            },
        )["hits"]["total"]["value"]
    assert found == len(observation_ids) == turns.height >= 20


def test_a_second_pass_writes_nothing_and_asks_the_llm_nothing(rough) -> None:  # noqa: ANN001
    _, _, first, _, second = rough
    assert len(second) == 1 and second[0].success
    metadata, checks, _ = run_metadata(second[0])
    assert all(checks.values()), [name for name, ok in checks.items() if not ok]
    assert (metadata["memory_raw_index"]["written"], metadata["memory_raw_index"]["deleted"]) == (0, 0)
    assert (metadata["memory_observations_index"]["written"], metadata["memory_observations_index"]["deleted"]) == (
        0,
        0,
    )
    # Only a turn the model failed twice in the first pass is read again (by design: failures are retried).
    retried = run_metadata(first[0])[0]["llm_ideas"]["failed"]
    assert metadata["llm_ideas"]["attempted"] == retried and metadata["llm_ideas"]["llm_calls"] <= 2 * retried
    if retried == 0:
        assert (metadata["memory_summary_index"]["written"], metadata["memory_summary_index"]["deleted"]) == (0, 0)
        assert metadata["embeddings"]["embedded"] == 0 and metadata["es_dense_vector"]["vectors_written"] == 0
        assert metadata["reflections"]["llm_calls"] == 0


def test_projects_stay_apart_in_search_and_in_the_workspace(rough) -> None:  # noqa: ANN001
    settings, root, _, _, _ = rough
    with make_client(settings) as es, build_definitions(settings).resources["embedder"].get_client() as embedder:
        search = MemorySearch(es, embedder)
        anchor = "obs_rough-collide-0_e0000000"
        assert search.timeline(anchor, filters=Filters(project="/work/a/b")) == []
        rows = search.timeline(anchor, filters=Filters(project="/work/a-b"))
        assert rows and {r.project for r in rows} == {"/work/a-b"}
    logs = {p: daily_log_path(settings.memory_workspace, p, "2026-03-10") for p in ["/work/a-b", "/work/a/b", ".."]}
    assert len({path.parent.parent for path in logs.values()}) == 3
    for project, path in logs.items():
        assert path.exists() and path.resolve().is_relative_to((root / "memory").resolve())
        assert project_of(path.parent.parent) == project
    assert not (root / "daily").exists() and not (root / "REVIEW.md").exists()


def test_the_backfill_command_exits_0_and_then_has_nothing_to_do(rough) -> None:  # noqa: ANN001
    settings, root, _, _, _ = rough
    env = cli_env(settings, DAGSTER_HOME=str(root / "dagster-home"))
    command = [sys.executable, "-m", "memory_pipeline", "backfill"]
    everything = subprocess.run([*command, "--all"], env=env, capture_output=True, text=True, timeout=900)
    assert everything.returncode == 0, everything.stderr[-2000:]
    # Newest first: the most recent day alone, then the two before it together.
    assert "backfilling 3 of 3 day(s) in 2 run(s)" in everything.stderr and "success" in everything.stdout
    assert "not a session file" in everything.stderr  # what the scan skipped is said, by file and line
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing to backfill" in again.stdout and "3 day(s) with sessions" in again.stdout
