"""Forgetting a memory with its turn (issue 30): the turn's raw messages, its observation and every memory of it
leave every index at once, and no later run, on the same file or a rewritten one, brings any of them back."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import materialize

from memory_pipeline.curation.actions import forget_turn
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import OBSERVATION_INDEX, RAW_INDEX
from memory_pipeline.stores.injections import InjectedLine, Injection, open_ledger
from memory_pipeline.stores.memory_store import open_store
from testkit.ingest_helpers import RECALL_ASSETS, copy_fixture, reset_days, run_metadata

DAY = "2025-08-21"
SESSION = "forget-turn-e2e"


def _run(settings: Settings) -> tuple[dict, dict]:
    result = materialize(
        RECALL_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    metadata, checks, _ = run_metadata(result)
    return metadata, checks


def _count(settings: Settings, index: str, turn_id: str | None = None) -> int:
    terms = [{"term": {"session_id": SESSION}}] + ([{"term": {"turn_id": turn_id}}] if turn_id else [])
    with make_client(settings) as client:
        client.indices.refresh(index=index)
        return client.count(index=index, query={"bool": {"filter": terms}})["count"]


def test_a_forgotten_turn_leaves_every_index_and_no_rerun_brings_it_back(
    local_runtime: Settings, tmp_path: Path
) -> None:
    reset_days(local_runtime, [DAY])
    path = copy_fixture("telegram-bot-errors.v3.jsonl", tmp_path / "sessions" / "a.jsonl", SESSION, DAY, "/work/bot")
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "sessions")
    _, checks = _run(settings)
    assert all(checks.values()), checks
    raw_before, observations_before = _count(settings, RAW_INDEX), _count(settings, OBSERVATION_INDEX)
    with open_search(settings) as search, open_store(settings) as store:
        [row] = search.recent(Filters(project="/work/bot", kind=("observation",)), k=1)
        turn_id = row.turn_id
        messages = _count(settings, RAW_INDEX, turn_id)
        assert messages >= 1 and _count(settings, OBSERVATION_INDEX, turn_id) == 1
        # A session was given the turn's observation and a memory of another turn: only the first leaves the ledger.
        ledger = open_ledger(settings)
        ledger.record(Injection(session_id="forget-turn-e2e", agent="pi", event="start", ids=[row.id, "other"],
                                lines=[InjectedLine(key=row.id, text=row.summary),
                                       InjectedLine(key="other", text="Another turn's memory.")]))  # fmt: skip
        forget_turn(search, store, settings.memory_workspace, row.id, ledger=ledger)
        gone, other = ledger.read("forget-turn-e2e").injections[0].lines
        assert (gone.text, gone.forgotten, other.text, other.forgotten) == ("", True, "Another turn's memory.", False)
        assert _count(settings, RAW_INDEX, turn_id) == 0 and _count(settings, OBSERVATION_INDEX, turn_id) == 0
        assert not search.get([row.id])
        assert all(r.turn_id != turn_id for r in search.index(row.summary, k=20, filters=Filters(project="/work/bot")))
    assert _count(settings, RAW_INDEX) == raw_before - messages
    assert _count(settings, OBSERVATION_INDEX) == observations_before - 1

    # Again on the same file, then on the file rewritten (read again whole): the turn stays gone, every check
    # holds (the index equals what the runs derive), and the runs say people left it out.
    for rewrite in (False, True):
        if rewrite:
            path.write_bytes(path.read_bytes())
            os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 60))
        metadata, checks = _run(settings)
        assert all(checks.values()), checks
        assert metadata["raw_messages"]["forgotten_by_people"] == messages
        assert _count(settings, RAW_INDEX, turn_id) == 0 and _count(settings, OBSERVATION_INDEX, turn_id) == 0
        assert _count(settings, RAW_INDEX) == raw_before - messages
    trail = (settings.memory_workspace / "corrections.jsonl").read_text()
    assert '"forget_turn"' in trail and row.summary[:40] not in trail  # ids and hashes, never the text
