"""A memory of a session folder no longer configured is marked in every search row (issue 45): the CLI's and the
API's text lines, the API's JSON, the browser's search page and recent feed; the search fills the mark from the
manifest for the sessions its rows cite (the query itself runs on the real index in e2e/test_healing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memory_pipeline.search import engine
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.render import row_line, rows_text
from memory_pipeline.settings import load_settings
from memory_pipeline.stores.folders import configured_folders
from memory_pipeline_tests.unit.test_service import ROWS, FakeSearch, client, fake  # noqa: F401 - fixtures

OLD = "/home/alice/old-sessions"
MARK = "(folder no longer configured"


def test_a_row_line_names_the_folder_no_longer_configured() -> None:
    kept = ROWS[0].model_copy(update={"folder_no_longer_configured": OLD})
    assert f"(folder no longer configured: {OLD})" in row_line(kept)
    assert MARK not in row_line(ROWS[0])
    assert MARK in rows_text([kept], query=None)


def test_search_marks_the_rows_of_sessions_recorded_under_another_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[frozenset[str], set[str]]] = []

    def lookup(es: object, configured: frozenset[str], sessions: set[str]) -> dict[str, str]:
        asked.append((configured, set(sessions)))
        return {"s-old": OLD}

    monkeypatch.setattr(engine, "unconfigured_sessions", lookup)
    rows = [ROWS[0].model_copy(update={"session_id": "s-old"}), ROWS[1]]
    search = MemorySearch(object(), object(), frozenset({"/home/alice/sessions"}))  # type: ignore[arg-type]
    marked = search.marked(rows)
    assert [r.folder_no_longer_configured for r in marked] == [OLD, None]
    assert asked == [(frozenset({"/home/alice/sessions"}), {"s-old", "s1"})]
    # Without the configured folders (a search opened on an index alone) nothing is looked up or marked.
    assert MemorySearch(object(), object()).marked(rows) == rows  # type: ignore[arg-type]
    assert len(asked) == 1


def test_the_configured_folders_are_the_ones_the_pipeline_reads(tmp_path: Path) -> None:
    settings = load_settings(sessions_dir=tmp_path / "pi", claude_projects_dir=tmp_path / "claude")
    folders = configured_folders(settings)
    assert str(tmp_path / "pi") in folders and str(tmp_path / "claude") in folders


def test_the_api_and_the_browser_show_the_mark(
    client: TestClient,  # noqa: F811
    fake: FakeSearch,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = [ROWS[0].model_copy(update={"folder_no_longer_configured": OLD}), ROWS[1]]
    monkeypatch.setattr(fake, "find", lambda *a, **k: kept)
    monkeypatch.setattr(fake, "recent", lambda *a, **k: kept)
    data = client.get("/api/v1/search", params={"q": "pnpm"}).json()["data"]
    assert [m["folder_no_longer_configured"] for m in data] == [OLD, None]
    text = client.get("/api/v1/search", params={"q": "pnpm", "format": "text"}).text
    [first, second] = [line for line in text.splitlines() if line.startswith(("m1", "m2"))]
    assert f"(folder no longer configured: {OLD})" in first and MARK not in second
    page = client.get("/", params={"q": "pnpm"}).text
    assert page.count('class="unconfigured"') == 1 and f'title="{OLD}: kept' in page
    assert 'class="unconfigured"' in client.get("/recent").text
