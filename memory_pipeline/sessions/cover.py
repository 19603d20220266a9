"""What the secrets found so far in a text mask, for the redactor's fast path (`redact._accepted`)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class Cover:
    """The stretches the secrets found so far mask, as `_merge` will join them (spans that overlap, not those
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
