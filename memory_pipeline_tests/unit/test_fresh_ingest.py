"""The fast path's queue and its guard on paths: notices coalesced per day, a notice during a run runs the day
once more, a day another run holds waits, failures retried then reported. The runs themselves (the Dagster
job over real servers) are tested end to end in e2e/test_fresh_ingest.py."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memory_pipeline.fresh.queue import ATTEMPTS, FreshIngest
from memory_pipeline.fresh.target import NotASession, session_day
from memory_pipeline.locks import day_held, holding_days

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-03-04T23:59:00.000Z","cwd":"/w"}\n'


def _wait(fresh: FreshIngest, day: str, states: tuple[str, ...], seconds: float = 10) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = {d["day"]: d for d in fresh.status()}.get(day)
        if found and found["state"] in states:
            return found
        time.sleep(0.01)
    raise AssertionError(f"{day} never reached {states}: {fresh.status()}")


def test_notices_of_a_queued_day_join_it_and_one_during_its_run_runs_it_again() -> None:
    started, release, ran = threading.Event(), threading.Event(), []

    def run_day(day: str) -> tuple[str, bool]:
        ran.append(day)
        started.set()
        release.wait(5)
        return f"run-{len(ran)}", True

    fresh = FreshIngest(run_day, busy=lambda day: False, retry_seconds=0.01)
    try:
        first = fresh.notify("2026-03-04", "a.jsonl")
        assert first["state"] == "queued" and first["notices"] == 1
        assert started.wait(5)
        during = fresh.notify("2026-03-04", "b.jsonl")  # the run may have read the file before this turn
        assert during["state"] == "running" and during["files"] == ["a.jsonl", "b.jsonl"]
        release.set()
        done = _wait(fresh, "2026-03-04", ("done",))
        assert ran == ["2026-03-04", "2026-03-04"] and done["runs"] == 2 and done["run_id"] == "run-2"
        assert done["notices"] == 2 and done["error"] is None and done["finished_at"] >= done["started_at"]
        assert done["seconds"] is not None and 0 <= done["seconds"] < 10
    finally:
        release.set()
        fresh.close()


def test_a_day_another_run_holds_waits_for_it(tmp_path: Path) -> None:
    ran: list[str] = []
    fresh = FreshIngest(lambda d: (ran.append(d), ("r", True))[1], lambda d: day_held(tmp_path, d), 0.02)
    try:
        with holding_days(tmp_path, ["2026-03-04"], "the sensor's run"):
            assert day_held(tmp_path, "2026-03-04") and not day_held(tmp_path, "2026-03-05")
            fresh.notify("2026-03-04", "a.jsonl")
            assert _wait(fresh, "2026-03-04", ("waiting",))["runs"] == 0
            time.sleep(0.1)
            assert ran == []  # never run under another run's lock
        assert _wait(fresh, "2026-03-04", ("done",))["runs"] == 1 and ran == ["2026-03-04"]
    finally:
        fresh.close()


def test_a_failing_day_is_retried_then_reported_and_a_new_notice_tries_again() -> None:
    calls: list[str] = []

    def run_day(day: str) -> tuple[str, bool]:
        calls.append(day)
        if len(calls) <= ATTEMPTS:
            raise ConnectionError("Elasticsearch went away")
        return "run-ok", True

    fresh = FreshIngest(run_day, busy=lambda day: False, retry_seconds=0.01)
    try:
        fresh.notify("2026-03-04", "a.jsonl")
        failed = _wait(fresh, "2026-03-04", ("failed",))
        assert len(calls) == ATTEMPTS and failed["error"] == "ConnectionError: Elasticsearch went away"
        assert failed["runs"] == 0  # reported, never an empty success
        fresh.notify("2026-03-04", "a.jsonl")
        assert _wait(fresh, "2026-03-04", ("done",))["runs"] == 1 and len(calls) == ATTEMPTS + 1
    finally:
        fresh.close()


def test_a_failed_day_is_tried_again_later_without_a_notice_when_the_server_is_back() -> None:
    calls: list[float] = []

    def run_day(day: str) -> tuple[str, bool]:
        calls.append(time.monotonic())
        if len(calls) <= ATTEMPTS + 1:  # the retries, and the first later try: the server is still down
            raise ConnectionError("Elasticsearch went away")
        return "run-ok", True

    fresh = FreshIngest(run_day, busy=lambda day: False, retry_seconds=0.01, recover_seconds=0.2)
    try:
        fresh.notify("2026-03-04", "a.jsonl")
        failed = _wait(fresh, "2026-03-04", ("failed",))
        assert failed["retry_at"] is not None and failed["retry_at"] > time.time() - 1
        done = _wait(fresh, "2026-03-04", ("done",), seconds=10)  # no new notice: the later tries did it
        assert done["runs"] == 1 and done["error"] is None and done["retry_at"] is None
        assert len(calls) == ATTEMPTS + 2
        # One try each time, and the second later try waited twice as long as the first.
        assert calls[-1] - calls[-2] >= 2 * 0.2 - 0.05 and calls[-2] - calls[-3] >= 0.2 - 0.05
    finally:
        fresh.close()


def test_only_session_files_under_the_sessions_folder_are_read(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    (root / "--w--").mkdir(parents=True)
    good = root / "--w--" / "s1.jsonl"
    good.write_text(HEADER)
    assert session_day(good, root) == "2026-03-04"
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(HEADER)
    (root / "--w--" / "link.jsonl").symlink_to(outside)  # a link out of the folder is outside it
    bad = root / "--w--" / "notes.jsonl"
    bad.write_text("hello\n")
    for path, reason in [
        (outside, "not a session file under SESSIONS_DIR"),
        (root / "--w--" / "link.jsonl", "not a session file under SESSIONS_DIR"),
        (root / "--w--" / "gone.jsonl", "No such file"),
        (bad, ":1: not a session file"),
    ]:
        with pytest.raises(NotASession, match=reason) as raised:
            session_day(path, root)
        assert str(path) in str(raised.value)


def test_the_service_takes_a_notice_with_its_token_and_says_what_it_did(tmp_path: Path) -> None:
    from contextlib import contextmanager

    from fastapi.testclient import TestClient

    from memory_pipeline.service.app import create_app
    from memory_pipeline.settings import load_settings
    from memory_pipeline_tests.unit.test_service import FakeSearch

    root = tmp_path / "sessions"
    (root / "--w--").mkdir(parents=True)
    (root / "--w--" / "s1.jsonl").write_text(HEADER)
    settings = load_settings(sessions_dir=root, memory_workspace=tmp_path, memory_pipeline_state_dir=tmp_path / "st")
    ran: list[str] = []

    @contextmanager
    def opened(_settings):  # noqa: ANN001, ANN202
        yield FakeSearch()

    def queue(_settings) -> FreshIngest:  # noqa: ANN001
        return FreshIngest(lambda day: (ran.append(day), ("run-1", True))[1], busy=lambda day: False)

    with TestClient(create_app(settings, opened, queue), base_url="http://127.0.0.1") as client:
        notice = {"session_file": str(root / "--w--" / "s1.jsonl")}
        assert client.post("/api/v1/ingest", json=notice).status_code == 403  # a write needs the token
        client.headers["X-Memory-Token"] = settings.service_token()
        accepted = client.post("/api/v1/ingest", json=notice)
        assert accepted.status_code == 202 and accepted.json()["day"] == "2026-03-04", accepted.text
        refused = client.post("/api/v1/ingest", json={"session_file": "/etc/passwd"})
        assert refused.status_code == 422 and "not a session file under SESSIONS_DIR" in refused.json()["detail"]
        deadline = time.monotonic() + 10
        while client.get("/api/v1/ingest").json()[0]["state"] != "done" and time.monotonic() < deadline:
            time.sleep(0.01)
        [day] = client.get("/api/v1/ingest").json()
        assert day["state"] == "done" and day["run_id"] == "run-1" and ran == ["2026-03-04"]
