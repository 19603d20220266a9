"""Corrections: a person edits a memory's text or priority, or forgets it.

A correction is an event in an append-only trail (`memory-corrections`: who, what, when, before and after). The
pipeline applies the trail every time it writes memories, so a re-run of the day never brings a forgotten memory
back from the same turn and never overwrites an edit. "The same" is the memory's id (its turn and text) or, when
the model words an idea a little differently on a later run, an idea of the same turn whose words are nearly
the same (`SAME_IDEA` of their word sets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

import polars as pl
from pydantic import BaseModel, Field, model_validator

SAME_IDEA = 0.6  # Jaccard of the word sets: a reworded idea of the same turn is the same memory
_WORD = re.compile(r"\w+")


class Correction(BaseModel):
    """One person's change to one memory."""

    memory_id: str
    action: Literal["edit", "forget"]
    session_id: str = ""
    turn_id: str = ""
    original: str = Field("", description="The memory's text before the change (to recognise it reworded).")
    text: str | None = Field(None, max_length=4000, description="The new text (edit).")
    priority: Literal["high", "medium", "low"] | None = None
    who: str = "person"
    at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())

    @model_validator(mode="after")
    def _an_edit_changes_something(self) -> Correction:
        if self.action == "edit" and not (self.text and self.text.strip()) and self.priority is None:
            raise ValueError("an edit needs a new text or a new priority")
        return self


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def same_idea(a: str, b: str) -> bool:
    left, right = _words(a), _words(b)
    return bool(left and right) and len(left & right) / len(left | right) >= SAME_IDEA


def _matches(correction: Correction, memory: dict) -> bool:
    if memory.get("doc_id") == correction.memory_id:
        return True
    same_turn = correction.session_id and (memory.get("session_id"), memory.get("turn_id")) == (
        correction.session_id,
        correction.turn_id,
    )
    return bool(same_turn) and same_idea(correction.original, str(memory.get("summary", "")))


def apply_corrections(memories: Iterable[dict], corrections: list[Correction]) -> list[dict]:
    """`memories` as people corrected them: forgotten ones left out, edits applied (the latest wins; a memory
    keeps its id, its citation, whatever its text becomes)."""
    ordered = sorted(corrections, key=lambda c: c.at)
    kept = []
    for memory in memories:
        mine = [c for c in ordered if _matches(c, memory)]
        if any(c.action == "forget" for c in mine):
            continue
        memory = dict(memory)
        for edit in mine:
            if edit.text and edit.text.strip():
                memory["summary"] = edit.text.strip()
            if edit.priority:
                memory["priority"] = edit.priority
        kept.append(memory)
    return kept


def correct_frame(frame: pl.DataFrame, corrections: list[Correction]) -> pl.DataFrame:
    """`apply_corrections` over a frame of memories (summaries, observations), schema kept."""
    if not corrections or frame.is_empty():
        return frame
    return pl.DataFrame(apply_corrections(frame.iter_rows(named=True), corrections), schema=frame.schema)
