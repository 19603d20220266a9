"""One day in one project worked in four agents: a pi session, a Claude Code session, a Codex rollout and a Gemini
CLI chat, each in its agent's own folder, go through the pipeline's LLM-free assets on the real Elasticsearch
and embedding server; search finds each agent's turn, `agent` filters it everywhere, and the briefing names the
agent of each line. Running the day again writes nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from dagster import materialize

from memory_pipeline.partitions import RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.briefing import build_briefing
from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters
from memory_pipeline.service.models import FilterParams
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import delete_matching, make_client
from memory_pipeline.stores.embeddings import embeddings_client
from memory_pipeline.stores.indices import NOTES_INDEX, RAW_INDEX
from testkit.agent_loop import ingested_day
from testkit.ingest_helpers import RECALL_ASSETS, cli_env, copy_fixture, recall_history, reset_days
from testkit.paths import ROOT
from testkit.servers import free_port, memory_service

DAY = "2025-07-14"
AGENTS = ("pi", "claude-code", "codex", "gemini-cli")
NOTE = "The overseer repo deploys from the release branch only."
PROJECT = "/home/dev/overseer"
FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures"


def _moved(line: str) -> str:
    """One line of another agent's file, dated `DAY` and worked in `PROJECT` (times and folders only)."""
    value = json.loads(line)

    def visit(node: object) -> object:
        if isinstance(node, dict):
            return {k: _field(k, visit(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [visit(v) for v in node]
        return node

    return json.dumps(visit(value))


def _field(key: str, value: object) -> object:
    if key in ("timestamp", "startTime") and isinstance(value, str):
        return DAY + value[10:]
    if key == "cwd" and isinstance(value, str):
        return PROJECT
    if isinstance(value, str) and "<cwd>" in value:
        return re.sub(r"<cwd>[^<]*</cwd>", f"<cwd>{PROJECT}</cwd>", value)
    return value


def _place(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = [_moved(line) if line.strip().startswith("{") and line.strip().endswith("}") else line
             for line in source.read_text().splitlines()]  # fmt: skip
    target.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def every_agent(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("agents")
    settings = isolated_settings(local_runtime, root)
    pi = copy_fixture("handwritten-kuato.v3.jsonl", settings.sessions_dir / "--overseer--" / "s.jsonl",
                      "pi-overseer-1", DAY, PROJECT)  # fmt: skip
    # The same rule in all three agents, so one briefing has a line from each (a copy's prompt, edited).
    asked = "Create an overseer monitoring system that watches API endpoints and reports status"
    pi.write_text(pi.read_text().replace(asked, asked + "; install its packages with pnpm, never npm"))
    claude = next((FIXTURES / "claude-code" / "synthetic").glob("*.jsonl"))
    _place(claude, settings.claude_projects_dir / "-home-dev-overseer" / claude.name)
    codex = next((FIXTURES / "codex" / "synthetic").glob("rollout-2025-*.jsonl"))
    _place(codex, settings.codex_sessions_dir / "2025" / "07" / "14" / codex.name)
    gemini = next((FIXTURES / "gemini-cli" / "synthetic").rglob("session-2026-*.jsonl"))
    _place(gemini, settings.gemini_tmp_dir / "overseer" / "chats" / gemini.name)
    (settings.gemini_tmp_dir / "overseer" / ".project_root").write_text(PROJECT + "\n")
    days = recall_history(settings)
    noted = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "remember", NOTE, "--project", PROJECT],
        env=cli_env(settings, MEMORY_SERVICE_URL=f"http://127.0.0.1:{free_port()}"),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert noted.returncode == 0, noted.stderr[-2000:]
    with make_client(settings) as es, embeddings_client(settings) as embedder:
        es.indices.refresh(index="memory-*")
        yield settings, MemorySearch(es, embedder), es, days
        delete_matching(es, [NOTES_INDEX], {"term": {"project": PROJECT}})
    reset_days(settings, days)


def test_each_agents_session_is_indexed_under_its_agent(every_agent) -> None:  # noqa: ANN001
    settings, _, es, days = every_agent
    assert days == [DAY]
    found = es.search(
        index=RAW_INDEX,
        query={"term": {"project": PROJECT}},
        aggs={"agents": {"terms": {"field": "agent"}}},
        size=0,
    )
    agents = {b["key"]: b["doc_count"] for b in found["aggregations"]["agents"]["buckets"]}
    assert set(agents) == set(AGENTS)
    # Every conversation message of each file (counted in the unit tests; metadata rows are not documents).
    assert agents["codex"] == 5 and agents["claude-code"] == 17


@pytest.mark.parametrize(
    ("question", "agent"),
    [
        ("overseer monitoring system for API endpoints", "pi"),
        ("why does checkout fail with prices as strings", "claude-code"),
        ("why is the build slow, type check", "codex"),
        ("health checks time out, TIMEOUT_MS per endpoint", "gemini-cli"),
    ],
)
def test_search_finds_each_agents_turn_and_filters_by_agent(every_agent, question: str, agent: str) -> None:  # noqa: ANN001
    _, search, _, _ = every_agent
    rows = search.index(question, k=5, filters=Filters(project=PROJECT))
    assert rows and rows[0].agent == agent, [(r.agent, r.summary[:60]) for r in rows]
    only = search.index(question, k=5, filters=FilterParams(project=PROJECT, agent=agent).filters())
    assert only and {r.agent for r in only} == {agent}
    others = [a for a in AGENTS if a != agent]
    elsewhere = search.index(question, k=5, filters=Filters(project=PROJECT, agent=others[0]))
    assert all(r.agent == others[0] for r in elsewhere)


def test_the_briefing_names_each_lines_agent(every_agent) -> None:  # noqa: ANN001
    settings, search, _, _ = every_agent
    briefing = build_briefing(search, "Do we use pnpm or npm in this repo?", project=PROJECT, token_budget=800)
    lines = [line for line in briefing.markdown.splitlines() if line.startswith("- ")]
    named = {agent for line in lines for agent in AGENTS if f", {agent}, id `" in line}
    assert named == set(AGENTS), briefing.markdown
    # Every line says where it came from: a session's agent, or (a note) who stored it.
    assert all(re.search(r", (pi|claude-code|codex|gemini-cli|person), id `", line) for line in lines), (
        briefing.markdown
    )
    # One agent's briefing: its memories only (no agent named: there is one).
    codex = build_briefing(search, "Do we use pnpm or npm in this repo?", project=PROJECT, agent="codex")
    codex_lines = [line for line in codex.markdown.splitlines() if line.startswith("- ")]
    assert codex_lines and all("obs_0a1b2c3d" in line for line in codex_lines), codex.markdown


def test_running_the_day_again_writes_nothing(every_agent) -> None:  # noqa: ANN001
    settings, _, _, days = every_agent
    result = materialize(
        RECALL_ASSETS,
        resources=build_resources(settings),
        instance=instance_with_days(days),
        tags={RANGE_START: days[0], RANGE_END: days[-1]},
    )
    assert result.success
    files = result.asset_materializations_for_node("session_files")[0].metadata
    assert files["files_by_agent"].data == {"claude-code": 1, "codex": 1, "gemini-cli": 1, "pi": 1}
    assert files["changed_files"].value == 0
    raw = result.asset_materializations_for_node("memory_raw_index")[0].metadata
    assert (raw["written"].value, raw["deleted"].value, raw["manifest_writes"].value) == (0, 0, 0)
    assert raw["unchanged_sessions"].value == 4


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_the_claude_code_hook_prints_the_projects_briefing(every_agent, tmp_path: Path, event: str) -> None:  # noqa: ANN001
    """The README's hook line (`memory-pipeline hook claude-code`), run from another folder with the payload
    Claude Code sends: the briefing of the payload's project, as Claude Code takes context from a hook."""
    settings, _, _, _ = every_agent
    payload = {
        # A session of its own for each event: the first thing a session is given is the project's briefing
        # (what a later prompt of the same session gets is in test_recall_every_prompt.py).
        "session_id": f"5d0c3e1a-0000-4000-8000-00000000000{2 if event == 'SessionStart' else 3}",
        "transcript_path": str(settings.claude_projects_dir / "-home-dev-overseer" / "next.jsonl"),
        "cwd": PROJECT,
        "hook_event_name": event,
        "source": "startup",
        **({"prompt": "Do we use pnpm or npm in this repo?"} if event == "UserPromptSubmit" else {}),
    }
    env = cli_env(settings, MEMORY_SERVICE_URL=f"http://127.0.0.1:{free_port()}")  # in-process: no service
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "hook", "claude-code"],
        input=json.dumps(payload),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not any(tmp_path.iterdir())  # nothing written where it ran
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == event
    context = output["additionalContext"]
    assert context.startswith("## Memory from earlier sessions")
    assert NOTE in context  # the person's note is important: in every briefing of the project, prompt or not
    if event == "UserPromptSubmit":
        assert ", codex, id `" in context and ", claude-code, id `" in context


def test_mcp_from_another_folder_filters_by_agent(every_agent, tmp_path: Path) -> None:  # noqa: ANN001
    """The MCP set-up line of Claude Code and Codex (the same stdio server), started in another folder for the
    project: `agent` keeps one agent's memories."""
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    settings, _, _, _ = every_agent
    argv = ["-m", "memory_pipeline", "mcp", "--project", PROJECT]
    params = StdioServerParameters(command=sys.executable, args=argv, env=cli_env(settings), cwd=str(tmp_path))
    found: dict[str, set[str]] = {}

    async def session() -> None:
        async with Client(params) as client:
            for agent in ("", "codex", "claude-code", "gemini-cli"):
                answer = await client.call_tool("memory_search", {"query": "pnpm, never npm", "agent": agent})
                assert not answer.is_error, answer.content
                found[agent] = {m["agent"] for m in answer.structured_content["data"]}

    anyio.run(session)
    assert found[""] >= set(AGENTS)
    assert all(found[agent] == {agent} for agent in ("codex", "claude-code", "gemini-cli"))


def test_a_claude_code_turn_is_searchable_seconds_after_it_ends(every_agent, tmp_path: Path) -> None:  # noqa: ANN001
    """The hook's `Stop` event (after each Claude Code turn) tells the running service: it runs the
    transcript's day through the LLM-free assets at once, and search finds the turn, under its agent."""
    settings, _, _, _ = every_agent
    day = "2025-07-15"
    source = next((FIXTURES / "claude-code" / "synthetic").glob("*.jsonl"))
    transcript = settings.claude_projects_dir / "-home-dev-overseer" / "7e57a11e-0000-4000-8000-00000000f457.jsonl"
    transcript.write_text(
        "".join(
            _moved(line).replace(DAY, day).replace(source.stem, transcript.stem) + "\n"
            for line in source.read_text().splitlines()
            if line.strip().startswith("{") and line.strip().endswith("}")
        )
    )
    payload = {"session_id": transcript.stem, "transcript_path": str(transcript), "cwd": PROJECT,
               "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip
    try:
        with memory_service(settings) as base:
            before = time.time()
            done = subprocess.run(
                [sys.executable, "-m", "memory_pipeline", "hook", "claude-code"],
                input=json.dumps(payload),
                env=cli_env(settings, MEMORY_SERVICE_URL=base),
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0 and not done.stdout, done.stderr[-2000:]
            ingested = ingested_day(base, day, after=before)
            assert ingested["state"] == "done" and str(transcript) in ingested["files"], ingested
            found = httpx.get(
                f"{base}/api/v1/search",
                params={"q": "prices arrive as strings", "project": PROJECT, "agent": "claude-code", "since": day},
            ).json()["data"]
            assert found and found[0]["session_id"] == transcript.stem and found[0]["agent"] == "claude-code"
    finally:
        reset_days(settings, [day])
