"""The keep filter: the last word on a memory, learned from labelled turns, not written as one more rule.

A memory that says what its evidence does not is worse than none, and a small model writes many that read
well and hold nothing: a subject its evidence never names ("Set the theme to 1 …" where the setting is another),
a plan or an intention stored as a rule ("To determine if … we need to analyze …"), an order kept inside a
rule ("… Investigate."), the state of the work stored as a decision ("X is now 885 lines"), an agent's own
instructions or continuation notes, the assistant's reply to the person ("You're right. I've updated …"), a
fragment ("Going forward."). What marks them is learned here from bench/labels/knowledge_turns.json: a logistic
regression (`logistic`) over plain features of the memory and its evidence (how many of its words, and whether
its first words, its subject, are absent from the evidence it cites; first and second person by speaker; plan,
status and order shapes; length; completeness; a document's line). It judges what the gate (`gate`, facts) does
not: rules, decisions, gotchas and tasks (bar a gotcha that states its cause: see `judges`).
`python -m bench keep --train` fits it on the tuning half's candidates of those kinds that the gate passes
(positive when the bench's matcher finds a labelled piece in them) with the threshold that keeps every correct
one there, also cross-validated by turn, and writes `keep.json` beside this file; its held-out figure is in
bench/results.md (`knowledge (replay)`). Without `keep.json` every memory is kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from memory_pipeline.language.kinds import Kind
from memory_pipeline.language.lexicon import FIRST_PERSON, INTENTION, SECOND_PERSON, STATUS, kind_marked
from memory_pipeline.language.words import content_words, words
from memory_pipeline.sentences import sentences
from memory_pipeline.summarize.gate import DOCUMENT_LINE
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.knowledge import is_request
from memory_pipeline.summarize.logistic import LearnedWeights
from memory_pipeline.summarize.trust import TurnText, states_cause, support

WEIGHTS = Path(__file__).with_name("keep.json")
HEAD_WORDS = 3  # the first content words of a statement: its subject, or the verb and object of an order
# Neither the kind nor who spoke is a feature: the tuning half's correct memories of these kinds are all a
# person's rules, so a fit on them learns that decisions and the assistant's findings are never kept (it dropped
# "Use Vitest over Jest because Jest broke on our ESM imports."). The shape of the memory is what it learns.
FEATURES = (
    "bias",
    "share of its content words absent from its evidence",
    "share of its content words absent from the turn",
    "share of its first content words absent from its evidence",
    "share of its evidence's content words it keeps",
    "opens on a plan or an intention",
    "a plan or an intention inside it",
    "reports the state of the work",
    "ends on a short order",
    "opens on an order",
    "first person, said by the person",
    "first person, said by the assistant or neither",
    "second person, said by the person",
    "second person, said by the assistant or neither",
    "a lexicon marker in its evidence",
    "content words / 10",
    "fewer than three content words",
    "more than one sentence",
    "markdown marks (bold, list, heading)",
    "evidence in a message that is a document (headings, many list lines)",
)
_MARKDOWN = re.compile(r"\*\*|^\s*(?:[-*] |#{1,6} )|`[^`]*`:")


def head_words(text: str, n: int = HEAD_WORDS) -> list[str]:
    """The first `n` content words of `text`, in order (stems, as `content_words` gives them)."""
    found: list[str] = []
    for word in words(text):
        for stem in content_words(word):
            if stem not in found:
                found.append(stem)
    return found[:n]


def absent(wanted: set[str] | list[str], source: str) -> float:
    """The share of `wanted` (content-word stems) that `source` does not hold; 0.0 when nothing is wanted."""
    if not wanted:
        return 0.0
    have = content_words(source)
    return sum(w not in have for w in wanted) / len(wanted)


def opens_on_intention(text: str) -> bool:
    """A statement that opens on what the speaker means to do ("To determine if …", "Let me …", "We need to …")."""
    return bool(INTENTION.match(text.strip()))


def holds_intention(text: str) -> bool:
    """A plan or intention anywhere in the statement ("… the flow, let me investigate …")."""
    return bool(INTENTION.search(text.strip()))


def reports_status(text: str) -> bool:
    """The state of the work as reported ("The class is now 885 lines", "Added a helper")."""
    return bool(STATUS.search(text.strip()))


def ends_on_order(text: str) -> bool:
    """A statement of several sentences whose last is a short order for the moment ("… Investigate.")."""
    said = sentences(text)
    last = said[-1] if len(said) > 1 else ""
    return bool(last) and len(words(last)) <= 4 and is_request(last)


def _speaks(text: str, person: frozenset[str]) -> bool:
    return any(w in person for w in words(text))


def _in_document(evidence: str, turn: TurnText) -> bool:
    """The evidence is a line of a message that reads as a document (a pasted prompt, a summary, a file)."""
    for message in (turn.user, turn.other):
        if evidence and evidence[:60] in message and len(DOCUMENT_LINE.findall(message)) >= 5:
            return True
    return False


def features(idea: Idea, turn: TurnText) -> list[float]:
    """The memory's plain features, in the order of `FEATURES`."""
    text, evidence, role = idea.summary, idea.evidence or idea.summary, idea.evidence_role
    mine = content_words(text)
    return [
        1.0,
        1.0 - support(text, evidence),
        1.0 - support(text, turn.everything),
        absent(head_words(text), evidence),
        len(content_words(evidence) & mine) / max(len(content_words(evidence)), 1),
        float(opens_on_intention(text)),
        float(holds_intention(text)),
        float(reports_status(text)),
        float(ends_on_order(text)),
        float(is_request(text)),
        float(role == "user" and _speaks(text, FIRST_PERSON)),
        float(role != "user" and _speaks(text, FIRST_PERSON)),
        float(role == "user" and _speaks(text, SECOND_PERSON)),
        float(role != "user" and _speaks(text, SECOND_PERSON)),
        float(kind_marked(evidence) is not None),
        len(mine) / 10,
        float(len(mine) < 3),
        float(len(sentences(text)) > 1),
        float(bool(_MARKDOWN.search(text))),
        float(_in_document(evidence, turn)),
    ]


LEARNED = LearnedWeights(WEIGHTS, FEATURES)


def score(idea: Idea, turn: TurnText) -> float:
    """The learned probability that a person would keep `idea` (1.0 without `keep.json`)."""
    return LEARNED.probability(features(idea, turn))


def judges(idea: Idea) -> bool:
    """Whether the filter judges `idea`: not a fact (the gate's, `gate.keeps`), and not a gotcha that states its
    cause ("The tests hang because Redis is not running."), which `trust.review` has checked against the turn
    and of which the tuning half holds no correct example to learn from (the assistant's findings: 0 / 0)."""
    return idea.kind is not Kind.FACT and not (idea.kind is Kind.GOTCHA and states_cause(idea.summary))


def keeps(idea: Idea, turn: TurnText) -> bool:
    """Whether to store `idea` (every memory, without `keep.json`; see `judges` for what it does not judge)."""
    return not judges(idea) or LEARNED.passes(features(idea, turn))
