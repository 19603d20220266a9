"""The backfill's progress: turns done, turns left and the time to go, from the pace so far."""

from __future__ import annotations

from dagster import Definitions, asset, define_asset_job

from memory_pipeline.backfill import JOB, run_backfill
from memory_pipeline.partitions import daily_assets, instance_with_days
from memory_pipeline.summarize.progress import EVERY_SECONDS, PREFIX, TurnProgress, duration, seconds_left


def test_the_time_left_is_the_turns_left_at_the_pace_so_far() -> None:
    assert seconds_left(done=10, total=40, elapsed=50.0) == 150.0  # 5 s a turn, 30 turns left
    assert seconds_left(done=3, total=4, elapsed=1.5) == 0.5
    assert seconds_left(done=0, total=40, elapsed=12.0) is None  # no pace before the first turn
    assert seconds_left(done=40, total=40, elapsed=200.0) == 0.0
    assert seconds_left(done=0, total=0, elapsed=0.0) == 0.0  # nothing to read


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration(s) for s in (None, 40.4, 59.6, 60, 749, 3599, 3600, 7500)] == [
        "unknown yet",
        "40 s",
        "1 min",
        "1 min",
        "12 min",
        "1 h 00 min",
        "1 h 00 min",
        "2 h 05 min",
    ]


def test_a_line_is_due_at_the_first_turn_every_few_seconds_and_at_the_last() -> None:
    now = [100.0]
    progress = TurnProgress(total=5, clock=lambda: now[0])
    due = []
    for step in (4.0, 3.0, 4.0, 3.0, 1.0):  # seconds each turn takes
        now[0] += step
        due.append(progress.finished_one())
    assert due == [True, False, False, True, True]  # at 4 s, at 14 s (EVERY_SECONDS after), and the last
    assert EVERY_SECONDS == 10.0
    assert progress.line() == f"{PREFIX} 5 of 5 done, 0 left, about 0 s to go"
    half = TurnProgress(total=40, clock=lambda: now[0])
    now[0] += 50
    half.done = 10
    assert half.line() == f"{PREFIX} 10 of 40 done, 30 left, about 2 min to go"  # 150 s


def test_a_backfill_run_reports_the_summarisings_progress_lines() -> None:
    @asset(**daily_assets("summarize"))
    def reads_turns(context) -> None:  # unannotated: Dagster reads it, a mere string under postponed annotations
        context.log.info("not progress")
        context.log.info(f"{PREFIX} 1 of 2 done, 1 left, about 3 s to go")
        context.log.info(f"{PREFIX} 2 of 2 done, 0 left, about 0 s to go")

    definitions = Definitions(assets=[reads_turns], jobs=[define_asset_job(JOB, selection=[reads_turns])])
    heard: list[str] = []
    steps: list[tuple[int, int]] = []
    result = run_backfill(
        instance_with_days(["2026-01-01", "2026-01-02"]),
        "2026-01-01",
        "2026-01-02",
        definitions=definitions,
        on_step=lambda done, total: steps.append((done, total)),
        on_turns=heard.append,
        log_level="WARNING",
    )
    assert result.success
    assert heard and heard[-1] == f"{PREFIX} 2 of 2 done, 0 left, about 0 s to go"
    assert all(line.startswith(PREFIX) for line in heard) and steps[-1] == (1, 1)
