"""Projects and folders a person keeps out of the memory (`MEMORY_EXCLUDE`): their sessions are never read.

A pattern is a folder (`~/clients/acme`: that project and every project below it) or a glob over the project's
path (`/work/secret-*`). A project is a session's working directory, as stored (`masked_project`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from fnmatch import fnmatchcase

_GLOB = frozenset("*?[")


def _normal(path: str) -> str:
    return os.path.normpath(os.path.expanduser(path)) if path else path


def excluded(project: str | None, patterns: Iterable[str]) -> bool:
    """Whether `project` is one of `patterns`' folders, below one, or matches one's glob."""
    if not project:
        return False
    path = _normal(project)
    for pattern in patterns:
        wanted = _normal(pattern.strip())
        if not wanted:
            continue
        if _GLOB & set(wanted):
            if fnmatchcase(path, wanted) or fnmatchcase(path, wanted.rstrip("/") + "/*"):
                return True
        elif path == wanted or path.startswith(wanted.rstrip("/") + "/"):
            return True
    return False
