"""The keep filter: whether a rule, decision, gotcha or task is worth storing, learned from labelled turns.

The model and the sentence rules both propose more than a person would keep: the assistant's plans and status
reports, hedges, a document's lines, an order of the moment (set B's held-out half: 28% of the turns with no
knowledge got a memory, 12% of the memories held a labelled piece). What tells them apart is learned here from
the tuning halves of both labelled sets (bench/labels), not written as one more rule: a logistic regression over
plain features of the memory and its evidence (how much of it its evidence and its turn hold, its length, a plan
or a status report, a hedge, a question, an order at its end, a document's line, whether its evidence is the
person's own message).

Neither the memory's kind nor who spoke is a feature: a first filter that had them learned "first person, said by
the person" as a negative from ten examples and dropped the person's preferences (reverted in 07ab1c9).

`python -m bench keep` trains it and writes `keep.json` beside this file (weights, the threshold that keeps every
correct tuning candidate, also unseen by 5-fold by turn, and the labels' commits); `python -m bench keep --final`
gave its one held-out figure (bench/results.md, `keep (final, set B held-out)`): with the embedded model, other
turns with a memory 28% -> 12%, precision 12% -> 26%, memories from system, greeting, persona or scheduled-task
text 7 -> 0, one correct memory of 32 lost. Facts are the learned `gate`'s (their own features). Without a
`keep.json` every candidate is kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from memory_pipeline.language.kinds import Kind
from memory_pipeline.language.lexicon import (
    COMMAND_FAILED,
    COMMAND_PASSED,
    DOCUMENT_LINE,
    FINDING,
    HEDGE,
    INTENTION,
    WORK_STATUS,
    is_question,
)
from memory_pipeline.language.words import POINTING, content_words, words
from memory_pipeline.sentences import sentences
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.knowledge import is_request
from memory_pipeline.summarize.logistic import LearnedWeights
from memory_pipeline.summarize.trust import TurnText, support

WEIGHTS = Path(__file__).with_name("keep.json")
HEAD_WORDS = 3  # the words a memory opens on: what it is about
# Left out, besides kind and speaker: the lexicon's marker of a lasting statement in the evidence (kind by another
# name: the tuning half's correct memories mostly say "always" or "never", so a fit on it drops "Use 2-space
# indentation in Python files.", 0.151 < 0.223), and the share of the evidence the memory keeps (it learned that a
# verbatim copy of the person's sentence is wrong, from the path without the model copying sentences that are).
FEATURES = (
    "bias",
    "share of its content words absent from its evidence",
    "share of its content words absent from the turn",
    "share of its first content words absent from its evidence",
    "opens on a plan or an intention",
    "reports the state of the work",
    "a hedge or a modal opener",
    "a question",
    "ends on a short order",
    "its evidence is in the person's message",
    "content words / 10",
    "fewer than three content words",
    "more than one sentence",
    "markdown marks (bold, list, heading)",
    "evidence in a message that is a document (headings, many list lines)",
)
_MARKDOWN = re.compile(r"\*\*|^\s*(?:[-*] |#{1,6} )|`[^`]*`:")


def head_words(text: str, n: int = HEAD_WORDS) -> list[str]:
    """The first `n` distinct content words of `text`, stemmed."""
    found: list[str] = []
    for word in words(text):
        for stem in content_words(word):
            if stem not in found:
                found.append(stem)
    return found[:n]


def absent(wanted: Sequence[str] | set[str], source: str) -> float:
    """The share of `wanted` content words that `source` does not hold."""
    if not wanted:
        return 0.0
    have = content_words(source)
    return sum(w not in have for w in wanted) / len(wanted)


def ends_on_order(text: str) -> bool:
    """A memory of several sentences whose last is a short order of the moment ("Do it now.")."""
    said = sentences(text)
    last = said[-1] if len(said) > 1 else ""
    return bool(last) and len(words(last)) <= 4 and is_request(last)


def _in_document(evidence: str, turn: TurnText) -> bool:
    return any(
        evidence and evidence[:60] in message and len(DOCUMENT_LINE.findall(message)) >= 5
        for message in (turn.user, turn.other)
    )


def features(idea: Idea, turn: TurnText) -> list[float]:
    """The memory's plain features, in the order of `FEATURES` (its kind and its speaker are not among them)."""
    text, evidence = idea.summary, idea.evidence or idea.summary
    mine = content_words(text)
    return [
        1.0,
        1.0 - support(text, evidence),
        1.0 - support(text, turn.everything),
        absent(head_words(text), evidence),
        float(bool(INTENTION.match(text.strip()))),
        float(bool(WORK_STATUS.search(text.strip()))),
        float(bool(HEDGE.search(text.strip()))),
        float(is_question(text)),
        float(ends_on_order(text)),
        float(bool(evidence) and evidence[:60] in turn.user),
        len(mine) / 10,
        float(len(mine) < 3),
        float(len(sentences(text)) > 1),
        float(bool(_MARKDOWN.search(text))),
        float(_in_document(evidence, turn)),
    ]


LEARNED = LearnedWeights(WEIGHTS, FEATURES)


def judges(idea: Idea) -> bool:
    """What the filter judges: every kind but a fact (facts are the learned `gate`'s)."""
    return idea.kind is not Kind.FACT


def confirmed(turn: TurnText) -> bool:
    """Whether the turn's commands confirm what the assistant found: a failure, then a pass on a later line than
    the last failure ("1 failed, 13 passed" is one run that failed)."""
    failures = list(COMMAND_FAILED.finditer(turn.other))
    if not failures:
        return False
    line_end = turn.other.find("\n", failures[-1].end())
    return line_end >= 0 and COMMAND_PASSED.search(turn.other, line_end) is not None


def confirmed_finding(idea: Idea, turn: TurnText) -> bool:
    """A cause the assistant found that the turn's commands confirm (they failed, then passed): kept whatever
    its score. The labelled sets hold too few such findings for the filter to learn them (set B's tuning half:
    one); every finding candidate of the tuning halves that the turn did not confirm was wrong (a hypothesis:
    "The issue is definitely DNS-related")."""
    if idea.evidence_role != "assistant" or not confirmed(turn):
        return False
    # The model types a found cause as a gotcha or, as often, a decision ("fixed by …"): its words say which.
    return idea.kind is Kind.GOTCHA or bool(FINDING.search(idea.evidence or idea.summary))


def score(idea: Idea, turn: TurnText) -> float:
    """The learned probability that `idea` holds a piece a person would keep (1.0 without a trained filter)."""
    return LEARNED.probability(features(idea, turn))


# A memory that opens on a pronoun stands for something said before it, which the reader next week does not have
# ("It should end up on the main branch."). A demonstrative mostly opens on its noun ("This plan must …"): not one.
_LEANS_BACK = POINTING - {"this", "that", "these", "those"}


def stands_alone(idea: Idea) -> bool:
    """Whether the memory can be read without its turn: it does not open on a pronoun that points back. Both
    labelled sets' tuning halves stored 7 such memories, none self-contained (2 held a labelled piece, both
    "It …" for a thing the turn named before); their held-out halves 2, both wrong (bench/results.md)."""
    said = words(idea.summary)
    return not said or said[0].lower().removesuffix("'s").removesuffix("’s") not in _LEANS_BACK


def keeps(idea: Idea, turn: TurnText) -> bool:
    """Whether to store `idea` (a fact always: the `gate` judges it; a finding the turn confirms always)."""
    return not judges(idea) or confirmed_finding(idea, turn) or LEARNED.passes(features(idea, turn))
