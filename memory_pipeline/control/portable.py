"""The memory carried out and back in: JSON Lines (everything, to import elsewhere), Markdown (to read), and a
project's promoted rules written into an agent's instructions file (AGENTS.md, CLAUDE.md).

JSON Lines, one object a line, each with its `type`:
- `header`: the format and its version, when, whether vectors are in;
- `memory`: a searchable memory (`index`, `id`, `document`: kind, statement, scope, evidence, citation,
  priority, dates; its vector and embedding model with `--vectors`);
- `correction`: a line of the corrections trail (people's edits and forgets, ids and hashes only);
- `file`: a project's MEMORY.md (the rules people promoted), by its path in the workspace.

Importing writes every memory by its id (importing twice stores once), embeds those without a vector of this
home's embedding model, appends the corrections it lacks and writes a MEMORY.md that is not there yet (one that
is, and differs, is kept and named). A bad line is an error naming the file and line; nothing after it is read.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from memory_pipeline.curation.corrections import Correction
from memory_pipeline.curation.trail import read_corrections, record
from memory_pipeline.reflect.workspace import ensure_project_dir, project_of
from memory_pipeline.stores.memory_store import MEMORY_MAPPINGS, MemoryStore, without_vectors

FORMAT = "memory-pipeline"
VERSION = 1
MEMORY_FILE = "MEMORY.md"
RULES_BEGIN = "<!-- memory_pipeline: promoted rules (memory-pipeline export --rules-to); edits here are replaced -->"
RULES_END = "<!-- memory_pipeline: end of promoted rules -->"
_PROPOSAL_ID = re.compile(r"\s*<!--\s*p-[^>]*-->")


class Header(BaseModel):
    type: Literal["header"] = "header"
    format: Literal["memory-pipeline"] = FORMAT
    version: int = VERSION
    exported_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())
    vectors: bool = False
    project: str | None = None


class MemoryLine(BaseModel):
    type: Literal["memory"] = "memory"
    index: Literal["memory-summary", "memory-observations", "memory-notes"]
    id: str = Field(min_length=1)
    document: dict[str, Any]


class CorrectionLine(BaseModel):
    type: Literal["correction"] = "correction"
    correction: Correction


class FileLine(BaseModel):
    type: Literal["file"] = "file"
    project: str
    name: Literal["MEMORY.md"] = MEMORY_FILE
    text: str


Line = Annotated[Header | MemoryLine | CorrectionLine | FileLine, Field(discriminator="type")]
_LINE: TypeAdapter[Header | MemoryLine | CorrectionLine | FileLine] = TypeAdapter(Line)


class BadExport(ValueError):
    """A line of an export that cannot be read: names the file and the line."""


class Imported(BaseModel):
    memories: int = 0
    embedded: int = 0
    corrections: int = 0
    files: int = 0
    kept_files: list[str] = []


def _project_folders(workspace: Path) -> Iterator[tuple[str, Path]]:
    if workspace.is_dir():
        for folder in sorted(p for p in workspace.iterdir() if p.is_dir()):
            if (folder / MEMORY_FILE).is_file():
                yield project_of(folder), folder


def export_lines(
    store: MemoryStore, workspace: Path, vectors: bool = False, project: str | None = None
) -> Iterator[str]:
    """The memory as JSON Lines (of one project when `project` is given), header first."""
    yield Header(vectors=vectors, project=project).model_dump_json()
    sessions: set[str] = set()
    for index in MEMORY_MAPPINGS:
        for doc_id, document in sorted(store.memories(index).items()):
            if project and document.get("project") != project:
                continue
            sessions.add(str(document.get("session_id") or ""))
            kept = document if vectors else without_vectors(document)
            yield MemoryLine(index=index, id=doc_id, document=kept).model_dump_json()  # type: ignore[arg-type]
    for correction in read_corrections(workspace):
        if project is None or correction.session_id in sessions:
            yield CorrectionLine(correction=correction).model_dump_json()
    for name, folder in _project_folders(workspace):
        if project is None or name == project:
            yield FileLine(project=name, text=(folder / MEMORY_FILE).read_text(encoding="utf-8")).model_dump_json()


def parse_lines(lines: Iterable[str], source: str) -> Iterator[Header | MemoryLine | CorrectionLine | FileLine]:
    """Each line read and checked; the first one that is not a line of this format raises, naming it."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = _LINE.validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise BadExport(f"{source}:{number}: not a memory export line ({where}: {first['msg']})") from None
        if number == 1 and not isinstance(item, Header):
            raise BadExport(f"{source}:1: no header: not a file written by `memory-pipeline export`")
        if isinstance(item, Header) and item.version > VERSION:
            raise BadExport(f"{source}:{number}: format version {item.version} is newer than this one ({VERSION})")
        yield item


def import_lines(store: MemoryStore, workspace: Path, lines: Iterable[str], source: str) -> Imported:
    """Reads an export into this home (see the module's docstring). Every line is checked before anything is
    written, so a bad file changes nothing."""
    items = list(parse_lines(lines, source))
    report = Imported()
    by_index: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for item in items:
        if isinstance(item, MemoryLine):
            by_index[item.index][item.id] = item.document
    for index, documents in by_index.items():
        written, embedded = store.put_memories(index, documents)
        report.memories += written
        report.embedded += embedded
    known = {(c.memory_id, c.action, c.at) for c in read_corrections(workspace)}
    for item in items:
        if isinstance(item, CorrectionLine):
            correction = item.correction
            if (correction.memory_id, correction.action, correction.at) not in known:
                record(workspace, correction)
                known.add((correction.memory_id, correction.action, correction.at))
                report.corrections += 1
        elif isinstance(item, FileLine):
            report.files += _write_memory_file(workspace, item, report)
    return report


def _write_memory_file(workspace: Path, item: FileLine, report: Imported) -> int:
    folder = ensure_project_dir(workspace, item.project)
    path = folder / MEMORY_FILE
    if path.exists():
        if path.read_text(encoding="utf-8") != item.text:
            report.kept_files.append(str(path))
        return 0
    path.write_text(item.text, encoding="utf-8")
    return 1


# Markdown -----------------------------------------------------------------------------------------------------


def markdown(lines: Iterable[Header | MemoryLine | CorrectionLine | FileLine]) -> str:
    """An export for reading: per project its promoted rules, then its memories by kind, newest first, each
    with its id, priority, date and (for a model's memory) the words it rests on."""
    projects: dict[str, list[MemoryLine]] = defaultdict(list)
    rules: dict[str, str] = {}
    when = ""
    for item in lines:
        if isinstance(item, Header):
            when = item.exported_at[:10]
        elif isinstance(item, MemoryLine):
            projects[str(item.document.get("project") or "(no project)")].append(item)
        elif isinstance(item, FileLine):
            rules[item.project] = item.text
    out = [f"# Memory export ({when})", ""]
    for project in sorted(set(projects) | set(rules)):
        out += [f"## {project}", ""]
        promoted = promoted_rules(rules.get(project, ""))
        if promoted:
            out += ["### Rules people promoted (MEMORY.md)", "", *promoted, ""]
        by_kind: dict[str, list[MemoryLine]] = defaultdict(list)
        for item in projects.get(project, []):
            kind = str(item.document.get("kind") or ("note" if item.index == "memory-notes" else "memory"))
            by_kind[kind].append(item)
        for kind in sorted(by_kind):
            out += [f"### {kind.capitalize()} ({len(by_kind[kind])})", ""]
            for item in sorted(by_kind[kind], key=lambda i: str(i.document.get("established_at") or ""), reverse=True):
                out.append(_memory_line(item))
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _memory_line(item: MemoryLine) -> str:
    document = item.document
    text = " ".join(str(document.get("summary") or "").split())
    facts = [f"`{item.id}`", str(document.get("priority") or "")]
    if document.get("established_at"):
        facts.append(str(document["established_at"])[:10])
    line = f"- {text} ({', '.join(f for f in facts if f)})"
    evidence = " ".join(str(document.get("evidence") or "").split())
    return line + (f"\n  > {evidence}" if evidence else "")


# Rules into AGENTS.md / CLAUDE.md ----------------------------------------------------------------------------


def promoted_rules(memory_md: str) -> list[str]:
    """The rule lines of a MEMORY.md (`- …`), without the proposal ids kept in HTML comments."""
    return [_PROPOSAL_ID.sub("", line).rstrip() for line in memory_md.splitlines() if line.startswith("- ")]


def with_rules(instructions: str, rules: list[str], project: str) -> str:
    """`instructions` (AGENTS.md, CLAUDE.md: "" for a new file) with the project's rules in one marked block,
    replacing the block a previous run wrote; everything else in the file kept as it is."""
    block = "\n".join([RULES_BEGIN, f"## Rules of {project}", "", *rules, RULES_END])
    pattern = re.compile(re.escape(RULES_BEGIN) + r".*?" + re.escape(RULES_END), re.DOTALL)
    if pattern.search(instructions):
        return pattern.sub(lambda _: block, instructions, count=1)
    if not instructions.strip():
        return block + "\n"
    return instructions.rstrip("\n") + "\n\n" + block + "\n"
