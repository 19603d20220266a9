"""One run of a kind per session day at a time, whoever starts it (the sensor, the UI, the CLI, the service's
fast path, a test).

Dagster's run queue serialises the runs it launches, but a command-line run (and the service's fast path)
executes in its own process, outside the queue. So a run holds exclusive locks (flock) per day it covers, of
two kinds:
- `ingest` (`<state>/locks/<day>.lock`): the LLM-free work every run does (session files, messages, turns,
  `memory-raw`, observations, vectors). A fast (LLM-free) run holds it from its first step to its last; an LLM
  run holds it too, except while it waits for the chat model (`DayHold.letting_go`).
- `llm` (`<day>.llm.lock`): held by a run with the chat model from its first step to its last.

So a second run of the same kind waits, then finds the first one's work done (the manifest, the journal),
instead of reading its half-written intermediate files and asking the LLM again; and a fast run of a day
indexes a new turn while the day's LLM run is summarising it, rather than after. Both kinds write the LLM-free
outputs only under the ingest lock, so they never interleave. Locks are taken in one order (the `llm` locks
before the `ingest` ones, each in day order), so runs over overlapping ranges cannot deadlock; a crashed run's
locks go with its process.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Literal

from memory_pipeline.names import safe_id

Kind = Literal["ingest", "llm"]
INGEST: Kind = "ingest"  # the LLM-free work: fast runs, and LLM runs outside their chat-model calls
LLM: Kind = "llm"  # a run with the chat model, whole


def lock_path(folder: Path, day: str, kind: Kind = INGEST) -> Path:
    """The lock file of `day` for runs of `kind` (the ingest lock keeps the name every run used to share)."""
    return folder / (f"{safe_id(day)}.lock" if kind == INGEST else f"{safe_id(day)}.{kind}.lock")


class DayBusy(RuntimeError):
    """Another run held a day longer than this run would wait."""


@contextmanager
def _lock(path: Path, day: str, holder: str, wait_seconds: float, on_wait: Callable[[str], None]) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline, told = time.monotonic() + wait_seconds, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    on_wait(f"{day} is being run by {path.read_text().strip() or 'another run'}: waiting")
                    told = True
                if time.monotonic() > deadline:
                    raise DayBusy(f"{day} stayed busy for {wait_seconds:.0f} s ({path})") from None
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.write(fd, holder.encode())
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def day_held(folder: Path, day: str, kind: Kind = INGEST) -> bool:
    """Whether a run holds `day`'s lock of `kind` right now: a look, never a wait."""
    path = lock_path(folder, day, kind)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the lock this look took, if it took it


@contextmanager
def holding_days(
    folder: Path,
    days: list[str],
    holder: str,
    wait_seconds: float = 3600,
    on_wait: Callable[[str], None] = print,
    kind: Kind = INGEST,
) -> Iterator[None]:
    """Hold `kind`'s lock of every day of `days` (in day order) for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        for day in sorted(set(days)):
            stack.enter_context(_lock(lock_path(folder, day, kind), day, holder, wait_seconds, on_wait))
        yield


class DayHold:
    """A run's locks of its days: with the chat model, the `llm` locks for the whole block and the `ingest`
    locks except inside `letting_go`; without it, the `ingest` locks for the whole block."""

    def __init__(
        self,
        folder: Path,
        days: list[str],
        holder: str,
        with_llm: bool,
        wait_seconds: float = 3600,
        on_wait: Callable[[str], None] = print,
    ) -> None:
        self._take = lambda kind: holding_days(folder, days, holder, wait_seconds, on_wait, kind)
        self.with_llm = with_llm
        self._stack = ExitStack()
        self._ingest: ExitStack | None = None

    def __enter__(self) -> DayHold:
        try:
            if self.with_llm:
                self._stack.enter_context(self._take(LLM))
            self._ingest = ExitStack()
            self._ingest.enter_context(self._take(INGEST))
        except BaseException:
            self._stack.close()  # the LLM locks taken before a day stayed busy go back
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ingest is not None:
            self._ingest.close()
            self._ingest = None
        self._stack.close()

    @contextmanager
    def letting_go(self) -> Iterator[None]:
        """The block without the ingest locks (an LLM run's wait for the chat model): a fast run of these days
        goes ahead meanwhile; at the end the locks are taken again, after any fast run under way. A run without
        the chat model keeps them (it has no LLM work for a fast run to overtake)."""
        if not self.with_llm or self._ingest is None:
            yield
            return
        self._ingest.close()
        self._ingest = None
        try:
            yield
        finally:
            self._ingest = ExitStack()
            self._ingest.enter_context(self._take(INGEST))


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold `path`'s lock for the block, waiting as long as it takes (for short critical sections)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
