"""PID files: a record is only trusted while its process is the one we started."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import psutil

from memory_pipeline.local.process import (
    ProcessRecord,
    owned_process,
    port_in_use,
    read_record,
    start_process,
    start_ticks,
    stop_process,
)


def _record(pid: int, create_time: float, ticks: int | None = None) -> ProcessRecord:
    return ProcessRecord(
        name="chat",
        pid=pid,
        create_time=create_time,
        start_ticks=ticks,
        port=1,
        url="http://127.0.0.1:1",
        argv=["x"],
        log_path="/dev/null",
        started_at=datetime.now(UTC),
    )


def test_start_record_and_stop_a_process_group(tmp_path: Path) -> None:
    record = start_process(
        name="sleeper",
        argv=[sys.executable, "-c", "import time; time.sleep(60)"],
        env={},
        port=1,
        url="u",
        run_dir=tmp_path / "run",
        log_path=tmp_path / "s.log",
    )
    assert read_record(tmp_path / "run", "sleeper") == record
    process = owned_process(record)
    assert process is not None and process.pid == record.pid
    assert stop_process(record, timeout=10) is True
    assert not psutil.pid_exists(record.pid) or psutil.Process(record.pid).status() == psutil.STATUS_ZOMBIE
    assert owned_process(record) is None


def test_a_dead_pid_is_stale() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert owned_process(_record(dead.pid, 0.0)) is None


def test_a_reused_pid_is_not_ours_and_is_never_signalled() -> None:
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # Same PID, different start time: what a PID file looks like after the PID was reused.
        record = _record(stranger.pid, psutil.Process(stranger.pid).create_time() - 1000)
        assert owned_process(record) is None
        assert stop_process(record, timeout=1) is False
        assert stranger.poll() is None, "stop_process signalled a process that is not ours"
    finally:
        stranger.kill()
        stranger.wait()


def test_a_torn_pid_file_is_treated_as_absent(tmp_path: Path) -> None:
    (tmp_path / "chat.json").write_text('{"name": "chat", "pid": 12')
    assert read_record(tmp_path, "chat") is None


def test_port_in_use_sees_a_listener() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port_in_use(port)
    assert not port_in_use(port)


def test_a_clock_step_does_not_disown_a_process() -> None:
    """A wall clock stepped by NTP or a resume moves a process's `create_time` (computed from boot time in
    wall-clock terms): `down` would then leave our servers running and `up` find their ports taken. Its start
    in ticks since boot does not move; a reused PID still differs in it."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ticks = start_ticks(sleeper.pid)
        assert ticks is not None and ticks > 0
        stepped = psutil.Process(sleeper.pid).create_time() + 8.0  # as seen after an 8 s clock step
        assert owned_process(_record(sleeper.pid, stepped, ticks)) is not None
        assert owned_process(_record(sleeper.pid, stepped)) is None  # an older record: create_time decides
        assert owned_process(_record(sleeper.pid, stepped, ticks - 100)) is None  # another process's start
    finally:
        sleeper.kill()
        sleeper.wait()
