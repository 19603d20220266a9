"""The journal of LLM work: each turn's outcome, written the moment it is known.

`memory-summary` and its ledger are written once a whole run's turns are read;
a crash before that (the chat server killed, the machine stopped) would throw
away every finished turn. So each outcome is also appended here as it
completes, one JSON line per turn in a file per day, flushed and synced. The
next run takes a turn from the journal when its content, prompt version and
model are the same, and asks the LLM only for the rest: a crash loses at most
the turns in flight.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from memory_pipeline.names import safe_name
from memory_pipeline.stores.summary_store import TurnRecord
from memory_pipeline.summarize.extract import TurnOutcome


class JournalEntry(TurnRecord):
    """One turn's outcome, as the journal keeps it: its ideas (plain dicts, the fields of `Idea`) and what
    reading it cost."""

    ideas: list[dict]
    llm_calls: int
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    generation_seconds: float

    @classmethod
    def of(
        cls, outcome: TurnOutcome, partition: str, content_hash: str, prompt_version: str, model: str
    ) -> JournalEntry:
        return cls(
            partition=partition,
            session_id=outcome.session_id,
            turn_id=outcome.turn_id,
            content_hash=content_hash,
            prompt_version=prompt_version,
            model=model,
            status=outcome.status,
            reason=outcome.reason,
            ideas=[i.model_dump(mode="json") for i in outcome.ideas],
            summarized_at=outcome.summarized_at,
            llm_calls=outcome.attempts,
            seconds=outcome.seconds,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            generation_seconds=outcome.generation_seconds,
        )


class TurnJournal:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()  # turns complete on several threads with concurrency > 1

    def _path(self, partition: str) -> Path:
        return self.folder / f"{safe_name(partition)}.jsonl"

    def record(self, entry: JournalEntry) -> None:
        """Append one outcome durably (a line, flushed and synced) before anything else happens."""
        self.folder.mkdir(parents=True, exist_ok=True)
        line = entry.model_dump_json() + "\n"
        with self._lock, self._path(entry.partition).open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def read(self, partitions: Iterable[str]) -> dict[tuple[str, str], JournalEntry]:
        """The latest entry per turn of these days; a torn last line (a crash mid-write) is ignored."""
        entries: dict[tuple[str, str], JournalEntry] = {}
        for partition in partitions:
            path = self._path(partition)
            if not path.exists():
                continue
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = JournalEntry.model_validate(json.loads(line))
                except (json.JSONDecodeError, ValidationError):
                    continue
                entries[(entry.session_id, entry.turn_id)] = entry
        return entries

    def compact(self, partition: str, keep: Iterable[JournalEntry]) -> None:
        """Rewrite a day's file with only `keep` (the current turns' latest outcomes), atomically."""
        keep = list(keep)
        path = self._path(partition)
        if not keep:
            path.unlink(missing_ok=True)
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(e.model_dump_json() + "\n" for e in keep), encoding="utf-8")
        tmp.replace(path)
