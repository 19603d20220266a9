"""What the secrets found in a text mask: the stretches found so far, for the redactor's fast path
(`redact._accepted`), and the masked text once every rule has been read (`apply_spans`)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter


class Cover:
    """The stretches the secrets found so far mask, as `_merge` joins them (spans that overlap, not those
    that only touch). A span inside one stretch changes nothing in the output: the stretch stays as it is and
    keeps its name (the rule listed first: spans are found in rule order). The machine-token rule, last, matches
    most provider secrets again: its checks (the dearest) are skipped on them."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def holds(self, span: tuple[int, int]) -> bool:
        i = bisect_right(self.starts, span[0]) - 1
        return i >= 0 and span[1] <= self.ends[i]

    def add(self, span: tuple[int, int]) -> None:
        start, end = span
        first = bisect_right(self.starts, start) - 1  # the stretch starting at or before `start`
        if first < 0 or self.ends[first] <= start:
            first += 1  # it ends before `start` (or touches it): not joined
        last = bisect_left(self.starts, end)  # stretches starting before `end` overlap
        if first < last:
            start, end = min(start, self.starts[first]), max(end, self.ends[last - 1])
        self.starts[first:last] = [start]
        self.ends[first:last] = [end]


def apply_spans(text: str, spans: list[tuple[int, int, str]], counts: Counter[str] | None) -> str:
    if not spans:
        return text
    merged = _merge(spans)
    if counts is not None:
        counts.update(name for _, _, name in merged)
    out, position = [], 0
    for start, end, name in merged:
        out.append(text[position:start])
        out.append(f"[REDACTED:{name}]" + "\n" * text.count("\n", start, end))
        position = end
    out.append(text[position:])
    return "".join(out)


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans become one (named by the rule listed first): a secret is masked whole, once."""
    order = {name: i for i, (_, _, name) in reversed(list(enumerate(spans)))}
    merged: list[tuple[int, int, str]] = []
    for start, end, name in sorted(spans):
        if merged and start < merged[-1][1]:
            s, e, n = merged[-1]
            merged[-1] = (s, max(e, end), n if order[n] <= order[name] else name)
        else:
            merged.append((start, end, name))
    return merged
