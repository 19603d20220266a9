"""Tolerant reading of one pi session file into entries, a tree and its active path.

What pi tolerates, this tolerates too, and reports: every skipped or repaired
line becomes a `Problem` naming the file and line, and the rest of the file is
still read. v1 files (no ids) get ids from their line numbers, so the same file
always yields the same ids (pi's own migration draws random ones).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memory_pipeline.names import safe_id
from memory_pipeline.sessions.models import (
    ENTRY,
    HEADER,
    CompactionEntry,
    Entry,
    MessageEntry,
    SessionHeader,
    UnknownEntry,
)

# A longer line is read but not parsed: no real entry comes near it, and a runaway
# write (a binary dumped into a tool result) must not take the process's memory.
MAX_LINE_BYTES = 64 * 2**20
HEADER_PROBE_BYTES = 1 * 2**20
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Problem:
    """Something in a file that was skipped or repaired; `line` is 1-based, None for the whole file."""

    file: str
    line: int | None
    kind: str
    detail: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class ParsedEntry:
    line: int
    id: str
    parent_id: str | None
    entry: Entry


@dataclass
class ParsedSession:
    path: Path
    header: SessionHeader
    entries: list[ParsedEntry]
    problems: list[Problem] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    active_path: list[str] = field(default_factory=list)  # root -> leaf
    agent: str = "pi"  # the coding agent that wrote the file (memory_pipeline.sessions.sources)

    @property
    def session_id(self) -> str:
        """The header's id, or a safe stand-in when it could not serve as part of a document id."""
        return safe_id(self.header.id)

    @property
    def format_version(self) -> int:
        """1-3 as pi writes them; a later version is read as the latest known (and listed by the parser)."""
        return min(max(self.header.version or 1, 1), LATEST_VERSION)

    @property
    def started_at(self) -> datetime:
        return parse_timestamp(self.header.timestamp)

    @property
    def by_id(self) -> dict[str, ParsedEntry]:
        return {e.id: e for e in self.entries}

    @property
    def children(self) -> dict[str | None, list[str]]:
        kids: dict[str | None, list[str]] = {}
        for e in self.entries:
            kids.setdefault(e.parent_id, []).append(e.id)
        return kids

    @property
    def branch_points(self) -> int:
        return sum(1 for parent, kids in self.children.items() if parent is not None and len(kids) > 1)


LATEST_VERSION = 3  # the newest session format pi writes (docs/pi-session-format.md)


def parse_timestamp(value: str | float | None) -> datetime:
    """ISO-8601 (entry and header times) or Unix milliseconds (message times), as aware UTC. Anything that is
    not a time in years 1-9999 UTC (`1e23` ms, `-1e15` ms, NaN, a local time whose UTC falls in year 0 or
    10000) is a ValueError, the one error a caller has to expect."""
    try:
        if isinstance(value, int | float):
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        if not value:
            raise ValueError("missing timestamp")
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        if isinstance(exc, ValueError) and str(exc) == "missing timestamp":
            raise
        raise ValueError(f"timestamp out of range or malformed: {str(value)[:40]!r} ({exc})") from None


def read_header(path: Path) -> SessionHeader:
    """The session header (first line) alone; raises ValueError saying why the file is not a session."""
    with path.open("rb") as handle:
        first = handle.readline(HEADER_PROBE_BYTES).removeprefix(BOM)
    if not first.strip():
        raise ValueError("empty file" if path.stat().st_size == 0 else "first line is blank")
    if b"\x00" in first:
        raise ValueError("binary content (NUL bytes), not JSONL")
    try:
        return HEADER.validate_json(first)
    except ValidationError as exc:
        raise ValueError(f"first line is not a session header ({_first_error(exc)})") from None


def fingerprint(path: Path) -> str:
    """sha256 of the file's bytes: equal fingerprints mean nothing to re-read."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


@dataclass(frozen=True)
class Line:
    """One line of a JSONL file as text; `text` is None for a line of binary data (a problem already)."""

    number: int
    text: str | None
    torn: bool  # the last line, without its newline: a writer may still be at it


def text_lines(path: Path, name: str, problems: list[Problem]) -> Iterator[Line]:
    """Every non-blank line of a JSONL file, with pi's tolerance: a BOM (editors on Windows write one; pi never
    does), over-long lines, NUL bytes and invalid UTF-8 are problems naming the file and line, never the end of
    the file. Raises ValueError for an empty file."""
    with path.open("rb") as handle:
        data = handle.read().removeprefix(BOM)
    if not data:
        raise ValueError(f"{name}: empty file")
    lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    if ends_with_newline:
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE_BYTES:
            problems.append(Problem(name, number, "line too long", f"{len(raw):,} bytes, not parsed"))
            continue
        torn = number == len(lines) and not ends_with_newline
        if b"\x00" in raw:
            problems.append(Problem(name, number, "binary data", "NUL bytes in line"))
            yield Line(number, None, torn)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, number, "invalid UTF-8", f"{exc.reason} at byte {exc.start}; replaced"))
            text = raw.decode("utf-8", errors="replace")
        yield Line(number, text, torn)


def not_json(name: str, line: Line, detail: str) -> Problem:
    """A line that is not what it should be: torn when it is the last one without its newline (its agent may
    still be writing it: it is read once complete), else malformed."""
    if line.torn:
        return Problem(
            name, line.number, "torn last line", "no final newline and not valid JSON; skipped until complete"
        )
    return Problem(name, line.number, "malformed line", detail)


def json_lines(path: Path, name: str, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every line of a JSONL file that holds a JSON object; the rest are problems
    naming the file and line (`text_lines`). The other agents' readers start here."""
    for line in text_lines(path, name, problems):
        if line.text is None:
            continue
        try:
            value = json.loads(line.text)
        except ValueError as exc:
            problems.append(not_json(name, line, str(exc)))
            continue
        if not isinstance(value, dict):
            kind = f"a JSON {type(value).__name__}, not an object"
            problems.append(Problem(name, line.number, "malformed line", kind))
            continue
        yield line.number, value


def parse_session(path: Path, display_path: str | None = None) -> ParsedSession:
    """Read a whole session file. Raises ValueError (naming the file) if it is not a pi session at all."""
    name = display_path or str(path)
    problems: list[Problem] = []
    skipped: Counter[str] = Counter()
    raw_entries: list[tuple[int, Entry]] = []
    header: SessionHeader | None = None
    for line in text_lines(path, name, problems):
        number = line.number
        if line.text is None:
            if header is None:
                raise ValueError(f"{name}:{number}: binary content (NUL bytes), not a session file")
            continue
        try:
            entry = ENTRY.validate_json(line.text)
        except ValidationError as exc:
            problems.append(not_json(name, line, _first_error(exc)))
            if header is None:
                raise ValueError(f"{name}:{number}: first line is not a session header") from None
            continue
        if header is None:
            if not isinstance(entry, SessionHeader):
                raise ValueError(f"{name}:{number}: first line is not a session header (type {entry.type!r})")
            header = entry
            continue
        if isinstance(entry, SessionHeader):
            problems.append(Problem(name, number, "extra session header", "skipped"))
            continue
        if isinstance(entry, UnknownEntry):
            skipped[f"entry type {entry.type}"] += 1
            problems.append(Problem(name, number, "unknown entry type", entry.type))
            # Still a tree node: its children must keep their parent.
        raw_entries.append((number, entry))
    if header is None:
        raise ValueError(f"{name}: no session header")
    if safe_id(header.id) != header.id:
        problems.append(
            Problem(name, 1, "unsafe session id", f"{len(header.id)} characters; used as {safe_id(header.id)}")
        )
    if header.version is not None and not 1 <= header.version <= LATEST_VERSION:
        problems.append(
            Problem(name, 1, "unknown format version", f"{header.version}; read as version {LATEST_VERSION}")
        )
    return assemble_session(path, header, raw_entries, problems, skipped, name)


def assemble_session(
    path: Path,
    header: SessionHeader,
    raw_entries: list[tuple[int, Entry]],
    problems: list[Problem],
    skipped: Counter[str],
    name: str,
    agent: str = "pi",
    leaf: str | None = None,
) -> ParsedSession:
    """A session from its header and (line, entry) pairs in file order, whichever agent wrote them: ids checked
    and repaired as pi's are, and the active path from `leaf` (default: the file's last entry) up to its root."""
    session = ParsedSession(path=path, header=header, entries=[], problems=problems, skipped=skipped, agent=agent)
    session.entries = _with_ids(session, raw_entries, name)
    session.active_path = _active_path(session, name, leaf)
    return session


def _with_ids(session: ParsedSession, raw: list[tuple[int, Entry]], name: str) -> list[ParsedEntry]:
    """Entries with ids and parents: deterministic for v1, de-duplicated and checked for v2/v3."""
    if session.format_version < 2:
        # v1 is a linear list: id from the line number, parent = previous entry (pi's migration, minus randomness).
        ids = [f"L{line:06d}" for line, _ in raw]
        entries = []
        for index, (line, entry) in enumerate(raw):
            if isinstance(entry, CompactionEntry) and entry.firstKeptEntryIndex is not None:
                # The index counts parsed entries including the header at 0.
                target = entry.firstKeptEntryIndex - 1
                kept = ids[target] if 0 <= target < len(ids) else None
                entry = entry.model_copy(update={"firstKeptEntryId": kept})
            entries.append(ParsedEntry(line, ids[index], ids[index - 1] if index else None, entry))
        return entries

    last_line_of: dict[str, int] = {}
    for line, entry in raw:
        if entry.id:
            last_line_of[entry.id] = line
    entries = []
    for line, entry in raw:
        entry_id = entry.id
        if not entry_id:
            entry_id = f"L{line:06d}"
            session.problems.append(Problem(name, line, "missing id", f"given {entry_id}"))
        elif last_line_of[entry_id] != line:
            # pi's index keeps the last entry with an id; the earlier one stays, renamed.
            session.problems.append(
                Problem(name, line, "duplicate entry id", f"{entry_id} again at line {last_line_of[entry_id]}; renamed")
            )
            entry_id = f"{entry_id}#L{line}"
        if safe_id(entry_id) != entry_id:
            session.problems.append(
                Problem(name, line, "unsafe entry id", f"{len(entry_id)} characters; used as {safe_id(entry_id)}")
            )
        if isinstance(entry, MessageEntry) and entry.message.role == "hookMessage":
            entry = entry.model_copy(update={"message": entry.message.model_copy(update={"role": "custom"})})
        parent = safe_id(entry.parentId) if entry.parentId else None
        entries.append(ParsedEntry(line, safe_id(entry_id), parent, entry))
    known = {e.id for e in entries}
    repaired = []
    for e in entries:
        if e.parent_id is not None and e.parent_id not in known:
            session.problems.append(
                Problem(
                    name,
                    e.line,
                    "dangling parentId",
                    f"{e.parent_id} is not in the file; treated as a root (as pi does)",
                )
            )
            e = ParsedEntry(e.line, e.id, None, e.entry)
        repaired.append(e)
    return _break_cycles(repaired, session, name)


def _break_cycles(entries: list[ParsedEntry], session: ParsedSession, name: str) -> list[ParsedEntry]:
    """Entries whose parents point round in a circle have no root, so none of them would be on any path:
    the one that comes first in the file becomes a root (like a dangling parent), and nothing is lost."""
    parent_of = {e.id: e.parent_id for e in entries}
    line_of = {e.id: e.line for e in entries}
    state: dict[str, int] = {}  # 1: on the chain being walked, 2: done
    roots: set[str] = set()
    for start in entries:
        chain: list[str] = []
        node: str | None = start.id
        while node is not None and node not in state:
            state[node] = 1
            chain.append(node)
            node = parent_of.get(node)
        if node is not None and state[node] == 1:
            cycle = chain[chain.index(node) :]
            first = min(cycle, key=line_of.__getitem__)
            roots.add(first)
            session.problems.append(
                Problem(
                    name,
                    line_of[first],
                    "parent cycle",
                    f"{len(cycle)} entries point at each other through parentId; {first} treated as a root",
                )
            )
        for walked in chain:
            state[walked] = 2
    return [ParsedEntry(e.line, e.id, None, e.entry) if e.id in roots else e for e in entries]


def _active_path(session: ParsedSession, name: str, leaf: str | None = None) -> list[str]:
    """From the last entry in the file (or `leaf`) up through its parents: what pi resumes with."""
    if not session.entries:
        return []
    parent_of = {e.id: e.parent_id for e in session.entries}
    path: list[str] = []
    seen: set[str] = set()
    node: str | None = safe_id(leaf) if leaf and safe_id(leaf) in parent_of else session.entries[-1].id
    while node is not None and node not in seen:
        seen.add(node)
        path.append(node)
        node = parent_of.get(node)
    if node is not None:  # _break_cycles leaves none; kept so a future change cannot loop forever
        line = next((e.line for e in session.entries if e.id == node), None)
        session.problems.append(Problem(name, line, "parent cycle", f"at entry {node}; path cut there"))
    return list(reversed(path))
