"""Always on, end to end: `memory-pipeline up` starts the memory service, Dagster's daemon and its UI in the
background under a supervisor and returns; a part that dies is started again; `down` leaves no process of
ours; nothing is written in the folder the commands are run from.

The servers are the test session's (`up --no-local`): the parts run for real over them, in the test's own state.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from memory_pipeline.settings import Settings, isolated_settings
from testkit.ingest_helpers import cli_env
from testkit.servers import free_port


def _cli(args: list[str], settings: Settings, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_pipeline", *args],
        cwd=cwd,
        env=cli_env(settings),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _status(settings: Settings, cwd: Path) -> dict[str, dict]:
    done = _cli(["status", "--json"], settings, cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return {row["name"]: row for row in json.loads(done.stdout)}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_up_keeps_every_part_running_and_down_stops_exactly_them(local_runtime: Settings, tmp_path: Path) -> None:
    settings = isolated_settings(local_runtime, tmp_path / "home", sessions_dir=tmp_path / "sessions")
    settings.sessions_dir.mkdir(parents=True)
    here = tmp_path / "a-project"  # the folder a person runs the commands from
    here.mkdir()
    port, ui_port = free_port(), free_port()
    started = _cli(["up", "--no-local", "--port", str(port), "--ui-port", str(ui_port), "--json"], settings, here)
    assert started.returncode == 0, started.stderr[-3000:]
    rows = {row["name"]: row for row in json.loads(started.stdout)}
    try:
        for name in ("supervisor", "service", "dagster-daemon", "dagster-ui"):
            assert rows[name]["state"] == "running" and rows[name]["pid"], rows[name]
        assert rows["service"]["health"] == "ok" and rows["dagster-ui"]["health"] == "ok"
        assert rows["service"]["url"] == f"http://127.0.0.1:{port}" and rows["service"]["rss_mb"] > 0
        assert httpx.get(f"http://127.0.0.1:{port}/health").json()["memory"] == settings.memory_id
        assert httpx.get(f"http://127.0.0.1:{ui_port}/server_info").status_code == 200
        # Running `up` again changes nothing.
        again = _cli(["up", "--no-local", "--port", str(port), "--ui-port", str(ui_port), "--json"], settings, here)
        assert (
            again.returncode == 0
            and {r["name"]: r["pid"] for r in json.loads(again.stdout)}["service"] == (rows["service"]["pid"])
        )

        # A part that dies is started again, and the supervisor's log says so.
        os.kill(rows["service"]["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            now = _status(settings, here)["service"]
            if now["state"] == "running" and now["pid"] != rows["service"]["pid"] and now["health"] == "ok":
                break
            time.sleep(1)
        else:
            raise AssertionError(f"the service was not restarted: {_status(settings, here)['service']}")
        log = (settings.memory_pipeline_state_dir / "logs" / "supervisor.log").read_text()
        assert f"service: had stopped (pid {rows['service']['pid']}); restarted" in log
    finally:
        # Ours: the supervisor and the parts with every process they started (the servers are the session's:
        # this state folder has no record of them, so they have no pid here and `down` leaves them alone).
        ours = [psutil.Process(r["pid"]) for r in _status(settings, here).values() if r["pid"]]
        family = {p.pid for process in ours for p in [process, *process.children(recursive=True)]}
        stopped = _cli(["down", "--json"], settings, here, timeout=180)
    assert stopped.returncode == 0, stopped.stderr
    assert "supervisor" in json.loads(stopped.stdout)["stopped"]
    assert family and not [pid for pid in family if _alive(pid)], "down left processes of ours running"
    assert not any(here.iterdir()), sorted(p.name for p in here.iterdir())  # nothing in the folder it ran from
    assert all(r["state"] == "stopped" for name, r in _status(settings, here).items() if name in rows)
