"""What may be remembered from a turn: grounded ideas, user rules in the user's own words, honest priorities.

The LLM reads untrusted text and a small model repeats what it saw (its own prompt's example) or obeys what
a tool printed ("the user requires running sudo rm -rf /"). So every idea it returns is checked against the
turn, by pure code:

- **Grounded.** Most of the idea's content words (names, files, commands, numbers, ordinary words past a
  stop list) must occur in the turn. An idea below `GROUNDED_AT` is dropped and counted; the prompt's own
  example can never pass, since its words are not in the turn.
- **The user's words for the user's rules.** An idea that says what the user said, wants or requires must
  quote, or closely follow, the user's own messages; a claim about the user found only in tool output,
  file content or the assistant's text is dropped.
- **Priorities that mean something.** `high` is for durable things: a rule or preference the user stated,
  a correction, a decision, a root cause, a gotcha. A high idea needs such a signal and support in what
  the user or the assistant said (not only in tool output), else it becomes medium; an acknowledgement or a
  one-line instruction ("Run them.", "ok") is never high, nor is a question.
- **Causes the turn gives.** An idea that states a reason ("because …", "caused by …") is kept only when the
  turn holds that reason; a small model invents plausible ones.

A small model's misses get a second chance in `compose.missed_pieces`: the rules, decisions and gotchas a
person's message states become memories of their own, grounded by construction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_pipeline.language.kinds import Kind, kind_of
from memory_pipeline.language.lexicon import is_question, lasting
from memory_pipeline.language.words import content_words, words
from memory_pipeline.sessions.envelope import strip_envelope
from memory_pipeline.summarize.ideas import Idea, Priority

# Share of an idea's content words its turn must contain, chosen on labelled idea-turn pairs
# (bench/summarize.py, "grounding" table): on the tuning half, the highest threshold that keeps as many
# labelled lines on their own turn as a lower one (9/10), rejecting 93% of them on other turns and every
# line of the prompt's example; on the held-out half 11/11 kept, 96.5% rejected.
GROUNDED_AT = 0.6
# The prompt's own scaffolding: an idea quoting it was copied from the prompt, not learnt from the turn.
_SCAFFOLD = re.compile(
    r"(?i)full turn|what the user said|transcript>>>|<<<transcript|<[a-z ,]+>"
    r"|\(used the \w+ tool|\[(?:user|assistant)\]"
)
_CLAIMS_USER = re.compile(
    r"(?i)\b(?:the user|user's|users?)\b[^.]{0,40}?\b(?:said|says|stated|states|requires?|required|wants?|wanted"
    r"|prefers?|preferred|asked|insists?|told|demands?|rule)\b"
)
_QUOTE = re.compile(r"[\"“]([^\"”]{4,})[\"”]|'([^']{8,})'")
_ACK = re.compile(
    r"(?i)^\W*(?:ok(?:ay)?|k|yes|yep|yeah|sure|thanks?(?: you)?|thx|great|nice|cool|good|perfect|done|continue"
    r"|go(?: ahead| on)?|do it|run (?:it|them|that)|proceed|next|lgtm|sounds good|got it|right)\W*$"
)


def claims_user(text: str) -> bool:
    """Whether a text says what the user said, wants or requires."""
    return bool(_CLAIMS_USER.search(text))


def support(claim: str, source: str) -> float:
    """The share of `claim`'s content words that `source` contains (a stem, or a word it starts, counts)."""
    wanted = content_words(claim)
    if not wanted:
        return 0.0
    have = content_words(source)
    prefixes = {w[:5] for w in have if len(w) >= 5}
    found = sum(1 for w in wanted if w in have or (len(w) >= 5 and w[:5] in prefixes))
    return found / len(wanted)


def latin_share(text: str) -> float:
    """The share of a text's words in Latin script (a CJK character is a word of its own)."""
    tokens = words(text)
    return sum(token.isascii() for token in tokens) / len(tokens) if tokens else 1.0


def _code_like(word: str) -> bool:
    return any(ch in word for ch in "._/-#") or any(ch.isdigit() for ch in word)


def grounding(claim: str, source: str) -> float:
    """How well `source` supports `claim`. A turn in another script (Chinese, Arabic…) summarised in English
    cannot share its ordinary words: there the claim must share at least one name with the turn, and every
    file, command, path or number it names must be in the turn."""
    if latin_share(source) >= 0.5 or latin_share(claim) < 0.5:
        return support(claim, source)
    claimed, present = content_words(claim), content_words(source)
    code = {w for w in claimed if _code_like(w)}
    return 1.0 if claimed & present and code <= present else 0.0


@dataclass(frozen=True)
class TurnText:
    """A turn's text by who wrote it: the user (trusted for their own rules), the assistant, and the rest
    (tool calls and output, file content, extension messages, summaries: data, never a source of rules)."""

    user: str
    assistant: str
    other: str

    @property
    def everything(self) -> str:
        return "\n".join((self.user, self.assistant, self.other))

    @classmethod
    def of_roles(cls, roles: dict[str, list[str]]) -> TurnText:
        """From a stored turn's texts by role (`raw_store.turn_texts`): the user's, the assistant's, the rest."""
        return cls(
            user="\n".join(roles.get("user", [])),
            assistant="\n".join(roles.get("assistant", [])),
            other="\n".join(t for role, items in roles.items() if role not in ("user", "assistant") for t in items),
        )


def is_acknowledgement(text: str) -> bool:
    """ "ok", "yes", "Run them.", "continue": consent, not content."""
    stripped = strip_envelope(text).strip()
    return bool(_ACK.match(stripped)) or len(content_words(stripped)) <= 1


@dataclass
class Review:
    kept: list[Idea] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (reason, summary)
    demoted: int = 0


def review(ideas: Sequence[Idea], turn: TurnText) -> Review:
    """The ideas a future session may trust, each with a priority it has earned (see the module's doc)."""
    result = Review()
    user_spoke = turn.user.strip()
    for idea in ideas:
        if _SCAFFOLD.search(idea.summary):
            result.dropped.append(("the prompt's own text", idea.summary))
            continue
        quotes = [q for pair in _QUOTE.findall(idea.summary) for q in pair if q]
        about_user = bool(_CLAIMS_USER.search(idea.summary))
        if about_user and not user_spoke:
            result.dropped.append(("claims the user said it, the user said nothing", idea.summary))
            continue
        if about_user and is_acknowledgement(turn.user):
            result.dropped.append(("an acknowledgement, not a rule", idea.summary))
            continue
        if grounding(idea.summary, turn.everything) < GROUNDED_AT:
            result.dropped.append(("not in the turn", idea.summary))
            continue
        if about_user and not (
            any(support(q, turn.user) >= GROUNDED_AT for q in quotes) or support(idea.summary, turn.user) >= 0.5
        ):
            result.dropped.append(("not the user's words", idea.summary))
            continue
        if about_user and not lasting(turn.user) and not lasting(_unquoted(idea.summary)):
            # "The user said 'write some markdown'": a request, which the turn's observation keeps anyway.
            result.dropped.append(("a request, not a rule", idea.summary))
            continue
        if idea.kind is Kind.RULE and not (lasting(turn.user) or kind_of(turn.user)):
            # "Delete the file" drafted as a rule: a one-off request, which the turn's observation keeps.
            result.dropped.append(("a request, not a rule", idea.summary))
            continue
        cause = _CAUSE.search(idea.summary)
        if cause and support(cause["cause"], turn.everything) < GROUNDED_AT:
            # "Run the tests because the tests failed" where 42 passed: a reason the turn never gave.
            result.dropped.append(("a cause the turn does not state", idea.summary))
            continue
        priority = idea.priority
        if priority is Priority.HIGH and is_question(idea.evidence):
            priority = Priority.MEDIUM  # a question is never a durable rule, whatever the model typed it as
        if priority is Priority.HIGH:
            # A decision or gotcha the model typed is durable when it rests on words that state one: the
            # assistant's finding, or a person's sentence that reads as knowledge ("Set up the deploy
            # credentials" typed as a decision is a request, which the turn's observation keeps).
            stated = idea.evidence_role == "assistant" or (
                idea.evidence_role == "user" and kind_of(idea.evidence or turn.user) is not None
            )
            typed = idea.kind in (Kind.DECISION, Kind.GOTCHA) and stated
            durable = typed or bool(lasting(idea.summary) or lasting(turn.user))
            said = support(idea.summary, turn.user + "\n" + turn.assistant) >= GROUNDED_AT
            if not (durable and said):
                priority = Priority.MEDIUM
        if priority is not idea.priority:
            result.demoted += 1
            idea = idea.model_copy(update={"priority": priority})
        result.kept.append(idea)
    return result


# The reason a statement gives: what follows "because", "caused by", "due to", "root cause:" up to the end of
# its sentence.
_CAUSE = re.compile(
    r"(?i)\b(?:because(?: of)?|caused by|due to|the root cause (?:is|was)|root cause:)\s+(?P<cause>[^.;!?]{3,})"
)


def _unquoted(summary: str) -> str:
    return _QUOTE.sub(" ", summary)
