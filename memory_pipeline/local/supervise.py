"""Always on: the parts of the memory that are not servers (the memory service, Dagster's daemon and its UI),
kept running in the background by one supervisor process, as `memory-pipeline up` starts them; and the local
servers `up` started (Elasticsearch, chat, embed), which it watches too (`servers`) and starts again when one
died (its record left behind, its process gone: a record `down` removes is never brought back).

The supervisor starts each part in its own session (recorded in `<state>/run/<part>.json`, like the servers),
looks at them every `CHECK_SECONDS`, and starts a part that died again (logged in `<state>/logs/supervisor.log`
with its exit, at most `RESTARTS` times in `RESTART_WINDOW` seconds, then left down and said so). SIGTERM stops
every part, then the supervisor. `down` stops the supervisor and whatever part record is left, and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from memory_pipeline.local.process import (
    ProcessRecord,
    RuntimeProblem,
    owned_process,
    read_record,
    remove_record,
    start_process,
    stop_process,
    wait_until,
)
from memory_pipeline.local.runtime import LocalRuntime, ServiceStatus, tree_rss
from memory_pipeline.ports import SERVICE_PORT, UI_PORT
from memory_pipeline.settings import Settings

SUPERVISOR = "supervisor"
CHECK_SECONDS = 2.0
RESTARTS, RESTART_WINDOW = 5, 300.0
PROJECT_DIR = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Part:
    """A process of the memory that is not a server: how to start it and how to see that it answers."""

    name: str
    argv: list[str]
    port: int  # 0: none (the daemon)
    health_url: str  # "" when it has no port: alive is healthy

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}" if self.port else "-"

    def healthy(self) -> bool:
        if not self.health_url:
            return True
        try:
            return httpx.get(self.health_url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


def parts(service_port: int, ui_port: int) -> list[Part]:
    """The memory service, Dagster's daemon (sensor, schedules, run queue) and its UI, on 127.0.0.1."""
    python, workspace = sys.executable, str(PROJECT_DIR / "workspace.yaml")
    return [
        Part(
            "service",
            [python, "-m", "memory_pipeline", "serve", "--port", str(service_port)],
            service_port,
            f"http://127.0.0.1:{service_port}/health",
        ),
        Part("dagster-daemon", [python, "-m", "dagster._daemon", "run", "-w", workspace], 0, ""),
        Part(
            "dagster-ui",
            [python, "-m", "dagster_webserver", "-w", workspace, "-h", "127.0.0.1", "-p", str(ui_port)],
            ui_port,
            f"http://127.0.0.1:{ui_port}/server_info",
        ),
    ]


def start_part(part: Part, settings: Settings, env: Mapping[str, str]) -> ProcessRecord:
    logs = settings.memory_pipeline_state_dir / "logs"
    return start_process(
        name=part.name,
        argv=part.argv,
        env=env,
        port=part.port,
        url=part.url,
        run_dir=settings.memory_pipeline_state_dir / "run",
        log_path=logs / f"{part.name}.log",
        cwd=PROJECT_DIR,  # never the folder the command was run from
    )


def supervise(
    settings: Settings,
    env: Mapping[str, str],
    kept: list[Part],
    log: Callable[[str], None],
    check_seconds: float = CHECK_SECONDS,
    stop_after: Callable[[], bool] = lambda: False,
    servers: bool = False,
) -> None:
    """Start every part of `kept` and keep it running until SIGTERM (or `stop_after`), then stop them all; with
    `servers`, start again a local server that died meanwhile (not stopped by the supervisor after: `down`
    stops the servers)."""
    run_dir = settings.memory_pipeline_state_dir / "run"
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: stopping.append(signum))
    restarts: dict[str, list[float]] = {}
    given_up: set[str] = set()
    for part in kept:
        record = read_record(run_dir, part.name)
        if record is None or owned_process(record) is None:
            record = start_part(part, settings, env)
            log(f"{part.name}: started (pid {record.pid})")
    watch = ServerWatch(LocalRuntime(settings, progress=log), log, restarts, given_up) if servers else None
    try:
        while not stopping and not stop_after():
            time.sleep(check_seconds)
            if watch is not None:
                watch.check()
            for part in kept:
                record = read_record(run_dir, part.name)
                if part.name in given_up or (record is not None and owned_process(record) is not None):
                    continue
                recent = [t for t in restarts.get(part.name, []) if time.monotonic() - t < RESTART_WINDOW]
                if len(recent) >= RESTARTS:
                    given_up.add(part.name)
                    log(f"{part.name}: died {RESTARTS} times in {RESTART_WINDOW:.0f} s; left down (see its log)")
                    continue
                restarts[part.name] = [*recent, time.monotonic()]
                was = f"pid {record.pid}" if record else "no record"
                record = start_part(part, settings, env)
                log(f"{part.name}: had stopped ({was}); restarted (pid {record.pid})")
    finally:
        stop_parts(settings, log, [p.name for p in kept])


class ServerWatch:
    """The local servers `up` recorded, looked at on every check: one whose process is gone on two checks in a
    row (not one `down` is stopping: it removes the record right after the process) is started again, within
    the same budget of restarts as the parts."""

    def __init__(
        self, runtime: LocalRuntime, log: Callable[[str], None], restarts: dict[str, list[float]], given_up: set[str]
    ) -> None:
        self.runtime, self.log, self.restarts, self.given_up = runtime, log, restarts, given_up
        self.seen_dead: set[str] = set()

    def check(self) -> list[str]:
        """The servers started again now."""
        dead = {
            service.name: service
            for service in self.runtime.services(recorded=True)
            if self.runtime.settings.is_local(service.kind)
            and (record := read_record(self.runtime.run_dir, service.name)) is not None
            and owned_process(record) is None
        }
        confirmed, self.seen_dead = [s for name, s in dead.items() if name in self.seen_dead], set(dead)
        revived = []
        for service in confirmed:
            if service.name in self.given_up:
                continue
            recent = [t for t in self.restarts.get(service.name, []) if time.monotonic() - t < RESTART_WINDOW]
            if len(recent) >= RESTARTS:
                self.given_up.add(service.name)
                self.log(f"{service.name}: died {RESTARTS} times in {RESTART_WINDOW:.0f} s; left down (see its log)")
                continue
            self.restarts[service.name] = [*recent, time.monotonic()]
            self.log(f"{service.name}: had stopped; starting it again")
            try:
                self.runtime.up([service.kind])
            except (RuntimeProblem, OSError) as exc:
                self.log(f"{service.name}: could not be started again: {exc}")
                continue
            self.seen_dead.discard(service.name)
            revived.append(service.name)
            self.log(f"{service.name}: restarted")
        return revived


def stop_parts(settings: Settings, log: Callable[[str], None], names: list[str] | None = None) -> list[str]:
    """Stop the parts (`names`, by default the memory's) that have a record, and only those; the names of those
    that were running."""
    run_dir, stopped = settings.memory_pipeline_state_dir / "run", []
    for name in reversed(names or [p.name for p in parts(0, 0)]):
        record = read_record(run_dir, name)
        if record is None:
            continue
        if stop_process(record):
            stopped.append(name)
            log(f"{name}: stopped (pid {record.pid})")
        remove_record(run_dir, name)
    return stopped


def timestamped(path: Path) -> Callable[[str], None]:
    """A log function appending to `path`, one dated line each."""

    def write(message: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            handle.write(f"{datetime.now(UTC).isoformat(timespec='seconds')} {message}\n")

    return write


def start_all(
    settings: Settings,
    env: Mapping[str, str],
    service_port: int,
    ui_port: int,
    progress: Callable[[str], None],
    servers: bool = False,
) -> None:
    """The supervisor started in the background (when it is not running already), watching the local servers
    too with `servers`, and every part waited for until it answers: what `memory-pipeline up` does after the
    servers."""
    run_dir, logs = settings.memory_pipeline_state_dir / "run", settings.memory_pipeline_state_dir / "logs"
    record = read_record(run_dir, SUPERVISOR)
    if record is None or owned_process(record) is None:
        ports = ["--port", str(service_port), "--ui-port", str(ui_port), *(["--servers"] if servers else [])]
        start_process(
            name=SUPERVISOR, argv=[sys.executable, "-m", "memory_pipeline", "supervise", *ports], env=env, port=0,
            url="-", run_dir=run_dir, log_path=logs / "supervisor.log", cwd=PROJECT_DIR,
        )  # fmt: skip
    for part in parts(service_port, ui_port):
        progress(f"{part.name}: waiting until it answers")
        wait_until(part.healthy, timeout=300, what=part.name, log_path=logs / f"{part.name}.log")
    # The service wrote its one-time login code on start (`serve`): the browser's way in, said here too, since
    # `up` runs the service in the background and its own message goes to its log.
    login = settings.service_login_path
    code = login.read_text().strip() if login.exists() else ""
    where = f"http://127.0.0.1:{service_port}"
    progress(f"memory browser: {where}/ (to edit, open once: {where}/login?code={code})" if code else where)


def stop_all(settings: Settings, progress: Callable[[str], None]) -> list[str]:
    """The supervisor (which stops its parts on SIGTERM), then any part it could not stop; what was running."""
    run_dir, stopped = settings.memory_pipeline_state_dir / "run", []
    record = read_record(run_dir, SUPERVISOR)
    if record is not None:
        if stop_process(record, timeout=60):
            stopped.append(SUPERVISOR)
        remove_record(run_dir, SUPERVISOR)
    return stopped + stop_parts(settings, progress)


def parts_status(settings: Settings) -> list[ServiceStatus]:
    """The supervisor and each part, with URL, state, PID, memory and health."""
    run_dir, rows = settings.memory_pipeline_state_dir / "run", []
    service, ui = read_record(run_dir, "service"), read_record(run_dir, "dagster-ui")
    recorded = parts(service.port if service else SERVICE_PORT, ui.port if ui else UI_PORT)  # the ports `up` had
    for part in [Part(SUPERVISOR, [], 0, ""), *recorded]:
        found = read_record(run_dir, part.name)
        process = owned_process(found) if found else None
        row = ServiceStatus(name=part.name, url=part.url, mode="local", state="stopped")
        if process is not None:
            row.state, row.pid, row.rss_mb = "running", process.pid, round(tree_rss(process) / 2**20, 1)
            row.health = "ok" if part.healthy() else "not answering"
        elif found:
            row.state = "stale"
        rows.append(row)
    return rows


def run_in_foreground(argv: list[str], env: Mapping[str, str], started: Callable[[], bool], grace: float = 30.0) -> int:
    """Run `argv` (`dagster dev`) until it exits; Ctrl-C or SIGTERM to us stops it; its exit code (0 when it
    stopped cleanly because it was asked to).

    dagster dev shuts down cleanly on SIGINT only, and a shell's background job inherits SIGINT ignored: so the
    child leads its own process group with SIGINT restored, and the first signal that stops us becomes a SIGINT to
    it, then a SIGKILL to its group if it lingers past `grace` seconds. To it alone: it stops its webserver,
    daemon and code server itself. Once it has `started` (its UI answers), or after `grace` seconds: while it
    starts them, an interrupt ends it with "Aborted!" and tracebacks. Only the first: `uv run` repeats the
    terminal's Ctrl-C to us 200 ms later, and a second SIGINT cuts dagster dev's own shutdown short ("Aborted!",
    exit 1, which `make` reports as an error)."""
    proc = subprocess.Popen(
        argv,
        env=dict(env),
        cwd=PROJECT_DIR,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    asked: list[float] = []  # when we were first asked to stop
    sent: list[float] = []  # when the SIGINT went

    def stop(_signum: int, _frame: object) -> None:
        if not asked:
            asked.append(time.monotonic())

    with _handling((signal.SIGTERM, signal.SIGINT), stop):
        while True:
            try:
                return proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            if asked and not sent and (now > asked[0] + grace or started()):
                os.kill(proc.pid, signal.SIGINT)
                sent.append(now)
            elif sent and now > sent[0] + grace:
                os.killpg(proc.pid, signal.SIGKILL)


@contextmanager
def interrupted_once() -> Iterator[None]:
    """The first Ctrl-C in the block raises KeyboardInterrupt; later ones are ignored until it ends (the copy of
    the terminal's that `uv run` sends 200 ms later, or an impatient second one, would otherwise interrupt the
    stopping of what was started, with a traceback)."""

    def first(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    with _handling((signal.SIGINT,), first):
        yield


@contextmanager
def uninterrupted() -> Iterator[None]:
    """A block a Ctrl-C must not cut short (stopping the servers a command started: a second Ctrl-C, or the one
    `uv run` repeats, would leave one half stopped and print a traceback)."""
    with _handling((signal.SIGINT,), signal.SIG_IGN):
        yield


@contextmanager
def _handling(signals: tuple[signal.Signals, ...], handler: Callable[[int, object], None] | int) -> Iterator[None]:
    """`handler` for `signals` during the block; the previous handlers after it."""
    previous = {signum: signal.signal(signum, handler) for signum in signals}
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
