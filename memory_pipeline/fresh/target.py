"""Which session day a notified file belongs to, and whether the service may read it at all."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.sessions.parse import parse_timestamp, read_header


class NotASession(ValueError):
    """A notified path the service will not ingest, and why."""


def session_day(path: Path, root: Path) -> str:
    """The day (partition) of the session file at `path`, which must be a `.jsonl` file under `root` (the
    sessions folder the pipeline reads): a local client cannot make the service read anything else."""
    try:
        resolved, base = path.resolve(strict=True), root.resolve(strict=True)
    except OSError as exc:
        raise NotASession(f"{path}: {exc.strerror or exc}") from None
    if not resolved.is_relative_to(base) or resolved.suffix != ".jsonl" or not resolved.is_file():
        raise NotASession(f"{path}: not a session file under SESSIONS_DIR={root}")
    try:
        return parse_timestamp(read_header(resolved).timestamp).date().isoformat()
    except (OSError, ValueError) as exc:
        raise NotASession(f"{path}:1: not a session file: {exc}") from None
