"""The same knowledge said in several sessions, read as one; a replaced decision, read with what holds now.

Pure code over rows, shared by every surface (the briefing, the CLI, the API, MCP, the pi tools, the browser):
- `folded`: rows that restate one another (most of their content words shared) become the first of them, which
  counts the sessions that said it (`said_in`) and names the others (`restatements`): "Use pnpm, never npm" said
  in three sessions is one row "said in 3 sessions", not three rows.
- `replaced`: a decision a later one replaced (`superseded_by`: reflection's mark, or the later memory's own,
  `reflect.replacing`) carries the text of the one that holds now and the day it stopped holding, so nobody
  reads the old one as current; it is kept, with its interval, for its history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from memory_pipeline.language.lexicon import particulars
from memory_pipeline.language.words import content_words
from memory_pipeline.reflect.similarity import cosine_matrix
from memory_pipeline.search.models import Row
from memory_pipeline.sentences import by_sentence

# Two memories whose content words overlap this much (Jaccard) say the same thing.
SAME_AT = 0.7
# Or, of one kind, whose vectors are this close: the cosine at which a proposal is a known one
# (`ReflectPolicyResource.proposal_same_threshold`). MiniLM gives paraphrases of one rule ("Please use pnpm, not
# npm" / "Don't run npm here, we use pnpm for everything") 0.81 to 0.91; a decision and the one that replaced it
# ("keep sessions in Redis" / "switched sessions from Redis to Postgres") 0.60 to 0.65.
RESTATED_COSINE = 0.8
CURRENT_CHARS = 200  # the replacing decision's text on a row: whole sentences within this


# A text's content words, read once however many rows it is compared with (folding compares every pair).
_words = lru_cache(maxsize=4096)(content_words)


def _same(a: set[str], b: set[str]) -> bool:
    return bool(a and b) and len(a & b) / len(a | b) >= SAME_AT


def same_knowledge(a: str, b: str) -> bool:
    """Whether two memories' texts say the same thing (most of their content words shared)."""
    return _same(_words(a), _words(b))


def _particulars(text: str) -> set[str]:
    return {p.lower() for p in particulars(text)}


def apart(a: str, b: str) -> bool:
    """Whether two memories name different particulars, each one the other does not: the same trap met in two
    parts of a project (`src/pilots` and `PILOTS_FAKE_CLOCK=1`, `src/tariffs` and `TARIFFS_FAKE_CLOCK=1`) is two
    pieces of knowledge however alike their words and vectors. A restatement may add one (a port said again with
    its config file) or leave them out."""
    pa, pb = _particulars(a), _particulars(b)
    return bool(pa - pb) and bool(pb - pa)


def restates(a: Row, b: Row, vectors: Mapping[str, Sequence[float]]) -> bool:
    """Whether `b` says again what `a` says: most of its words, or (a memory of the same kind) its meaning. A
    replaced decision never restates a current one: what holds now and what held before stay apart; a turn's
    observation ("Asked: … Outcome: …", a record of a turn) never restates a memory or a note (knowledge); and
    two that name different particulars (`apart`) are two things alike."""
    if bool(a.superseded_by) != bool(b.superseded_by) or (a.kind == "observation") != (b.kind == "observation"):
        return False
    if apart(a.summary, b.summary):
        return False
    if same_knowledge(a.summary, b.summary):
        return True
    va, vb = vectors.get(a.id), vectors.get(b.id)
    if not (va and vb) or a.knowledge != b.knowledge:
        return False
    return float(cosine_matrix([va, vb])[0, 1]) >= RESTATED_COSINE


def folded(
    rows: Iterable[Row], known: Iterable[set[str]] = (), vectors: Mapping[str, Sequence[float]] | None = None
) -> list[Row]:
    """`rows` in their order with restatements (`restates`; by meaning where `vectors` has both rows' vectors)
    folded into the first row that said them: that row counts the distinct sessions (`said_in`) and lists the
    folded ids (`restatements`). Rows that repeat a line already shown elsewhere (`known`: its content words,
    e.g. MEMORY.md's rules in a briefing) are left out."""
    shown = list(known)
    kept: list[tuple[Row, set[str], list[str]]] = []
    for row in rows:
        if any(_same(_words(row.summary), k) for k in shown):
            continue
        twin = next((entry for entry in kept if restates(entry[0], row, vectors or {})), None)
        if twin:
            twin[1].update({row.session_id, *row.restated_in})
            twin[2].extend([row.id, *row.restatements])
        else:
            kept.append((row, {row.session_id, *row.restated_in}, list(row.restatements)))
    return [
        row.model_copy(
            update={
                "said_in": len(sessions - {""}) or 1,
                "restatements": ids,
                "restated_in": sorted(sessions - {row.session_id, ""}),
            }
        )
        for row, sessions, ids in kept
    ]


def replaced(rows: Iterable[Row], replacements: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    """`rows`, each replaced one with what holds now: `replacements` maps the id of the reflection or memory that
    replaced it to its stored record (`summary`, `established_at`); a row whose replacement is not found keeps
    only its mark."""
    out = []
    for row in rows:
        found = replacements.get(row.superseded_by or "")
        if found:
            row = row.model_copy(
                update={
                    "current": by_sentence(str(found.get("summary", "")), CURRENT_CHARS),
                    "held_until": str(found.get("established_at", ""))[:10] or None,
                }
            )
        out.append(row)
    return out


def interval(row: Row) -> str:
    """When a replaced memory held: "2025-01-10 to 2025-03-02" (its own day to the day it was replaced)."""
    start = row.time[:10] if row.time else "undated"
    return f"{start} to {row.held_until}" if row.held_until else start
