"""Staging proposals in REVIEW.md, with stable ids and growing evidence.

Every proposal ever made for a project is kept in `<project>/.review/proposals.json` (id, section, rule,
evidence, the direction of its memories). A new candidate that says what a known proposal says (same rule
text, or vectors above `same_threshold`) adds its evidence to that proposal instead of becoming a second
one; a proposal a human already decided (gone from REVIEW.md) is never staged again. New proposals get the
next `p-YYYYMMDD-NNN` of their day. Boxes already ticked in REVIEW.md keep their marks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from memory_pipeline.reflect.models import section_for
from memory_pipeline.reflect.review import Proposal, parse_review, render_review
from memory_pipeline.reflect.similarity import cosine_matrix
from memory_pipeline.stores.reflect_store import Reflection
from memory_pipeline.summarize.knowledge import clean_statement


class Registered(BaseModel):
    id: str
    project: str = ""
    section: str
    rule: str
    sessions: list[str] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)
    vector: list[float] = Field(default_factory=list)
    origins: list[str] = Field(default_factory=list)  # reflection, friction: what found it
    superseded_by: str | None = None  # a later decision replaced its evidence
    withdrawn: str | None = None  # the forgotten memory it rested on alone: never staged nor promoted again


@dataclass
class Candidate:
    section: str
    rule: str
    sessions: list[str]
    evidence_ids: list[str]
    vector: list[float] = field(default_factory=list)
    origin: str = "reflection"


@dataclass
class StageReport:
    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    already_decided: int = 0
    flagged: list[str] = field(default_factory=list)  # pending proposals whose evidence was replaced
    ids: dict[str, str] = field(default_factory=dict)  # candidate rule -> proposal id


def rule_line(summary: str, section: str) -> str:
    """The rule as a statement readable alone, whole: a memory that still quotes a person ('The user said
    "…"', from an older prompt or a hand-made corpus) becomes the statement it quotes, cleaned, never cut."""
    return clean_statement(summary) or summary


def from_reflections(reflections: Sequence[Reflection]) -> list[Candidate]:
    """High-priority, still-valid reflections as candidates: rules, decisions, root causes."""
    candidates = []
    for r in reflections:
        if r.active and r.priority == "high" and r.kind != "digest":
            section = section_for(r.tags)
            candidates.append(Candidate(section, rule_line(r.summary, section), r.session_ids, r.source_ids, r.vector))
    return candidates


def evidence_text(sessions: Sequence[str], ids: Sequence[str], superseded_by: str | None = None) -> str:
    shown = ", ".join(i[:12] if re.fullmatch(r"[0-9a-f]{40}", i) else i for i in list(ids)[:3])
    more = f" +{len(ids) - 3} more" if len(ids) > 3 else ""
    count = len(sessions)
    flag = f"; superseded by {superseded_by}, consider rejecting" if superseded_by else ""
    return f"(evidence: {count} session{'s' if count != 1 else ''}; ids {shown}{more}{flag})"


def registry_path(project_dir: Path) -> Path:
    return project_dir / ".review" / "proposals.json"


def load_registry(project_dir: Path) -> dict[str, Registered]:
    path = registry_path(project_dir)
    if not path.exists():
        return {}
    return {item["id"]: Registered.model_validate(item) for item in json.loads(path.read_text())}


def save_registry(project_dir: Path, registry: dict[str, Registered]) -> None:
    path = registry_path(project_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    items = [r.model_dump() | {"vector": [round(x, 5) for x in r.vector]} for r in registry.values()]
    path.write_text(json.dumps(sorted(items, key=lambda r: r["id"]), indent=1) + "\n")


def _match(candidate: Candidate, registry: dict[str, Registered], same_threshold: float) -> Registered | None:
    for entry in registry.values():
        if entry.rule == candidate.rule:
            return entry
    scored = [e for e in registry.values() if e.vector and len(e.vector) == len(candidate.vector)]
    if not candidate.vector or not scored:
        return None
    similarity = cosine_matrix([candidate.vector, *(e.vector for e in scored)])[0, 1:]
    best = int(similarity.argmax())
    return scored[best] if similarity[best] >= same_threshold else None


def _next_id(registry: dict[str, Registered], day: str) -> str:
    stamp = day.replace("-", "")
    taken = [int(i.rsplit("-", 1)[1]) for i in registry if i.startswith(f"p-{stamp}-")]
    return f"p-{stamp}-{max(taken, default=0) + 1:03d}"


def stage(
    project_dir: Path,
    project: str,
    candidates: Sequence[Candidate],
    day: str,
    same_threshold: float = 0.8,
    superseded: Mapping[str, str] | None = None,
) -> StageReport:
    """Add new candidates to REVIEW.md, grow the evidence of pending ones, and flag pending proposals whose
    evidence a later decision replaced (`superseded`: memory id -> the reflection or memory that replaced it);
    REVIEW.md is rewritten only when something changed."""
    superseded = superseded or {}
    registry = load_registry(project_dir)
    review_path = project_dir / "REVIEW.md"
    before = review_path.read_text() if review_path.exists() else ""
    staged = {p.id: p for p in parse_review(before)}
    report = StageReport()
    # A proposal whose evidence was replaced is not the same proposal as what replaced it.
    current = {i: e for i, e in registry.items() if not set(e.evidence_ids) & set(superseded)}
    for candidate in candidates:
        if set(candidate.evidence_ids) & set(superseded):
            # Evidence a later decision replaced by its words while the reflection it came from stays active: not a
            # new proposal (matched against `current`, which leaves such entries out, it would be one every run).
            continue
        entry = _match(candidate, current, same_threshold)
        if entry is None:
            entry = Registered(
                id=_next_id(registry, day),
                project=project,
                section=candidate.section,
                rule=candidate.rule,
                sessions=sorted(set(candidate.sessions)),
                evidence_ids=list(dict.fromkeys(candidate.evidence_ids)),
                vector=candidate.vector,
                origins=[candidate.origin],
            )
            registry[entry.id] = current[entry.id] = entry
            staged[entry.id] = Proposal(entry.id, entry.section, "", " ")
            report.new.append(entry.id)
        elif entry.id not in staged:
            report.already_decided += 1
        else:
            sessions = sorted(set(entry.sessions) | set(candidate.sessions))
            ids = list(dict.fromkeys([*entry.evidence_ids, *candidate.evidence_ids]))
            origins = sorted({*entry.origins, candidate.origin})
            # A friction fix is the more concrete wording of the same proposal ("add this line to AGENTS.md").
            rule = candidate.rule if candidate.origin == "friction" else entry.rule
            if (sessions, ids, origins, rule) != (entry.sessions, entry.evidence_ids, entry.origins, entry.rule):
                entry.sessions, entry.evidence_ids, entry.origins, entry.rule = sessions, ids, origins, rule
                report.updated.append(entry.id)
        report.ids[candidate.rule] = entry.id
    for pid in staged:
        entry = registry.get(pid)
        if entry is None:
            continue  # written by hand into REVIEW.md: left as it is
        flag = next((superseded[i] for i in entry.evidence_ids if i in superseded), None)
        if flag != entry.superseded_by:
            entry.superseded_by = flag
            report.flagged.append(pid)
        text = f"{entry.rule} {evidence_text(entry.sessions, entry.evidence_ids, entry.superseded_by)}"
        staged[pid] = Proposal(pid, staged[pid].section or entry.section, text, staged[pid].mark)
    after = render_review(project, list(staged.values())) if staged else before
    if after != before:
        review_path.parent.mkdir(parents=True, exist_ok=True)
        review_path.write_text(after)
    if report.new or report.updated or report.flagged:
        save_registry(project_dir, registry)
    return report


def auto_promote(project_dir: Path, project: str, min_sessions: int) -> list[str]:
    """Tick every pending proposal with evidence from at least `min_sessions` sessions (0 = off); the ids."""
    review_path = project_dir / "REVIEW.md"
    if min_sessions <= 0 or not review_path.exists():
        return []
    registry = load_registry(project_dir)
    proposals = parse_review(review_path.read_text())
    ticked = []
    for i, proposal in enumerate(proposals):
        entry = registry.get(proposal.id)
        if proposal.mark == " " and entry is not None and len(entry.sessions) >= min_sessions:
            proposals[i] = Proposal(proposal.id, proposal.section, proposal.text, "x")
            ticked.append(proposal.id)
    if ticked:
        review_path.write_text(render_review(project, proposals))
    return ticked


def _pending_text(entry: Registered) -> str:
    return f"{entry.rule} {evidence_text(entry.sessions, entry.evidence_ids, entry.superseded_by)}"


def _memory_line(memory: str, pid: str, change: Callable[[str], str | None]) -> str:
    """MEMORY.md with the line promoted from proposal `pid` changed by `change` (None removes it); the rest as
    the person left it."""
    lines = memory.split("\n")
    for i, line in enumerate(lines):
        if f"<!-- {pid} " in line:
            new = change(line)
            if new is None:
                del lines[i]
            else:
                lines[i] = new
            break
    return "\n".join(lines)


def follow_memory(project_dir: Path, project: str, memory_id: str, text: str | None = None) -> list[str]:
    """Proposals follow a person's change to memory `memory_id` (the ids of those that changed).

    Forgotten (`text` None): a proposal that rests on it alone is withdrawn (gone from REVIEW.md, marked in the
    registry so no run stages it again and `review apply` never promotes it) and its line, if promoted, leaves
    MEMORY.md; a proposal with other evidence only loses the id. Edited (`text`): a proposal that rests on it
    alone says the new text, pending or promoted (a promoted line a person changed by hand is left alone); a
    friction fix keeps its own wording."""
    registry = load_registry(project_dir)
    mine = [e for e in registry.values() if memory_id in e.evidence_ids and not e.withdrawn]
    if not mine:
        return []
    review_path, memory_path = project_dir / "REVIEW.md", project_dir / "MEMORY.md"
    review_before = review_path.read_text() if review_path.exists() else ""
    memory_before = memory_path.read_text() if memory_path.exists() else ""
    staged = {p.id: p for p in parse_review(review_before)}
    memory = memory_before
    for entry in mine:
        alone = set(entry.evidence_ids) == {memory_id}
        if text is None and alone:
            entry.withdrawn = memory_id
            staged.pop(entry.id, None)
            memory = _memory_line(memory, entry.id, lambda line: None)
        elif text is None:
            entry.evidence_ids = [i for i in entry.evidence_ids if i != memory_id]
        elif alone and "friction" not in entry.origins:
            old, entry.rule = entry.rule, rule_line(text, entry.section)
            memory = _memory_line(
                memory, entry.id, lambda line, old=old, new=entry.rule: line.replace(f"- {old} ", f"- {new} ", 1)
            )
        else:
            continue
        if entry.id in staged:
            proposal = staged[entry.id]
            staged[entry.id] = Proposal(entry.id, proposal.section, _pending_text(entry), proposal.mark)
    if review_before:
        after = render_review(project, list(staged.values()))
        if after != review_before:
            review_path.write_text(after)
    if memory != memory_before:
        memory_path.write_text(memory)
    save_registry(project_dir, registry)
    return [e.id for e in mine]
