"""One run per day at a time: a second holder of a day waits for the first, says so once, gives up after its
wait; overlapping ranges are taken in day order, so they cannot deadlock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from dagster import AssetKey, Definitions, asset, define_asset_job

from memory_pipeline.locks import LLM, DayBusy, DayHold, day_held, holding_days
from memory_pipeline.partitions import instance_with_days, session_days
from memory_pipeline.resources import DayLocksResource


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


def test_a_fast_run_takes_its_day_while_the_llm_run_of_it_waits_for_the_model(tmp_path: Path) -> None:
    day, quiet = ["2026-11-29"], {"wait_seconds": 0.6, "on_wait": lambda m: None}
    with DayHold(tmp_path, day, "llm run", with_llm=True, **quiet) as llm_run:
        with pytest.raises(DayBusy):  # outside the model's calls the LLM run writes what a fast run writes
            DayHold(tmp_path, day, "fast run", with_llm=False, **quiet).__enter__()
        with llm_run.letting_go():
            with DayHold(tmp_path, day, "fast run", with_llm=False, **quiet):
                pass  # taken at once: no DayBusy
            with pytest.raises(DayBusy):  # but a second LLM run of the day still waits for the first
                DayHold(tmp_path, day, "llm run 2", with_llm=True, **quiet).__enter__()
    with DayHold(tmp_path, day, "llm run 2", with_llm=True, **quiet):
        pass  # both kinds let go at the end


def test_the_llm_run_takes_its_day_back_after_the_fast_run_under_way(tmp_path: Path) -> None:
    events: list[str] = []
    fast_in = threading.Event()
    with DayHold(tmp_path, ["2026-11-29"], "llm run", with_llm=True, on_wait=lambda m: None) as llm_run:
        with llm_run.letting_go():

            def fast() -> None:
                with DayHold(tmp_path, ["2026-11-29"], "fast run", with_llm=False):
                    events.append("fast in")
                    fast_in.set()
                    time.sleep(0.8)
                    events.append("fast out")

            thread = threading.Thread(target=fast)
            thread.start()
            fast_in.wait(5)
            events.append("model answered")
        events.append("llm run indexes")  # only once the fast run let go
        thread.join()
    assert events == ["fast in", "model answered", "fast out", "llm run indexes"]


def test_two_fast_runs_of_a_day_still_run_one_after_the_other(tmp_path: Path) -> None:
    with (
        DayHold(tmp_path, ["2026-11-29"], "fast 1", with_llm=False),
        pytest.raises(DayBusy),
    ):
        DayHold(
            tmp_path, ["2026-11-29"], "fast 2", with_llm=False, wait_seconds=0.6, on_wait=lambda m: None
        ).__enter__()


def test_the_resource_lets_the_ingest_lock_go_only_around_the_models_calls(tmp_path: Path) -> None:
    """Through Dagster: a run with an LLM asset holds both kinds and lets the ingest lock go inside
    `calling_the_llm`; a run of LLM-free assets alone holds only the ingest lock, even inside it."""
    day, seen = "2026-11-29", {}

    def look(name: str, day_locks: DayLocksResource) -> None:
        seen[name] = (day_held(tmp_path, day), day_held(tmp_path, day, LLM))
        with day_locks.calling_the_llm():
            seen[f"{name} calling"] = (day_held(tmp_path, day), day_held(tmp_path, day, LLM))

    @asset(partitions_def=session_days, name="llm_ideas")
    def llm_step(day_locks: DayLocksResource) -> None:
        look("llm run", day_locks)

    @asset(partitions_def=session_days, name="turns")
    def fast_step(day_locks: DayLocksResource) -> None:
        look("fast run", day_locks)

    resources = {"day_locks": DayLocksResource(folder=str(tmp_path))}
    job = Definitions(assets=[llm_step, fast_step], jobs=[define_asset_job("j")], resources=resources).resolve_job_def(
        "j"
    )
    instance = instance_with_days([day])
    for name in ("llm_ideas", "turns"):
        assert job.execute_in_process(partition_key=day, instance=instance, asset_selection=[AssetKey(name)]).success
    assert seen == {
        "llm run": (True, True),
        "llm run calling": (False, True),
        "fast run": (True, False),
        "fast run calling": (True, False),
    }
    assert not day_held(tmp_path, day) and not day_held(tmp_path, day, LLM)  # both let go after the run
