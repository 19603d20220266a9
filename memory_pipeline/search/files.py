"""Memories about one file: what earlier sessions recorded about the file the agent has just read or edited.

Pure rules over rows the engine fetched (`MemorySearch.about_file`): which names a memory may use for the
file, which rows really concern it, and in what order the few that fit are shown. A memory names a file as
its text did (`theme.ts`, `src/ui/theme.ts`, `./src/ui/theme.ts`), so a path matches a memory when one of its
tails on a `/` boundary is the name the memory holds: `src/ui/theme.ts` is concerned by `theme.ts` and
`ui/theme.ts`, never by `lib/theme.ts`.

A standing statement about a part of the product concerns its files too: "Amounts in gates are integer cents"
when `src/gates/GatesPanel.tsx` is read. A rule, a gotcha or a decision concerns a file when it names one of
the file's component folders (`components`: the folders that are not source-tree layout), after the memories
that name the file itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from memory_pipeline.language.lexicon import lasting
from memory_pipeline.language.topics import LAYOUT_DIRS, files_of
from memory_pipeline.language.words import stem, words
from memory_pipeline.search.models import Row
from memory_pipeline.stores.indices import NOTES_INDEX, OBSERVATION_INDEX, SUMMARY_INDEX

# Tails kept of a path: `a/b/c/d/e.ts` is named at most by its last four segments.
MAX_SEGMENTS = 4
FILE_RECALL_K = 3  # memories shown with a file: a reminder in a tool result, not a search page
FILE_RECALL_MAX = 5
# What is worth a reminder next to a file, most useful first: a trap, a rule, a choice made, a fact; then a
# note kept on purpose; then a failure an earlier turn met that named the file.
_ORDER = {"gotcha": 0, "rule": 1, "decision": 2, "fact": 3, "task": 4}
_NOTE, _FAILURE = 5, 6
# The kinds that hold for every file of a component: what to do, what to avoid, what was chosen (a fact about
# a component, its port or queue, is wanted when asked, not at every file of it).
STANDING = ("rule", "gotcha", "decision")
MAX_COMPONENTS = 2  # the innermost component folders of a path (`packages/ui/src/theme/x.ts` -> theme, ui)
FAILED = "Failed:"  # an observation's part that quotes its turn's first failure (recall/observations.py)


def as_failure(row: Row) -> Row:
    """An earlier turn's observation shown from the failure it quotes on ("Failed: … Outcome: …"): what a
    reader meeting the same failure needs (what failed and what was found or done), without the request and
    the tools before it, so the outcome's fix fits the line. Any other row as it is."""
    if row.kind != "observation" or FAILED not in row.summary:
        return row
    return row.model_copy(update={"summary": FAILED + row.summary.split(FAILED, 1)[1]})


def file_names(path: str, project: str | None = None) -> list[str]:
    """The names a memory may give `path`, longest first: the path relative to `project` when it lies
    under it, then each shorter tail down to the bare file name (`src/ui/theme.ts`, `ui/theme.ts`,
    `theme.ts`). Empty for a path with no file name."""
    pure = PurePosixPath(path.strip().removeprefix("@"))
    if project and pure.is_absolute():
        try:
            pure = pure.relative_to(PurePosixPath(project))
        except ValueError:
            pass  # outside the project: named by its own tails
    parts = [p for p in pure.parts if p not in ("/", ".", "")]
    if ".." in parts:  # `../x/y.ts`: only what follows the last step up names it
        parts = parts[len(parts) - parts[::-1].index("..") :]
    parts = parts[-MAX_SEGMENTS:]
    return ["/".join(parts[i:]) for i in range(len(parts))]


def components(names: Sequence[str]) -> list[str]:
    """The component folders of the file called `names` (`file_names`), innermost first: the folders of its
    longest name that do not lay the source tree out (`src/gates/GatesPanel.tsx` -> gates)."""
    folders = names[0].split("/")[:-1] if names else []
    found = [f.lower() for f in reversed(folders) if f.lower() not in LAYOUT_DIRS and f[:1].isalpha()]
    return found[:MAX_COMPONENTS]


def names_component(row: Row, parts: Sequence[str]) -> bool:
    """Whether a standing memory (`STANDING`) names one of the component folders `parts` as a word of its text
    or subject (compared by `stem`: the `refunds` folder, "refunded"). A rule must say that it lasts (the
    lexicon's markers: "always", "never", "must", "don't"): beside every file of pi-mono's `tui` folder, the
    one-off orders the own-words path still stores as rules ("Fix the tui test sources.") were all the component
    recall showed."""
    if row.kind != "summary" or row.knowledge not in STANDING or not parts:
        return False
    if row.knowledge == "rule" and not lasting(row.summary):
        return False
    said = {stem(w) for w in words(f"{row.summary} {row.subject}")}
    return any(stem(part) in said for part in parts)


def candidates(names: Sequence[str], parts: Sequence[str]) -> list[dict[str, Any]]:
    """The Elasticsearch clauses (any one suffices) that fetch what may concern the file called `names`:
    memories whose files hold one of the names; standing memories whose text has one of its component folders
    `parts`; notes and failed turns whose text has the bare name. `for_file` then reads which file, and which
    component, their text really names."""
    clauses: list[dict[str, Any]] = [
        {"bool": {"filter": [{"term": {"_index": SUMMARY_INDEX}}, {"terms": {"files": list(names)}}]}},
        {"bool": {"filter": [{"term": {"_index": NOTES_INDEX}}, {"match_phrase": {"summary": names[-1]}}]}},
        {
            "bool": {
                "filter": [
                    {"term": {"_index": OBSERVATION_INDEX}},
                    {"match_phrase": {"summary": names[-1]}},
                    {"match_phrase": {"summary": FAILED}},
                ]
            }
        },
    ]
    if parts:
        standing = [{"term": {"_index": SUMMARY_INDEX}}, {"terms": {"kind": list(STANDING)}}]
        clauses.append({"bool": {"filter": [*standing, {"match": {"summary": " ".join(parts)}}]}})
    return clauses


def _named(text: str, names: Sequence[str]) -> bool:
    return any(found.removeprefix("./") in names for found in files_of(text))


def concerns(row: Row, files: Sequence[str], names: Sequence[str]) -> bool:
    """Whether `row` (whose memory names `files`) is about the file called `names`: a memory that names it,
    a note whose text names it, or an observation whose failure names it (not one that only read it)."""
    if row.kind == "summary":
        return any(f.removeprefix("./") in names for f in files)
    if row.kind == "note":
        return _named(row.summary, names)
    if row.kind == "observation" and FAILED in row.summary:
        failure = row.summary.split(FAILED, 1)[1].split(" Outcome: ", 1)[0]
        return _named(failure, names)
    return False


def _rank(row: Row) -> int:
    if row.kind == "summary":
        return _ORDER.get(row.knowledge, len(_ORDER))
    return _NOTE if row.kind == "note" else _FAILURE


def for_file(rows: Sequence[tuple[Row, Sequence[str]]], names: Sequence[str], k: int = FILE_RECALL_K) -> list[Row]:
    """The `k` rows that concern the file, the most useful kind first and the newest first within a kind,
    those about its component (`names_component`) after every row that names the file. A replaced decision
    is left out (its successor is what holds), and so is the failure of a turn whose memory is shown already
    (the memory is what was learnt from it)."""
    kept: list[Row] = []
    learnt: set[tuple[str, str]] = set()
    parts = components(names)
    ordered = sorted(rows, key=lambda pair: pair[0].time, reverse=True)
    named = [(0, pair) for pair in ordered if concerns(*pair, names)]
    named += [(1, pair) for pair in ordered if not concerns(*pair, names) and names_component(pair[0], parts)]
    for _, (row, _files) in sorted(named, key=lambda item: (item[0], _rank(item[1][0]))):
        turn = (row.session_id, row.turn_id)
        if row.superseded_by:
            continue
        if row.kind == "observation" and turn in learnt:
            continue
        learnt.add(turn)
        kept.append(row)
    return kept[:k]
