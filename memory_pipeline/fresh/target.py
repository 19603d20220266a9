"""Which session day a notified file belongs to, and whether the service may read it at all."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.sessions.parse import parse_timestamp
from memory_pipeline.sessions.sources import read_header


class NotASession(ValueError):
    """A notified path the service will not ingest, and why."""


def session_day(path: Path, root: Path | list[Path]) -> str:
    """The day (partition) of the session file at `path`, which must be a `.jsonl` file (or a Gemini CLI
    `session-*.json`) under `root`, the folders the pipeline reads (pi's, and the other agents'): a local client
    cannot make the service read anything else."""
    roots = [root] if isinstance(root, Path) else root
    try:
        resolved = path.resolve(strict=True)
    except OSError as exc:
        raise NotASession(f"{path}: {exc.strerror or exc}") from None
    bases = [r.resolve() for r in roots if r.exists()]
    readable = resolved.suffix == ".jsonl" or (resolved.suffix == ".json" and resolved.name.startswith("session-"))
    if not any(resolved.is_relative_to(b) for b in bases) or not readable or not resolved.is_file():
        folders = ", ".join(map(str, roots))
        raise NotASession(f"{path}: not a session file under SESSIONS_DIR or another agent's folder ({folders})")
    try:
        return parse_timestamp(read_header(resolved)[1].timestamp).date().isoformat()
    except (OSError, ValueError) as exc:
        raise NotASession(f"{path}:1: not a session file: {exc}") from None
