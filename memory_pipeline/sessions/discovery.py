"""Finding session files: recursive, identified by their header, cheap to repeat.

pi nests files per working directory (`--<cwd>--/<time>_<id>.jsonl`), Claude Code
per project (`<slug>/<id>.jsonl`, sub-agents below), Codex per day
(`YYYY/MM/DD/rollout-*.jsonl`), custom session dirs are flat, and imports keep
arbitrary names: so every `*.jsonl` (and Gemini CLI's older `session-*.json`)
under each agent's folder is opened and its
first lines decide which agent wrote it (`sessions.sources`). Only the top of a
file is read here; stat data (size, mtime) lets callers skip fingerprinting
files that did not change.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.names import safe_id
from memory_pipeline.sessions.parse import Problem, parse_timestamp
from memory_pipeline.sessions.redact import masked_project
from memory_pipeline.sessions.sources import read_header


@dataclass(frozen=True)
class SessionRoot:
    """A folder of session files: pi's (`SESSIONS_DIR`, which must exist) or another agent's (read when it
    exists). `prefix` goes before the relative paths of its files, so two folders never give one name."""

    path: Path
    prefix: str = ""
    required: bool = True

    def relative(self, path: Path) -> str:
        return self.prefix + str(path.relative_to(self.path))


Roots = Path | Sequence[SessionRoot]


def agent_roots(
    sessions_dir: Path, claude_dir: Path | None, codex_dir: Path | None, gemini_dir: Path | None = None
) -> list[SessionRoot]:
    """pi's folder, then Claude Code's, Codex's and Gemini CLI's when they are set (each read when it exists)."""
    roots = [SessionRoot(sessions_dir)]
    for prefix, folder in (("claude-code/", claude_dir), ("codex/", codex_dir), ("gemini-cli/", gemini_dir)):
        if folder is not None and folder.resolve() != sessions_dir.resolve():
            roots.append(SessionRoot(folder, prefix, required=False))
    return roots


def as_roots(roots: Roots) -> list[SessionRoot]:
    return [SessionRoot(roots)] if isinstance(roots, Path) else list(roots)


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
    agent: str = "pi"
    folder: str = ""  # the configured folder it was found under (a memory outlives that folder's setting)


def scan_sessions(roots: Roots) -> tuple[list[FoundFile], list[Problem]]:
    """Every session file under the roots (sorted by path within each), and the files that are not
    sessions. A root that must exist and does not is a problem; one that may, and does not, is skipped."""
    found: list[FoundFile] = []
    problems: list[Problem] = []
    for root in as_roots(roots):
        if not root.path.exists():
            if root.required:
                problems.append(
                    Problem(str(root.path), None, "missing directory", "the sessions directory does not exist")
                )
            continue
        for path in session_paths(root.path, problems, root.prefix):
            relative = root.relative(path)
            try:
                stat = path.stat()
                agent, header = read_header(path)
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
                    agent=agent,
                    folder=str(root.path),
                )
            )
    return _one_file_per_session(found, problems)


def session_paths(root: Path, problems: list[Problem], prefix: str = "") -> list[Path]:
    """Every `*.jsonl` below `root`, following linked folders once each; links that lead nowhere or in a
    circle, and names that are not regular files, are problems (named `prefix` + relative path), never
    silent."""
    paths: list[Path] = []
    seen_dirs: set[tuple[int, int]] = set()

    def on_error(exc: OSError) -> None:
        where = Path(exc.filename).relative_to(root) if exc.filename else root
        problems.append(Problem(prefix + str(where), None, "unreadable folder", exc.strerror or str(exc)))

    for folder, dirs, files in os.walk(root, followlinks=True, onerror=on_error):
        here = Path(folder)
        try:
            stat = here.stat()
        except OSError:
            continue
        if (stat.st_dev, stat.st_ino) in seen_dirs:
            problems.append(
                Problem(prefix + str(here.relative_to(root)), None, "symlink loop", "folder already scanned")
            )
            dirs[:] = []
            continue
        seen_dirs.add((stat.st_dev, stat.st_ino))
        dirs.sort()
        for name in sorted(files):
            # Gemini CLI's chats before 2026 are single JSON documents named `session-….json`.
            if not name.endswith(".jsonl") and not (name.startswith("session-") and name.endswith(".json")):
                continue
            path = here / name
            if path.is_file():
                paths.append(path)
            elif path.is_symlink():
                problems.append(
                    Problem(prefix + str(path.relative_to(root)), None, "broken or looping symlink", "skipped")
                )
            else:
                problems.append(Problem(prefix + str(path.relative_to(root)), None, "not a regular file", "skipped"))
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
