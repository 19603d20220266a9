"""The supervisor of `memory-pipeline up` watches the servers it was started with too (issue 45): a killed
embedding server (a private copy, its own port) is started again, where before it stayed "stale"."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from memory_pipeline.local.supervise import supervise
from memory_pipeline.settings import Settings
from testkit.servers import kill, private_server


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
