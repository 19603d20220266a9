"""An outage is one line of log: `memory-pipeline mcp` (as Claude Code and Codex start it, over stdio) with
Elasticsearch unreachable answers each of 4 searches with which server is down and how to start it, and writes
one warning to stderr, not the 3,052 lines of retries and tracebacks it wrote before (issue 49)."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memory_pipeline.settings import Settings, isolated_settings
from testkit.ingest_helpers import cli_env

CHECKOUT = Path(__file__).resolve().parents[2]


def test_mcp_over_stdio_logs_an_outage_once(local_runtime: Settings, tmp_path: Path) -> None:
    settings = isolated_settings(local_runtime, tmp_path)
    settings.sessions_dir.mkdir(parents=True)
    down = {"ES_URL": "http://127.0.0.1:9", "ES_USERNAME": "x", "ES_PASSWORD": "y"}  # nothing listens on port 9
    env = {k: v for k, v in cli_env(settings, **down).items() if k != "ES_API_KEY"}
    command = ["run", "--project", str(CHECKOUT), "memory-pipeline", "mcp", "--project", "/work/outage"]
    errors = tmp_path / "stderr.txt"
    answers: list[str] = []

    async def calls() -> None:
        parameters = StdioServerParameters(command="uv", args=command, env=env)
        with errors.open("w") as errlog:
            async with stdio_client(parameters, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for _ in range(4):
                    result = await session.call_tool("memory_search", {"query": "pnpm"})
                    assert result.is_error
                    answers.append(result.content[0].text)  # type: ignore[union-attr]

    anyio.run(calls)
    assert len(answers) == 4
    assert all("127.0.0.1:9 is unreachable" in a and "memory-pipeline local up" in a for a in answers), answers
    logged = errors.read_text()
    assert logged.count("WARNING") == 1 and "Traceback" not in logged, logged
    assert len(logged.splitlines()) < 20
