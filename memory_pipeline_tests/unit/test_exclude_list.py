"""The person's exclusions (`<state>/exclusions.json`, sessions/exclude_list.py): written whole, a torn file
refused with its name and kept, merged with MEMORY_EXCLUDE for every reader (the ingest's resource,
purge-excluded, the CLI), and the browser's Excluded page over the same file. The purge itself runs on a real
Elasticsearch in e2e/test_exclude.py."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from memory_pipeline.cli import main
from memory_pipeline.control import exclusions
from memory_pipeline.resources import build_resources
from memory_pipeline.service.app import create_app
from memory_pipeline.service.web.excluded import get_purge
from memory_pipeline.sessions.exclude import excluded
from memory_pipeline.sessions.exclude_list import (
    ExclusionsFileError,
    add_exclusion,
    exclusion_patterns,
    exclusions_path,
    read_exclusions,
    remove_exclusion,
)
from memory_pipeline.settings import Settings, load_settings
from memory_pipeline_tests.unit.test_service import FakeSearch


def _settings(tmp_path: Path, **overrides: object) -> Settings:
    return load_settings(
        memory_workspace=tmp_path / "memory", memory_pipeline_state_dir=tmp_path / "state", **overrides
    )


def test_added_patterns_are_kept_in_order_once_and_removed(tmp_path: Path) -> None:
    path = tmp_path / "state" / "exclusions.json"
    assert read_exclusions(path).patterns == []  # no file yet: nothing excluded
    assert add_exclusion(path, " /work/acme ") and add_exclusion(path, "/work/secret-*")
    assert not add_exclusion(path, "/work/acme")  # twice is once
    assert read_exclusions(path).patterns == ["/work/acme", "/work/secret-*"]
    assert json.loads(path.read_text())["exclusions"][0]["added_at"].startswith("20")
    assert remove_exclusion(path, "/work/acme") and not remove_exclusion(path, "/work/acme")
    assert read_exclusions(path).patterns == ["/work/secret-*"]
    assert sorted(p.name for p in path.parent.iterdir()) == [".exclusions.json.lock", "exclusions.json"]
    with pytest.raises(ValueError, match="name a project folder"):
        add_exclusion(path, "   ")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('{"exclusions": [{"pattern": "/work/acme", "added_at": "2026-12-01T10:00:00"}', "EOF while parsing"),
        ('{"exclusions": [{"pattern": 3, "added_at": "x"}]}', "exclusions.0.pattern"),
        ('["/work/acme"]', "the file: Input should be an object"),
    ],
)
def test_a_torn_file_is_refused_with_its_name_and_left_as_it_was(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "exclusions.json"
    path.write_text(content)
    with pytest.raises(ExclusionsFileError, match=said) as caught:
        read_exclusions(path)
    assert str(path) in str(caught.value)
    for change in (lambda: add_exclusion(path, "/work/b"), lambda: remove_exclusion(path, "/work/acme")):
        with pytest.raises(ExclusionsFileError):
            change()
    assert path.read_text() == content  # nothing written over what the person had


def test_every_reader_gets_memory_exclude_then_the_persons_patterns(tmp_path: Path) -> None:
    settings = _settings(tmp_path, memory_exclude=["/work/acme", "/work/secret-*"])
    assert exclusion_patterns(settings) == ["/work/acme", "/work/secret-*"]
    add_exclusion(exclusions_path(settings), "/work/client-b")
    add_exclusion(exclusions_path(settings), "/work/acme")  # in both: once
    assert exclusion_patterns(settings) == ["/work/acme", "/work/secret-*", "/work/client-b"]
    # The ingest's resource reads the file at each run: an exclusion added after the code loaded applies.
    sessions = build_resources(settings)["sessions"]
    add_exclusion(exclusions_path(settings), "~/late")
    assert sessions.exclusion_patterns() == [*exclusion_patterns(settings)]  # type: ignore[attr-defined]
    assert "~/late" in sessions.exclusion_patterns()  # type: ignore[attr-defined]
    assert excluded("/work/client-b/api", sessions.exclusion_patterns())  # type: ignore[attr-defined]
    # A torn file stops the run rather than read a project the person kept out.
    exclusions_path(settings).write_text("{")
    with pytest.raises(ExclusionsFileError):
        sessions.exclusion_patterns()  # type: ignore[attr-defined]


def test_purge_excluded_purges_the_merged_patterns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path, memory_exclude=["/work/acme"])
    add_exclusion(exclusions_path(settings), "/work/client-b")
    asked: list[tuple[list[str], Path]] = []

    def purge(es: object, patterns: list[str], parsed: Path) -> tuple[list[str], int]:
        asked.append((patterns, parsed))
        return ["/work/client-b"], 7

    monkeypatch.setattr(exclusions, "purge", purge)  # the purge itself: e2e/test_exclude.py
    assert exclusions.purge_excluded(settings) == (["/work/client-b"], 7)
    assert asked == [(["/work/acme", "/work/client-b"], settings.memory_pipeline_state_dir / "parsed")]


def test_the_cli_adds_lists_and_removes_in_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MEMORY_EXCLUDE", '["/work/acme"]')
    cli = CliRunner()
    added = cli.invoke(main, ["exclude", "add", "/work/client-b"])
    assert added.exit_code == 0 and "excluded: /work/client-b" in added.output
    assert read_exclusions(tmp_path / "state" / "exclusions.json").patterns == ["/work/client-b"]
    listed = cli.invoke(main, ["exclude", "list"]).output
    assert re.search(r"^/work/acme\tMEMORY_EXCLUDE$", listed, re.M)
    assert re.search(r"^/work/client-b\texclusions.json \(added ", listed, re.M)
    refused = cli.invoke(main, ["exclude", "remove", "/work/acme"])
    assert refused.exit_code != 0 and "MEMORY_EXCLUDE: change it there" in refused.output
    assert cli.invoke(main, ["exclude", "remove", "/work/client-b"]).exit_code == 0
    assert read_exclusions(tmp_path / "state" / "exclusions.json").patterns == []
    (tmp_path / "state" / "exclusions.json").write_text("{")
    torn = cli.invoke(main, ["exclude", "add", "/work/c"])
    assert torn.exit_code != 0 and "exclusions.json" in torn.output and "EOF" in torn.output


def test_purge_excluded_runs_on_the_persons_patterns_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("MEMORY_WORKSPACE", str(tmp_path / "memory"))
    monkeypatch.delenv("MEMORY_EXCLUDE", raising=False)
    cli = CliRunner()
    empty = cli.invoke(main, ["purge-excluded"])
    assert empty.exit_code != 0 and "nothing is excluded" in empty.output
    for name, project in (("work-client-b", "/work/client-b"), ("work-shop", "/work/shop")):
        (tmp_path / "memory" / name).mkdir(parents=True)
        (tmp_path / "memory" / name / ".project").write_text(project + "\n")
    add_exclusion(tmp_path / "state" / "exclusions.json", "/work/client-b")
    asked: list[list[str]] = []
    monkeypatch.setattr(exclusions, "purge", lambda es, patterns, parsed: asked.append(patterns) or (patterns, 3))
    done = cli.invoke(main, ["purge-excluded", "--with-files"])
    assert done.exit_code == 0, done.output
    assert asked == [["/work/client-b"]] and "removed 3 documents of 1 excluded projects" in done.output
    assert not (tmp_path / "memory" / "work-client-b").exists() and (tmp_path / "memory" / "work-shop").is_dir()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[tuple[TestClient, Settings, list[Settings]]]:
    """The app over a fake search, logged in as the person (the session cookie of the one-time link), with a purge
    that records what it was asked."""

    @contextmanager
    def opened(settings: Settings) -> Iterator[FakeSearch]:
        yield FakeSearch()

    settings = _settings(tmp_path, memory_exclude=["/work/acme"])
    (settings.memory_workspace / "work-shop").mkdir(parents=True)
    (settings.memory_workspace / "work-shop" / ".project").write_text("/work/shop\n")
    purged: list[Settings] = []

    def purge(asked: Settings) -> tuple[list[str], int]:
        purged.append(asked)
        return ["/work/acme", "/work/shop"], 42

    app = create_app(settings, opened)
    app.dependency_overrides[get_purge] = lambda: purge
    with TestClient(app, base_url="http://127.0.0.1") as c:
        code = settings.service_login_path.read_text().strip()
        assert c.get(f"/login?code={code}", follow_redirects=False).status_code == 303
        yield c, settings, purged


def test_the_excluded_page_lists_adds_and_removes(browser: tuple[TestClient, Settings, list[Settings]]) -> None:
    client, settings, _ = browser
    page = client.get("/excluded").text
    assert 'aria-current="page">Excluded' in page and '<ul id="configured"><li><code>/work/acme</code>' in page
    assert "MEMORY_EXCLUDE" in page and 'id="none-own"' in page and '<option value="/work/shop">' in page

    added = client.post("/excluded/add", data={"pattern": "/work/shop"})
    assert added.status_code == 204 and added.headers["HX-Redirect"] == "/excluded?added=%2Fwork%2Fshop"
    assert read_exclusions(exclusions_path(settings)).patterns == ["/work/shop"]
    page = client.get("/excluded", params={"added": "/work/shop"}).text
    assert 'id="done">Excluded /work/shop' in page and '<tr data-pattern="/work/shop">' in page
    assert 'hx-post="/excluded/remove"' in page and '<option value="/work/shop">' not in page  # offered no more
    again = client.post("/excluded/add", data={"pattern": "/work/acme"})  # in MEMORY_EXCLUDE already
    assert again.headers["HX-Redirect"] == "/excluded?already=%2Fwork%2Facme"
    assert read_exclusions(exclusions_path(settings)).patterns == ["/work/shop", "/work/acme"]
    assert client.post("/excluded/add", data={"pattern": " "}).status_code == 422

    # A settings pattern is not the page's to remove; the person's is.
    exclusions_path(settings).write_text(json.dumps({"exclusions": [{"pattern": "/work/shop", "added_at": "x"}]}))
    assert client.post("/excluded/remove", data={"pattern": "/work/acme"}).status_code == 422
    removed = client.post("/excluded/remove", data={"pattern": "/work/shop"})
    assert removed.status_code == 204 and "removed=%2Fwork%2Fshop" in removed.headers["HX-Redirect"]
    assert read_exclusions(exclusions_path(settings)).patterns == []
    assert client.post("/excluded/remove", data={"pattern": "/work/shop"}).status_code == 404


def test_a_memorys_page_offers_to_exclude_its_project(browser: tuple[TestClient, Settings, list[Settings]]) -> None:
    client, _, _ = browser
    page = client.get("/m/m1").text
    form = re.search(r'<form id="exclude-project"[^>]*>', page)
    assert form and 'hx-post="/excluded/add"' in form.group(0) and "/work/shop" in form.group(0)
    assert "hx-confirm=" in form.group(0)


def test_the_purge_is_confirmed_and_reports_what_it_removed(
    browser: tuple[TestClient, Settings, list[Settings]],
) -> None:
    client, settings, purged = browser
    page = client.get("/excluded").text
    form = re.search(r'<form id="purge"[^>]*>', page)
    assert form and 'hx-post="/excluded/purge"' in form.group(0) and "hx-confirm=" in form.group(0)
    done = client.post("/excluded/purge")
    assert done.status_code == 204 and done.headers["HX-Redirect"] == "/excluded?purged=42&projects=2"
    assert purged == [settings]
    assert "Removed 42 documents of 2 excluded projects" in client.get("/excluded?purged=42&projects=2").text


def test_a_torn_file_shows_on_the_page_and_refuses_writes(
    browser: tuple[TestClient, Settings, list[Settings]],
) -> None:
    client, settings, _ = browser
    exclusions_path(settings).parent.mkdir(parents=True, exist_ok=True)
    exclusions_path(settings).write_text('{"exclusions": [')
    page = client.get("/excluded").text
    assert 'id="problem"' in page and str(exclusions_path(settings)) in page
    refused = client.post("/excluded/add", data={"pattern": "/work/b"})
    assert refused.status_code == 409 and "exclusions.json" in refused.json()["detail"]
    assert exclusions_path(settings).read_text() == '{"exclusions": ['


def test_the_pages_writes_need_the_login_and_a_local_origin(tmp_path: Path) -> None:
    @contextmanager
    def opened(settings: Settings) -> Iterator[FakeSearch]:
        yield FakeSearch()

    settings = _settings(tmp_path)
    purged: list[Settings] = []
    app = create_app(settings, opened)
    app.dependency_overrides[get_purge] = lambda: lambda s: purged.append(s) or ([], 0)
    with TestClient(app, base_url="http://127.0.0.1") as stranger:
        assert stranger.get("/excluded").status_code == 200  # reading needs no login, as every page
        for path, data in (("/excluded/add", {"pattern": "/w"}), ("/excluded/remove", {"pattern": "/w"})):
            assert stranger.post(path, data=data).status_code == 403
        assert stranger.post("/excluded/purge").status_code == 403
        code = settings.service_login_path.read_text().strip()
        stranger.get(f"/login?code={code}")
        foreign = stranger.post("/excluded/purge", headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403
    assert not exclusions_path(settings).exists() and purged == []
