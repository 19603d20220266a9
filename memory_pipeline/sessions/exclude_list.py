"""The exclusions a person adds from the browser or `memory-pipeline exclude add`, kept in `<state>/exclusions.json`,
and the one list every reader applies: `MEMORY_EXCLUDE`'s patterns, then the file's (`exclusion_patterns`).

The pipeline's ingest, `purge-excluded`, the CLI and the browser all read the patterns through this module, so
they agree on what is kept out. A pattern is what `MEMORY_EXCLUDE` takes (a folder or a glob: `sessions/exclude.py`).
The file is read at each use (a run started after an addition applies it) and replaced whole, never half-written;
a file that cannot be read stops the reader with its name: guessing "no exclusions" would ingest what a person
kept out.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory_pipeline.settings import Settings

FILE_NAME = "exclusions.json"
MAX_PATTERN = 1000


class ExclusionsFileError(ValueError):
    """The exclusions file is not one this module wrote: its path and what is wrong, and what to do."""


class Exclusion(BaseModel):
    """One project or folder a person keeps out, and when it was added."""

    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(min_length=1, max_length=MAX_PATTERN)
    added_at: str = Field(description="ISO time (UTC) it was added.")


class Exclusions(BaseModel):
    """The file's content: the person's exclusions in the order they were added."""

    model_config = ConfigDict(extra="forbid")

    exclusions: list[Exclusion] = Field(default_factory=list)

    @property
    def patterns(self) -> list[str]:
        return [e.pattern for e in self.exclusions]


def exclusions_path(settings: Settings) -> Path:
    return settings.memory_pipeline_state_dir / FILE_NAME


def read_exclusions(path: Path) -> Exclusions:
    """The file's exclusions (none when there is no file); `ExclusionsFileError` naming the file when it is
    torn or not this shape."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Exclusions()
    except (OSError, UnicodeDecodeError) as exc:
        raise ExclusionsFileError(f"{path}: cannot be read ({exc})") from None
    try:
        return Exclusions.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        # A torn file's message names the line and column ("Invalid JSON: EOF while parsing ... at line 3").
        raise ExclusionsFileError(
            f"{path}: not a list of exclusions ({where}: {first['msg']}); fix it (its patterns are kept "
            f"there) or move it away, then add them again"
        ) from None


def _write(path: Path, exclusions: Exclusions) -> None:
    """Whole or not at all: a reader sees the old file or the new one, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(exclusions.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    os.replace(partial, path)


@contextmanager
def _changing(path: Path) -> Iterator[Exclusions]:
    """The file's exclusions to change in place, written back after; one change at a time (the browser and the
    CLI may add at once). A torn file raises before anything is written: its patterns stay for the person."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        exclusions = read_exclusions(path)
        yield exclusions
        _write(path, exclusions)


def clean_pattern(pattern: str) -> str:
    """A pattern as it is kept: stripped; ValueError for an empty one or one over `MAX_PATTERN` characters."""
    cleaned = pattern.strip()
    if not cleaned:
        raise ValueError("name a project folder (/work/acme, ~/clients/acme) or a glob (/work/secret-*)")
    if len(cleaned) > MAX_PATTERN or "\n" in cleaned:
        raise ValueError(f"a pattern is one line of at most {MAX_PATTERN} characters")
    return cleaned


def add_exclusion(path: Path, pattern: str) -> bool:
    """Keeps `pattern` out from now on; False when the file had it already."""
    cleaned = clean_pattern(pattern)
    with _changing(path) as exclusions:
        if cleaned in exclusions.patterns:
            return False
        exclusions.exclusions.append(Exclusion(pattern=cleaned, added_at=datetime.now(UTC).isoformat()))
    return True


def remove_exclusion(path: Path, pattern: str) -> bool:
    """Reads `pattern`'s projects again from the next run; False when the file did not have it."""
    cleaned = pattern.strip()
    with _changing(path) as exclusions:
        kept = [e for e in exclusions.exclusions if e.pattern != cleaned]
        found = len(kept) < len(exclusions.exclusions)
        exclusions.exclusions = kept
    return found


def merged_patterns(configured: list[str], path: Path | None) -> list[str]:
    """`configured` (MEMORY_EXCLUDE), then the file's patterns it does not have already."""
    added = read_exclusions(path).patterns if path else []
    return [*configured, *(p for p in added if p not in configured)]


def exclusion_patterns(settings: Settings) -> list[str]:
    """Every pattern that keeps a project out: MEMORY_EXCLUDE's and the person's (`<state>/exclusions.json`)."""
    return merged_patterns(settings.memory_exclude, exclusions_path(settings))
