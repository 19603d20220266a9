"""The service's queue of days to ingest at once: one run at a time, notices coalesced, failures retried.

A turn's end is a notice for its file's day. Notices for a day that is queued join it; a notice for the day
being run marks it to run once more after (the run may have read the file before the newest turn). A day that
another run holds (the sensor's, a backfill) waits for it: its own run reads what the other one left. A failed
run is tried again, then reported with its error; a day reported failed is tried once more later, less often each
time (a server that was down is back: the turns it could not index become searchable without a new notice).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

State = Literal["queued", "waiting", "running", "done", "failed"]
RunDay = Callable[[str], tuple[str, bool]]  # a day -> (run id, success)
ATTEMPTS = 3  # runs of a day before it is reported failed
RETRY_SECONDS = 2.0  # between attempts, and between looks at a day another run holds
RECOVER_SECONDS = 30.0  # a failed day's next try, doubled after each failed try
MAX_RECOVER_SECONDS = 900.0


@dataclass
class DayIngest:
    """What the service did with a day's notices: the state a client (the tests, the bench) reads."""

    day: str
    state: State = "queued"
    files: list[str] = field(default_factory=list)
    notices: int = 0
    requested_at: float = 0.0  # the first notice not yet run (epoch seconds)
    started_at: float | None = None
    finished_at: float | None = None
    run_id: str | None = None
    seconds: float | None = None  # how long the last run took
    runs: int = 0  # successful runs of the day so far
    error: str | None = None
    retry_at: float | None = None  # a failed day's next try (epoch seconds)
    again: bool = field(default=False, repr=False)  # noticed while running: run once more
    attempts: int = field(default=0, repr=False)
    not_before: float = field(default=0.0, repr=False)  # monotonic time of the next look
    recoveries: int = field(default=0, repr=False)  # later tries of a failed day so far

    def public(self) -> dict[str, Any]:
        hidden = ("again", "attempts", "not_before", "recoveries")
        return {k: v for k, v in asdict(self).items() if k not in hidden}

    @property
    def due(self) -> bool:
        """Waiting for its turn: queued, waiting for another run, or failed with a later try planned."""
        return self.state in ("queued", "waiting") or (self.state == "failed" and self.retry_at is not None)


class FreshIngest:
    """Days to run now, on one worker thread. `run_day` runs a day (the LLM-free assets); `busy` says whether
    another run holds it."""

    def __init__(
        self,
        run_day: RunDay,
        busy: Callable[[str], bool],
        retry_seconds: float = RETRY_SECONDS,
        recover_seconds: float = RECOVER_SECONDS,
    ) -> None:
        self._run_day, self._busy, self._retry, self._recover = run_day, busy, retry_seconds, recover_seconds
        self._days: dict[str, DayIngest] = {}
        self._changed = threading.Condition()
        self._closed = False
        self._worker: threading.Thread | None = None

    def notify(self, day: str, file: str) -> dict[str, Any]:
        """A file of `day` changed: run the day as soon as possible. Returns the day's state."""
        with self._changed:
            entry = self._days.setdefault(day, DayIngest(day))
            entry.notices += 1
            if file not in entry.files:
                entry.files.append(file)
            if entry.state == "running":
                entry.again = True
            elif entry.state not in ("queued", "waiting"):
                entry.state, entry.error, entry.attempts, entry.not_before = "queued", None, 0, 0.0
                entry.recoveries, entry.retry_at = 0, None
                entry.requested_at = time.time()
            if entry.requested_at == 0.0:
                entry.requested_at = time.time()
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="fresh-ingest", daemon=True)
                self._worker.start()
            self._changed.notify_all()
            return entry.public()

    def status(self) -> list[dict[str, Any]]:
        with self._changed:
            return [self._days[d].public() for d in sorted(self._days)]

    def close(self, timeout: float = 30.0) -> None:
        """Stop taking days; wait for the run under way (a run cut short would be retried by the next one)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._worker is not None:
            self._worker.join(timeout)

    def _next(self) -> DayIngest | None:
        """The day to look at now (oldest notice first), waiting until there is one; None once closed."""
        with self._changed:
            while not self._closed:
                now = time.monotonic()
                ready = [d for d in self._days.values() if d.due and d.not_before <= now]
                if ready:
                    return min(ready, key=lambda d: d.requested_at)
                later = [d.not_before - now for d in self._days.values() if d.due]
                self._changed.wait(min(later) if later else None)
            return None

    def _work(self) -> None:
        while (entry := self._next()) is not None:
            if self._busy(entry.day):
                with self._changed:
                    entry.state, entry.not_before = "waiting", time.monotonic() + self._retry
                continue
            with self._changed:
                entry.state, entry.again, entry.started_at = "running", False, time.time()
                entry.attempts += 1
            try:
                run_id, success = self._run_day(entry.day)
                error = None if success else f"run {run_id} failed (see it in the Dagster UI)"
            except Exception as exc:  # noqa: BLE001 - whatever stops a run is reported, never lost
                run_id, success, error = entry.run_id, False, f"{type(exc).__name__}: {exc}"
            with self._changed:
                entry.run_id, entry.finished_at = run_id, time.time()
                entry.seconds = round(entry.finished_at - (entry.started_at or entry.finished_at), 3)
                entry.retry_at = None
                if success:
                    entry.runs += 1
                    entry.error, entry.attempts, entry.recoveries = None, 0, 0
                    entry.state = "queued" if entry.again else "done"
                    entry.requested_at = time.time() if entry.again else 0.0
                elif entry.attempts < ATTEMPTS:
                    entry.state, entry.error = "queued", error
                    entry.not_before = time.monotonic() + self._retry * entry.attempts
                else:
                    entry.state, entry.error = "failed", error
                    # Tried again later (one attempt each time), less often after each failure.
                    wait = min(self._recover * 2**entry.recoveries, MAX_RECOVER_SECONDS)
                    entry.recoveries, entry.attempts = entry.recoveries + 1, ATTEMPTS - 1
                    entry.not_before, entry.retry_at = time.monotonic() + wait, time.time() + wait
                    if entry.again:  # a notice came during the last attempt: it deserves its own tries
                        entry.state, entry.attempts, entry.retry_at, entry.not_before = "queued", 0, None, 0.0
                entry.again = False
