"""`local up | down | status` against real processes."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest

from memory_pipeline.local.models import CHAT_MODEL, ModelIntegrityError
from memory_pipeline.local.process import ProcessRecord, RuntimeProblem, read_record
from memory_pipeline.local.runtime import LocalRuntime
from memory_pipeline.settings import Settings, load_settings
from testkit.servers import free_port, private_runtime


def test_second_up_starts_nothing_new(local_runtime: Settings) -> None:
    runtime = LocalRuntime(local_runtime, progress=lambda m: None)
    before = {s.name: s.pid for s in runtime.status()}
    again = runtime.up()
    assert [s.state for s in again if s.mode == "local"] == ["running"] * sum(s.mode == "local" for s in again)
    assert {s.name: s.pid for s in again} == before


def test_status_reports_each_server(local_runtime: Settings) -> None:
    rows = {s.name: s for s in LocalRuntime(local_runtime).status()}
    assert set(rows) == {"elasticsearch", "chat", "embed"}
    assert rows["elasticsearch"].health in ("yellow", "green") and rows["elasticsearch"].version.startswith("8.")
    assert rows["chat"].model == CHAT_MODEL.name and rows["chat"].health == "ok"
    assert rows["embed"].model == "all-MiniLM-L6-v2" and rows["embed"].health == "ok"
    for row in rows.values():
        assert row.url.startswith("http://127.0.0.1:") and row.pid and row.rss_mb and row.rss_mb > 1


def test_cli_status_prints_a_table(local_runtime: Settings) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "local", "status"], capture_output=True, text=True, check=True
    ).stdout
    assert "elasticsearch" in out and "running" in out and CHAT_MODEL.name in out


def test_up_down_cycle_stops_only_what_it_started(local_runtime: Settings, tmp_path: Path) -> None:
    runtime = private_runtime(tmp_path, local_runtime)
    first = runtime.up(["embed"])
    assert [s.state for s in first] == ["started"]
    pid = first[0].pid
    assert pid and psutil.pid_exists(pid)
    assert [s.state for s in runtime.up(["embed"])] == ["running"]
    shared_pids = [s.pid for s in LocalRuntime(local_runtime).status()]
    assert runtime.down() == ["embed"]
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert [s.pid for s in LocalRuntime(local_runtime).status()] == shared_pids, "down touched other servers"
    assert runtime.down() == []


def test_stale_pid_file_is_replaced(local_runtime: Settings, tmp_path: Path) -> None:
    runtime = private_runtime(tmp_path, local_runtime)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        # A PID file whose PID now belongs to someone else.
        runtime.run_dir.mkdir(parents=True)
        (runtime.run_dir / "embed.json").write_text(
            ProcessRecord(
                name="embed",
                pid=stranger.pid,
                create_time=1.0,
                port=1,
                url="x",
                argv=["x"],
                log_path="x",
                started_at=datetime.now(UTC),
            ).model_dump_json()
        )
        assert [s.state for s in runtime.status() if s.name == "embed"] == ["stale"]
        started = runtime.up(["embed"])
        assert started[0].state == "started" and started[0].pid != stranger.pid
        assert read_record(runtime.run_dir, "embed").pid == started[0].pid
        runtime.down()
        assert stranger.poll() is None, "the stranger holding the old PID was signalled"
    finally:
        stranger.kill()
        stranger.wait()


def test_port_taken_by_someone_else_is_a_clear_error(local_runtime: Settings, tmp_path: Path) -> None:
    runtime = private_runtime(tmp_path, local_runtime)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", runtime.settings.local_embed_port))
        squatter.listen()
        with pytest.raises(RuntimeProblem, match=r"port \d+ .* in use .* set LOCAL_EMBED_PORT"):
            runtime.up(["embed"])
    assert read_record(runtime.run_dir, "embed") is None


def test_corrupted_model_is_refused(local_runtime: Settings, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    corrupt = CHAT_MODEL.path(cache)
    corrupt.parent.mkdir(parents=True)
    good = CHAT_MODEL.path(local_runtime.memory_pipeline_cache_dir)
    # Same size as the real model, one flipped byte in the middle.
    with good.open("rb") as src, corrupt.open("wb") as dst:
        while block := src.read(1 << 22):
            dst.write(block)
    with corrupt.open("r+b") as handle:
        handle.seek(good.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    runtime = private_runtime(tmp_path, local_runtime, cache=cache)
    with pytest.raises(ModelIntegrityError, match="refusing to serve it"):
        runtime.up(["chat"])
    assert read_record(runtime.run_dir, "chat") is None


def test_configured_urls_start_nothing_local(local_runtime: Settings, tmp_path: Path) -> None:
    # The user's "own" servers (here: the shared local ones, under another name) are only described; their
    # cluster takes the credentials ES_USERNAME and ES_PASSWORD give.
    user, password = local_runtime.es_basic_auth() or ("", "")
    settings = load_settings(
        memory_pipeline_state_dir=tmp_path / "state",
        es_url=f"http://localhost:{local_runtime.local_es_port}",
        es_username=user,
        es_password=password,
        llama_url=f"http://localhost:{local_runtime.local_llama_port}",
        embed_url=f"http://localhost:{local_runtime.local_embed_port}",
        llama_api_key=local_runtime.api_key("chat"),
        embed_api_key=local_runtime.api_key("embed"),
        local_es_port=free_port(),
        local_llama_port=free_port(),
        local_embed_port=free_port(),
    )
    rows = LocalRuntime(settings, progress=lambda m: None).up()
    assert [(r.mode, r.state) for r in rows] == [("external", "external")] * 3
    assert all(r.health in ("ok", "green", "yellow") for r in rows)
    assert not (tmp_path / "state" / "run").exists() or not list((tmp_path / "state" / "run").iterdir())


def test_elasticsearch_documents_survive_a_restart(local_runtime: Settings) -> None:
    import shutil
    import uuid

    from memory_pipeline.stores.elasticsearch import make_client

    # Under the state folder, not pytest's private tmp: as root, ES runs as a user that must reach it.
    where = local_runtime.memory_pipeline_state_dir / "tests" / uuid.uuid4().hex[:8]
    runtime = private_runtime(where, local_runtime)
    try:
        runtime.up(["elasticsearch"])
        with make_client(runtime.settings) as client:
            client.index(index="survivor", id="1", document={"text": "still here"}, refresh=True)
        assert runtime.down() == ["elasticsearch"]
        runtime.up(["elasticsearch"])
        with make_client(runtime.settings) as client:
            assert client.get(index="survivor", id="1")["_source"] == {"text": "still here"}
    finally:
        runtime.down()
        shutil.rmtree(where, ignore_errors=True)


def test_elasticsearch_data_moves_out_of_a_private_state_folder(local_runtime: Settings, tmp_path: Path) -> None:
    """As root, ES runs as another user; a state folder under a private parent (here pytest's own
    0700 tmp folder) cannot be reached by it, so its data goes to a folder of its own instead of failing."""
    import os
    import shutil

    from memory_pipeline.local.host import data_root
    from memory_pipeline.stores.elasticsearch import make_client

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    runtime = private_runtime(private, local_runtime)
    messages: list[str] = []
    runtime.progress = messages.append
    root = data_root(runtime.settings, "elasticsearch", messages.append)
    if os.geteuid() != 0:  # ES runs as the caller, who can reach their own folders: nothing moves
        assert root == runtime.settings.memory_pipeline_state_dir / "elasticsearch" and not messages
        return
    try:
        assert str(root).startswith("/var/lib/memory-pipeline/") and "not reachable" in messages[0]
        runtime.up(["elasticsearch"])
        with make_client(runtime.settings) as client:
            assert client.cluster.health()["status"] in ("green", "yellow")
        assert (root / "data").is_dir() and any((root / "data").iterdir())
    finally:
        runtime.down()
        shutil.rmtree(root.parent, ignore_errors=True)


def test_a_users_server_that_wants_a_key_is_reported_as_such(local_runtime: Settings, tmp_path: Path) -> None:
    settings = load_settings(
        memory_pipeline_state_dir=tmp_path / "state",
        llama_url=f"http://localhost:{local_runtime.local_llama_port}",
        local_llama_port=free_port(),
    )
    [chat] = [r for r in LocalRuntime(settings, progress=lambda m: None).status() if r.name == "chat"]
    assert chat.state == "unauthorized" and "LLAMA_API_KEY" in chat.health


def test_the_local_elasticsearch_refuses_whoever_lacks_its_password(local_runtime: Settings) -> None:
    """Security is on: a local process without the password, or a web page that reached the port through DNS
    rebinding (a foreign Host, no credentials it could know), reads and deletes nothing."""
    import stat

    import httpx

    url = local_runtime.elasticsearch_url
    assert httpx.get(f"{url}/_cat/indices").status_code == 401
    assert httpx.delete(f"{url}/memory-raw*").status_code == 401
    assert httpx.get(f"{url}/_search", headers={"Host": "attacker.example:9200"}).status_code == 401
    assert httpx.get(f"{url}/_cat/indices", auth=("elastic", "wrong-password")).status_code == 401
    user, password = local_runtime.es_basic_auth() or ("", "")
    assert httpx.get(f"{url}/_cat/indices", auth=(user, password)).status_code == 200
    path = local_runtime.es_password_path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600, "the password file is the owner's only"
    out = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "local", "up", "--only", "elasticsearch"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(path) in out and "curl -u" in out and password not in out  # says how, never the password
