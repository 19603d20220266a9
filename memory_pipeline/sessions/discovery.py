"""Finding session files: recursive, identified by their header, cheap to repeat.

pi nests files per working directory (`--<cwd>--/<time>_<id>.jsonl`), custom
session dirs are flat, and imports keep arbitrary names: so every `*.jsonl` is
opened and its first line decides. Only the first line is read here; stat data
(size, mtime) lets callers skip fingerprinting files that did not change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.names import safe_id
from memory_pipeline.sessions.parse import Problem, parse_timestamp, read_header
from memory_pipeline.sessions.redact import masked_project


@dataclass(frozen=True)
class FoundFile:
    path: Path
    relative_path: str
    session_id: str
    started_at_iso: str
    partition: str  # the session's start day, UTC
    project: str
    size: int
    mtime_ns: int


def scan_sessions(root: Path) -> tuple[list[FoundFile], list[Problem]]:
    """Every session file under `root` (sorted by path), and the files that are not sessions."""
    found: list[FoundFile] = []
    problems: list[Problem] = []
    if not root.exists():
        return found, [Problem(str(root), None, "missing directory", "the sessions directory does not exist")]
    for path in session_paths(root, problems):
        relative = str(path.relative_to(root))
        try:
            stat = path.stat()
            header = read_header(path)
            started = parse_timestamp(header.timestamp)
        except (OSError, ValueError) as exc:
            problems.append(Problem(relative, 1, "not a session file", str(exc)))
            continue
        found.append(
            FoundFile(
                path=path,
                relative_path=relative,
                session_id=safe_id(header.id),
                started_at_iso=started.isoformat(),
                partition=started.date().isoformat(),
                project=masked_project(header.cwd),
                size=stat.st_size,
                mtime_ns=stat.st_mtime_ns,
            )
        )
    return _one_file_per_session(found, problems)


def session_paths(root: Path, problems: list[Problem]) -> list[Path]:
    """Every `*.jsonl` below `root`, following linked folders once each; links that lead nowhere or in a
    circle, and names that are not regular files, are problems, never silent."""
    paths: list[Path] = []
    seen_dirs: set[tuple[int, int]] = set()

    def on_error(exc: OSError) -> None:
        where = Path(exc.filename).relative_to(root) if exc.filename else root
        problems.append(Problem(str(where), None, "unreadable folder", exc.strerror or str(exc)))

    for folder, dirs, files in os.walk(root, followlinks=True, onerror=on_error):
        here = Path(folder)
        try:
            stat = here.stat()
        except OSError:
            continue
        if (stat.st_dev, stat.st_ino) in seen_dirs:
            problems.append(Problem(str(here.relative_to(root)), None, "symlink loop", "folder already scanned"))
            dirs[:] = []
            continue
        seen_dirs.add((stat.st_dev, stat.st_ino))
        dirs.sort()
        for name in sorted(files):
            if not name.endswith(".jsonl"):
                continue
            path = here / name
            if path.is_file():
                paths.append(path)
            elif path.is_symlink():
                problems.append(Problem(str(path.relative_to(root)), None, "broken or looping symlink", "skipped"))
            else:
                problems.append(Problem(str(path.relative_to(root)), None, "not a regular file", "skipped"))
    return sorted(paths)


def _one_file_per_session(found: list[FoundFile], problems: list[Problem]) -> tuple[list[FoundFile], list[Problem]]:
    """Copies of a session (a backup, an import) share its id: keep the largest, newest one."""
    best: dict[str, FoundFile] = {}
    for item in found:
        current = best.get(item.session_id)
        if current is None or (item.size, item.mtime_ns) > (current.size, current.mtime_ns):
            best[item.session_id] = item
    for item in found:
        keeper = best[item.session_id]
        if item is not keeper:
            problems.append(
                Problem(
                    item.relative_path,
                    1,
                    "duplicate session id",
                    f"{item.session_id} is also in {keeper.relative_path}, which is kept",
                )
            )
    kept = [f for f in found if best[f.session_id] is f]
    return kept, problems


def file_stat(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns
