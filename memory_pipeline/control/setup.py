"""Applying an agent's set-up and restoring its files as they were.

`install` keeps, beside each file it changes, a copy of the file as it was (`<file>.memory-pipeline-backup`,
readable by its owner only: an agent's config may hold its own keys, so no copy goes to the memory's state),
and records in the state folder only the path, whether it existed, the folders it made and a hash of what it
wrote. `uninstall` puts back the copy when the file is still what install wrote (byte for byte as before), and
otherwise, when the agent or a person changed it since, takes out only the entries install added.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import BaseModel

from memory_pipeline.control.agents import Agent, Edit, Place, plan

BACKUP_SUFFIX = ".memory-pipeline-backup"


class Changed(BaseModel):
    path: str
    existed: bool
    after_sha256: str
    made_dirs: list[str] = []


class Record(BaseModel):
    agent: str
    files: list[Changed] = []


def _sha(text: str | bytes | None) -> str:
    data = text.encode() if isinstance(text, str) else (text or b"")
    return hashlib.sha256(data).hexdigest()


def _record_path(record_dir: Path, agent: Agent) -> Path:
    return record_dir / f"install-{agent}.json"


def _backup(path: Path) -> Path:
    return path.with_name(path.name + BACKUP_SUFFIX)


def _write(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
        return
    temporary = path.with_name(path.name + ".memory-pipeline-tmp")
    temporary.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(temporary, path.stat().st_mode & 0o7777)
    temporary.replace(path)


def _made_dirs(path: Path) -> list[str]:
    """The folders above `path` that do not exist yet, deepest first (so they are removed in that order)."""
    missing = []
    for parent in path.parents:
        if parent.exists():
            break
        missing.append(str(parent))
    return missing


def install(agent: Agent, place: Place, record_dir: Path) -> list[str]:
    """Sets `agent` up; what changed, one line per file (empty: set up already)."""
    edits = plan(agent, place)
    record_file = _record_path(record_dir, agent)
    record = Record.model_validate_json(record_file.read_text()) if record_file.exists() else Record(agent=agent)
    known = {c.path: c for c in record.files}
    lines = []
    for edit in edits:
        made = _made_dirs(edit.path)
        edit.path.parent.mkdir(parents=True, exist_ok=True)
        if str(edit.path) not in known:  # the first change: keep the file as it was
            if edit.before is not None:
                backup = _backup(edit.path)
                backup.write_bytes(edit.path.read_bytes())
                os.chmod(backup, 0o600)
            known[str(edit.path)] = Changed(path=str(edit.path), existed=edit.before is not None, after_sha256="")
            known[str(edit.path)].made_dirs = made
        _write(edit.path, edit.after)
        known[str(edit.path)].after_sha256 = _sha(edit.after)
        lines.append(f"{edit.path}: {edit.what}")
    if edits:
        record.files = list(known.values())
        record_dir.mkdir(parents=True, exist_ok=True)
        record_file.write_text(record.model_dump_json(indent=2))
    return lines


def uninstall(agent: Agent, place: Place, record_dir: Path) -> list[str]:
    """Undoes `install`: each file as it was when untouched since, else only our entries taken out."""
    record_file = _record_path(record_dir, agent)
    record = Record.model_validate_json(record_file.read_text()) if record_file.exists() else Record(agent=agent)
    lines = []
    restored: set[str] = set()
    made: list[str] = []
    for changed in record.files:
        path = Path(changed.path)
        backup = _backup(path)
        current = path.read_bytes() if path.exists() else None
        if current is not None and _sha(current) == changed.after_sha256:
            if changed.existed and backup.exists():
                backup.replace(path)
            elif not changed.existed:
                path.unlink()
            made += changed.made_dirs
            lines.append(f"{path}: restored as it was before install")
            restored.add(changed.path)
        else:
            backup.unlink(missing_ok=True)
    # Files changed since install (or set up by hand): only the entries install adds are taken out.
    for edit in plan(agent, place, remove=True):
        if str(edit.path) in restored:
            continue
        _apply(edit)
        lines.append(f"{edit.path}: {edit.what} (the file changed since install: the rest is kept)")
    for folder in sorted(made, key=lambda f: -len(Path(f).parts)):  # deepest first
        if Path(folder).is_dir() and not any(Path(folder).iterdir()):
            Path(folder).rmdir()
    record_file.unlink(missing_ok=True)
    return lines


def _apply(edit: Edit) -> None:
    _write(edit.path, edit.after)
