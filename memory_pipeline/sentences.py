"""Sentences: counting them, and shortening a text by whole sentences, never mid-word or mid-quote.

A memory, a proposal, a MEMORY.md line or a briefing line is read by an agent with nothing else at hand: a
line that stops at "…just marketcap and" says less than none. When a budget forces a shorter text, whole
sentences are dropped from the end and the cut is marked; the first sentence is always kept whole.
"""

from __future__ import annotations

import re

# A full stop inside `util.ts`, `e.g. this` or `v1.2` does not end a sentence.
_SENTENCE_END = re.compile(r"[.!?]+(?=\s+[A-Z\"'(\[`*]|\s*$)")
MORE = " […]"
# A line a terminal or an editor wrapped: it ends mid-clause and the next one goes on in lower case, or with a
# code span or a bracket ("…respect the `userMessageText`\n theme token for text color…").
_WRAPPED = re.compile(r"(?<=[^\s.!?:;。！？])[ \t]*\n[ \t]*(?=[a-zß-ÿ`(])")
_FENCE = "```"


def unwrapped_lines(text: str) -> str:
    """`text` with the line breaks a wrap put inside a sentence taken out, so a sentence read line by line is
    read whole; code fences are left as they are (a command on the line after prose is not prose)."""
    if _FENCE in text:
        parts = text.split(_FENCE)
        return _FENCE.join(unwrapped_lines(p) if i % 2 == 0 else p for i, p in enumerate(parts))
    return _WRAPPED.sub(" ", text)


def sentence_count(text: str) -> int:
    """Sentences in `text`."""
    stripped = text.strip()
    if not stripped:
        return 0
    ends = len(_SENTENCE_END.findall(stripped))
    return ends if stripped[-1] in ".!?" else ends + 1


def sentences(text: str) -> list[str]:
    """`text` split into its sentences, whitespace folded."""
    folded = " ".join(text.split())
    found, start = [], 0
    for end in _SENTENCE_END.finditer(folded):
        found.append(folded[start : end.end()].strip())
        start = end.end()
    rest = folded[start:].strip()
    return [s for s in [*found, rest] if s]


def by_sentence(text: str, max_chars: int, words: int | None = None) -> str:
    """`text` whole when it fits `max_chars` (and `words`, if given); else its first sentences that fit,
    marked with " […]". The first sentence is kept whole even when it alone is longer."""
    folded = " ".join(text.split())

    def fits(candidate: str) -> bool:
        return len(candidate) <= max_chars and (words is None or len(candidate.split()) <= words)

    if fits(folded):
        return folded
    parts = sentences(folded)
    kept = parts[:1]
    for part in parts[1:]:
        if not fits(" ".join([*kept, part]) + MORE):
            break
        kept.append(part)
    return " ".join(kept) + (MORE if len(kept) < len(parts) else "")
