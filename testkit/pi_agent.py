"""The real pi coding agent for e2e tests: installed from npm with its lock file (Node 22 comes as an npm
package), given the project's extension, and driven by the local chat llama-server as its model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_pipeline.settings import Settings
from testkit.paths import ROOT

PROJECT_DIR = ROOT
EXTENSION = PROJECT_DIR / "pi-extension"
# Only the harness's nudge: the first model request is prefilled with the opening of a memory tool's call.
FIRST_TOOL_CALL = Path(__file__).parent / "pi" / "first_tool_call.ts"
MEMORY_TOOLS = "memory_search,memory_timeline,memory_show,memory_remember"
# The 0.5B model now and then writes a tool call llama-server cannot parse, or rambles until its output limit
# cuts the call short: pi is run again, a new session each time, at most ATTEMPTS times.
MALFORMED = "does not match the expected"
TRUNCATED_CALL = "hit the output token limit"
ATTEMPTS = 3


def ensure_pi() -> Path:
    """The folder of `pi` and `node` (22), from `npm ci` in pi-extension/ the first time (about 30 s)."""
    bin_dir = EXTENSION / "node_modules" / ".bin"
    if not (bin_dir / "pi").exists() or not (bin_dir / "node").exists():
        npm = shutil.which("npm")
        assert npm, "npm is needed to install pi (apt install npm, or Node.js from nodejs.org)"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=EXTENSION, check=True, capture_output=True)
    return bin_dir


@dataclass
class PiAgent:
    """pi with its own agent folder (models, sessions) whose model is the local chat server."""

    home: Path
    settings: Settings
    service_url: str
    # A turn's output cap, which pi also gives its own compaction summary: short turns keep the tests quick.
    max_tokens: int = 300

    def __post_init__(self) -> None:
        self.bin_dir = ensure_pi()
        self.home.mkdir(parents=True, exist_ok=True)
        self.write_models()

    def write_models(self) -> None:
        """pi's models.json: the local chat server as its one model, with this agent's output cap."""
        model = {
            "id": "local-chat",
            "name": "local-chat",
            "contextWindow": self.settings.local_llama_ctx,
            "maxTokens": self.max_tokens,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        }
        provider = {
            "baseUrl": f"{self.settings.chat_url}/v1",
            "api": "openai-completions",
            "apiKey": self.settings.api_key("chat"),
            "authHeader": True,
            "models": [model],
        }
        (self.home / "models.json").write_text(json.dumps({"providers": {"local": provider}}))

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    def _argv_env(
        self, nudge: str | None, service_url: str, tools: str = MEMORY_TOOLS
    ) -> tuple[list[str], dict[str, str]]:
        argv = [str(self.bin_dir / "pi"), "-ne", "-e", str(EXTENSION / "index.ts")]
        if nudge:
            argv += ["-e", str(FIRST_TOOL_CALL)]
        argv += ["--tools", tools, "--model", "local/local-chat"]
        env = os.environ | {
            "PATH": f"{self.bin_dir}:{os.environ.get('PATH', '')}",
            "PI_CODING_AGENT_DIR": str(self.home),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "MEMORY_SERVICE_URL": service_url or self.service_url,
            "MEMORY_TEST_FIRST_TOOL": nudge or "",
            "MEMORY_SERVICE_TOKEN_FILE": str(self.settings.service_token_path),
        }
        return argv, env

    def run(
        self,
        cwd: Path,
        prompt: str,
        *,
        nudge: str | None = None,
        continue_session: bool = False,
        service_url: str = "",
        tools: str = MEMORY_TOOLS,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """One `pi -p` in `cwd` with the memory extension and `tools` (and the harness's nudge to call the tool
        `nudge`)."""
        cwd.mkdir(parents=True, exist_ok=True)
        argv, base_env = self._argv_env(nudge, service_url, tools)
        argv += ["-c"] if continue_session else []
        for _ in range(ATTEMPTS):
            done = subprocess.run(
                [*argv, "-p", prompt], cwd=cwd, env=base_env | (env or {}), capture_output=True, text=True, timeout=600
            )
            if MALFORMED not in done.stderr and not (nudge and self._cut_call(cwd, nudge)):
                return done
        return done

    def _cut_call(self, cwd: Path, tool: str) -> bool:
        """The nudged call ran out of output tokens before its arguments were complete (the model rambled)."""
        results = [
            e["message"] for e in entries(self.last_session(cwd)) if e.get("message", {}).get("toolName") == tool
        ]
        return bool(results) and all(TRUNCATED_CALL in str(r.get("content")) for r in results)

    def command(self, cwd: Path, line: str, timeout: float = 120) -> str:
        """What pi shows the person for a slash command (`/memory …`): the extension's notice, read through
        pi's RPC mode (no model call is involved)."""
        event = self.rpc(
            cwd,
            {"id": "c1", "type": "prompt", "message": line},
            lambda e: e.get("type") == "extension_ui_request" and e.get("method") == "notify",
            timeout=timeout,
            session=False,
        )
        return str(event["message"])

    def rpc(
        self,
        cwd: Path,
        request: dict[str, Any],
        until: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 120,
        session: bool = True,
        service_url: str = "",
    ) -> dict[str, Any]:
        """The first event `until` accepts after sending `request` to pi in RPC mode in `cwd` (continuing its
        last session when `session`, else with none)."""
        cwd.mkdir(parents=True, exist_ok=True)
        argv, env = self._argv_env(None, service_url)
        process = subprocess.Popen(
            [*argv, "--mode", "rpc", *(["-c"] if session else ["--no-session"])],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdin and process.stdout
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                event = json.loads(process.stdout.readline() or "null")
                assert event is not None, "pi exited before it answered"
                if until(event):
                    return event
            raise AssertionError(f"no answer to {request} in {timeout} s")
        finally:
            process.kill()
            process.wait()

    def last_session(self, cwd: Path) -> Path:
        """The session file of the last run in `cwd`."""
        return self.session_files(cwd)[-1]

    def session_files(self, cwd: Path) -> list[Path]:
        """The session files pi wrote for `cwd`, oldest first."""
        files = [p for p in self.sessions_dir.glob("*/*.jsonl") if session_of(p).get("cwd") == str(cwd)]
        return sorted(files, key=lambda p: p.name)


def finished(result: subprocess.CompletedProcess[str]) -> bool:
    """pi ran the prompt to its end: exit 0, or exit 1 only because the small model hit its output limit (pi
    reports that as a failure; the session, which is what the tests read, is complete)."""
    truncated = "reached its output token limit" in result.stderr
    return result.returncode == 0 or (result.returncode == 1 and truncated)


def entries(session_file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session_file.read_text().splitlines() if line.strip()]


def session_of(session_file: Path) -> dict[str, Any]:
    return entries(session_file)[0]
