"""Turn end → found by search, through the fast path: how long after pi's extension tells the service a turn
ended does `search` find that turn, on the embedded default (local Elasticsearch and embedding server).

uv run python -m bench fresh              # 50 turns
uv run python -m bench fresh --turns=100

Then, over the memory those turns made, the command line's latency (section `cli`): `search` and `briefing` as
a person or a hook runs them, with the service up (the command asks it) and without (in-process), and `--help`;
each a new process, as in use.

Each turn is appended to a pi session file as pi writes it (a user message with a word found nowhere else, the
assistant's reply); a new session every ten turns, all in one project and day. The clock starts when the turn
is on disk and `POST /api/v1/ingest` is sent (what the extension does at `turn_end`) and stops when
`GET /api/v1/search` for that word returns the turn. No chat model is involved: the fast path runs the
LLM-free assets. The batch path's figure beside it is what the sensor waits by design before its run starts
(debounce plus tick), with the same run after it.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import httpx

from bench.results_file import table, write_section
from memory_pipeline.resources import SessionsResource
from memory_pipeline.settings import isolated_settings, load_settings
from testkit.ingest_helpers import cli_env

WORK = Path(__file__).with_name(".work") / "fresh"
PROJECT = "/work/fresh-bench"
SENSOR_TICK = 30  # the sensor's minimum interval (sensors.py)


def _entry(kind: str, parent: str | None, **fields: object) -> tuple[str, str]:
    entry_id = uuid.uuid4().hex[:8]
    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return entry_id, json.dumps({"type": kind, "id": entry_id, "parentId": parent, "timestamp": now, **fields})


def _turn(path: Path, parent: str | None, word: str, index: int) -> str:
    """Append one turn (the user's message, the assistant's reply) to the session file; the last entry id."""
    stamp = int(time.time() * 1000)
    asked = f"Turn {index}: why does the {word} job fail on the staging cluster?"
    user_id, user = _entry(
        "message", parent, message={"role": "user", "content": [{"type": "text", "text": asked}], "timestamp": stamp}
    )
    reply = {
        "role": "assistant",
        "content": [{"type": "text", "text": f"The {word} job fails because its queue name changed."}],
        "model": "bench",
        "stopReason": "stop",
        "timestamp": stamp + 1,
    }
    reply_id, answer = _entry("message", user_id, message=reply)
    with path.open("a") as handle:
        handle.write(user + "\n" + answer + "\n")
    return reply_id


def main(flags: list[str]) -> None:
    turns = next((int(f.split("=", 1)[1]) for f in flags if f.startswith("--turns=")), 50)
    from testkit.servers import memory_service

    shutil.rmtree(WORK, ignore_errors=True)
    settings = isolated_settings(load_settings(), WORK, sessions_dir=WORK / "sessions")
    folder = settings.sessions_dir / "--work-fresh-bench--"
    folder.mkdir(parents=True)
    token = {"X-Memory-Token": settings.service_token()}
    seconds: list[float] = []
    runs: list[float] = []
    with memory_service(settings) as base, httpx.Client(timeout=30) as http:
        path, parent = folder / "none.jsonl", None
        for index in range(turns):
            if index % 10 == 0:  # a new session: its header first
                session = str(uuid.uuid4())
                path = folder / f"{session}.jsonl"
                now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
                header = {"type": "session", "version": 3, "id": session, "timestamp": now, "cwd": PROJECT}
                path.write_text(json.dumps(header) + "\n")
                parent = None
            word = f"zq{uuid.uuid4().hex[:10]}"
            parent = _turn(path, parent, word, index)
            began = time.perf_counter()
            accepted = http.post(f"{base}/api/v1/ingest", json={"session_file": str(path)}, headers=token)
            accepted.raise_for_status()
            while True:
                found = http.get(f"{base}/api/v1/search", params={"q": word, "project": PROJECT, "k": 3}).json()
                if any(word in m["summary"] for m in found["data"]):
                    break
                if time.perf_counter() - began > 300:
                    raise RuntimeError(f"turn {index} not found in 300 s: {http.get(f'{base}/api/v1/ingest').text}")
                time.sleep(0.1)
            seconds.append(time.perf_counter() - began)
            days = http.get(f"{base}/api/v1/ingest").json()
            runs.append(max(d["seconds"] or 0 for d in days))
            print(f"turn {index}: found after {seconds[-1]:.1f} s", flush=True)
        _cli_latency(settings, base)
    seconds.sort()
    p50, p95 = statistics.median(seconds), seconds[max(0, int(0.95 * len(seconds)) - 1)]
    debounce = SessionsResource.model_fields["debounce_seconds"].default
    rows = [
        ["fast path (turn end → found by search)", f"{p50:.1f}", f"{p95:.1f}", f"{max(seconds):.1f}"],
        ["of which the day's LLM-free run", f"{statistics.median(runs):.1f}", "", ""],
        ["batch path, before its run starts (sensor debounce + tick, by design)", f"{debounce}", "", ""],
        ["batch path, floor (the wait above + the same run)", f"{debounce + statistics.median(runs):.1f}", "",
         f"{debounce + SENSOR_TICK + max(runs):.1f}"],
    ]  # fmt: skip
    text = (
        f"{turns} turns appended to pi session files (10 per session, one project and day), each posted to "
        "`POST /api/v1/ingest` as the extension does at `turn_end`, then searched for a word only it holds, on the "
        "embedded default (no chat model: the fast path runs the LLM-free assets). Seconds.\n\n"
        + table(["path", "p50 s", "p95 s", "max s"], rows)
        + "\n\nGoal: p95 < 15 s. The batch path's LLM run (about 10 s a turn here) comes after its wait in any case;"
        " the fast path does not wait for it."
    )
    write_section("fresh", f"uv run python -m bench fresh --turns={turns}", text)
    print(text)


def _timed(argv: list[str], env: dict[str, str], times: int) -> tuple[float, float]:
    took = []
    for _ in range(times):
        began = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True, timeout=300)
        took.append(time.perf_counter() - began)
    took.sort()
    return statistics.median(took), took[max(0, int(0.95 * len(took)) - 1)]


def _cli_latency(settings, base: str) -> None:  # noqa: ANN001
    from testkit.servers import free_port

    cli = [sys.executable, "-m", "memory_pipeline"]
    up = cli_env(settings, MEMORY_SERVICE_URL=base)
    down = cli_env(settings, MEMORY_SERVICE_URL=f"http://127.0.0.1:{free_port()}")
    search = [*cli, "search", "why does the job fail on staging", "--project", PROJECT]
    briefing = [*cli, "briefing", "fix the staging job", "--project", PROJECT]
    rows = []
    for name, argv in (("search", search), ("briefing", briefing)):
        fast, slow = _timed(argv, up, 20), _timed(argv, down, 5)
        rows.append([f"`{name}`, service up", f"{fast[0]:.2f}", f"{fast[1]:.2f}"])
        rows.append([f"`{name}`, in-process (no service)", f"{slow[0]:.2f}", f"{slow[1]:.2f}"])
    shown = _timed([*cli, "--help"], up, 20)
    rows.append(["`--help`", f"{shown[0]:.2f}", f"{shown[1]:.2f}"])
    text = (
        "Each a new `python -m memory_pipeline` process over the memory the `fresh` run made (50 turns), as a "
        "person or a hook runs it; `search` and `briefing` ask the running service when it serves the same memory "
        "(its /health names it), else search in-process. Seconds, 20 runs each (5 in-process).\n\n"
        + table(["command", "p50 s", "p95 s"], rows)
        + "\n\nGoals: `search` and `briefing` < 1 s with the service up; `--help` < 0.5 s."
    )
    write_section("cli", "uv run python -m bench fresh", text)
    print(text)
