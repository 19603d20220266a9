"""The injection ledger: what each session was given from memory, when, and why (its start, a prompt, a file
read, a failing command), one JSON line per delivery in `<state>/injected/<session>.jsonl`.

A file per session rather than an index: the recall that must not repeat a line reads one small file, the
ledger is written when Elasticsearch is down too (the session then gets MEMORY.md's rules, and must not get
them again), and the CLI reads it without a service. Appends are serialised by a lock file; a line torn by a
crash is skipped on read and named (file and line), the others are kept. Every text recorded went through the
redactor first: no secret in clear on disk.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from memory_pipeline.locks import exclusive
from memory_pipeline.names import safe_id
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import Settings

Event = Literal["start", "prompt", "file", "error"]
MAX_TEXT = 500  # characters of the prompt, path or command kept with a delivery: enough to tell what asked


class InjectedLine(BaseModel):
    key: str = Field(description="The memory's id, or `MEMORY.md#…` for a rule written by hand.")
    text: str
    forgotten: bool = Field(False, description="The memory was forgotten since: its text is no longer kept here.")
    edited: bool = Field(False, description="A person edited the memory since: the text is theirs, not as given.")


class Injection(BaseModel):
    """One delivery to a session: the lines it was given and what it answered."""

    session_id: str
    agent: str
    event: Event
    project: str | None = None
    text: str = Field("", description="The prompt, the file's path or the command (redacted, clipped).")
    ids: list[str] = Field(default_factory=list, description="The memory ids of the lines, in order.")
    lines: list[InjectedLine] = Field(default_factory=list)
    tokens: int = 0
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class SessionLedger(BaseModel):
    """A session's deliveries, with the lines of its file that could not be read."""

    session_id: str
    injections: list[Injection]
    problems: list[str] = Field(default_factory=list)

    @property
    def given(self) -> set[str]:
        return {line.key for i in self.injections for line in i.lines}

    def answered(self, event: Event) -> set[str]:
        """The texts (as kept: `InjectionLedger.kept`) of this session's deliveries of `event`: a file's path
        there was recalled for the session already."""
        return {i.text for i in self.injections if i.event == event}


class SessionSummary(BaseModel):
    session_id: str
    deliveries: int
    lines: int
    tokens: int
    last: datetime | None


class InjectionLedger:
    def __init__(self, folder: Path, redactor: Redactor) -> None:
        self.folder = folder
        self.redactor = redactor

    def _path(self, session_id: str) -> Path:
        return self.folder / f"{safe_id(session_id)}.jsonl"

    def kept(self, text: str) -> str:
        """The prompt, path or command of a delivery as the ledger keeps it: clipped, redacted."""
        return self.redactor.redact(text[:MAX_TEXT])

    def record(self, injection: Injection) -> Injection:
        """Append `injection` (its texts redacted, the prompt clipped) to its session's file; returns what was kept."""
        clean = injection.model_copy(
            update={
                "text": self.kept(injection.text),
                "lines": [InjectedLine(key=x.key, text=self.redactor.redact(x.text)) for x in injection.lines],
            }
        )
        path = self._path(injection.session_id)
        with exclusive(self.folder / ".lock"), path.open("a+b") as handle:
            # A line a crash cut short ends without a newline: the next delivery starts its own line, not glued
            # to the torn one (which read then names and skips).
            torn = False
            if handle.seek(0, 2) > 0:
                handle.seek(-1, 2)
                torn = handle.read(1) != b"\n"
            handle.write((("\n" if torn else "") + clean.model_dump_json() + "\n").encode())
        return clean

    def read(self, session_id: str) -> SessionLedger:
        """Every delivery to `session_id`, oldest first (none for a session never given anything)."""
        path = self._path(session_id)
        injections, problems = _parsed(path)
        return SessionLedger(session_id=session_id, injections=injections, problems=problems)

    def forget(self, *memory_ids: str) -> int:
        """Blank the text of every line that gave one of `memory_ids` (marked `forgotten`): what a person forgets
        leaves the record of what sessions were given too, which keeps only that the memory was given. The
        number of lines blanked."""
        return self._follow(set(memory_ids), lambda x: InjectedLine(key=x.key, text="", forgotten=True))

    def edited(self, memory_id: str, text: str) -> int:
        """The person's new `text` (redacted) on every line that gave `memory_id`, marked `edited`: the record
        says what holds now, not what a person corrected. The number of lines changed."""
        clean = self.redactor.redact(text)
        return self._follow(
            {memory_id}, lambda x: x if x.forgotten else InjectedLine(key=x.key, text=clean, edited=True)
        )

    def _follow(self, memory_ids: set[str], change: Callable[[InjectedLine], InjectedLine]) -> int:
        """`change` every line that gave one of `memory_ids`; each file it touches is rewritten whole (a temporary file,
        then a rename) under the ledger's lock, and a line that cannot be read is kept as it is."""
        changed_lines = 0
        if not self.folder.is_dir():
            return 0
        with exclusive(self.folder / ".lock"):
            for path in sorted(self.folder.glob("*.jsonl")):
                kept, changed = [], 0
                for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                    try:
                        injection = Injection.model_validate_json(line)
                    except ValidationError:
                        kept.append(line)  # torn: `read` names it; it is not this change's to drop
                        continue
                    lines = [change(x) if x.key in memory_ids else x for x in injection.lines]
                    if lines == injection.lines:
                        kept.append(line)
                        continue
                    changed += sum(a != b for a, b in zip(lines, injection.lines, strict=True))
                    kept.append(injection.model_copy(update={"lines": lines}).model_dump_json())
                if changed:
                    temporary = path.with_suffix(".jsonl.tmp")
                    temporary.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")
                    temporary.replace(path)
                    changed_lines += changed
        return changed_lines

    def every(
        self,
        sessions: Collection[str] | None = None,
        projects: Collection[str] | None = None,
        since: datetime | None = None,
    ) -> tuple[list[Injection], list[str]]:
        """Every delivery to every session, and the lines that could not be read (file and line). With a filter,
        only the files that can matter are read whole: those of `sessions`, those whose first delivery is to one
        of `projects`, and those written since `since` (a delivery made since then is in one of them: the files
        only grow or are rewritten)."""
        injections: list[Injection] = []
        problems: list[str] = []
        filtered = sessions is not None or projects is not None or since is not None
        names = {f"{safe_id(s)}.jsonl" for s in sessions or ()}
        for path in sorted(self.folder.glob("*.jsonl")) if self.folder.is_dir() else []:
            if filtered and not (
                path.name in names
                or (since is not None and datetime.fromtimestamp(path.stat().st_mtime, UTC) >= since)
                or (projects and _first_project(path) in projects)
            ):
                continue
            found, bad = _parsed(path)
            injections += found
            problems += bad
        return injections, problems

    def sessions(self, limit: int = 50) -> list[SessionSummary]:
        """The sessions most recently given something, newest first."""
        if not self.folder.is_dir():
            return []
        files = sorted(self.folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)[:limit]
        summaries = []
        for path in files:
            injections, _ = _parsed(path)
            if injections:
                summaries.append(_summary(injections))
        return summaries


def _parsed(path: Path) -> tuple[list[Injection], list[str]]:
    if not path.exists():
        return [], []
    injections, problems = [], []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                injections.append(Injection.model_validate_json(line))
            except ValidationError as exc:
                # A line a crash cut short: the rest of the ledger still counts.
                problems.append(f"{path}:{number}: not a delivery ({exc.errors()[0]['msg']})")
    return injections, problems


def _first_project(path: Path) -> str | None:
    """The project of a session file's first readable delivery (a session keeps its project)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                return Injection.model_validate_json(line).project
            except ValidationError:
                continue
    return None


def _summary(injections: Iterable[Injection]) -> SessionSummary:
    items = list(injections)
    return SessionSummary(
        session_id=items[0].session_id,
        deliveries=len(items),
        lines=sum(len(i.lines) for i in items),
        tokens=sum(i.tokens for i in items),
        last=max(i.at for i in items),
    )


def open_ledger(settings: Settings, redactor: Redactor | None = None) -> InjectionLedger:
    """The ledger under the state folder, redacting with the settings' extra patterns."""
    redactor = redactor or Redactor.with_patterns(settings.redact_extra_patterns)
    return InjectionLedger(settings.memory_pipeline_state_dir / "injected", redactor)
