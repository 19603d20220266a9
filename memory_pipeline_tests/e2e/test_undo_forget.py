"""A forget undone, on the real Elasticsearch and embedding server, from each surface (the service's API, MCP,
and the function the CLI and the browser call): the memory comes back as it was (id, text, priority, vector),
searchable at once; the trail keeps the forget and its undo, and the pipeline no longer applies the forget."""

from __future__ import annotations

from pathlib import Path

import anyio
from fastapi.testclient import TestClient
from mcp.client import Client

from memory_pipeline.curation.actions import NothingToUndo, forget, undo_forget
from memory_pipeline.curation.trail import read_corrections
from memory_pipeline.search.models import Filters
from memory_pipeline.search.open import open_search
from memory_pipeline.search.remember import Note, remember
from memory_pipeline.service.app import create_app
from memory_pipeline.service.mcp_server import build_mcp
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import FORGOTTEN_INDEX, NOTES_INDEX
from memory_pipeline.stores.injections import InjectedLine, Injection, open_ledger
from memory_pipeline.stores.memory_store import open_store

PROJECT = "/work/undo-forget-e2e"
QUERY = "release checklist signed tags"


def _stored(settings: Settings, memory_id: str) -> dict | None:
    with make_client(settings) as client:
        found = client.options(ignore_status=404).get(index=NOTES_INDEX, id=memory_id)
        return found["_source"] if found.get("found") else None


def _found(settings: Settings) -> list[str]:
    with open_search(settings) as search:
        return [r.id for r in search.index(QUERY, k=5, filters=Filters(project=PROJECT))]


def test_a_forget_is_undone_from_every_surface(local_runtime: Settings, tmp_path: Path) -> None:
    settings = isolated_settings(local_runtime, tmp_path)
    with open_search(settings) as search, open_store(settings) as store:
        note = Note(text="Every release checklist ends with signed tags", project=PROJECT, author="person")
        row = remember(search, store, note, Redactor())
    original = _stored(settings, row.id)
    assert original and any(k.startswith("vector_") for k in original) and _found(settings) == [row.id]

    def forgotten() -> None:
        with open_search(settings) as search, open_store(settings) as store:
            forget(search, store, settings.memory_workspace, row.id)
        assert _stored(settings, row.id) is None and _found(settings) == []

    # The function the CLI and the browser call.
    forgotten()
    with open_store(settings) as store:
        undo_forget(store, settings.memory_workspace, row.id)
        try:
            undo_forget(store, settings.memory_workspace, row.id)
            raise AssertionError("undone twice")
        except NothingToUndo:
            pass
    assert _stored(settings, row.id) == original and _found(settings) == [row.id]

    # The API, with the service's token; a session was given the memory before (the injection ledger): the
    # forget leaves the ledger too, which keeps only that it was given.
    ledger = open_ledger(settings)
    ledger.record(Injection(session_id="undo-e2e", agent="pi", event="start", ids=[row.id],
                            lines=[InjectedLine(key=row.id, text=note.text)]))  # fmt: skip
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        token = {"X-Memory-Token": settings.service_token()}
        answer = client.post(f"/api/v1/memories/{row.id}/forget", headers=token)
        assert answer.status_code == 200 and answer.json()["undo_until"] > answer.json()["at"]
        assert _found(settings) == []
        [given] = ledger.read("undo-e2e").injections[0].lines
        assert (given.key, given.text, given.forgotten) == (row.id, "", True)
        shown = client.get("/api/v1/injected", params={"session_id": "undo-e2e"}, headers=token)
        assert shown.status_code == 200 and row.id in shown.text and "signed tags" not in shown.text, shown.text
        assert client.post(f"/api/v1/memories/{row.id}/undo-forget").status_code in (401, 403)  # a write: token
        assert client.post(f"/api/v1/memories/{row.id}/undo-forget", headers=token).status_code == 200
        assert client.post(f"/api/v1/memories/{row.id}/undo-forget", headers=token).status_code == 404
    assert _stored(settings, row.id) == original and _found(settings) == [row.id]

    # MCP.
    forgotten()

    async def by_mcp() -> None:
        with open_search(settings) as search, open_store(settings) as store:
            server = build_mcp(lambda: search, Redactor, PROJECT, settings.memory_workspace, settings, lambda: store)
            async with Client(server, raise_exceptions=True) as c:
                back = await c.call_tool("memory_undo_forget", {"id": row.id})
                assert not back.is_error and back.structured_content["id"] == row.id

    anyio.run(by_mcp)
    assert _stored(settings, row.id) == original and _found(settings) == [row.id]

    trail = read_corrections(settings.memory_workspace, row.id)
    assert [c.action for c in trail] == ["forget", "undo"] * 3
    assert read_corrections(settings.memory_workspace) == []  # nothing in force: the pipeline keeps it
    with make_client(settings) as client:
        client.indices.refresh(index=FORGOTTEN_INDEX)
        assert client.count(index=FORGOTTEN_INDEX, query={"term": {"memory_id": row.id}})["count"] == 0
