"""What the LLM must return for a turn, the memory it becomes, and the validation of both.

The LLM answers `MEMORIES_SCHEMA` (llama-server's grammar forces the shape: a kind from an enum, a subject,
a statement, the evidence); `parse_memories` validates what came back anyway, because a grammar can still
produce an empty statement or evidence the turn never held. An `Idea` is the memory as it is stored: one
piece of knowledge (its kind, a statement readable alone, its subject), its priority, tags for search and
review, the files it concerns, and its evidence (the exact words it came from, and who said them). Tags are
normalised (case, spaces) before validation: that is a formatting fix, not a content change.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from memory_pipeline.language.kinds import Kind
from memory_pipeline.language.words import CLOSES_POINTER, ENDS_OPEN, words
from memory_pipeline.sentences import sentence_count

# Bump when the prompt, the schema or the composition of what is stored from the answer changes (compose.py,
# knowledge.py): every turn is then read again, and the run says why ("prompt changed (3 -> 4)").
# 4: requests, doubts, "this is…" and self-repeating statements make no memory; plans read past their openers.
# 5: a memory whose subject its evidence does not name is composed again from its evidence or dropped.
PROMPT_VERSION = "5"
TAG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
MAX_IDEAS_PER_TURN = 5


class Priority(StrEnum):
    HIGH = "high"  # true next month: rules, preferences, decisions
    MEDIUM = "medium"  # working context: files changed, tools configured
    LOW = "low"  # ephemeral: questions asked, options explored


def _one_to_three_sentences(text: str) -> str:
    count = sentence_count(text)
    if not 1 <= count <= 3:
        raise ValueError(f"summary must be 1-3 sentences, got {count}")
    return text


def _normalise_tag(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    tag = re.sub(r"[\s_/]+", "-", value.strip().lower())
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "", tag)).strip("-")


Tag = Annotated[str, BeforeValidator(_normalise_tag), Field(pattern=TAG_PATTERN, min_length=2, max_length=40)]


def _unique(tags: list[str]) -> list[str]:
    """The same tag twice is a formatting slip (dropped), not a reason to fail the turn; fewer than three
    distinct tags is still an error."""
    distinct = list(dict.fromkeys(tags))
    if len(distinct) < 3:
        raise ValueError(f"at least 3 distinct tags, got {distinct}")
    return distinct


_BARE_QUOTE = re.compile(
    r"""(?is)^\W*(?:the )?user(?:'s)?\b[^.]{0,30}?\b(?:said|says|stated|wrote)\b|^["“'].*["”']\.?$"""
)
_ENVELOPE = re.compile(
    r"(?i)\[(?:user sent|image|photo|media attached|message_id)|\bconversation info \(untrusted|^system: \["
)


# A data structure, not a sentence: a JSON object or array (a small model writes its tool calls as text, and a
# restating pass may copy one).
_STRUCTURE = re.compile(r'^\s*[\[{]|\{\s*"[^"]*"\s*:')


def _knowledge_not_quote(text: str) -> str:
    """The statement is knowledge in its own words: never a quote of a person, never chat-envelope text."""
    if _BARE_QUOTE.search(text):
        raise ValueError("a memory states knowledge; a person's words are its evidence, not its text")
    if _ENVELOPE.search(text):
        raise ValueError("chat envelope text in a memory")
    if _STRUCTURE.search(text):
        raise ValueError("a data structure (JSON, a tool call written as text), not a statement")
    return text


def _whole(text: str) -> str:
    """A statement is whole: no code span or bracket left open, no sentence stopped mid-way (on a word that opens
    what follows, `language.words.ENDS_OPEN`: "…help you with tasks like."), no list left open ("…these:")."""
    if text.count("`") % 2 or text.count("(") != text.count(")") or text.count('"') % 2:
        raise ValueError("a statement cut short: a code span, bracket or quote left open")
    tail = words(text.rstrip().rstrip(".!"))[-2:]
    pointed = len(tail) == 2 and tail[1] in ("that", "this") and tail[0] in CLOSES_POINTER
    if (tail and tail[-1] in ENDS_OPEN and not pointed) or re.search(r"[:,;]\s*[.!]?$", text.rstrip()):
        raise ValueError("a statement cut short: it stops mid-sentence")
    return text


class Idea(BaseModel):
    """One piece of knowledge a future session should have, from one turn, readable alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary: Annotated[
        str,
        Field(min_length=10, max_length=600),
        AfterValidator(_one_to_three_sentences),
        AfterValidator(_knowledge_not_quote),
        AfterValidator(_whole),
    ]
    tags: Annotated[list[Tag], Field(min_length=3, max_length=8), AfterValidator(_unique)]
    priority: Priority
    kind: Kind = Kind.FACT
    subject: str = ""
    files: list[str] = Field(default_factory=list)
    evidence: str = ""  # the exact words it came from
    evidence_role: str = ""  # who said them: user | assistant


class Drafted(BaseModel):
    """One memory as the LLM drafts it, before it is checked against the turn and composed into an `Idea`."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: Kind
    subject: Annotated[str, Field(max_length=80)] = ""
    statement: Annotated[str, Field(min_length=10, max_length=600)]
    evidence: Annotated[str, Field(max_length=600)] = ""


DRAFTS = TypeAdapter(list[Drafted])

# What the grammar enforces on the server side (kept simpler than the model: llama.cpp's
# schema-to-grammar converter supports enums, lengths and item counts).
MEMORIES_SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_IDEAS_PER_TURN,
    "items": {
        "type": "object",
        # In this order: the grammar makes the model copy the turn's words first, then type and restate them.
        "properties": {
            "evidence": {"type": "string", "minLength": 4, "maxLength": 300},
            "kind": {"type": "string", "enum": [k.value for k in Kind]},
            "subject": {"type": "string", "minLength": 2, "maxLength": 60},
            "statement": {"type": "string", "minLength": 10, "maxLength": 300},
        },
        "required": ["evidence", "kind", "subject", "statement"],
        "additionalProperties": False,
    },
}


# The second, focused pass: one remark restated so it stands alone (see `prompt.restate_messages`).
RESTATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"statement": {"type": "string", "minLength": 10, "maxLength": 240}},
    "required": ["statement"],
    "additionalProperties": False,
}


class InvalidIdeas(ValueError):
    """The answer parsed as JSON but is not a valid list of memories; the message says what is wrong."""


def parse_memories(data: Any) -> list[Drafted]:
    """Validate an LLM answer (already JSON-decoded); an empty list means "nothing worth keeping"."""
    if isinstance(data, dict) and len(data) == 1 and isinstance(next(iter(data.values())), list):
        data = next(iter(data.values()))  # a common wrapping by models that prefer objects
    try:
        drafts = DRAFTS.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidIdeas(f"{where or 'answer'}: {first['msg']}") from None
    if len(drafts) > MAX_IDEAS_PER_TURN:
        raise InvalidIdeas(f"{len(drafts)} memories for one turn; at most {MAX_IDEAS_PER_TURN}")
    # The same statement twice is a small model's stutter: kept once, not a failed turn.
    return list({d.statement: d for d in reversed(drafts)}.values())[::-1]
