"""Private copies of the local servers, for tests that stop, kill or reconfigure them."""

from __future__ import annotations

import os
import random
import signal
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory_pipeline.local.process import port_in_use
from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.settings import ServiceName, Settings, isolated_settings, load_settings


def _below_ephemeral() -> int:
    """The first port the kernel may hand to an outgoing connection (Linux's default when unreadable)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return not port_in_use(port)


def free_port_range(count: int = 1) -> int:
    """The first of `count` consecutive free ports (and `count` more, 100 above: an ES cluster's transport).
    Chosen below the ephemeral range: a port in it can be taken by any outgoing connection between this check
    and the server's bind (a cluster's nodes connect to each other while the next one starts), as CI saw."""
    rng = random.Random()
    for _ in range(200):
        first = rng.randrange(10_000, _below_ephemeral() - 100 - count)
        if all(_bindable(p) for base in (first, first + 100) for p in range(base, base + count)):
            return first
    raise RuntimeError(f"no {count} consecutive free ports found")


def free_port() -> int:
    return free_port_range(1)


def private_runtime(
    tmp_path: Path, shared: Settings, cache: Path | None = None, es_nodes: int = 1, postgres: bool = False
) -> LocalRuntime:
    """A runtime with its own state folder and ports, reusing the shared cache (no rebuilds) by default;
    its Elasticsearch has `es_nodes` nodes, and it runs a PostgreSQL for Dagster if `postgres`."""
    settings = load_settings(
        memory_pipeline_state_dir=tmp_path / "state",
        memory_pipeline_cache_dir=cache or shared.memory_pipeline_cache_dir,
        local_es_port=free_port_range(es_nodes) if es_nodes > 1 else free_port(),
        local_llama_port=free_port(),
        local_embed_port=free_port(),
        local_es_nodes=es_nodes,
        local_postgres=postgres,
        local_postgres_port=free_port(),
    )
    return LocalRuntime(settings, progress=lambda m: None)


def kill(runtime: LocalRuntime, name: str) -> int:
    """SIGKILL one server of `runtime` (no shutdown, as a crash or the OOM killer would); its pid."""
    pid = next(s.pid for s in runtime.status() if s.name == name)
    assert pid, f"{name} is not running"
    os.killpg(os.getpgid(pid), signal.SIGKILL)
    return pid


@contextmanager
def private_server(tmp_path: Path, shared: Settings, name: ServiceName) -> Iterator[LocalRuntime]:
    """One server of a private runtime, up for the block and stopped after it, whatever happened."""
    runtime = private_runtime(tmp_path / name, shared)
    runtime.up([name])
    try:
        yield runtime
    finally:
        runtime.down()


def settings_on(runtime: LocalRuntime, name: ServiceName, shared: Settings, folder: Path) -> Settings:
    """Isolated settings (see `isolated_settings`) whose `name` server is `runtime`'s, with its key."""
    port = {"elasticsearch": "local_es_port", "chat": "local_llama_port", "embed": "local_embed_port"}[name]
    overrides: dict[str, object] = {port: getattr(runtime.settings, port)}
    if name == "elasticsearch":
        overrides["local_es_password_file"] = runtime.settings.es_password_path
    else:
        overrides["local_api_key_file"] = runtime.settings.api_key_path
    return isolated_settings(shared, folder, **overrides)


@contextmanager
def memory_service(settings: Settings) -> Iterator[str]:
    """`memory-pipeline serve` as a subprocess over `settings`, up for the block; its base URL."""
    import subprocess
    import sys
    import time

    import httpx

    from testkit.ingest_helpers import cli_env

    port = free_port()
    # Its log goes to a file in its state: a pipe nobody reads fills up, and the service would block on a write.
    log_path = settings.memory_pipeline_state_dir / "logs" / f"serve-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "memory_pipeline", "serve", "--port", str(port)],
            env=cli_env(settings),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # imports alone take seconds on a busy 2-core machine
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert process.poll() is None, log_path.read_text(errors="replace")[-5000:]
                assert time.monotonic() < deadline, "memory-pipeline serve did not answer in 120 s"
                time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)  # a fast-path run under way is let finish (FreshIngest.close)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError(f"serve did not stop in 60 s; its log: {log_path}") from None
