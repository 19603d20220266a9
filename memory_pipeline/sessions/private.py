"""What a person marked private never leaves the parser: `<private>…</private>` spans, and whole turns.

- A span between `<private>` and `</private>` (any case, across lines) is replaced by `[private]` in every text
  field of a message (text, thinking, tool-call arguments, errors, labels, the session's name). An opening tag
  with no closing one hides the rest of the text: a forgotten `</private>` must not publish the secret.
- A user message that starts with `#private` makes its whole turn private: the message, the agent's replies,
  its tool calls and their results are all stored as `[private]`, because a reply usually repeats what it
  answers.

This runs where session files are read (`messages.session_messages`, beside secret masking), so every store
downstream (memory-raw, summaries, observations, parquet frames, journals, Dagster's metadata, the LLM's
prompt) only ever sees the marker.
"""

from __future__ import annotations

import re
from typing import Any

PRIVATE_MARK = "[private]"
PRIVATE_TURN = "#private"
# Non-greedy to the first closing tag; `\Z` when none: the rest of the text is private.
_SPAN = re.compile(r"<private\s*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_TURN = re.compile(rf"\A\s*{re.escape(PRIVATE_TURN)}(?![\w-])", re.IGNORECASE)


def hide_private(text: str) -> tuple[str, int]:
    """`text` with every private span replaced by the marker, and how many spans there were."""
    if not text or "<" not in text:
        return text, 0
    return _SPAN.subn(PRIVATE_MARK, text)


def private_turn(text: str | None) -> bool:
    """Whether a user message opens a private turn (its text starts with `#private`)."""
    return bool(text) and bool(_TURN.match(text or ""))


def hide_private_value(value: Any) -> tuple[Any, int]:
    """A tool call's arguments (any JSON value) with private spans hidden in every string, and the count."""
    if isinstance(value, str):
        return hide_private(value)
    if isinstance(value, list):
        items = [hide_private_value(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    if isinstance(value, dict):
        pairs = {k: hide_private_value(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, sum(n for _, n in pairs.values())
    return value, 0
