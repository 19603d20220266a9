"""Export, then import into an empty home: the same search results (ids, order, texts, priorities), people's edits
kept, vectors made again by this home's embedding server when the export has none; importing twice stores once.

The indices are shared by every test, so "an empty home" is a new state and workspace folder with this project's
memories taken out of every index before the import (and the search checked to find nothing then)."""

from __future__ import annotations

from pathlib import Path

from dagster import materialize

from memory_pipeline.control.portable import export_lines, import_lines, markdown, parse_lines
from memory_pipeline.curation.actions import edit
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.search.remember import Note, remember
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import delete_matching, make_client
from memory_pipeline.stores.indices import SEARCH_INDICES
from memory_pipeline.stores.memory_store import open_store
from testkit.ingest_helpers import RECALL_ASSETS, copy_fixture, reset_days, run_metadata

DAY = "2025-08-23"
PROJECT = "/work/export-import-e2e"
QUERIES = ("telegram bot error", "deploy through staging webhook", "python exception traceback", "rate limit")


def _results(settings: Settings) -> dict[str, list[tuple[str, str, str]]]:
    with open_search(settings) as search:
        return {
            q: [(r.id, r.summary, r.priority) for r in search.find(q, k=10, filters=Filters(project=PROJECT))]
            for q in QUERIES
        }


def _stored(settings: Settings) -> int:
    with make_client(settings) as client:
        client.indices.refresh(index=list(SEARCH_INDICES))
        return client.count(index=list(SEARCH_INDICES), query={"term": {"project": PROJECT}})["count"]


def test_export_then_import_into_an_empty_home_gives_the_same_search_results(
    local_runtime: Settings, tmp_path: Path
) -> None:
    reset_days(local_runtime, [DAY])
    first = isolated_settings(local_runtime, tmp_path / "first")
    copy_fixture("telegram-bot-errors.v3.jsonl", first.sessions_dir / "a.jsonl", "export-import-e2e", DAY, PROJECT)
    result = materialize(
        RECALL_ASSETS, resources=build_resources(first), partition_key=DAY, instance=instance_with_days([DAY])
    )
    assert all(run_metadata(result)[1].values())
    with open_search(first) as search, open_store(first) as store:
        note = Note(text="Deploys of the bot go through the staging webhook first", project=PROJECT, author="person")
        remember(search, store, note, Redactor())
        [observed] = search.recent(Filters(project=PROJECT, kind=("observation",)), k=1)
        edit(search, store, first.memory_workspace, observed.id, priority="high")
    before = _results(first)
    assert all(before.values()), before
    memories = _stored(first)
    assert memories >= 3
    with open_store(first) as store:
        lines = list(export_lines(store, first.memory_workspace, project=PROJECT))
    exported = tmp_path / "memory.jsonl"
    exported.write_text("\n".join(lines) + "\n")
    assert sum('"type":"memory"' in line for line in lines) == memories
    assert '"vector_' not in exported.read_text()
    readable = markdown(parse_lines(lines, str(exported)))
    assert "Deploys of the bot go through the staging webhook first" in readable and observed.id in readable

    with make_client(first) as client:
        delete_matching(client, SEARCH_INDICES, {"term": {"project": PROJECT}})
    second = isolated_settings(local_runtime, tmp_path / "second")
    assert _stored(second) == 0 and not any(_results(second).values())
    with open_store(second) as store:
        report = import_lines(store, second.memory_workspace, exported.read_text().splitlines(), str(exported))
    assert report.memories == memories and report.embedded == memories and report.corrections == 1
    assert _results(second) == before
    assert (second.memory_workspace / "corrections.jsonl").read_text() == (
        first.memory_workspace / "corrections.jsonl"
    ).read_text()

    with open_store(second) as store:
        import_lines(store, second.memory_workspace, exported.read_text().splitlines(), str(exported))
    assert _stored(second) == memories and _results(second) == before
