"""How the pages show things: an id short enough to leave the row to the memory (the whole id stays one click
away, to copy), a memory's text with tool calls made readable, MEMORY.md as headings, rules and their proposal
ids, and the command in a server-down reason. Pure functions; the templates use them as filters."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from memory_pipeline.sessions.tool_text import readable_tool_calls

_HEX = re.compile(r"[0-9a-f]{16,}")
_OBSERVATION = re.compile(r"obs_(?P<session>.+)_(?P<turn>[^_]+)")
SHORT_CHARS = 20


def short_id(memory_id: str) -> str:
    """An id as a row shows it: a content hash by its first 8 characters (as git does), an observation by its
    session's start and its turn, anything else cut at `SHORT_CHARS`; short ids are left whole."""
    if len(memory_id) <= SHORT_CHARS:
        return memory_id
    if _HEX.fullmatch(memory_id):
        return memory_id[:8]
    if found := _OBSERVATION.fullmatch(memory_id):
        return f"obs_{found['session'][:8]}…{found['turn'][-4:]}"
    return memory_id[: SHORT_CHARS - 1] + "…"


def project_name(project: str) -> str:
    """A project as a narrow column shows it: its folder's name (the whole path is the cell's tooltip)."""
    return project.rstrip("/").rsplit("/", 1)[-1] or project


def readable(text: str | None) -> str:
    """A memory's text as a person reads it: a tool call a model wrote as JSON becomes one line."""
    return readable_tool_calls(text or "")


def commands_in(reason: str) -> list[str]:
    """The commands a reason names in backticks (`memory-pipeline local up`), to show on their own."""
    return re.findall(r"`([^`]+)`", reason)


class MemoryLine(BaseModel):
    """One line of MEMORY.md, to render: a heading, a rule (with the proposal it was promoted from), or text."""

    kind: Literal["title", "heading", "rule", "text"]
    text: str
    proposal: str = ""


_PROPOSAL = re.compile(r"\s*<!--\s*(p-\d{8}-\d{3})[^>]*-->")
_COMMENT = re.compile(r"<!--.*?-->")


def memory_lines(memory: str) -> list[MemoryLine]:
    """MEMORY.md as lines to render (people edit it freely: an unknown line is text); its HTML comments are
    never shown, a rule's proposal id becomes a tag."""
    lines = []
    for raw in memory.splitlines():
        found = _PROPOSAL.search(raw)
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        if line.startswith("## "):
            lines.append(MemoryLine(kind="heading", text=line[3:].strip()))
        elif line.startswith("# "):
            lines.append(MemoryLine(kind="title", text=line[2:].strip()))
        elif line.startswith(("- ", "* ")):
            lines.append(MemoryLine(kind="rule", text=line[2:].strip(), proposal=found[1] if found else ""))
        else:
            lines.append(MemoryLine(kind="text", text=line))
    return lines
