"""What the follow-through counters propose to a person: a memory people contradicted in two sessions or more
is an "edit or forget" proposal in REVIEW.md, first of the file, with the turns that contradicted it.

The proposal rests on the memory alone (its id is the evidence), so forgetting or editing the memory withdraws or
rewrites it like any other (`proposals.follow_memory`); the contradicting turns are in its words, where the
person reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memory_pipeline.reflect.proposals import Candidate
from memory_pipeline.reflect.review import CONTRADICTED
from memory_pipeline.sentences import by_sentence
from memory_pipeline.stores.followthrough_store import DEMOTE_AFTER, FollowThrough

QUOTE_CHARS = 120  # of each contradicting message in the proposal


def edit_or_forget(memory_id: str, turns: Sequence[FollowThrough]) -> Candidate:
    """The proposal for one contradicted memory: what it says, and each session's contradicting turn."""
    first = turns[0]
    # The first sessions that demoted it, and only those: the proposal's words stay the same as later sessions
    # add evidence (a proposal is known again by its words).
    quoted = "; ".join(
        f"“{by_sentence(t.evidence, QUOTE_CHARS)}” (session {t.session_id}, turn {t.turn_id})"
        for t in turns[:DEMOTE_AFTER]
    )
    rule = (
        f"Edit or forget memory `{memory_id}` ({first.memory_kind or 'memory'}: “{first.memory_text}”): "
        f"people contradicted it, it is no longer injected. {quoted}"
    )
    return Candidate(CONTRADICTED, rule, sorted({t.session_id for t in turns}), [memory_id], origin="followthrough")


def candidates_by_project(contradicted: Mapping[str, Sequence[FollowThrough]]) -> dict[str, list[Candidate]]:
    """The proposals of each project, from each contradicted memory's turns (one per session)."""
    found: dict[str, list[Candidate]] = {}
    for memory_id, turns in sorted(contradicted.items()):
        project = turns[0].project
        found.setdefault(project, []).append(edit_or_forget(memory_id, turns))
    return found


def repeated_correction(turns: Sequence[FollowThrough]) -> Candidate:
    """The proposal for a correction the person made in two sessions or more with no memory behind it: the rule
    in their words (the first time), its turns as evidence."""
    return Candidate(
        "Hard rules",
        turns[0].memory_text,
        sorted({t.session_id for t in turns}),
        [f"{t.session_id}/{t.turn_id}" for t in turns],
        origin="correction",
    )
