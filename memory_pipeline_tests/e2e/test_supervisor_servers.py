"""The supervisor of `memory-pipeline up` watches the servers it was started with too (issue 45): a killed
embedding server (a private copy, its own port) is started again, where before it stayed "stale"; and while it
is down, a search through the service says so in the text a model reads, not only `sim -`."""

from __future__ import annotations

import signal
import socket
import time
import uuid
from pathlib import Path

import httpx

from memory_pipeline.local.supervise import supervise
from memory_pipeline.settings import Settings, isolated_settings
from testkit.servers import kill, memory_service, private_server, settings_on


def test_the_supervisor_starts_a_killed_server_again(local_runtime: Settings, tmp_path: Path) -> None:
    with private_server(tmp_path, local_runtime, "embed") as runtime:
        [embed] = runtime.services(["embed"])
        assert embed.is_ready()
        killed = kill(runtime, "embed")
        time.sleep(1)
        assert {s.name: s.state for s in runtime.status()}["embed"] == "stale"
        said: list[str] = []
        deadline = time.monotonic() + 240

        def revived() -> bool:
            row = {s.name: s for s in runtime.status()}["embed"]
            return (row.state == "running" and row.pid != killed) or time.monotonic() > deadline

        handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            supervise(runtime.settings, {}, [], said.append, check_seconds=0.5, stop_after=revived, servers=True)
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
        row = {s.name: s for s in runtime.status()}["embed"]
        assert row.state == "running" and row.pid not in (None, killed), (row, said)
        assert embed.is_ready(), said
        assert "embed: had stopped; starting it again" in said and "embed: restarted" in said, said
        # The servers it watches are not its to stop: `down` does that.
        assert {s.name: s.state for s in runtime.status()}["embed"] == "running"


def test_search_through_the_service_says_the_embeddings_are_down(local_runtime: Settings, tmp_path: Path) -> None:
    project = f"/work/embed-down-{uuid.uuid4().hex[:8]}"
    with private_server(tmp_path, local_runtime, "embed") as runtime:
        settings = settings_on(runtime, "embed", local_runtime, tmp_path / "service")
        settings.sessions_dir.mkdir(parents=True, exist_ok=True)
        with memory_service(settings) as base:
            sent = httpx.post(
                f"{base}/api/v1/memories",
                json={"text": "The staging cluster is rebuilt every Monday night.", "project": project},
                headers={"X-Memory-Token": settings.service_token()},
                timeout=60,
            )
            assert sent.status_code == 201, sent.text
            query = {"q": "staging cluster rebuilt", "project": project}
            up = httpx.get(f"{base}/api/v1/search", params={**query, "format": "text"}, timeout=60)
            assert up.status_code == 200 and not up.text.startswith("note:") and sent.json()["id"] in up.text
            kill(runtime, "embed")
            text = httpx.get(f"{base}/api/v1/search", params={**query, "format": "text"}, timeout=60)
            first, *rows = text.text.split("\n")
            assert first.startswith("note: embeddings down") and "BM25 only" in first, text.text
            assert any(sent.json()["id"] in row and "sim    -" in row for row in rows), text.text
            data = httpx.get(f"{base}/api/v1/search", params=query, timeout=60).json()
            assert data["degraded"].startswith("embeddings down") and [m["id"] for m in data["data"]] == [
                sent.json()["id"]
            ]


def test_search_and_recall_answer_with_the_chat_server_down(local_runtime: Settings, tmp_path: Path) -> None:
    """Search and recall call no chat model: with nothing at the chat server's port, the service still answers
    both from memory, whole (not degraded), where an outage of a channel they use is said (above)."""
    with socket.socket() as probe:  # a port nothing listens on: the chat server is down
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    project = f"/work/chat-down-{uuid.uuid4().hex[:8]}"
    settings = isolated_settings(local_runtime, tmp_path / "service", local_llama_port=dead)
    settings.sessions_dir.mkdir(parents=True, exist_ok=True)
    with memory_service(settings) as base:
        token = {"X-Memory-Token": settings.service_token()}
        sent = httpx.post(
            f"{base}/api/v1/memories",
            json={"text": "The nightly export job writes to the archive bucket.", "project": project},
            headers=token,
            timeout=60,
        )
        assert sent.status_code == 201, sent.text
        query = {"q": "nightly export archive bucket", "project": project}
        data = httpx.get(f"{base}/api/v1/search", params=query, timeout=60).json()
        assert not data.get("degraded") and [m["id"] for m in data["data"]] == [sent.json()["id"]], data
        text = httpx.get(f"{base}/api/v1/search", params={**query, "format": "text"}, timeout=60).text
        assert not text.startswith("note:") and sent.json()["id"] in text, text
        moment = {"session_id": f"chat-down-{uuid.uuid4().hex[:6]}", "agent": "pi", "event": "prompt",
                  "project": project, "text": "where does the nightly export job write?"}  # fmt: skip
        answer = httpx.post(f"{base}/api/v1/recall", json=moment, headers=token, timeout=60)
        assert answer.status_code == 200 and sent.json()["id"] in answer.json()["ids"], answer.text
