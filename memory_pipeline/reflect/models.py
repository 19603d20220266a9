"""The reflect stage's shared rules: priority order, dates as Elasticsearch writes them, and where a memory
belongs in MEMORY.md. Its Elasticsearch documents (`Memory`, `Reflection`, `Supersession`) are in
`stores/reflect_store.py`, beside the code that reads and writes them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

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
