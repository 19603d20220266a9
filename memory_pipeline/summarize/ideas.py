"""What the LLM must return for a turn, and the validation of every answer.

The JSON schema below goes to llama-server as `response_format` (its grammar
forces the shape); the pydantic model then validates what came back anyway,
because a grammar can still produce an empty summary, five sentences or tags
that only look right. Tags are normalised (case, spaces) before validation:
that is a formatting fix, not a content change.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

# Bump when the prompt or the schema changes: every turn is then summarised again.
PROMPT_VERSION = "2"
TAG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
MAX_IDEAS_PER_TURN = 5


class Priority(StrEnum):
    HIGH = "high"  # true next month: rules, preferences, decisions
    MEDIUM = "medium"  # working context: files changed, tools configured
    LOW = "low"  # ephemeral: questions asked, options explored


_SENTENCE_END = re.compile(r"[.!?]+(?=\s+[A-Z\"'(\[]|\s*$)")


def sentence_count(text: str) -> int:
    """Sentences in `text`; a full stop inside `util.ts` or `e.g. this` does not end one."""
    stripped = text.strip()
    if not stripped:
        return 0
    ends = len(_SENTENCE_END.findall(stripped))
    return ends if stripped[-1] in ".!?" else ends + 1


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


class Idea(BaseModel):
    """One thing a future session should know, from one turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary: Annotated[str, Field(min_length=10, max_length=600), AfterValidator(_one_to_three_sentences)]
    tags: Annotated[list[Tag], Field(min_length=3, max_length=8), AfterValidator(_unique)]
    priority: Priority


IDEAS = TypeAdapter(list[Idea])

# What the grammar enforces on the server side (kept simpler than the model: llama.cpp's
# schema-to-grammar converter supports patterns, lengths and item counts).
IDEAS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_IDEAS_PER_TURN,
    "items": {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 10, "maxLength": 600},
            "tags": {
                "type": "array",
                "minItems": 3,
                "maxItems": 8,
                "items": {"type": "string", "pattern": TAG_PATTERN, "maxLength": 40},
            },
            "priority": {"type": "string", "enum": [p.value for p in Priority]},
        },
        "required": ["summary", "tags", "priority"],
        "additionalProperties": False,
    },
}


class InvalidIdeas(ValueError):
    """The answer parsed as JSON but is not a valid list of ideas; the message says what is wrong."""


def parse_ideas(data: Any) -> list[Idea]:
    """Validate an LLM answer (already JSON-decoded); an empty list means "nothing worth keeping"."""
    if isinstance(data, dict) and set(data) == {"ideas"}:
        data = data["ideas"]  # a common wrapping by models that prefer objects
    try:
        ideas = IDEAS.validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidIdeas(f"{where or 'answer'}: {first['msg']}") from None
    if len(ideas) > MAX_IDEAS_PER_TURN:
        raise InvalidIdeas(f"{len(ideas)} ideas for one turn; at most {MAX_IDEAS_PER_TURN}")
    # The same idea twice is a small model's stutter: kept once, not a failed turn.
    return list({idea.summary: idea for idea in reversed(ideas)}.values())[::-1]
