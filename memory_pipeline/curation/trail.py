"""The corrections trail: `<workspace>/corrections.jsonl`, one line per change, appended and never rewritten.

A plain file beside MEMORY.md: a person can read who changed what and when, and the pipeline applies it even
when Elasticsearch is down (the daily logs are written before anything is indexed)."""

from __future__ import annotations

import os
from pathlib import Path

from memory_pipeline.curation.corrections import Correction, in_force

TRAIL = "corrections.jsonl"


def trail_path(workspace: Path) -> Path:
    return workspace / TRAIL


def record(workspace: Path, correction: Correction) -> None:
    """Append `correction` (one write of one line, flushed to disk before the change is made)."""
    workspace.mkdir(parents=True, exist_ok=True)
    line = (correction.model_dump_json() + "\n").encode()
    # Owner-only: the trail says what a person chose to forget (as hashes) and the text of their edits.
    fd = os.open(trail_path(workspace), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a trail made before this rule was readable by every local user
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_corrections(workspace: Path, memory_id: str | None = None) -> list[Correction]:
    """The trail, oldest first: of one memory, every line (its history, undos included), when `memory_id` is
    given; else the corrections in force (`in_force`: an undone forget no longer applies). A torn last line is
    skipped."""
    path = trail_path(workspace)
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            correction = Correction.model_validate_json(line)
        except ValueError:
            continue  # a line cut by a crash mid-write: the change it announced was never made
        if memory_id is None or correction.memory_id == memory_id:
            found.append(correction)
    return sorted(found, key=lambda c: c.at) if memory_id is not None else in_force(found)
