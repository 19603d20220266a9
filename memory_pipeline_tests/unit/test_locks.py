"""One run per day at a time: a second holder of a day waits for the first, says so once, gives up after its
wait; overlapping ranges are taken in day order, so they cannot deadlock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memory_pipeline.locks import DayBusy, holding_days


def test_a_second_run_of_a_day_waits_for_the_first(tmp_path: Path) -> None:
    events: list[str] = []
    said: list[str] = []
    first_in = threading.Event()

    def first() -> None:
        with holding_days(tmp_path, ["2026-11-29"], "run A"):
            events.append("A in")
            first_in.set()
            time.sleep(1.0)
            events.append("A out")

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(5)
    with holding_days(tmp_path, ["2026-11-29", "2026-11-30"], "run B", on_wait=said.append):
        events.append("B in")
    thread.join()
    assert events == ["A in", "A out", "B in"]
    assert said == ["2026-11-29 is being run by run A: waiting"]


def test_a_day_held_too_long_is_an_error_naming_it(tmp_path: Path) -> None:
    with (
        holding_days(tmp_path, ["2026-11-29"], "run A"),
        pytest.raises(DayBusy, match="2026-11-29 stayed busy"),
        holding_days(tmp_path, ["2026-11-29"], "run B", wait_seconds=0.6, on_wait=lambda m: None),
    ):
        pass


def test_overlapping_ranges_do_not_deadlock(tmp_path: Path) -> None:
    done: list[str] = []

    def run(name: str, days: list[str]) -> None:
        for _ in range(20):
            with holding_days(tmp_path, days, name, on_wait=lambda m: None):
                time.sleep(0.005)
        done.append(name)

    threads = [
        threading.Thread(target=run, args=("A", ["2026-01-01", "2026-01-02"])),
        threading.Thread(target=run, args=("B", ["2026-01-02", "2026-01-01"])),  # the other order, asked
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(done) == ["A", "B"]


def test_exclusive_lets_one_holder_in_at_a_time(tmp_path: Path) -> None:
    from memory_pipeline.locks import exclusive

    inside: list[int] = []
    most: list[int] = []

    def hold() -> None:
        with exclusive(tmp_path / "storage.lock"):
            inside.append(1)
            most.append(len(inside))
            time.sleep(0.05)
            inside.pop()

    threads = [threading.Thread(target=hold) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(most) == 5 and max(most) == 1
