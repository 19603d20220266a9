"""How far the reading of a day's turns is: turns done, turns left and an estimate of the time left.

Reading turns with the chat model is most of a backfill's time (seconds a turn on two cores), so a step bar
alone says nothing for an hour. `llm_ideas` logs `TurnProgress.line()` as turns finish, every `EVERY_SECONDS` at
most and at the last turn; `memory-pipeline backfill` shows the newest such line (they start with `PREFIX`) beside
its bar. Counts and times only: never a turn's text.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

PREFIX = "turns:"
EVERY_SECONDS = 10.0


def seconds_left(done: int, total: int, elapsed: float) -> float | None:
    """The time the `total - done` turns left should take at the pace so far (`elapsed` seconds for `done`
    turns, however many ran at once); None before the first turn has finished, 0 when none is left."""
    if done >= total:
        return 0.0
    if done <= 0 or elapsed <= 0:
        return None
    return (total - done) * elapsed / done


def duration(seconds: float | None) -> str:
    """`seconds` for a person: "unknown yet", "40 s", "12 min", "2 h 05 min"."""
    if seconds is None:
        return "unknown yet"
    if round(seconds) < 60:
        return f"{round(seconds)} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


@dataclass
class TurnProgress:
    total: int
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    started: float = field(init=False)
    said: float | None = field(init=False, default=None)  # when the last line was due

    def __post_init__(self) -> None:
        self.started = self.clock()

    def finished_one(self) -> bool:
        """Count a finished turn; whether a line is due (the first turn, every `EVERY_SECONDS`, the last)."""
        self.done += 1
        now = self.clock()
        if self.said is None or now - self.said >= EVERY_SECONDS or self.done >= self.total:
            self.said = now
            return True
        return False

    def line(self) -> str:
        left = max(self.total - self.done, 0)
        eta = seconds_left(self.done, self.total, self.clock() - self.started)
        return f"{PREFIX} {self.done} of {self.total} done, {left} left, about {duration(eta)} to go"
