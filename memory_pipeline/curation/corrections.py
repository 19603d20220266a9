"""Corrections: a person edits a memory's text or priority, or forgets it (or it and its whole turn: the
turn's messages, its observation and every memory of it never come back either).

A correction is an event in an append-only trail (`corrections.jsonl`: who, what, when, and the new text of an
edit). The pipeline applies the trail every time it writes memories, so a re-run of the day never brings a
forgotten memory back from the same turn and never overwrites an edit, whatever model or prompt made it again.
"The same" is the memory's id (its turn and text), or a memory of the same turn that holds the same knowledge:
nearly the same words (`SAME_IDEA` of their word sets), or the same kind resting on the same evidence or about
the same subject (another model words the statement differently, but types it alike and quotes the same words).

The trail keeps ids and hashes, never the forgotten text: the words of the memory, its evidence and subject
are stored as short hashes, enough to recognise the knowledge again and nothing to read it back from.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal

import polars as pl
from pydantic import BaseModel, Field, model_validator

from memory_pipeline.language.kinds import Kind
from memory_pipeline.stores.indices import SUMMARY_INDEX
from memory_pipeline.summarize.frames import summary_documents

FORGETS = ("forget", "forget_turn")
SAME_IDEA = 0.6  # Jaccard of the word sets: a reworded idea of the same turn is the same memory
_WORD = re.compile(r"\w+")


class Correction(BaseModel):
    """One person's change to one memory."""

    memory_id: str
    # forget_turn: the memory and the whole turn it came from (its messages, its observation, every memory);
    # undo: the forgets of this memory before it no longer hold (`in_force`).
    action: Literal["edit", "forget", "forget_turn", "undo"]
    session_id: str = ""
    turn_id: str = ""
    original: str = Field("", description="The memory's text before the change: hashed on creation, never kept.")
    original_words: list[str] = Field(default_factory=list, description="Hashes of the memory's words.")
    kind: str = Field("", description="What the memory was: rule, decision, gotcha, fact, task (or '').")
    subject_words: list[str] = Field(default_factory=list, description="Hashes of the words of its subject.")
    evidence_words: list[str] = Field(default_factory=list, description="Hashes of the words it rested on.")
    text: str | None = Field(None, max_length=4000, description="The new text (edit).")
    priority: Literal["high", "medium", "low"] | None = None
    who: str = "person"
    at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())
    index: str = Field("", description="The index the memory lives in ('' in trails written before it was kept).")

    @model_validator(mode="after")
    def _an_edit_changes_something(self) -> Correction:
        if self.action == "edit" and not (self.text and self.text.strip()) and self.priority is None:
            raise ValueError("an edit needs a new text or a new priority")
        return self

    @model_validator(mode="after")
    def _text_kept_as_hashes_only(self) -> Correction:
        # Trails written before hashing held the text: read, they are hashed like new ones.
        if self.original:
            self.original_words = sorted(hashed_words(self.original) | set(self.original_words))
            self.original = ""
        return self

    @classmethod
    def of(cls, memory: dict, **change: object) -> Correction:
        """A change to `memory` (a stored document: id, turn, text, kind, subject, evidence)."""
        return cls(
            memory_id=str(memory.get("doc_id") or memory.get("id") or ""),
            session_id=str(memory.get("session_id") or ""),
            turn_id=str(memory.get("turn_id") or ""),
            original_words=sorted(hashed_words(str(memory.get("summary") or ""))),
            kind=str(memory.get("kind") or memory.get("knowledge") or ""),
            subject_words=sorted(hashed_words(str(memory.get("subject") or ""))),
            evidence_words=sorted(hashed_words(str(memory.get("evidence") or ""))),
            **change,
        )


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def hashed_words(text: str) -> set[str]:
    """The words of `text` as 12-hex-digit hashes: comparable, not readable."""
    return {hashlib.sha256(word.encode()).hexdigest()[:12] for word in _words(text)}


def _similar(left: set[str], right: set[str]) -> bool:
    return bool(left and right) and len(left & right) / len(left | right) >= SAME_IDEA


def same_idea(a: str, b: str) -> bool:
    return _similar(_words(a), _words(b))


def _matches(correction: Correction, memory: dict) -> bool:
    if memory.get("doc_id") == correction.memory_id:
        return True
    same_turn = correction.session_id and (memory.get("session_id"), memory.get("turn_id")) == (
        correction.session_id,
        correction.turn_id,
    )
    if not same_turn:
        return False
    if correction.action == "forget_turn":
        return True
    if _similar(set(correction.original_words), hashed_words(str(memory.get("summary", "")))):
        return True
    kinds = {k.value for k in Kind}
    kind = next((t for t in memory.get("tags") or [] if t in kinds), memory.get("kind") or "")
    if not correction.kind or kind != correction.kind:
        return False
    return _similar(set(correction.evidence_words), hashed_words(str(memory.get("evidence") or ""))) or _similar(
        set(correction.subject_words), hashed_words(str(memory.get("subject") or ""))
    )


def edited_ids(frame: pl.DataFrame, corrections: list[Correction]) -> set[str]:
    """Ids of the memories in `frame` whose text a person edited: their words are the person's, not the turn's,
    and no grounding check judges them."""
    edits = [c for c in corrections if c.action == "edit" and c.text and c.text.strip()]
    if not edits or frame.is_empty():
        return set()
    return {str(m["doc_id"]) for m in frame.iter_rows(named=True) if any(_matches(c, m) for c in edits)}


def apply_corrections(memories: Iterable[dict], corrections: list[Correction], index: str = "") -> list[dict]:
    """`memories` as people corrected them: forgotten ones left out, edits applied (the latest wins; a memory
    keeps its id, its citation, whatever its text becomes).

    `index`: where these memories are stored. An edited memory of it keeps the id the person edited even when
    this run's model worded it anew (its id, a hash of its words, would change and the old id answer 404);
    one memory per id is kept, the one the model worded as before first."""
    ordered = sorted(corrections, key=lambda c: c.at)
    kept: dict[str, dict] = {}
    for memory in memories:
        mine = [c for c in ordered if _matches(c, memory)]
        if any(c.action in FORGETS for c in mine):
            continue
        own_id = memory.get("doc_id")
        memory = dict(memory)
        for edit in mine:
            if edit.text and edit.text.strip():
                memory["summary"] = edit.text.strip()
            if edit.priority:
                memory["priority"] = edit.priority
            if index and edit.index == index:
                memory["doc_id"] = edit.memory_id
        doc_id = str(memory.get("doc_id"))
        if doc_id not in kept or own_id == doc_id:
            # Two wordings of one edited memory in one turn are that one memory: stored once.
            kept[doc_id] = memory
    return list(kept.values())


def in_force(corrections: list[Correction]) -> list[Correction]:
    """The corrections that hold (oldest first): a forget followed by an undo of the same memory holds no more,
    and the undo itself changes nothing else."""
    ordered = sorted(corrections, key=lambda c: c.at)
    undone = {c.memory_id: c.at for c in ordered if c.action == "undo"}
    return [
        c
        for c in ordered
        if c.action != "undo" and not (c.action in FORGETS and c.memory_id in undone and c.at <= undone[c.memory_id])
    ]


def forgotten_turns(corrections: list[Correction]) -> set[tuple[str, str]]:
    """(session id, turn id) of every turn a person forgot whole."""
    return {(c.session_id, c.turn_id) for c in corrections if c.action == "forget_turn" and c.session_id}


def drop_forgotten_turns(messages: pl.DataFrame, corrections: list[Correction]) -> pl.DataFrame:
    """`messages` (raw messages or turns) without the turns people forgot: never indexed, observed or read."""
    turns = forgotten_turns(corrections)
    if not turns or messages.is_empty():
        return messages
    gone = pl.DataFrame(
        {"session_id": [s for s, _ in turns], "turn_id": [t for _, t in turns]},
        schema={"session_id": messages.schema["session_id"], "turn_id": messages.schema["turn_id"]},
    )
    return messages.join(gone, on=["session_id", "turn_id"], how="anti")


def correct_frame(frame: pl.DataFrame, corrections: list[Correction], index: str = "") -> pl.DataFrame:
    """`apply_corrections` over a frame of memories (summaries, observations) stored in `index`, schema kept."""
    if not corrections or frame.is_empty():
        return frame
    return pl.DataFrame(apply_corrections(frame.iter_rows(named=True), corrections, index), schema=frame.schema)


def corrected_summaries(outcomes: pl.DataFrame, corrections: list[Correction]) -> pl.DataFrame:
    """The `memory-summary` documents of a day's outcomes (`llm_ideas`) as people corrected them: what they
    edited stays edited, what they forgot stays forgotten. One way for the index and the daily log alike."""
    return correct_frame(summary_documents(outcomes), corrections, SUMMARY_INDEX)
