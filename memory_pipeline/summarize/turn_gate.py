"""The gate before the chat model: turns that cannot hold knowledge are not read by it.

On 2 cores the chat model reads a turn in half a minute or more, and most turns of a real history hold nothing
to remember: a scheduled task's prompt, a heartbeat, an acknowledgement ("ok, continue"), a tool loop with no
word from the person, a question answered. What marks them is learned from labelled turns
(bench/labels/knowledge_turns.json, `memorable`), not written as rules: a logistic regression over a few plain
features of the whole turn (how much the person said, whether it is a question or an acknowledgement, whether
their words carry a lexicon marker, a negation, a replacement, a particular; how much the assistant and the
tools said, and whether the assistant names a cause or a finding). `python -m bench turn_gate --train` fits it
on the labels' tuning half with the threshold that keeps every memorable turn there, also when cross-validated,
and writes `turn_gate.json` beside this file; its held-out figure is in bench/results.md. A turn below the threshold is
summarised without the model (its own words only, through the same checks). Without `turn_gate.json` every
turn is read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

from memory_pipeline.language.lexicon import (
    CAUSE,
    DOCUMENT_LINE,
    FINDING,
    NEGATION,
    is_question,
    kind_marked,
    lasting,
    replacement,
)
from memory_pipeline.language.words import content_words
from memory_pipeline.summarize.logistic import LearnedWeights, fit, probability
from memory_pipeline.summarize.trust import TurnText, is_acknowledgement

WEIGHTS = Path(__file__).with_name("turn_gate.json")
_PARTICULAR = re.compile(r"`[^`]+`|https?://|\b\d{2,}\b|\w[./_]\w|@\w|#[0-9a-fA-F]{3,}|\b[a-z]+[A-Z]\w*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
FEATURES = (
    "bias",
    "no words from the person",
    "the person's words, log chars / 10",
    "the person's content words / 20",
    "the person only acknowledges",
    "the person's message ends on a question",
    "a lexicon marker in the person's words",
    "a lasting statement in the person's words",
    "a negation in the person's words",
    "a replacement in the person's words",
    "a particular in the person's words",
    "the person's message is a document (headings, many list lines)",
    "the assistant's words, log chars / 10",
    "a cause or finding in the assistant's words",
    "tool output and context, log chars / 10",
)


def features(turn: TurnText) -> list[float]:
    """The turn's plain features, in the order of `FEATURES`."""
    said, reply = turn.user.strip(), turn.assistant
    sentences = [s for s in _SENTENCE.split(said) if s.strip()]
    return [
        1.0,
        float(not said),
        math.log1p(len(said)) / 10,
        len(content_words(said)) / 20,
        float(bool(said) and is_acknowledgement(said)),
        float(is_question(said)),
        float(any(kind_marked(s) for s in sentences)),
        float(any(lasting(s) for s in sentences)),
        float(bool(NEGATION.search(said))),
        float(any(replacement(s) for s in sentences)),
        float(bool(_PARTICULAR.search(said))),
        float(len(DOCUMENT_LINE.findall(said)) >= 5),
        math.log1p(len(reply)) / 10,
        float(bool(CAUSE.search(reply) or FINDING.search(reply))),
        math.log1p(len(turn.other)) / 10,
    ]


LEARNED = LearnedWeights(WEIGHTS, FEATURES)


def score(turn: TurnText) -> float:
    """The learned probability that `turn` holds knowledge (1.0 without a trained gate)."""
    return LEARNED.probability(features(turn))


def may_hold_knowledge(turn: TurnText) -> bool:
    """Whether the chat model should read `turn` (every turn, without a trained gate)."""
    return LEARNED.passes(features(turn))


def train(turns: Sequence[TurnText], memorable: Sequence[bool], folds: int = 5) -> tuple[list[float], float]:
    """Weights fitted on `turns`, and a threshold that keeps every memorable one: the lowest score a memorable
    turn gets, from the whole fit or from a cross-validated fit that did not see it (`folds` folds), since the
    scores of turns a fit has seen flatter it and a missed memorable turn costs more than a model call."""
    rows, targets = [features(t) for t in turns], [int(m) for m in memorable]
    weights = fit(rows, targets)
    lowest = [probability(weights, r) for r, m in zip(rows, memorable, strict=True) if m]
    for fold in range(folds):
        inside = [n for n in range(len(rows)) if n % folds != fold]
        unseen = [n for n in range(len(rows)) if n % folds == fold and memorable[n]]
        if unseen:
            partial = fit([rows[n] for n in inside], [targets[n] for n in inside])
            lowest += [probability(partial, rows[n]) for n in unseen]
    return weights, (min(lowest) if lowest else 0.0)
