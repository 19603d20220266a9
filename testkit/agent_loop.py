"""The agent loop's waits, shared by the end-to-end tests: a backfill of every day through the command line, and
the fast path's record of a day once the service ran it."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx

from memory_pipeline.settings import Settings
from testkit.ingest_helpers import cli_env


def backfill_all(settings: Settings) -> dict:
    """`memory-pipeline backfill --all --json` over `settings`; its report, every run a success."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "backfill", "--all", "--json"],
        env=cli_env(settings),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["runs"] and all(r["success"] for r in report["runs"]), report
    return report


def ingested_day(base: str, day: str, after: float, seconds: float = 180) -> dict:
    """The fast path's record of `day` once a run that started after `after` finished."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        days = {d["day"]: d for d in httpx.get(f"{base}/api/v1/ingest").json()}
        found = days.get(day)
        if found and found["state"] in ("done", "failed") and (found["started_at"] or 0) >= after:
            return found
        time.sleep(0.5)
    raise AssertionError(f"{day} was not ingested in {seconds} s: {httpx.get(f'{base}/api/v1/ingest').json()}")
