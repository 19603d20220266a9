"""Recall end to end: observations and summaries embedded by the real MiniLM server into real ES, searched."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import polars as pl
import pytest
from dagster import materialize

from memory_pipeline.partitions import instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search import Filters, MemorySearch
from memory_pipeline.search.briefing import build_briefing, tokens
from memory_pipeline.settings import Settings, isolated_settings, load_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.summary_store import sync_summaries
from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, ledger_rows, summary_documents
from testkit.ingest_helpers import RECALL_ASSETS, cli_env, copy_fixture, reset_days, run_metadata
from testkit.servers import free_port, memory_service

DAY = "2024-06-20"
SESSION = "recall-pi-mono"
# Other tests leave memories of their own (a real pi agent's sessions about rgb colours, under the day they ran):
# a ranking this module asserts is asked within its own project.
PROJECT = "/Users/badlogic/workspaces/pi-mono"
OWN = Filters(project=PROJECT)


def _run(settings: Settings) -> tuple[dict, dict]:
    result = materialize(
        RECALL_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    assert result.success
    metadata, checks, _ = run_metadata(result)
    return metadata, checks


def _summaries(settings: Settings) -> None:
    """Two fixed summaries (no LLM) on real turns of the session, so both kinds of memory are searched."""
    base = {
        "partition": DAY,
        "session_id": SESSION,
        "project": "/Users/badlogic/workspaces/pi-mono",
        "prompt_version": "1",
        "model": "m",
        "reason": None,
        "summarized_at": "2024-06-20T12:00:00+00:00",
        "llm_calls": 1,
        "seconds": 1.0,
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "generation_seconds": 0.5,
        "status": "summarised",
    }
    frame = pl.DataFrame(
        [
            base
            | {
                "turn_id": "L000389",
                "content_hash": "a",
                "established_at": "2025-11-21T01:36:00.000Z",
                "ideas": [
                    {
                        "summary": 'The user stated "use rgb values in the themes, no rgb indices".',
                        "priority": "high",
                        "tags": ["themes", "colors", "user-rule"],
                    }
                ],
            },
            base
            | {
                "turn_id": "L000856",
                "content_hash": "b",
                "established_at": "2025-11-21T02:10:00.000Z",
                "ideas": [
                    {
                        "summary": "Invalid custom themes must never crash pi; fall back to the default theme.",
                        "priority": "high",
                        "tags": ["themes", "robustness", "user-rule"],
                    },
                    {
                        "summary": "Restarting with -r and a broken theme file crashed the app.",
                        "priority": "medium",
                        "tags": ["themes", "crash", "bug"],
                    },
                ],
            },
        ],
        schema=OUTCOME_SCHEMA,
    )
    with make_client(settings) as client:
        sync_summaries(client, summary_documents(frame), ledger_rows(frame), [DAY])


@pytest.fixture(scope="module")
def indexed(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, list]]:
    tmp = tmp_path_factory.mktemp("recall")
    reset_days(local_runtime, [DAY])
    copy_fixture("pi-mono-large-session.v1.jsonl", tmp / "s" / "a.jsonl", SESSION, DAY)
    settings = isolated_settings(local_runtime, tmp, sessions_dir=tmp / "s")
    _run(settings)  # memory-raw first, so the summaries below cite turns that exist
    _summaries(settings)
    first = _run(settings)
    second = _run(settings)
    yield settings, [first, second]


@pytest.fixture
def search(indexed: tuple[Settings, list]) -> Iterator[MemorySearch]:
    settings, _ = indexed
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        yield MemorySearch(es, embedder)


def test_every_memory_gets_one_vector_and_unchanged_texts_are_not_embedded_again(indexed) -> None:  # noqa: ANN001
    _, ((first, checks), (second, checks2)) = indexed
    assert first["embeddings"]["memories"] == 88 + 3 and first["embeddings"]["embedded"] == 3
    assert first["es_dense_vector"]["dims"] == 384
    assert first["es_dense_vector"]["coverage"] == {"memory-summary": [3, 3], "memory-observations": [88, 88]}
    assert second["embeddings"]["embedded"] == 0 and second["es_dense_vector"]["vectors_written"] == 0
    assert all(checks.values()) and all(checks2.values())
    assert {"every_memory_has_a_vector", "knn_finds_itself", "index_equals_observations"} <= set(checks)
    # The observations were indexed by the run before (their own asset): unchanged since, nothing written.
    observed = first["memory_observations_index"]
    assert (observed["observations"], observed["unchanged"], observed["written"], observed["deleted"]) == (88, 88, 0, 0)


def test_an_observation_lost_from_the_index_is_written_and_embedded_again(indexed) -> None:  # noqa: ANN001
    settings, _ = indexed
    with make_client(settings) as es:
        hits = es.search(index="memory-observations", query={"term": {"session_id": SESSION}}, size=1)["hits"]["hits"]
        lost = hits[0]["_id"]
        es.delete(index="memory-observations", id=lost, refresh=True)
    meta, checks = _run(settings)
    assert all(checks.values()), [name for name, ok in checks.items() if not ok]
    observed = meta["memory_observations_index"]
    assert (observed["written"], observed["deleted"], observed["unchanged"]) == (1, 0, 87)
    assert meta["embeddings"]["embedded"] == 1 and meta["es_dense_vector"]["vectors_written"] == 1
    assert meta["es_dense_vector"]["coverage"] == {"memory-summary": [3, 3], "memory-observations": [88, 88]}
    with make_client(settings) as es:
        query = {"bool": {"filter": [{"ids": {"values": [lost]}}, {"exists": {"field": "vector_384"}}]}}
        assert es.count(index="memory-observations", query=query)["count"] == 1


def test_observations_are_indexed_while_the_embedding_server_is_down(local_runtime: Settings, tmp_path) -> None:  # noqa: ANN001
    """Observations reach memory-observations by their own asset, apart from any vector: a run whose embedding
    server is down fails at `embeddings` and still leaves every turn's observation indexed (BM25 finds it)."""
    day, session = "2024-06-23", "recall-embedder-down"
    reset_days(local_runtime, [day])
    copy_fixture("handwritten-kuato.v3.jsonl", tmp_path / "s" / "a.jsonl", session, day)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=tmp_path / "s")
    down = load_settings(**{**settings.model_dump(), "embed_url": f"http://127.0.0.1:{free_port()}"})
    result = materialize(
        RECALL_ASSETS,
        resources=build_resources(down),
        partition_key=day,
        instance=instance_with_days([day]),
        raise_on_error=False,
    )
    metadata, checks, _ = run_metadata(result)
    assert not result.success and "embeddings" not in metadata and "es_dense_vector" not in metadata
    assert checks["index_equals_observations"]
    observed = metadata["memory_observations_index"]
    assert observed["written"] == observed["observations"] > 0
    with make_client(settings) as es:
        by_session = {"term": {"session_id": session}}
        assert es.count(index="memory-observations", query=by_session)["count"] == observed["observations"]
    reset_days(local_runtime, [day])


def test_index_layer_is_compact_ranked_and_cites_stable_ids(search: MemorySearch) -> None:
    rows = search.index("colours should be rgb values, not indices", k=5, filters=OWN)
    assert rows and len(rows) <= 5
    assert rows[0].turn_id == "L000389"
    assert {"id", "kind", "time", "priority", "summary", "project"} <= set(rows[0].to_dict())
    assert search.index("colours should be rgb values, not indices", k=5, filters=OWN)[0].id == rows[0].id


def test_a_time_named_in_an_old_history_is_read_in_its_own_time(search: MemorySearch) -> None:
    from datetime import date

    scope = OWN
    newest = date.fromisoformat(search.recent(scope, k=1)[0].time[:10])
    assert (date.today() - newest).days > 30  # an old history (the fixture's day, or another test's copy)
    search.index("what was fixed in june", k=3, filters=scope)
    assert search.as_of == newest  # its June, not the clock's
    search.index("what was fixed in june", k=3, filters=scope, today=date(2024, 7, 1))
    assert search.as_of == date(2024, 7, 1)  # a day given is the day used
    search.index("watcher reloads themes", k=3, filters=scope)
    assert search.as_of == date.today()  # no time named: nothing to anchor


def test_filters_narrow_the_results(search: MemorySearch) -> None:
    summaries = search.index("themes crash", k=10, filters=Filters(project=PROJECT, kind=("summary",)))
    assert summaries and {r.kind for r in summaries} == {"summary"}
    high = search.index("themes", k=10, filters=Filters(project=PROJECT, priority=("high",)))
    assert high and {r.priority for r in high} == {"high"}
    assert search.index("themes", k=10, filters=Filters(project="/nowhere")) == []
    late = search.index("themes", k=10, filters=Filters(since="2025-11-21T02:00:00Z", kind=("observation",)))
    assert late and all(r.time >= "2025-11-21T02:00:00Z" for r in late)


def test_timeline_and_detail_layers(search: MemorySearch) -> None:
    own_observations = Filters(project=PROJECT, kind=("observation",))
    anchor = search.index("file watcher reloads custom themes", k=1, filters=own_observations)[0]
    around = search.timeline(anchor.id, window=2)
    assert anchor.id in [r.id for r in around] and len(around) == 5
    assert [r.time for r in around] == sorted(r.time for r in around)
    by_query = search.timeline("file watcher reloads custom themes", window=1, filters=OWN)
    assert len(by_query) == 3
    [record] = search.detail([anchor.id])
    assert record.id == anchor.id and record.source_turn
    assert record.source_turn[0].role == "user" and "watcher" in (record.source_turn[0].content or "")


def test_briefing_stays_within_its_token_budget(search: MemorySearch) -> None:
    text = build_briefing(search, "I want to add a new colour theme to pi", token_budget=200, project=PROJECT).markdown
    assert text.startswith("## Memory from earlier sessions") and tokens(text) <= 200
    assert "id `" in text
    bigger = build_briefing(
        search, "I want to add a new colour theme to pi", token_budget=1000, project=PROJECT
    ).markdown
    assert tokens(bigger) <= 1000 and bigger.count("\n- ") > text.count("\n- ")
    # The weightier lines first, and no more than six low-priority ones (issue 31: no padding).
    assert "**high**" in bigger and bigger.count("**low**") <= 6
    assert "**low**" not in bigger or bigger.index("**high**") < bigger.index("**low**")
    assert build_briefing(search, "anything", token_budget=5).markdown == ""


def test_a_model_with_another_dimension_gets_its_own_field(indexed, local_runtime: Settings) -> None:  # noqa: ANN001
    settings, _ = indexed
    smaller = load_settings(**{**settings.model_dump(), "embed_dims": 128})
    meta, checks = _run(smaller)
    assert meta["es_dense_vector"]["dims"] == 128 and meta["embeddings"]["embedded"] == 91
    assert all(checks.values())
    with make_client(settings) as es:
        mapping = es.indices.get_mapping(index="memory-observations")["memory-observations"]["mappings"]["properties"]
        assert mapping["vector_128"]["dims"] == 128 and mapping["vector_384"]["dims"] == 384
        with embeddings_client(settings, dims=128) as small:
            rows = MemorySearch(es, small).index("rgb values in themes", k=3, mode="knn")
    assert rows and all(r.session_id == SESSION for r in rows)
    _run(settings)  # back to the full size for the other tests: re-embedded, the 384 field rewritten


def test_briefing_says_when_proposals_wait_for_review(search: MemorySearch, tmp_path) -> None:  # noqa: ANN001
    from memory_pipeline.reflect.workspace import project_dir

    folder = project_dir(tmp_path, "/Users/badlogic/workspaces/pi-mono")
    folder.mkdir(parents=True)
    (folder / "REVIEW.md").write_text("## Hard rules\n\n- [ ] p-20261130-001 Use rgb values in themes. (evidence: 1)\n")
    text = build_briefing(search, "new theme", token_budget=300, workspace=tmp_path).markdown
    assert "1 proposed memory rules wait for review" in text and tokens(text) <= 300
    assert "wait for review" not in build_briefing(search, "new theme", token_budget=300).markdown


def test_the_service_answers_what_the_search_answers(indexed, search: MemorySearch) -> None:  # noqa: ANN001
    from fastapi.testclient import TestClient

    from memory_pipeline.service.app import create_app

    settings, _ = indexed
    query = "colours should be rgb values, not indices"
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        found = client.get("/api/v1/search", params={"q": query, "k": 5}).json()
        # The rows a reader gets (`find`: restatements folded into their first), as the service sends them.
        assert [m["id"] for m in found["data"]] == [r.id for r in search.find(query, k=5)]
        anchor = found["data"][0]["id"]
        detail = client.get(f"/api/v1/memories/{anchor}").json()
        assert detail["id"] == anchor and detail["source_turn"][0]["role"] == "user"
        around = client.get("/api/v1/timeline", params={"anchor": anchor, "window": 2}).json()
        assert anchor in [m["id"] for m in around["data"]]
        brief = client.get("/api/v1/briefing", params={"prompt": "add a colour theme", "tokens": 300}).json()
        assert brief["markdown"].startswith("## Memory from earlier sessions")


def test_serve_runs_the_api_and_mcp_on_localhost(indexed, tmp_path) -> None:  # noqa: ANN001
    import time

    import anyio
    import httpx
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    from testkit.servers import memory_service

    settings, _ = indexed
    with memory_service(settings) as base:
        begin = time.perf_counter()
        rows = [httpx.get(f"{base}/api/v1/search", params={"q": "rgb values in themes"}, timeout=10) for _ in range(5)]
        per_call = (time.perf_counter() - begin) / 5
        assert all(r.status_code == 200 and r.json()["count"] > 0 for r in rows)
        assert per_call < 1.0  # warm: a query, not a process start (the CLI takes seconds)
        project = str(tmp_path / "notes-project")

        async def mcp_over_http() -> dict[str, object]:
            # Over HTTP every MCP call is a POST, so it carries the service's token.
            token = httpx2.AsyncClient(headers={"X-Memory-Token": settings.service_token()}, timeout=30)
            async with Client(streamable_http_client(f"{base}/mcp", http_client=token)) as client:
                tools = {t.name for t in (await client.list_tools()).tools}
                found = await client.call_tool(
                    "memory_search", {"query": "rgb values in themes", "k": 3, "project": PROJECT}
                )
                first = found.structured_content["data"][0]["id"]
                around = await client.call_tool("memory_timeline", {"anchor": first, "window": 2})
                shown = await client.call_tool("memory_show", {"ids": [first]})
                kept = await client.call_tool(
                    "memory_remember", {"text": "Deploys go through the staging cluster first", "project": project}
                )
                again = await client.call_tool(
                    "memory_remember", {"text": "Deploys go through the staging cluster first", "project": project}
                )
                brief = await client.call_tool("memory_briefing", {"prompt": "deploy the app", "project": project})
                missing = await client.call_tool("memory_show", {"ids": ["no-such-memory"]})
                return {
                    "tools": tools,
                    "found": len(found.structured_content["data"]),
                    "around": [m["id"] for m in around.structured_content["data"]],
                    "shown": shown.structured_content["data"][0]["source_turn"],
                    "kept": kept.structured_content,
                    "again": again.structured_content["id"],
                    "brief": brief.structured_content,
                    "missing": (missing.is_error, missing.content[0].text),
                }

        got = anyio.run(mcp_over_http)
        assert got["tools"] == {
            "memory_search", "memory_timeline", "memory_show", "memory_remember", "memory_briefing",
            "memory_undo_forget",
        }  # fmt: skip
        assert got["found"] == 3 and len(got["around"]) >= 2 and got["shown"]
        kept = got["kept"]
        assert kept["kind"] == "note" and kept["project"] == project and got["again"] == kept["id"]  # stored once
        assert got["brief"]["ids"] == [kept["id"]] and "staging cluster" in got["brief"]["markdown"]
        assert got["missing"][0] and got["missing"][1].endswith("no memory with id no-such-memory")
        # The note is searchable at once through the JSON API too, and only in its project.
        noted = httpx.get(f"{base}/api/v1/search", params={"q": "staging cluster", "project": project}).json()
        assert [m["id"] for m in noted["data"]] == [kept["id"]] and noted["data"][0]["bm25"] > 0
        # Without the token no write gets through, MCP included.
        assert httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 403


def test_briefing_fits_hooks_bm25_when_embeddings_are_down_empty_when_es_is(indexed, tmp_path) -> None:  # noqa: ANN001
    import subprocess
    import sys

    from testkit.ingest_helpers import cli_env

    settings, _ = indexed
    project = "/Users/badlogic/workspaces/pi-mono"
    command = [sys.executable, "-m", "memory_pipeline", "briefing", "add a colour theme", "--project", project]
    dead_embed = subprocess.run(
        command, env=cli_env(settings, EMBED_URL="http://127.0.0.1:9"), capture_output=True, text=True, timeout=120
    )
    assert dead_embed.returncode == 0 and dead_embed.stdout.startswith("## Memory from earlier sessions")
    assert "BM25 only" in dead_embed.stderr and dead_embed.stderr.count("\n") == 1
    dead_es = subprocess.run(
        command, env=cli_env(settings, ES_URL="http://127.0.0.1:9"), capture_output=True, text=True, timeout=120
    )
    assert dead_es.returncode == 0 and dead_es.stdout.strip() == ""  # no MEMORY.md for pi-mono here: nothing
    assert "Elasticsearch at http://127.0.0.1:9 is unreachable" in dead_es.stderr and dead_es.stderr.count("\n") == 1
    assert "memory-pipeline local up" in dead_es.stderr
    # --project defaults to the directory the hook runs in: another directory sees none of pi-mono's memories
    elsewhere = subprocess.run(
        command[:5], env=cli_env(settings), capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert elsewhere.returncode == 0 and elsewhere.stdout.strip() == ""


def test_the_cli_talks_to_people(indexed, search: MemorySearch, tmp_path) -> None:  # noqa: ANN001
    import json
    import subprocess
    import sys

    from testkit.ingest_helpers import cli_env

    settings, _ = indexed
    project = "/Users/badlogic/workspaces/pi-mono"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "memory_pipeline", *args]
        return subprocess.run(command, env=cli_env(settings), capture_output=True, text=True, timeout=180)

    found = cli("search", "rgb values in themes", "--project", project)
    lines = found.stdout.splitlines()
    assert found.returncode == 0 and lines[0].split()[0] in {
        r.id for r in search.index("rgb values in themes", filters=OWN)
    }
    assert "bm25" in lines[0] and "sim" in lines[0] and not lines[0].startswith("nothing matched")
    nothing = cli("search", "zqxj vlorp quantum banana", "--project", project)
    assert nothing.stdout.startswith("nothing matched 'zqxj vlorp quantum banana' well; the closest guesses:")
    assert len(nothing.stdout.splitlines()) <= 4  # not k rows of guesses
    as_json = json.loads(cli("search", "rgb values in themes", "--project", project, "--json").stdout)
    assert as_json[0]["id"] == lines[0].split()[0] and as_json[0]["bm25"] > 0

    # show: the memory and every message of its turn, tool calls shown; JSON the same records.
    [memory] = [r for r in search.index("rgb values in themes", k=5, filters=OWN) if r.kind == "observation"][:1]
    turn = search.detail([memory.id])[0].source_turn
    shown = cli("show", memory.id)
    assert shown.returncode == 0 and f"source turn: {len(turn)} message(s)" in shown.stdout
    assert sum(line.startswith("[") for line in shown.stdout.splitlines()) >= len(turn)
    calls = [c for m in turn for c in (m.tool_calls or [])]
    assert all(f"→ {c.name}(" in shown.stdout for c in calls)
    assert json.loads(cli("show", memory.id, "--json").stdout)[0]["source_turn"] == [m.model_dump() for m in turn]
    missing = cli("show", "no-such-memory")
    assert missing.returncode == 1 and missing.stderr.strip() == "Error: no memory with id no-such-memory"

    # remember: a note kept on purpose, found at once, once however often it is stored.
    note = json.loads(
        cli("remember", "Theme files are validated before load", "--project", str(tmp_path), "--json").stdout
    )
    again = json.loads(
        cli("remember", "Theme files are validated before load", "--project", str(tmp_path), "--json").stdout
    )
    assert note["kind"] == "note" and note["author"] == "person" and again["id"] == note["id"]
    listed = json.loads(
        cli("search", "validated theme files", "--project", str(tmp_path), "--kind", "note", "--json").stdout
    )
    assert [r["id"] for r in listed] == [note["id"]]


_WHICH_PATH = (
    "import sys\nfrom memory_pipeline.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "print('in-process' if 'elasticsearch' in sys.modules else 'service', file=sys.stderr)"
)


def test_the_cli_asks_the_running_service_and_prints_what_it_prints_alone(indexed) -> None:  # noqa: ANN001
    settings, _ = indexed
    commands = [
        ["search", "colours should be rgb values, not indices", "--k", "5"],
        ["briefing", "fix the theme colours", "--project", "/Users/badlogic/workspaces/pi-mono", "--json"],
    ]
    with memory_service(settings) as base:
        for command in commands:
            asked, alone = (
                subprocess.run(
                    [sys.executable, "-c", _WHICH_PATH, *command],
                    env=cli_env(settings, MEMORY_SERVICE_URL=url),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                for url in (base, f"http://127.0.0.1:{free_port()}")
            )
            assert asked.stderr.strip().endswith("service") and alone.stderr.strip().endswith("in-process")
            assert asked.stdout == alone.stdout and asked.stdout.strip(), (asked.stdout, alone.stdout)
        # A service over another memory (other settings) is not asked.
        other = isolated_settings(settings, settings.memory_pipeline_state_dir.parent / "other")
        other.sessions_dir.mkdir(parents=True, exist_ok=True)
        elsewhere = subprocess.run(
            [sys.executable, "-c", _WHICH_PATH, *commands[0]],
            env=cli_env(other, MEMORY_SERVICE_URL=base),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert elsewhere.stderr.strip().endswith("in-process"), elsewhere.stderr[-2000:]


def test_mcp_over_stdio_from_another_folder_is_scoped_to_its_project(indexed, tmp_path) -> None:  # noqa: ANN001
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    settings, _ = indexed
    project, elsewhere = "/Users/badlogic/workspaces/pi-mono", tmp_path / "another-folder"
    elsewhere.mkdir()

    def server(*flags: str) -> StdioServerParameters:  # the set-up line of docs/agents.md, from another folder
        argv = ["-m", "memory_pipeline", "mcp", *flags]
        return StdioServerParameters(command=sys.executable, args=argv, env=cli_env(settings), cwd=str(elsewhere))

    found: dict[str, list[str]] = {}

    async def session() -> None:
        for name, params in [("flag", server("--project", project)), ("no flag", server())]:
            async with Client(params) as client:
                answer = await client.call_tool("memory_search", {"query": "rgb values in the themes"})
                assert not answer.is_error, answer.content
                found[name] = [m["project"] for m in answer.structured_content["data"]]
                named = await client.call_tool("memory_search", {"query": "rgb values", "project": project})
                assert {m["project"] for m in named.structured_content["data"]} == {project}

    anyio.run(session)
    assert found["flag"] and set(found["flag"]) == {project}
    assert found["no flag"] == []  # its working directory is the folder it was started in: another project
    assert not any(elsewhere.iterdir())  # nothing written where it was started
