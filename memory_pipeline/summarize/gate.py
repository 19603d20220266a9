"""The last gate before a memory is stored: learned from labelled turns, not written as one more rule.

Rules added one failing turn at a time do not generalise (48 patterns for 37 turns). What they tried to decide
(is this candidate a piece of knowledge a person would keep, or a greeting prompt's sentence, the assistant
describing itself, a plan, a one-off order?) is learned here from both labelled sets of bench/labels: a logistic
regression over a few plain features of the candidate and its turn (kind, who said it, whether it names
something particular, negation, replacement, a lexicon marker, question, length, whether the assistant speaks
of itself, whether the person's message addresses the agent as a prompt does). It is trained on the facts of
both sets' tuning halves by `python -m bench keep --gate`, which writes `gate.json` beside this file (weights,
the regularisation and threshold chosen on the tuning halves by cross-validation by turn, the labels'
commits); its figure is set B's held-out half's, in bench/results.md. It judges facts only (see `keeps`).
Without a `gate.json` every candidate is kept.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from memory_pipeline.language.kinds import Kind
from memory_pipeline.language.lexicon import DOCUMENT_LINE, NEGATION, is_question, kind_marked, replacement
from memory_pipeline.summarize import keep as keep_filter
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.logistic import LearnedWeights
from memory_pipeline.summarize.trust import TurnText

WEIGHTS = Path(__file__).with_name("gate.json")
_PARTICULAR = re.compile(r"`[^`]+`|https?://|\b\d{2,}\b|\w[./_]\w|@\w|\b[a-z]+[A-Z]\w*")
_SELF = re.compile(r"(?i)^(?:i'?m|i am|i can|i'll|i will|i have|i've|let me|my name|as an? ai|here'?s what)\b")
_ADDRESSED = re.compile(
    r"(?i)\b(?:you are|you're an?|your (?:job|role|task|name)|do not mention|you must|you should)\b"
)
FEATURES = (
    "bias",
    *(f"kind:{k.value}" for k in Kind),
    "said by the person",
    "said by the assistant",
    "said by neither",
    "names something particular",
    "negation",
    "replacement",
    "lexicon marker",
    "evidence is a question",
    "words / 20",
    "the person's message, log chars / 10",
    "the assistant speaks of itself",
    "the message addresses the agent as a prompt",
    "the message is a document (headings, many list lines)",
    "the statement opens on code or a path",
    "share of the statement's words that are code",
    "a fact the assistant states",
    "tool output in the turn, log chars / 10",
)
_CODE_WORD = re.compile(r"[`/._()\[\]{}=→<>#:]|[a-z][A-Z]")


def features(idea: Idea, turn: TurnText) -> list[float]:
    """The candidate's plain features, in the order of `FEATURES`."""
    text, evidence = idea.summary, idea.evidence or idea.summary
    role = idea.evidence_role
    return [
        1.0,
        *(float(idea.kind is k) for k in Kind),
        float(role == "user"),
        float(role == "assistant"),
        float(role not in ("user", "assistant")),
        float(bool(_PARTICULAR.search(text))),
        float(bool(NEGATION.search(text))),
        float(replacement(evidence) is not None),
        float(kind_marked(evidence) is not None),
        float(is_question(evidence)),
        len(text.split()) / 20,
        math.log1p(len(turn.user)) / 10,
        float(role == "assistant" and bool(_SELF.match(evidence.strip()))),
        float(bool(_ADDRESSED.search(turn.user))),
        float(len(DOCUMENT_LINE.findall(turn.user)) >= 5),
        float(text[:1] in "`/." or text.lower().startswith(("file", "src/", "//"))),
        sum(bool(_CODE_WORD.search(w)) for w in text.split()) / max(len(text.split()), 1),
        float(role == "assistant" and idea.kind is Kind.FACT),
        math.log1p(len(turn.other)) / 10,
    ]


LEARNED = LearnedWeights(WEIGHTS, FEATURES)


def score(idea: Idea, turn: TurnText) -> float:
    """The learned probability that `idea` is a piece a person would keep (1.0 without a trained gate)."""
    return LEARNED.probability(features(idea, turn))


def threshold() -> float:
    """The trained threshold; 0.0 without a trained gate (every score passes)."""
    return LEARNED.threshold()


def keeps(idea: Idea, turn: TurnText) -> bool:
    """Whether to store `idea`. A fact is judged here, by the weights of `gate.json` (the sources that find facts
    by shape, `facts_of` and `disclosed`, are the noisy ones); every other kind by the keep filter
    (`summarize.keep`, its own features and `keep.json`, trained on both labelled sets' tuning halves). Over every
    candidate, trained on set A's tuning half alone, this gate's features also dropped a person's plain rules
    ("Always use pnpm, never npm."): they name the kind and the speaker, the keep filter's do not.
    Neither keeps a memory that does not stand alone (`keep.stands_alone`)."""
    if not keep_filter.stands_alone(idea):
        return False
    if idea.kind is Kind.FACT:
        return LEARNED.passes(features(idea, turn))
    return keep_filter.keeps(idea, turn)
