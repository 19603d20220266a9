"""The memory service's routes and MCP tools over a fake search: shapes, status codes, errors. The real
search behind them is tested end to end in e2e/test_recall.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.client import Client

from memory_pipeline.search.consolidate import folded
from memory_pipeline.search.models import Detail, Filters, Row
from memory_pipeline.service.app import create_app
from memory_pipeline.service.mcp_server import build_mcp
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings, load_settings

ROWS = [
    Row(
        id="m1",
        kind="summary",
        time="2026-03-10T10:00:00Z",
        priority="high",
        summary="Always use pnpm, never npm.",
        project="/work/shop",
        session_id="s1",
        turn_id="t1",
        score=0.03,
        tags=["rule", "pnpm", "package-manager"],
        knowledge="rule",
        evidence="always use pnpm, never npm",
        evidence_role="user",
    ),
    Row(
        id="m2",
        kind="observation",
        time="2026-03-10T10:05:00Z",
        priority="low",
        summary="Asked: fix the build <script>alert(1)</script>. Outcome: fixed.",
        project="/work/shop",
        session_id="s1",
        turn_id="t2",
        score=0.02,
    ),
]


NO_FILTERS = Filters()


class FakeSearch:
    """Answers like MemorySearch, from two rows, and records the filters it was asked with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Filters]] = []
        self.ks: list[int] = []  # the k of each search
        self.degraded: str | None = None

    def recent(self, filters: Filters = NO_FILTERS, k: int = 10) -> list[Row]:
        return [r for r in ROWS if r.priority in (filters.priority or (r.priority,))][:k]

    def learned(self, project: str | None) -> tuple[set[str], set[str]]:
        return set(), set()  # nothing demoted nor raised: no follow-through yet

    def index(self, query: str, k: int = 10, filters: Filters = NO_FILTERS, mode: str = "hybrid") -> list[Row]:
        self.calls.append((query, filters))
        self.ks.append(k)
        return [r for r in ROWS if not filters.project or r.project == filters.project][:k]

    def find(self, query: str, k: int = 10, filters: Filters = NO_FILTERS, mode: str = "hybrid") -> list[Row]:
        return folded(self.index(query, k, filters, mode))  # as MemorySearch.find, without the reflections

    def timeline(self, anchor: str, window: int = 5, filters: Filters = NO_FILTERS) -> list[Row]:
        return ROWS if anchor in {r.id for r in ROWS} else []

    def detail(self, ids: list[str]) -> list[Detail]:
        turn = [{"role": "user", "content": "always use pnpm", "doc_id": "s1_t1_0"}]
        return [Detail.model_validate(r.to_dict() | {"source_turn": turn}) for r in ROWS if r.id in ids]

    def has_history(self) -> bool:
        return True


@pytest.fixture
def fake() -> FakeSearch:
    return FakeSearch()


@pytest.fixture
def client(fake: FakeSearch, tmp_path) -> Iterator[TestClient]:  # noqa: ANN001
    @contextmanager
    def opened(settings: Settings) -> Iterator[FakeSearch]:
        yield fake

    settings = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "state")
    with TestClient(create_app(settings, opened), base_url="http://127.0.0.1") as c:
        c.headers["X-Memory-Token"] = settings.service_token()  # as the extension and MCP clients send it
        yield c


def test_search_returns_cited_rows_and_passes_the_filters(client: TestClient, fake: FakeSearch) -> None:
    answer = client.get("/api/v1/search", params={"q": "pnpm", "project": "/work/shop", "priority": ["high"]})
    assert answer.status_code == 200
    body = answer.json()
    assert body["count"] == 2 and [m["id"] for m in body["data"]] == ["m1", "m2"] and body["data"][0]["score"] > 0
    assert fake.calls == [("pnpm", Filters(project="/work/shop", priority=("high",)))]


def test_bad_requests_are_refused_with_the_reason(client: TestClient) -> None:
    assert client.get("/api/v1/search", params={"q": ""}).status_code == 422
    assert client.get("/api/v1/search", params={"q": "x", "k": 0}).status_code == 422
    assert client.get("/api/v1/search", params={"q": "x", "priority": ["urgent"]}).status_code == 422
    missing = client.get("/api/v1/memories/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


def test_timeline_detail_and_briefing(client: TestClient) -> None:
    assert [m["id"] for m in client.get("/api/v1/timeline", params={"anchor": "m2"}).json()["data"]] == ["m1", "m2"]
    detail = client.get("/api/v1/memories/m1").json()
    assert detail["source_turn"][0]["content"] == "always use pnpm" and detail["priority"] == "high"
    several = client.get("/api/v1/memories", params={"ids": ["m1", "m2", "nope"]}).json()
    assert several["count"] == 2
    brief = client.get("/api/v1/briefing", params={"prompt": "set up the shop", "project": "/work/shop"}).json()
    assert "Always use pnpm, never npm." in brief["markdown"] and "m1" in brief["markdown"]
    # m1 is high priority: listed once, under "Important"; m2 matched below the relevance floor: a guess, left out.
    assert brief["ids"] == ["m1"] and "### Important" in brief["markdown"] and "m2" not in brief["markdown"]


def test_text_format_is_what_the_cli_prints(client: TestClient) -> None:
    text = client.get("/api/v1/search", params={"q": "pnpm", "format": "text"}).text
    # The fake's rows carry no BM25 score and no similarity: guesses, and said to be.
    first, second = text.splitlines()[:2]
    assert first == "nothing matched 'pnpm' well; the closest guesses:"
    assert second.startswith("m1  2026-03-10  summary") and "[/work/shop]" in second
    shown = client.get("/api/v1/memories", params={"ids": ["m1", "nope"], "format": "text"}).text
    assert "[user]\nalways use pnpm" in shown and "no memory with id nope" in shown


def test_only_local_host_names_are_served(client: TestClient) -> None:
    # A page on evil.example whose name is rebound to 127.0.0.1 still sends its own Host header.
    assert client.get("/health", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/health", headers={"host": "localhost:8765"}).status_code == 200


def test_openapi_documents_every_route(client: TestClient, tmp_path) -> None:  # noqa: ANN001
    paths = set(client.get("/openapi.json").json()["paths"])
    assert {"/api/v1/search", "/api/v1/timeline", "/api/v1/memories/{memory_id}", "/api/v1/briefing"} <= paths
    assert {"/api/v1/about-file", "/api/v1/compaction", "/api/v1/ingest"} <= paths
    # /health names the memory it serves: a CLI over other settings does not ask it.
    served = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "state").memory_id
    other = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "other").memory_id
    assert client.get("/health").json() == {"status": "ok", "memory": served} and served != other


def test_mcp_tools_through_the_sdks_own_client(fake: FakeSearch) -> None:
    async def session() -> None:
        async with Client(build_mcp(lambda: fake, Redactor), raise_exceptions=True) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert tools == {
                "memory_search",
                "memory_timeline",
                "memory_show",
                "memory_remember",
                "memory_briefing",
                "memory_undo_forget",
            }
            found = await c.call_tool("memory_search", {"query": "pnpm", "project": "/work/shop"})
            assert not found.is_error and [m["id"] for m in found.structured_content["data"]] == ["m1", "m2"]
            shown = await c.call_tool("memory_show", {"ids": ["m1"]})
            assert shown.structured_content["data"][0]["source_turn"][0]["content"] == "always use pnpm"
            brief = await c.call_tool("memory_briefing", {"prompt": "set up", "project": "/work/shop"})
            assert brief.structured_content["ids"] == ["m1"]
        async with Client(build_mcp(lambda: fake, Redactor)) as c:  # errors come back as error results, with the reason
            missing = await c.call_tool("memory_show", {"ids": ["nope"]})
            assert missing.is_error and "no memory with id nope" in missing.content[0].text
            empty = await c.call_tool("memory_search", {"query": " "})
            assert empty.is_error and "query is empty" in empty.content[0].text
            nowhere = await c.call_tool("memory_remember", {"text": "use pnpm"})
            assert nowhere.is_error and "name the project" in nowhere.content[0].text
            blank = await c.call_tool("memory_remember", {"text": "  ", "project": "/work/shop"})
            assert blank.is_error and "the note is empty" in blank.content[0].text

    anyio.run(session)


REVIEW = """# Review — /work/shop

## Hard rules

- [ ] p-20261130-001 Always use pnpm (evidence: 3 sessions)
- [ ] p-20261130-002 Never push on Fridays (evidence: 1 session)
- [ ] p-20261130-003 Run pytest -x first (evidence: 2 sessions)
"""


def test_review_actions_change_the_files_as_review_apply_does(client: TestClient, tmp_path) -> None:  # noqa: ANN001
    from memory_pipeline.reflect.workspace import ensure_project_dir

    folder = ensure_project_dir(tmp_path, "/work/shop")
    (folder / "REVIEW.md").write_text(REVIEW)
    (folder / "MEMORY.md").write_text("# Memory — /work/shop\n\nHand-written note that must stay.\n")
    listed = client.get("/api/v1/review", params={"project": "/work/shop"}).json()
    assert [p["id"] for p in listed["proposals"]] == ["p-20261130-001", "p-20261130-002", "p-20261130-003"]
    decided = client.post(
        "/api/v1/review",
        json={"project": "/work/shop", "promote": ["p-20261130-001"], "reject": ["p-20261130-002"]},
    )
    assert decided.status_code == 200
    assert decided.json() == {
        "promoted": ["p-20261130-001"],
        "rejected": ["p-20261130-002"],
        "untouched": ["p-20261130-003"],
    }
    memory = (folder / "MEMORY.md").read_text()
    assert "Hand-written note that must stay." in memory and "- Always use pnpm <!-- p-20261130-001 -->" in memory
    assert "Never push on Fridays" not in memory and "p-20261130-002" in "".join(
        p.read_text() for p in (folder / "daily").glob("*.md")
    )  # rejected: archived in today's log
    assert [p["id"] for p in client.get("/api/v1/review", params={"project": "/work/shop"}).json()["proposals"]] == [
        "p-20261130-003"
    ]
    gone = client.post("/api/v1/review", json={"project": "/work/shop", "promote": ["p-20261130-001"]})
    assert gone.status_code == 404 and "p-20261130-001" in gone.json()["detail"]


def test_writes_need_json_and_a_local_origin(client: TestClient) -> None:
    form = client.post("/api/v1/review", data={"project": "/work/shop", "promote": "p-1"})  # with the token
    assert form.status_code == 422  # a plain HTML form cannot post a decision
    foreign = client.post(
        "/api/v1/memories", json={"text": "x", "project": "/p"}, headers={"origin": "https://evil.example"}
    )
    assert foreign.status_code == 403 and "evil.example" in foreign.json()["detail"]


# --- the memory browser's pages ---------------------------------------------------------------------------


def test_search_page_shows_scores_and_ids_and_escapes_session_text(client: TestClient) -> None:
    page = client.get("/", params={"q": "pnpm"}).text
    assert 'href="/m/m1"' in page and 'href="/m/m2"' in page and "BM25 · sim.</th>" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "Nothing matched “pnpm” well" in page  # the fake's rows have no scores: said, not hidden
    empty = client.get("/", params={"q": "pnpm", "project": "/work/elsewhere"}).text
    assert "No memory matches “pnpm”." in empty and 'id="results"' not in empty


def test_the_browser_shows_a_restated_rule_once_and_a_replaced_decision_with_what_holds_now(
    client: TestClient, fake: FakeSearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    again = ROWS[0].model_copy(update={"id": "m3", "session_id": "s2", "summary": "Always use pnpm; never npm."})
    old = ROWS[0].model_copy(
        update={"id": "m4", "summary": "Keep sessions in Redis.", "knowledge": "decision", "superseded_by": "r-9"}
    )
    monkeypatch.setattr(fake, "index", lambda *a, **k: [ROWS[0], again, old])
    page = client.get("/", params={"q": "pnpm"}).text
    assert 'href="/m/m1"' in page and 'href="/m/m3"' not in page and "(said in 2 sessions)" in page
    assert "(replaced by r-9)" in page  # no reflection to read in the fake: the mark alone, never a guess
    record = old.to_dict() | {
        "source_turn": [],
        "current": "Switched session storage from Redis to Postgres.",
        "held_until": "2026-04-02",
        "said_in": 2,
        "said_again": [{"id": "m5", "time": "2026-03-20T09:00:00Z", "session_id": "s9",
                        "evidence": "we keep <b>sessions</b> in Redis", "evidence_role": "user"}],
    }  # fmt: skip
    monkeypatch.setattr(fake, "detail", lambda ids: [record])
    shown = client.get("/m/m4").text
    assert "Replaced by a later decision on 2026-04-02" in shown and "It held from 2026-03-10 to 2026-04-02" in shown
    assert '<strong id="current">Switched session storage from Redis to Postgres.</strong>' in shown
    assert "<h3>Said in 2 sessions</h3>" in shown and 'href="/m/m5"' in shown
    assert "we keep &lt;b&gt;sessions&lt;/b&gt; in Redis" in shown  # the other session's words, escaped


def test_every_write_needs_the_services_token(client: TestClient, tmp_path) -> None:  # noqa: ANN001
    writes = [
        ("/m/m1/forget", {"data": {}}),
        ("/m/m1/forget-turn", {"data": {}}),
        ("/m/m1/edit", {"data": {"text": "x"}}),
        ("/review/decide", {"data": {"project": "/p", "proposal": "p-1", "decision": "promote"}}),
        ("/api/v1/memories", {"json": {"text": "x", "project": "/p"}}),
        ("/api/v1/review", {"json": {"project": "/p", "promote": ["p-1"]}}),
        ("/mcp", {"json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}),
    ]
    for path, body in writes:
        for sent in ("", "guess"):
            refused = client.post(path, headers={"X-Memory-Token": sent}, **body)
            assert refused.status_code == 403 and "service-token" in refused.json()["detail"], path
    # No page holds a credential: a local process that reads one finds nothing to write with.
    token = (tmp_path / "state" / "service-token").read_text().strip()
    for page in ("/", "/review", "/m/m1"):
        assert token not in client.get(page).text and "hx-headers" not in client.get(page).text


def test_a_browser_logs_in_once_with_a_link_and_writes_with_an_http_only_cookie(fake: FakeSearch, tmp_path) -> None:  # noqa: ANN001
    import stat

    @contextmanager
    def opened(settings: Settings) -> Iterator[FakeSearch]:
        yield fake

    settings = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "state")
    with TestClient(create_app(settings, opened), base_url="http://127.0.0.1") as browser:
        write = ("/review/decide", {"project": "/p", "proposal": "p-1", "decision": "promote"})
        assert browser.post(write[0], data=write[1]).status_code == 403  # not logged in
        code = settings.service_login_path.read_text().strip()
        assert stat.S_IMODE(settings.service_login_path.stat().st_mode) == 0o600 and len(code) >= 30
        assert browser.get("/login?code=wrong").status_code == 403
        entered = browser.get(f"/login?code={code}", follow_redirects=False)
        assert entered.status_code == 303 and entered.headers["location"] == "/"
        cookie = entered.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "memory_session=" in cookie
        assert browser.post(write[0], data=write[1]).status_code != 403  # the cookie is the credential now
        # One use: the link does nothing the second time, and the next one is in the file.
        assert browser.get(f"/login?code={code}").status_code == 403
        assert settings.service_login_path.read_text().strip() != code
        # A write from another site is refused even with the cookie.
        foreign = browser.post(write[0], data=write[1], headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403


def test_bar_charts_escape_their_labels() -> None:
    from memory_pipeline.service.web.glance import Series, bar_chart

    svg = str(bar_chart(Series("Per day", [("2026-11-29", 3), ("<img src=x>", 1)])))
    assert svg.count("<rect") == 2 and "<img" not in svg and "&lt;img src=x&gt;" in svg and "(total 4, max 3)" in svg
    assert "nothing yet" in str(bar_chart(Series("Per day", [])))


class DownSearch(FakeSearch):
    """A search whose Elasticsearch does not answer (as a stopped node: the client's ConnectionError)."""

    def _down(self, *args: object, **kwargs: object) -> list[Row]:
        from elastic_transport import ConnectionError as NodeDown

        raise NodeDown("Connection refused")

    recent = index = timeline = detail = _down  # type: ignore[assignment]


def test_a_server_that_is_down_is_named_with_its_fix_everywhere(tmp_path) -> None:  # noqa: ANN001
    from memory_pipeline.reflect.workspace import ensure_project_dir

    down = DownSearch()

    @contextmanager
    def opened(settings: Settings) -> Iterator[DownSearch]:
        yield down

    settings = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "state")
    folder = ensure_project_dir(tmp_path, "/work/shop")
    (folder / "MEMORY.md").write_text("# Memory — /work/shop\n\n- Always use pnpm <!-- p-1 -->\n")
    with TestClient(create_app(settings, opened), base_url="http://127.0.0.1") as c:
        api = c.get("/api/v1/search", params={"q": "pnpm"})
        assert api.status_code == 503 and "Elasticsearch at http://127.0.0.1:9200" in api.json()["detail"]
        assert "memory-pipeline local up" in api.json()["detail"]
        page = c.get("/", params={"q": "pnpm"}, headers={"accept": "text/html"})
        assert (
            page.status_code == 503
            and "memory-pipeline local up" in page.text
            and '<div class="error" id="down">' in page.text
        )
        # The briefing still holds MEMORY.md's rules (local files), and says what it could not read.
        brief = c.get("/api/v1/briefing", params={"prompt": "set up", "project": "/work/shop"})
        assert brief.status_code == 200 and "Always use pnpm" in brief.json()["markdown"]
        assert "Elasticsearch at http://127.0.0.1:9200" in brief.json()["degraded"] and brief.json()["ids"] == ["p-1"]
        assert "memory-pipeline local up" in brief.json()["degraded"]

    async def session() -> None:
        async with Client(build_mcp(lambda: down, Redactor, settings=settings)) as c:
            failed = await c.call_tool("memory_search", {"query": "pnpm"})
            assert failed.is_error and "is unreachable" in failed.content[0].text
            assert "memory-pipeline local up" in failed.content[0].text

    anyio.run(session)


def test_mcp_calls_are_scoped_to_the_servers_project_and_say_what_each_parameter_is(fake: FakeSearch) -> None:
    async def session() -> None:
        async with Client(build_mcp(lambda: fake, Redactor, default_project="/work/shop")) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for tool in tools.values():  # the model reads these to fill the call
                for name, spec in tool.input_schema["properties"].items():
                    assert spec.get("description"), (tool.name, name)
            assert "working directory" in tools["memory_search"].input_schema["properties"]["project"]["description"]
            await c.call_tool("memory_search", {"query": "pnpm"})
            await c.call_tool("memory_search", {"query": "pnpm", "project": "/work/other"})
            brief = await c.call_tool("memory_briefing", {"prompt": "set up"})
            assert brief.structured_content["project"] == "/work/shop"

    anyio.run(session)
    assert [filters.project for _, filters in fake.calls[:2]] == ["/work/shop", "/work/other"]


def test_one_limit_on_k_and_window_through_every_way_in(client: TestClient, fake: FakeSearch) -> None:
    import re

    from click.testing import CliRunner

    from memory_pipeline.cli import main
    from memory_pipeline.limits import MAX_K, MAX_WINDOW

    assert client.get("/api/v1/search", params={"q": "x", "k": MAX_K}).status_code == 200
    assert client.get("/api/v1/search", params={"q": "x", "k": MAX_K + 1}).status_code == 422
    assert client.get("/api/v1/timeline", params={"anchor": "m1", "window": MAX_WINDOW + 1}).status_code == 422
    refused = CliRunner().invoke(main, ["search", "x", "--k", str(MAX_K + 1)])
    assert refused.exit_code == 2 and f"1<=x<={MAX_K}" in refused.output

    async def clamped() -> None:
        async with Client(build_mcp(lambda: fake, Redactor)) as c:
            await c.call_tool("memory_search", {"query": "x", "k": 10_000})

    anyio.run(clamped)
    # The pi extension clamps to the same numbers (it cannot import them: TypeScript).
    extension = (Path(__file__).resolve().parents[2] / "pi-extension" / "index.ts").read_text()
    assert re.search(rf"const MAX_K = {MAX_K};", extension) and re.search(
        rf"const MAX_WINDOW = {MAX_WINDOW};", extension
    )


def test_the_browsers_form_filters_are_the_apis(client: TestClient, fake: FakeSearch) -> None:
    # The form sends every field, empty ones too: an empty field asks for nothing, as in the API.
    form = {"q": "pnpm", "project": "", "since": "", "until": "2026-03-31", "kind": ["summary"], "priority": ["high"]}
    assert client.get("/", params=form).status_code == 200
    assert client.get("/api/v1/search", params=form).status_code == 200
    page, api = fake.calls[-2][1], fake.calls[-1][1]
    assert page == api == Filters(until="2026-03-31", priority=("high",), kind=("summary",))


class _EmptyIndices:
    """The `indices` API of an Elasticsearch that holds no index yet, as a real one answers."""

    def exists(self, index: str) -> bool:
        return False

    def get_field_mapping(self, index: list[str], fields: str, ignore_unavailable: bool = False) -> object:
        # A real cluster answers 404 even with ignore_unavailable when none of the indices exists.
        from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
        from elasticsearch import NotFoundError

        meta = ApiResponseMeta(404, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "127.0.0.1", 9200))
        raise NotFoundError("index_not_found_exception", meta, {"error": {"type": "index_not_found_exception"}})


class _EmptyCluster:
    """An Elasticsearch before the pipeline's first run: every index missing; searches that allow missing
    indices answer no hits."""

    indices = _EmptyIndices()

    def msearch(self, searches: list[dict], **options: object) -> dict:
        return {"responses": [{"hits": {"hits": []}} for _ in searches[::2]]}

    def search(self, **options: object) -> dict:
        return {"hits": {"hits": []}, "aggregations": {"newest": {"value": None}}}


class _Embedder:
    base_url = "http://embed.test"

    def embed(self, texts: list[str], purpose: str = "document") -> list[list[float]]:
        return [[0.1, 0.2, 0.3] for _ in texts]


def test_before_the_first_run_search_answers_empty_and_the_page_says_no_history_is_indexed(tmp_path) -> None:  # noqa: ANN001
    from memory_pipeline.search.engine import MemorySearch

    empty = MemorySearch(_EmptyCluster(), _Embedder())  # type: ignore[arg-type]

    @contextmanager
    def opened(settings: Settings) -> Iterator[MemorySearch]:
        yield empty

    settings = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "state")
    with TestClient(create_app(settings, opened), base_url="http://127.0.0.1") as c:
        answer = c.get("/api/v1/search", params={"q": "pnpm"})
        assert answer.status_code == 200 and answer.json()["count"] == 0 and answer.json()["data"] == []
        assert c.get("/api/v1/search", params={"q": "pnpm", "mode": "knn"}).json()["count"] == 0
        page = c.get("/", params={"q": "pnpm"})
        assert page.status_code == 200 and 'id="no-history"' in page.text and "No history is indexed yet" in page.text
        assert 'id="no-history"' in c.get("/").text

    # Once something is indexed, an empty answer is "nothing matched", not "nothing indexed".
    @contextmanager
    def indexed(settings: Settings) -> Iterator[FakeSearch]:
        yield FakeSearch()

    with TestClient(create_app(settings, indexed), base_url="http://127.0.0.1") as c:
        page = c.get("/", params={"q": "pnpm", "project": "/work/elsewhere"}).text
        assert 'id="no-history"' not in page and "No memory matches" in page


class _NoteStore:
    """The store's note writes, kept in a dict (the real one is tested end to end)."""

    def __init__(self) -> None:
        self.notes: dict[str, dict] = {}

    def add_note(self, doc_id: str, document: dict) -> None:
        self.notes[doc_id] = document

    def turn_roles(self, session_id: str, turn_id: str) -> None:
        return None


class _NoteSearch(FakeSearch):
    def __init__(self, store: _NoteStore) -> None:
        super().__init__()
        self.store = store

    def get(self, ids: list[str]) -> list[Row]:
        return [
            Row(id=i, kind="note", time=str(n["established_at"]), priority=str(n["priority"]),
                summary=str(n["summary"]), project=str(n["project"]), session_id="", turn_id="",
                author=str(n["author"]))
            for i, n in self.store.notes.items() if i in ids
        ]  # fmt: skip


def test_a_note_is_a_persons_only_from_their_browser_session_never_from_a_token(tmp_path) -> None:  # noqa: ANN001
    store = _NoteStore()
    search = _NoteSearch(store)

    @contextmanager
    def opened(settings: Settings) -> Iterator[_NoteSearch]:
        yield search

    settings = load_settings(memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "state")
    claim = {"text": "Deploy on Fridays is fine.", "project": "/work/shop", "author": "person", "priority": "high"}
    with TestClient(create_app(settings, opened), base_url="http://127.0.0.1") as c:
        c.app.state.store = store  # type: ignore[attr-defined]
        c.headers["X-Memory-Token"] = settings.service_token()
        stored = c.post("/api/v1/memories", json=claim)
        assert stored.status_code == 201 and stored.json()["priority"] == "medium"
        assert [n["author"] for n in store.notes.values()] == ["agent"]
        # The same claim from the browser the person logged in with is theirs, at the priority they gave.
        del c.headers["X-Memory-Token"]
        code = settings.service_login_path.read_text().strip()
        assert c.get(f"/login?code={code}", follow_redirects=False).status_code == 303
        mine = c.post("/api/v1/memories", json=claim | {"text": "Never deploy on Fridays."})
        assert mine.status_code == 201 and mine.json()["priority"] == "high"
        assert sorted(n["author"] for n in store.notes.values()) == ["agent", "person"]

    async def session() -> None:  # MCP has no author to claim: a model's note is an agent's
        async with Client(build_mcp(lambda: search, Redactor, get_store=lambda: store)) as c:  # type: ignore[arg-type,return-value]
            made = await c.call_tool(
                "memory_remember", {"text": "Keep the cache warm.", "project": "/w", "priority": "high"}
            )
            assert not made.is_error and made.structured_content["priority"] == "medium"

    anyio.run(session)
    assert sorted(n["author"] for n in store.notes.values()) == ["agent", "agent", "person"]


def test_reading_the_review_writes_nothing(client: TestClient, tmp_path: Path) -> None:
    # A folder made by hand (its name not the project's slug) and one without a REVIEW.md yet.
    for name, project in (("shop", "/work/shop"), ("other", "/work/other")):
        (tmp_path / name).mkdir()
        (tmp_path / name / ".project").write_text(project + "\n")
    (tmp_path / "shop" / "REVIEW.md").write_text("- [ ] p-20260101-001 Use pnpm.\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "state" not in p.parts)
    assert client.get("/review").status_code == 200
    assert client.get("/api/v1/review", params={"project": "/work/other"}).json()["proposals"] == []
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "state" not in p.parts)
    assert after == before
