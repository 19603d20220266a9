"""One run per session day at a time, whoever starts it (the sensor, the UI, the CLI, a test).

Dagster's run queue serialises the runs it launches, but a command-line run executes in its own process,
outside the queue. So every run holds an exclusive lock per day it covers (`<state>/locks/<day>.lock`, flock)
from its first step to its last: a second run of the same day waits, then finds the first one's work done
(the ledger, the journal), instead of reading its half-written intermediate files and asking the LLM again.
Locks are taken in day order, so two runs over overlapping ranges cannot deadlock; a crashed run's lock goes
with its process.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from memory_pipeline.names import safe_id


class DayBusy(RuntimeError):
    """Another run held a day longer than this run would wait."""


@contextmanager
def _lock(path: Path, holder: str, wait_seconds: float, on_wait: Callable[[str], None]) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline, told = time.monotonic() + wait_seconds, False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    on_wait(f"{path.stem} is being run by {path.read_text().strip() or 'another run'}: waiting")
                    told = True
                if time.monotonic() > deadline:
                    raise DayBusy(f"{path.stem} stayed busy for {wait_seconds:.0f} s ({path})") from None
                time.sleep(0.5)
        os.ftruncate(fd, 0)
        os.write(fd, holder.encode())
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


def day_held(folder: Path, day: str) -> bool:
    """Whether a run holds `day` right now (its lock taken): a look, never a wait."""
    path = folder / f"{safe_id(day)}.lock"
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
    folder: Path, days: list[str], holder: str, wait_seconds: float = 3600, on_wait: Callable[[str], None] = print
) -> Iterator[None]:
    """Hold every day of `days` (in day order) for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        for day in sorted(set(days)):
            stack.enter_context(_lock(folder / f"{safe_id(day)}.lock", holder, wait_seconds, on_wait))
        yield


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
