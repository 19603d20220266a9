"""`memory-pipeline local up | down | status`: the embedded default's servers.

Only servers whose URL is not configured are local; a configured URL is the
user's own server, shown by `status` and never started or stopped here.
`up` is idempotent, and `down` stops exactly the processes `up` recorded.
Elasticsearch runs as one node, or as a cluster of N (`up --nodes N`, remembered
for every later command until `up --nodes 1`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import psutil
from pydantic import BaseModel

from memory_pipeline.local.artifacts import Progress
from memory_pipeline.local.process import (
    RuntimeProblem,
    owned_process,
    port_in_use,
    read_record,
    remove_record,
    start_process,
    stop_process,
    wait_until,
)
from memory_pipeline.local.services import SINGLE_NODE_FLAG, ElasticsearchService, LocalService, all_services
from memory_pipeline.settings import ServiceName, Settings
from memory_pipeline.stores.openai_compat import RejectedRequest


class ServiceStatus(BaseModel):
    name: str  # a server's own name: elasticsearch, elasticsearch-2 (second node), chat, embed
    url: str
    mode: str  # "local" or "external"
    state: str  # running, started, stopped, stale, external, unreachable, unauthorized
    pid: int | None = None
    rss_mb: float | None = None
    version: str = "-"
    model: str = "-"
    health: str = "-"
    seconds: float | None = None  # how long `up` took for it


class LocalRuntime:
    def __init__(self, settings: Settings, progress: Progress = print) -> None:
        self.settings = settings
        self.progress = progress
        self.run_dir = settings.memory_pipeline_state_dir / "run"

    def services(self, names: Iterable[ServiceName] | None = None, recorded: bool = False) -> list[LocalService]:
        """The servers of these kinds (all by default); with `recorded`, also Elasticsearch nodes beyond the
        configured count that `up` once started (so `down` and `status` never lose one)."""
        wanted = set(names) if names is not None else None
        nodes, postgres = self.settings.es_node_count, self.settings.uses_local_postgres
        if recorded:
            nodes = max([nodes, *(n for n in range(2, 10) if read_record(self.run_dir, f"elasticsearch-{n}"))])
            postgres = postgres or read_record(self.run_dir, "postgres") is not None
        return [s for s in all_services(self.settings, nodes, postgres) if wanted is None or s.kind in wanted]

    def _check_shape(self, services: list[LocalService]) -> None:
        """A running single node cannot become a cluster's first node, nor the other way round."""
        first = next((s for s in services if isinstance(s, ElasticsearchService) and s.node == 1), None)
        record = read_record(self.run_dir, "elasticsearch") if first else None
        if first is None or record is None or owned_process(record) is None:
            return
        running_single = SINGLE_NODE_FLAG in record.argv
        if running_single != (first.nodes == 1):
            shape = "a single node" if running_single else "a cluster"
            raise RuntimeProblem(
                f"elasticsearch: {shape} is running and {first.nodes} node(s) were asked for: stop it first "
                f"(`memory-pipeline local down --only elasticsearch`)"
            )

    def up(self, names: Iterable[ServiceName] | None = None) -> list[ServiceStatus]:
        """Start every local server not already running; wait until all are ready."""
        started: list[tuple[LocalService, psutil.Process, float]] = []
        results: dict[str, ServiceStatus] = {}
        wanted = self.services(names)
        self._check_shape(wanted)
        try:
            for service in wanted:
                if not self.settings.is_local(service.kind):
                    results[service.name] = self._status(service)
                    continue
                begin = time.monotonic()
                record = read_record(self.run_dir, service.name)
                process = owned_process(record) if record else None
                if process is not None:
                    wait_until(
                        service.is_ready,
                        timeout=service.ready_timeout,
                        alive=process,
                        what=f"{service.name} (pid {process.pid})",
                        log_path=service.log_path,
                    )
                    results[service.name] = self._status(service, state="running")
                    continue
                if record is not None:
                    self.progress(f"{service.name}: removing stale PID file (pid {record.pid} is not ours any more)")
                    remove_record(self.run_dir, service.name)
                if port_in_use(service.port):
                    raise RuntimeProblem(
                        f"{service.name}: port {service.port} on 127.0.0.1 is in use by another "
                        f"process: stop it, or set {service.port_variable} to a free port"
                    )
                spec = service.prepare(self.progress)
                self.progress(f"{service.name}: starting on {service.url}")
                record = start_process(
                    name=service.name,
                    argv=spec.argv,
                    env=spec.env,
                    port=service.port,
                    url=service.url,
                    run_dir=self.run_dir,
                    log_path=service.log_path,
                    cwd=spec.cwd,
                    user=spec.user,
                )
                started.append((service, psutil.Process(record.pid), begin))
            # Started together, waited for together: Elasticsearch's JVM boot overlaps the model loads.
            for service, process, begin in started:
                wait_until(
                    service.is_ready,
                    timeout=service.ready_timeout,
                    alive=process,
                    what=service.name,
                    log_path=service.log_path,
                )
                results[service.name] = self._status(
                    service, state="started", seconds=round(time.monotonic() - begin, 1)
                )
                self.progress(f"{service.name}: ready in {results[service.name].seconds}s")
        except BaseException:
            for service, _, _ in started:
                if service.name not in results:
                    self._stop(service)
            raise
        # Remembered, so every later command (and `up` without options) finds the same shape.
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if any(isinstance(s, ElasticsearchService) for s in wanted) and self.settings.is_local("elasticsearch"):
            self.settings.es_nodes_path.write_text(f"{self.settings.es_node_count}\n")
        return [results[s.name] for s in wanted if s.name in results]

    def down(self, names: Iterable[ServiceName] | None = None) -> list[str]:
        """Stop the servers `up` recorded (only those); the names of those that were running."""
        return [s.name for s in self.services(names, recorded=True) if self._stop(s)]

    def status(self) -> list[ServiceStatus]:
        return [self._status(service) for service in self.services(recorded=True)]

    def running(self) -> set[str]:
        """The names of the local servers running now (`elasticsearch`, `elasticsearch-2`, `chat`, …), from their
        records alone: no request to a server, which may be the one that hangs."""
        return {
            s.name
            for s in self.services(recorded=True)
            if self.settings.is_local(s.kind)
            and (record := read_record(self.run_dir, s.name)) is not None
            and owned_process(record) is not None
        }

    def _stop(self, service: LocalService) -> bool:
        record = read_record(self.run_dir, service.name)
        if record is None:
            return False
        was_running = stop_process(record)
        remove_record(self.run_dir, service.name)
        if was_running:
            self.progress(f"{service.name}: stopped (pid {record.pid})")
        return was_running

    def _status(self, service: LocalService, state: str | None = None, seconds: float | None = None) -> ServiceStatus:
        local = self.settings.is_local(service.kind)
        status = ServiceStatus(
            name=service.name,
            url=service.url,
            mode="local" if local else "external",
            state=state or ("external" if not local else "stopped"),
            seconds=seconds,
        )
        if local:
            record = read_record(self.run_dir, service.name)
            process = owned_process(record) if record else None
            if process is None:
                status.state = "stale" if record else "stopped"
                return status
            status.pid = process.pid
            status.rss_mb = round(tree_rss(process) / 2**20, 1)
            status.state = state or "running"
        try:
            described = service.describe()
            status.version, status.model, status.health = described["version"], described["model"], described["health"]
        except RejectedRequest as exc:
            variable = {"chat": "LLAMA_API_KEY", "embed": "EMBED_API_KEY"}.get(service.kind, "its key")
            status.health = f"refused with HTTP {exc.status}: set {variable}"
            status.state = "unauthorized" if exc.status in (401, 403) else status.state
        except Exception as exc:  # noqa: BLE001 - status reports, it does not fail
            status.health = f"unreachable ({type(exc).__name__})"
            if not local:
                status.state = "unreachable"
        return status


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of a server and its children; a child that exits meanwhile (a PostgreSQL backend whose
    connection just closed) counts for nothing."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return total
