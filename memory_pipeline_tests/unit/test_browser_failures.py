"""What a page's failed write gets back (web/failed.py): for a request htmx sent, a short escaped fragment marked
X-Memory-Failed, saying what was not done, why (redacted, cut short) and whether anything changed; never a stack
trace. API clients keep their JSON. The page's script that shows it: e2e/test_browser_actions.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from memory_pipeline.search.models import Row
from memory_pipeline.service.app import create_app
from memory_pipeline.service.web.failed import FAILED_HEADER, MAX_SHOWN
from memory_pipeline.settings import Settings, load_settings
from memory_pipeline_tests.unit.test_service import ROWS, DownSearch, FakeSearch

HTMX = {"HX-Request": "true"}
SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyzABCDEFGH0123456789abcdefghijkl"


class KnownSearch(FakeSearch):
    """The fake search, with the lookup a write starts with."""

    def get(self, ids: list[str]) -> list[Row]:
        return [r for r in ROWS if r.id in ids]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with _app(tmp_path, KnownSearch()) as c:
        yield c


def _is_fragment(answer, status: int) -> str:  # noqa: ANN001
    assert answer.status_code == status, answer.text
    assert answer.headers[FAILED_HEADER] == "1" and answer.headers["content-type"].startswith("text/html")
    assert "<html" not in answer.text and "Traceback" not in answer.text and 'File "' not in answer.text
    return answer.text


def test_a_page_write_on_a_memory_that_is_gone_says_so_in_a_fragment(client: TestClient) -> None:
    text = _is_fragment(client.post("/m/gone/forget", headers=HTMX), 404)
    assert "<strong>Not forgotten.</strong> No memory &#39;gone&#39;." in text and "Nothing was changed" in text
    assert "Not saved." in _is_fragment(client.post("/m/gone/edit", data={"text": "x"}, headers=HTMX), 404)
    # The same refusal to an API client (no HX-Request) stays JSON, without the page's marker.
    api = client.post("/m/gone/forget")
    assert api.status_code == 404 and api.json() == {"detail": "no memory 'gone'"} and FAILED_HEADER not in api.headers


def test_the_pages_own_memory_id_is_shown_whole_though_it_looks_like_a_token(client: TestClient) -> None:
    memory_id = "note-e7154eddadedea64e69b"  # the redactor alone masks it as a machine token
    text = _is_fragment(client.post(f"/m/{memory_id}/forget", headers=HTMX), 404)
    assert f"No memory &#39;{memory_id}&#39;." in text and "REDACTED" not in text


def test_a_write_without_the_login_or_from_another_site_is_refused_with_a_fragment(client: TestClient) -> None:
    no_login = client.post("/m/m1/forget", headers=HTMX | {"X-Memory-Token": ""})
    text = _is_fragment(no_login, 403)
    assert "Not forgotten.</strong> This browser is not logged in: open the one-time link" in text
    assert "<code>memory-pipeline serve</code>" in text and "Nothing was changed." in text
    foreign = client.post("/review/decide", headers=HTMX | {"Origin": "https://evil.example"}, data={})
    assert "A write from https://evil.example is refused." in _is_fragment(foreign, 403)
    # The checks themselves are unchanged for API clients.
    assert client.post("/m/m1/forget", headers={"X-Memory-Token": ""}).json()["detail"].startswith("a write needs")


def test_a_form_the_action_does_not_take_names_the_field_never_the_value(client: TestClient) -> None:
    sent = {"project": "/p", "proposal": "p-1", "decision": f"bogus-{SECRET}"}
    text = _is_fragment(client.post("/review/decide", data=sent, headers=HTMX), 422)
    assert "decision: Input should be &#39;promote&#39; or &#39;reject&#39;" in text and "bogus" not in text
    assert "Not done." in text


def test_the_reason_is_redacted_escaped_and_cut_short(client: TestClient) -> None:
    pattern = f"/work/<b>{SECRET}</b>"
    text = _is_fragment(client.post("/excluded/remove", data={"pattern": pattern}, headers=HTMX), 404)
    assert "Not removed." in text and SECRET not in text and "[REDACTED:anthropic-key]" in text
    assert "<b>" not in text and "&lt;b&gt;" in text
    long = _is_fragment(client.post("/excluded/remove", data={"pattern": "/work/" + "x" * 900}, headers=HTMX), 404)
    assert "x" * MAX_SHOWN not in long and "…" in long


def _app(tmp_path: Path, search: FakeSearch) -> TestClient:
    @contextmanager
    def opened(settings: Settings) -> Iterator[FakeSearch]:
        yield search

    settings = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "state")
    client = TestClient(create_app(settings, opened), base_url="http://127.0.0.1", raise_server_exceptions=False)
    client.headers["X-Memory-Token"] = settings.service_token()
    return client


def test_elasticsearch_down_gives_a_page_the_server_and_the_command(tmp_path: Path) -> None:
    with _app(tmp_path, DownSearch()) as c:
        text = _is_fragment(c.get("/recent", headers=HTMX), 503)  # the search page's poll
        assert "The newest memories could not be read." in text and "<code>memory-pipeline local up</code>" in text
        assert "Reload the page once it works again" in text
        # A page load still gets the outage page, the API its JSON.
        assert 'id="down"' in c.get("/", params={"q": "x"}, headers={"accept": "text/html"}).text
        assert "memory-pipeline local up" in c.get("/recent").json()["detail"]


class CrashingSearch(FakeSearch):
    def get(self, ids: list[str]) -> list[Row]:
        raise RuntimeError(f"the index said {SECRET} at /srv/secret/path")


def test_a_crash_names_its_kind_only(tmp_path: Path) -> None:
    with _app(tmp_path, CrashingSearch()) as c:
        text = _is_fragment(c.post("/m/m1/forget-turn", headers=HTMX), 500)
        assert "Not forgotten." in text and "(RuntimeError)" in text and "its log says why" in text
        assert SECRET not in text and "/srv/secret" not in text and "index said" not in text
        plain = c.post("/m/m1/forget-turn")
        assert plain.status_code == 500 and plain.text == "Internal Server Error"


def test_every_page_has_the_alert_region_and_the_script_that_fills_it(client: TestClient) -> None:
    for page in ("/", "/review", "/m/m1", "/excluded", "/injected"):
        shown = client.get(page).text
        assert '<div id="failed" class="error" role="alert" hidden></div>' in shown, page
    script = client.get("/static/browser.js").text
    for event in ("htmx:responseError", "htmx:sendError", FAILED_HEADER):
        assert event in script
