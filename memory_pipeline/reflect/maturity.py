"""Maturity of promoted rules: candidate -> established -> proven, by independent evidence that decays.

A rule's score is the sum, over the distinct sessions that support it, of 0.5^(age / half-life) for that
session's newest supporting memory (cass-memory's decayed feedback, counted per session so one chatty session
is one piece of evidence). A rule whose evidence was superseded by a later decision is demoted one level and
flagged with the day it was replaced and what holds now. The level is written visibly on the rule's line in
MEMORY.md, `_(established, 4 sessions)_`, before its id comment; the rule's own words, and anything else a human
wrote, are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memory_pipeline.reflect.models import as_datetime
from memory_pipeline.sentences import by_sentence

LEVELS = ("candidate", "established", "proven")
# The marker may quote the decision that replaced a rule's evidence, brackets and all: it ends at the first ")_".
MATURITY_MARKER = re.compile(r"\s*_\((?:candidate|established|proven)(?:[^)]|\)(?!_))*\)_")
CURRENT_CHARS = 160  # the replacing decision's text in the marker: whole sentences within this


@dataclass(frozen=True)
class MaturityPolicy:
    half_life_days: float = 90.0
    established_at: float = 3.0
    proven_at: float = 6.0


@dataclass(frozen=True)
class Support:
    session_id: str
    established_at: datetime


@dataclass(frozen=True)
class Maturity:
    level: str
    score: float
    sessions: int
    contradicted_by: str | None = None
    current: str | None = None  # what holds now: the text of the decision that replaced the evidence
    replaced_on: str | None = None

    @property
    def marker(self) -> str:
        plural = "s" if self.sessions != 1 else ""
        flag = f", demoted: contradicted by {self.contradicted_by}" if self.contradicted_by else ""
        if self.contradicted_by and self.replaced_on:
            flag += f" on {self.replaced_on}"
        if self.contradicted_by and self.current:
            flag += f"; now: {by_sentence(self.current, CURRENT_CHARS)}"
        return f"_({self.level}, {self.sessions} session{plural}{flag})_"


def score(support: Sequence[Support], as_of: datetime, policy: MaturityPolicy) -> float:
    newest: dict[str, datetime] = {}
    for item in support:
        if item.established_at <= as_of:
            newest[item.session_id] = max(newest.get(item.session_id, item.established_at), item.established_at)
    return sum(0.5 ** (max((as_of - at).total_seconds(), 0) / 86400 / policy.half_life_days) for at in newest.values())


def maturity(
    support: Sequence[Support],
    as_of: datetime,
    policy: MaturityPolicy,
    contradicted_by: str | None = None,
    current: str | None = None,
    replaced_on: str | None = None,
) -> Maturity:
    value = score(support, as_of, policy)
    rank = 2 if value >= policy.proven_at else 1 if value >= policy.established_at else 0
    if contradicted_by:
        rank = max(rank - 1, 0)
    sessions = len({s.session_id for s in support if s.established_at <= as_of})
    return Maturity(LEVELS[rank], round(value, 3), sessions, contradicted_by, current, replaced_on)


def proposal_day(proposal_id: str) -> datetime:
    """The day a proposal was made, from its id (`p-YYYYMMDD-NNN`)."""
    return datetime.strptime(proposal_id[2:10], "%Y%m%d").replace(tzinfo=UTC)


def rule_support(
    memories: Sequence[Mapping[str, Any]], sessions: Sequence[str], proposed: datetime, against: set[str]
) -> list[Support]:
    """A rule's evidence: the memories that support it (minus `against`, the memories of whatever replaced it:
    similar, but evidence against it), and the sessions its proposal came from, dated by the proposal."""
    support = [
        Support(m["session_id"], as_datetime(m["established_at"])) for m in memories if m["doc_id"] not in against
    ]
    seen = {s.session_id for s in support}
    return support + [Support(s, proposed) for s in sessions if s not in seen]


def write_levels(memory: str, levels: dict[str, Maturity]) -> str:
    """MEMORY.md with each promoted rule's level marker set (added or replaced); other text untouched."""
    lines = memory.split("\n")
    for i, line in enumerate(lines):
        found = re.search(r"\s*<!-- (p-\d{8}-\d{3})[^>]*-->\s*$", line)
        if not found or found[1] not in levels:
            continue
        text = MATURITY_MARKER.sub("", line[: found.start()]).rstrip()
        lines[i] = f"{text} {levels[found[1]].marker} <!-- {found[1]} -->"
    return "\n".join(lines)


def promoted_ids(memory: str) -> list[str]:
    return re.findall(r"<!-- (p-\d{8}-\d{3})", memory)
