"""Records of the reflect stage that cross a boundary (Elasticsearch, the LLM, the workspace files)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

Tier = Literal["recent", "older", "old"]
PRIORITY_RANK = {"high": 0, "medium": 1, "low": 2}
# Where a memory belongs in MEMORY.md, by its tags (the first match wins; the rest are patterns).
_SECTION_TAGS = [
    ("Hard rules", re.compile(r"rule|preference|correction|convention|style|must")),
    ("Gotchas", re.compile(r"root-cause|bug|gotcha|pitfall|error|failure|fix|workaround")),
    ("Decisions", re.compile(r"decision|architecture|design|chose|choice")),
]


def as_datetime(value: str) -> datetime:
    """An Elasticsearch date string as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# A memory typed by the summarise stage carries its kind as its first tag: that decides, before any pattern.
_KIND_SECTION = {"rule": "Hard rules", "gotcha": "Gotchas", "decision": "Decisions"}


def section_for(tags: Sequence[str]) -> str:
    if tags and tags[0] in _KIND_SECTION:
        return _KIND_SECTION[tags[0]]
    text = " ".join(tags)
    return next((section for section, pattern in _SECTION_TAGS if pattern.search(text)), "Patterns")


class Memory(BaseModel):
    """A `memory-summary` document with its vector, as reflection reads it."""

    doc_id: str
    summary: str
    tags: list[str] = Field(default_factory=list)
    priority: str = "low"
    session_id: str
    turn_id: str = ""
    project: str
    partition: str
    established_at: datetime
    vector: list[float]


class Reflection(BaseModel):
    """A `memory-reflections` document: one condensed memory and the memories it came from."""

    reflection_id: str
    project: str
    partition: str
    summary: str
    tags: list[str]
    priority: str
    kind: Literal["memory", "merged", "digest"]
    tier: Tier
    source_ids: list[str]
    session_ids: list[str]
    established_at: datetime  # the newest source: when this became true
    first_established_at: datetime
    supersedes: list[str] = Field(default_factory=list)
    superseded_by: str | None = None  # set by the later window that replaced it, never by its own
    method: str  # how the text was made: verbatim | llm-merge | llm-compress | fallback-* | digest
    window_hash: str = ""
    vector: list[float] = Field(default_factory=list, exclude=True)

    @property
    def active(self) -> bool:
        return self.superseded_by is None


class Supersession(BaseModel):
    old_id: str
    new_id: str
    similarity: float
    reason: str  # llm | cue | llm+cue
