"""A project MEMORY_EXCLUDE names is never ingested (no message, observation or vector of it in any index, no
frame or run record of it under the state folder), beside a project that is; and `purge-excluded` removes what
was stored of it before it was excluded (here: a note kept on purpose), with a project excluded later from the
browser or `memory-pipeline exclude add` (`<state>/exclusions.json`) purged alongside."""

from __future__ import annotations

from pathlib import Path

from dagster import materialize

from memory_pipeline.control.exclusions import purge_excluded
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.open import open_search
from memory_pipeline.search.remember import Note, remember
from memory_pipeline.sessions.exclude_list import add_exclusion, exclusions_path
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import NOTES_INDEX, OBSERVATION_INDEX, RAW_INDEX
from memory_pipeline.stores.memory_store import open_store
from testkit.ingest_helpers import RECALL_ASSETS, copy_fixture, reset_days, run_metadata

DAY = "2025-08-24"
KEPT, SECRET = "/work/exclude-e2e-shop", "/work/exclude-e2e-client-acme"
LATER = "/work/exclude-e2e-later"  # excluded after its note was stored, by the person's file
KEPT_ID, SECRET_ID = "exclude-e2e-kept", "exclude-e2e-client"


def _count(settings: Settings, index: str, field: str, value: str) -> int:
    with make_client(settings) as client:
        if not client.indices.exists(index=index):
            return 0
        client.indices.refresh(index=index)
        return client.count(index=index, query={"term": {field: value}})["count"]


def test_an_excluded_project_is_never_ingested(local_runtime: Settings, tmp_path: Path) -> None:
    reset_days(local_runtime, [DAY])
    settings = isolated_settings(local_runtime, tmp_path, memory_exclude=["/work/exclude-e2e-client*"])
    copy_fixture("telegram-bot-errors.v3.jsonl", settings.sessions_dir / "a.jsonl", KEPT_ID, DAY, KEPT)
    copy_fixture("telegram-bot-errors.v3.jsonl", settings.sessions_dir / "b.jsonl", SECRET_ID, DAY, SECRET)
    result = materialize(
        RECALL_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    metadata, checks, _ = run_metadata(result)
    assert all(checks.values()), checks
    assert metadata["session_files"]["excluded_files"] == 1 and metadata["session_files"]["files"] == 1
    assert _count(settings, RAW_INDEX, "session_id", KEPT_ID) > 0
    assert _count(settings, OBSERVATION_INDEX, "project", KEPT) > 0
    for index in (RAW_INDEX, OBSERVATION_INDEX):
        assert _count(settings, index, "session_id", SECRET_ID) == 0
        assert _count(settings, index, "project", SECRET) == 0
    state = settings.memory_pipeline_state_dir
    holding = [p for p in state.rglob("*") if p.is_file() and SECRET_ID.encode() in p.read_bytes()]
    assert holding == [] and any(KEPT_ID.encode() in p.read_bytes() for p in state.rglob("*") if p.is_file())

    # Stored before the exclusion (a note kept on purpose): removed by purge-excluded, the other project kept.
    with open_search(settings) as search, open_store(settings) as store:
        for project in (SECRET, KEPT, LATER):
            note = Note(text=f"The client's staging host is behind the VPN ({project})", project=project)
            remember(search, store, note.model_copy(update={"author": "person"}), Redactor())
    assert _count(settings, NOTES_INDEX, "project", SECRET) == 1
    add_exclusion(exclusions_path(settings), LATER)
    projects, removed = purge_excluded(settings)  # what `purge-excluded` and the browser's Excluded page run
    assert projects == [SECRET, LATER] and removed == 2
    assert _count(settings, NOTES_INDEX, "project", LATER) == 0
    assert _count(settings, NOTES_INDEX, "project", SECRET) == 0 and _count(settings, NOTES_INDEX, "project", KEPT) == 1
    assert _count(settings, RAW_INDEX, "session_id", KEPT_ID) > 0
