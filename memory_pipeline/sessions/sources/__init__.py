"""The coding agents whose histories are read, each an adapter onto the one model pi's files give.

A file's first line says which agent wrote it (pi's `session` header, Codex's `session_meta`, Claude Code's
entries with a `sessionId`), so every folder is read the same way and a file in the wrong folder is still
read right. Each adapter gives a `ParsedSession` (header, entries with ids and parents, active path) from
which the rest of the pipeline builds messages and turns without knowing the agent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.sessions import parse as pi
from memory_pipeline.sessions.models import SessionHeader
from memory_pipeline.sessions.parse import BOM, HEADER_PROBE_BYTES, ParsedSession
from memory_pipeline.sessions.sources import claude_code, codex, gemini


@dataclass(frozen=True)
class Source:
    agent: str
    read_header: Callable[[Path], SessionHeader]
    parse: Callable[..., ParsedSession]


PI = Source("pi", pi.read_header, pi.parse_session)
SOURCES: dict[str, Source] = {
    s.agent: s
    for s in (
        PI,
        Source(claude_code.AGENT, claude_code.read_header, claude_code.parse),
        Source(codex.AGENT, codex.read_header, codex.parse),
        Source(gemini.AGENT, gemini.read_header, gemini.parse),
    )
}
AGENTS = tuple(SOURCES)


def source_of(path: Path) -> Source:
    """The agent that wrote `path`, from its first line; pi when nothing else matches, so a file that is no
    session at all gets pi's error, which names what is wrong with its first line."""
    if path.suffix == ".json":  # only Gemini CLI's chats before 2026 are single JSON documents here
        return SOURCES[gemini.AGENT]
    try:
        with path.open("rb") as handle:
            first = json.loads(handle.readline(HEADER_PROBE_BYTES).removeprefix(BOM))
    except ValueError:
        return PI
    if not isinstance(first, dict) or first.get("type") == "session":
        return PI
    if codex.looks_like(first):
        return SOURCES[codex.AGENT]
    if gemini.looks_like(first):
        return SOURCES[gemini.AGENT]
    if claude_code.looks_like(first):
        return SOURCES[claude_code.AGENT]
    return PI


def read_header(path: Path) -> tuple[str, SessionHeader]:
    """(agent, header) of a session file; OSError or ValueError (saying why) when it is not one."""
    source = source_of(path)
    return source.agent, source.read_header(path)


def parse_any(path: Path, display_path: str | None = None) -> ParsedSession:
    """The whole file, by the reader of the agent that wrote it."""
    return source_of(path).parse(path, display_path=display_path)
