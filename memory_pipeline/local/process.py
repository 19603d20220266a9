"""Starting, finding and stopping the local servers, by the PID files we wrote.

A PID alone is not proof a process is ours: PIDs are reused. Every record keeps
the process's start time too, and a record whose PID now belongs to another
process (or to none) is stale: it is removed, and that process is never signalled.
"""

from __future__ import annotations

import os
import pwd
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import psutil
from pydantic import BaseModel


class RuntimeProblem(RuntimeError):
    """A missing prerequisite or a conflict, explained in one line with what to do."""


class ProcessRecord(BaseModel):
    """What `local up` remembers of a server it started (state/run/<name>.json)."""

    name: str
    pid: int
    create_time: float
    # Clock ticks from boot to the process's start (/proc/<pid>/stat): unlike `create_time`, which is wall-clock
    # time, it does not move when the clock is stepped (NTP, a resume from suspend). None on records of older
    # versions and where /proc is not there; `create_time` decides then.
    start_ticks: int | None = None
    port: int
    url: str
    argv: list[str]
    log_path: str
    started_at: datetime


def _record_path(run_dir: Path, name: str) -> Path:
    return run_dir / f"{name}.json"


def read_record(run_dir: Path, name: str) -> ProcessRecord | None:
    path = _record_path(run_dir, name)
    if not path.exists():
        return None
    try:
        return ProcessRecord.model_validate_json(path.read_text())
    except ValueError:
        # A torn or hand-edited file is as good as none: nothing can be proven ours.
        return None


def remove_record(run_dir: Path, name: str) -> None:
    _record_path(run_dir, name).unlink(missing_ok=True)


def start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux); None when it cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces and parentheses: the fields after its last ")" count.
    fields = stat.rsplit(")", 1)[-1].split()
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def owned_process(record: ProcessRecord) -> psutil.Process | None:
    """The live process a record describes, or None if it is gone or the PID was reused."""
    try:
        process = psutil.Process(record.pid)
        ticks = start_ticks(record.pid) if record.start_ticks is not None else None
        if ticks is not None:
            same = ticks == record.start_ticks
        else:
            same = abs(process.create_time() - record.create_time) <= 0.05
        if not same or process.status() == psutil.STATUS_ZOMBIE:
            return None
        return process
    except psutil.Error:
        return None


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def start_process(
    *,
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    port: int,
    url: str,
    run_dir: Path,
    log_path: Path,
    cwd: Path | None = None,
    user: str | None = None,
) -> ProcessRecord:
    """Start `argv` in its own session (so `down` can stop its whole group) and record it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    identity: dict[str, object] = {}
    if user is not None:
        entry = pwd.getpwnam(user)
        # extra_groups=[] drops root's supplementary groups as well.
        identity = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    with log_path.open("ab") as log:
        log.write(f"\n--- {datetime.now(UTC).isoformat()} starting: {' '.join(argv)}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **identity,  # type: ignore[arg-type]
        )
    record = ProcessRecord(
        name=name,
        pid=popen.pid,
        create_time=psutil.Process(popen.pid).create_time(),
        start_ticks=start_ticks(popen.pid),
        port=port,
        url=url,
        argv=list(argv),
        log_path=str(log_path),
        started_at=datetime.now(UTC),
    )
    _record_path(run_dir, name).write_text(record.model_dump_json(indent=2))
    return record


def stop_process(record: ProcessRecord, timeout: float = 30.0) -> bool:
    """SIGTERM the record's process group, SIGKILL what is left after `timeout`; True if it was running."""
    process = owned_process(record)
    if process is None:
        return False
    members = [process, *process.children(recursive=True)]
    try:
        os.killpg(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    _, alive = psutil.wait_procs(members, timeout=timeout)
    for leftover in alive:
        try:
            leftover.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)
    return True


def wait_until(
    predicate,
    *,
    timeout: float,
    interval: float = 0.5,
    alive: psutil.Process | None = None,
    what: str,
    log_path: Path | None = None,
) -> None:
    """Poll `predicate` until true; fail early, with the log's tail, if `alive` dies."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if alive is not None and (not alive.is_running() or alive.status() == psutil.STATUS_ZOMBIE):
            raise RuntimeProblem(f"{what} exited during start-up{_log_tail(log_path)}")
        time.sleep(interval)
    raise RuntimeProblem(f"{what} was not ready after {timeout:.0f}s{_log_tail(log_path)}")


def _log_tail(log_path: Path | None, lines: int = 15) -> str:
    if log_path is None or not log_path.exists():
        return ""
    tail = log_path.read_text(errors="replace").splitlines()[-lines:]
    return f"; see {log_path}:\n" + "\n".join("    " + line for line in tail)
