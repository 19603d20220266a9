"""The human review loop: REVIEW.md proposals -> MEMORY.md, by checkbox.

    - [x] p-20261129-001 <rule> (evidence ...)   promoted into MEMORY.md under the same section
    - [-] p-20261129-002 <rule> (evidence ...)   rejected: archived in today's daily log
    - [ ] p-20261129-003 <rule> (evidence ...)   untouched: stays for later

MEMORY.md is edited only by appending promoted lines to their section (created at the end if missing), each
tagged with its proposal id in an HTML comment: hand edits anywhere else survive, and applying twice changes
nothing because applied proposals leave REVIEW.md and an id already in MEMORY.md is never added again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SECTIONS = ("Hard rules", "Patterns", "Gotchas", "Decisions")
# Proposals about a memory people contradicted (edit or forget it): first in REVIEW.md, never a MEMORY.md line:
# ticked, they leave REVIEW.md and are archived like a rejection (the edit or forget is the person's own act).
CONTRADICTED = "Contradicted memories"
REJECT_MARK = "-"
_PROPOSAL = re.compile(r"^- \[(?P<mark>[ xX-])\] (?P<id>p-\d{8}-\d{3}) (?P<text>.+)$")
_ID_IN_MEMORY = re.compile(r"<!-- (p-\d{8}-\d{3})")
REVIEW_HEADER = (
    "Check a box (`[x]`) to promote a proposal into MEMORY.md, mark it `[-]` to reject it, or leave it for later;\n"
    "then run `memory-pipeline review apply`.\n"
)


@dataclass(frozen=True)
class Proposal:
    id: str
    section: str
    text: str
    mark: str  # "x", "-" or " "

    @property
    def rule(self) -> str:
        """The proposal without its trailing evidence in parentheses."""
        return re.sub(r"\s*\(evidence[^)]*\)\s*$", "", self.text).strip()


@dataclass
class ApplyReport:
    promoted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    untouched: list[str] = field(default_factory=list)


def parse_review(text: str) -> list[Proposal]:
    proposals, section = [], ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif match := _PROPOSAL.match(line.strip()):
            proposals.append(Proposal(match["id"], section, match["text"].strip(), match["mark"].lower()))
    return proposals


def render_review(project: str, proposals: list[Proposal]) -> str:
    lines = [f"# Review — {project}", "", REVIEW_HEADER]
    for section in dict.fromkeys([CONTRADICTED, *SECTIONS, *(p.section for p in proposals)]):
        items = [p for p in proposals if p.section == section]
        if items:
            lines += [f"## {section}", "", *(f"- [{p.mark}] {p.id} {p.text}" for p in items), ""]
    return "\n".join(lines)


def pending(review_path: Path) -> int:
    """Proposals waiting for a decision in a REVIEW.md (0 if there is none)."""
    if not review_path.exists():
        return 0
    return sum(1 for p in parse_review(review_path.read_text()) if p.mark == " ")


def _promote(memory: str, project: str, proposals: list[Proposal]) -> str:
    if not memory.strip():
        memory = f"# Memory — {project}\n\nCurated by people: promoted from REVIEW.md, edit freely.\n"
    lines = memory.rstrip("\n").split("\n")
    for proposal in proposals:
        # A friction fix proposal ("add this line to AGENTS.md: "...") is promoted as the line itself.
        rule = re.sub(r'^add this line to AGENTS\.md: "(.*)"$', r"\1", proposal.rule)
        entry = f"- {rule} <!-- {proposal.id} -->"
        heading = f"## {proposal.section}"
        if heading not in lines:
            lines += ["", heading, ""]
        start = lines.index(heading) + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
        while end > start and not lines[end - 1].strip():
            end -= 1
        lines.insert(end, entry)
    return "\n".join(lines) + "\n"


def apply_review(project_dir: Path, project: str, today: str) -> ApplyReport:
    """Promote checked proposals, archive rejected ones in today's daily log, keep the rest in REVIEW.md."""
    review_path, memory_path = project_dir / "REVIEW.md", project_dir / "MEMORY.md"
    report = ApplyReport()
    if not review_path.exists():
        return report
    from memory_pipeline.reflect.proposals import load_registry  # it builds on this module

    # A proposal withdrawn because its memory was forgotten is never promoted, however its box is marked.
    withdrawn = {i for i, e in load_registry(project_dir).items() if e.withdrawn}
    listed = parse_review(review_path.read_text())
    proposals = [p for p in listed if p.id not in withdrawn]
    memory = memory_path.read_text() if memory_path.exists() else ""
    already = set(_ID_IN_MEMORY.findall(memory))
    promote = [p for p in proposals if p.mark == "x" and p.id not in already and p.section != CONTRADICTED]
    rejected = [p for p in proposals if p.mark == REJECT_MARK or (p.mark == "x" and p.section == CONTRADICTED)]
    keep = [p for p in proposals if p.mark == " "]
    if promote:
        memory_path.write_text(_promote(memory, project, promote))
    if rejected:
        log = project_dir / "daily" / f"{today}.md"
        log.parent.mkdir(parents=True, exist_ok=True)
        text = log.read_text() if log.exists() else f"# {today} — {project}\n"
        if "\n## Archived by review" not in text:
            text = text.rstrip("\n") + "\n\n## Archived by review\n"
        text = text.rstrip("\n") + "\n" + "".join(f"- rejected {p.id} ({p.section}): {p.text}\n" for p in rejected)
        log.write_text(text)
    if promote or rejected or len(keep) != len(listed):
        review_path.write_text(render_review(project, keep))
    report.promoted = [p.id for p in promote]
    report.rejected = [p.id for p in rejected]
    report.untouched = [p.id for p in keep]
    return report


def decide(project_dir: Path, project: str, decisions: dict[str, str], today: str) -> ApplyReport:
    """Mark proposals in REVIEW.md (`x` promote, `-` reject), as a person would by hand, then `apply_review`:
    the same files change in the same way. An id that is not waiting in REVIEW.md is refused."""
    review_path = project_dir / "REVIEW.md"
    text = review_path.read_text() if review_path.exists() else ""
    waiting = {p.id for p in parse_review(text)}
    unknown = sorted(set(decisions) - waiting)
    if unknown:
        raise KeyError(f"not in {review_path}: {', '.join(unknown)}")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        found = _PROPOSAL.match(line.strip())
        if found and found["id"] in decisions:
            lines[i] = line.replace(f"[{found['mark']}] {found['id']}", f"[{decisions[found['id']]}] {found['id']}", 1)
    review_path.write_text("\n".join(lines))
    return apply_review(project_dir, project, today)


class ContraryDecisions(ValueError):
    """A proposal both promoted and rejected in one decision."""


def apply_decisions(
    workspace: Path, project: str, promote: Iterable[str], reject: Iterable[str], today: str
) -> ApplyReport:
    """A person's decisions on a project's proposals (the API's and the browser's alike): the promoted marked
    `x`, the rejected `-`, then `decide`. Raises `ContraryDecisions` for an id in both, `KeyError` for an id
    not waiting in REVIEW.md."""
    from memory_pipeline.reflect.workspace import ensure_project_dir

    promote, reject = list(promote), list(reject)
    if both := set(promote) & set(reject):
        raise ContraryDecisions(f"both promoted and rejected: {', '.join(sorted(both))}")
    marks = {i: "x" for i in promote} | {i: REJECT_MARK for i in reject}
    return decide(ensure_project_dir(workspace, project), project, marks, today)


def apply_all(workspace: Path, today: str, project: str | None = None) -> dict[str, ApplyReport]:
    """`apply_review` for one project's folder, or for every folder of the workspace with a REVIEW.md."""
    from memory_pipeline.reflect.workspace import project_dir, project_of

    folders = [project_dir(workspace, project)] if project else sorted(p.parent for p in workspace.glob("*/REVIEW.md"))
    return {folder.name: apply_review(folder, project_of(folder), today) for folder in folders}


def read_review(project_dir: Path) -> tuple[list[Proposal], str]:
    """A project's proposals in REVIEW.md (every mark) and its MEMORY.md as it is now ("" when not made yet):
    what the review page and the review API show."""
    review, memory = project_dir / "REVIEW.md", project_dir / "MEMORY.md"
    proposals = parse_review(review.read_text()) if review.exists() else []
    return proposals, memory.read_text() if memory.exists() else ""
