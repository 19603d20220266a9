"""Masking of secrets before any text leaves the parser.

Session logs hold what people pasted and what tools printed: API keys, tokens,
private keys, passwords in URLs, `.env` files. The rules come from two places:

- gitleaks' default rule set (`rules/gitleaks.toml`, MIT, provenance in
  `rules/SOURCES.md`, read by `secret_rule`): some 200 provider formats, each gated by keywords, many
  with an entropy threshold and allowlists, maintained upstream;
- the project's own rules (`secret_rules`) for what session logs hold and gitleaks does not look
  for: values assigned to secret-looking names in env files, shell exports and
  CLI flags, `aws configure set`, defaults of `os.environ.get(...)`, passwords in
  URLs, authorization headers, bare AWS secret keys.

Only the secret value is masked (`[REDACTED:<rule>]`), never the code around
it. A token that a terminal wrapped onto the next line is found on the joined
text and masked on both lines. Extra rules (`REDACT_EXTRA_PATTERNS`) come last.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from functools import cache

import ahocorasick

from memory_pipeline.sessions.cover import Cover, apply_spans
from memory_pipeline.sessions.reach import blank_reach, holds_keyword, lead, line_reach
from memory_pipeline.sessions.secret_rule import GENERIC, MARKER, Rule, gitleaks_rules, shannon_entropy
from memory_pipeline.sessions.secret_rules import OWN_RULES, PLACEHOLDER, SHAPE_RULES

# Characters a token is made of, for joining a token a terminal wrapped over two lines.
_TOKEN = "A-Za-z0-9_\\-+/="
_OWN_LINE = re.compile(r"[A-Za-z_][\w.\-]*[ \t]*[=:]")
_WRAP = re.compile(rf"(?<=[{_TOKEN}]{{8}})\r?\n[ \t]*(?=[{_TOKEN}]{{8}})")


class Redactor:
    """Applies the rules to text; counts what it masked, per rule.

    `redact` reads only where a rule can match (see `_fast_spans`); `redact_reference` reads the whole text
    with every rule whose keyword occurs, as the rules are written. Their output is the same byte for byte
    (bench `redaction_speed` and the unit tests compare them on every corpus)."""

    def __init__(self, extra_rules: Iterable[Rule] = (), base: Iterable[Rule] | None = None) -> None:
        """`base` replaces the built-in rules (the benchmark compares rule sets); extras always come last."""
        self.extra_rules = tuple(extra_rules)
        self.rules = (*(DEFAULT_RULES if base is None else tuple(base)), *self.extra_rules)
        # Every rule's keywords in one automaton: a text is read once to learn which rules can match it.
        self._keywords = ahocorasick.Automaton()
        for keyword in {k for rule in self.rules for k in rule.keywords}:
            self._keywords.add_word(keyword, keyword)
        self._keywords.make_automaton()
        # Per rule, what its pattern allows (see `_shape`): read once per process, not per Redactor.
        shapes = [_shape(rule) for rule in self.rules]
        self._reach = tuple(shape[0] for shape in shapes)
        self._blank_reach = tuple(shape[1] for shape in shapes)
        self._lead = tuple(shape[2] for shape in shapes)
        # The rules each keyword can wake, and those without keywords: a text wakes only its keywords' rules
        # (asking each of the ~270 rules about its keywords, per text, was a third of the time on tool output).
        self._waking: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for keyword in set(rule.keywords):
                self._waking.setdefault(keyword, []).append(i)
        self._sleepless = [i for i, rule in enumerate(self.rules) if not rule.keywords]
        # Whether a match inside what earlier rules masked may be skipped unchecked (`Cover`): only when every
        # rule has a name of its own, so an earlier rule's name always names the merged span.
        self._distinct = len({rule.name for rule in self.rules}) == len(self.rules)
        # Whether every rule without keywords matches only in runs of token characters (`_fast_spans`' exit).
        self._runs_only = all(self.rules[i].in_runs for i in self._sleepless)

    @classmethod
    def with_patterns(cls, patterns: Iterable[str]) -> Redactor:
        """Extra rules from plain regexes (configuration); each is named `custom-N`."""
        return cls([Rule.of(f"custom-{i}", p) for i, p in enumerate(patterns, start=1)])

    def redact(self, text: str, counts: Counter[str] | None = None) -> str:
        if not text:
            return text
        spans = self._fast_spans(text)
        breaks = _wrap_breaks(text)
        if breaks:
            joined, junctions, removed = _join_at(text, breaks)
            for start, end, name in self._fast_spans(joined, junctions):
                first = start + removed[bisect_right(junctions, start)]
                last = end - 1 + removed[bisect_right(junctions, end - 1)] + 1
                _keep_crossing(text, breaks, first, last, name, spans)
        return apply_spans(text, spans, counts)

    def redact_reference(self, text: str, counts: Counter[str] | None = None) -> str:
        """`redact` as the rules are written: every rule on the whole text, and on the whole text again with
        wrapped line breaks removed. The fast path's reference."""
        if not text:
            return text
        spans = self._spans(text)
        # A token a terminal wrapped: look again with such line breaks removed, keep what spans a break.
        breaks = [b.span() for b in _WRAP.finditer(text)]
        if breaks:
            joined, origin = _join(text, breaks)
            for start, end, name in self._spans(joined):
                _keep_crossing(text, breaks, origin[start], origin[end - 1] + 1, name, spans)
        return apply_spans(text, spans, counts)

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, rule) of every secret in `text`, in rule order (the earlier rule names a merged span)."""
        present = {keyword for _, keyword in self._keywords.iter(text.lower())} if len(self._keywords) else set()
        masked = [m.span() for m in MARKER.finditer(text)]
        found: list[tuple[int, int, str]] = []
        for rule in self.rules:
            # Most text holds no rule's keyword at all, and a regex scan costs far more than the lookup.
            if rule.keywords and present.isdisjoint(rule.keywords):
                continue
            found.extend(_accepted(rule, rule.pattern.finditer(text), masked))
        return found

    def _fast_spans(self, text: str, junctions: list[int] | None = None) -> list[tuple[int, int, str]]:
        """`_spans`, reading each rule only where it can match: a rule whose every match holds one of its
        keywords and at most n line breaks, only in the lines within n of each keyword (`reach.py`); a rule
        without keywords whose matches are runs of token characters (`in_runs`), only in such runs. With
        `junctions`, only the stretches holding one (where a wrapped line was joined), for `redact`."""
        lowered = text.lower()
        if len(lowered) != len(text):  # a character whose lower case is longer: positions would not line up
            return self._spans(text)
        hits: dict[str, list[int]] = {}
        if len(self._keywords):
            for end, keyword in self._keywords.iter(lowered):
                hits.setdefault(keyword, []).append(end - len(keyword) + 1)
        runs: list[tuple[int, int]] | None = None
        if not hits and self._runs_only:
            # No keyword: only the rules without one can match, and only in runs of token characters. Most
            # short texts (two thirds of the real lines) have neither: nothing to read further.
            runs = _runs(text, junctions)
            if not runs:
                return []
        # MARKER matches only at its literal opening: a `find` spares the regex scan of most texts.
        masked = [m.span() for m in MARKER.finditer(text)] if "[REDACTED:" in text else []
        lines: _Lines | None = None
        found: list[tuple[int, int, str]] = []
        # On the joined text a span is kept or not by the breaks it crosses (`_keep_crossing`): no skipping there.
        cover = Cover() if junctions is None and self._distinct else None
        woken = set(self._sleepless).union(*(self._waking[k] for k in hits))
        for index in sorted(woken):  # rule order: the earlier rule names a merged span
            rule, reach, blank, opening = (
                self.rules[index],
                self._reach[index],
                self._blank_reach[index],
                self._lead[index],
            )
            if opening is not None:
                starts = sorted({p for k in rule.keywords for p in hits.get(k, ())})
                matches = _lead_matches(rule.pattern, text, starts, *opening)
                read: Iterable[re.Match[str]] = rule.pattern.finditer(text) if matches is None else matches
                if junctions is not None:  # on the joined text only a match across a junction can be kept
                    read = [m for m in read if _holds_junction(m.span(), junctions)]
                found.extend(_accepted(rule, read, masked, cover))
                continue
            if rule.in_runs:
                runs = runs if runs is not None else _runs(text, junctions)
                windows = [(a, b) for a, b in runs if b - a >= rule.in_runs]
            elif reach is not None or blank is not None:
                lines = lines or _Lines(text)
                positions = sorted(p for k in rule.keywords for p in hits.get(k, ()))
                windows = lines.around(positions, reach) if reach is not None else lines.around(positions, blank, True)
            else:
                windows = [(0, len(text))]
            if junctions is not None:
                windows = [w for w in windows if _holds_junction(w, junctions)]
            whole = reach is None and blank is None
            spans = _scan(rule, text, windows, masked, bool(rule.in_runs) or whole, cover)
            found.extend(spans if spans is not None else _accepted(rule, rule.pattern.finditer(text), masked, cover))
        return found


@cache
def _shape(rule: Rule) -> tuple[int | None, int | None, tuple[int, re.Pattern[str]] | None]:
    """What a rule's pattern allows, a pure function of it: (the lines around a keyword its matches stay within,
    None: the whole text (see reach.py); for the rules unbounded only by runs of whitespace (`\\s*` between a
    name and its `=`), the non-blank lines around a keyword their matches stay within, blank lines not counted
    (see reach.blank_reach); the short run right before a keyword where its every match starts, for gitleaks'
    generated rules, tried only at those starts (`_lead_matches`), not at every position of the lines around).
    Cached: parsing the ~270 patterns again took about 0.2 s per Redactor, and one is made per file parsed."""
    reach = _line_reach(rule)
    blank = _line_reach(rule, blank_reach) if reach is None else None
    first = lead(rule.pattern, rule.keywords) if rule.keywords and not (rule.block or rule.in_runs) else None
    return reach, blank, first


def _line_reach(rule: Rule, reach: Callable[[re.Pattern[str]], int | None] = line_reach) -> int | None:
    """The lines either side of a keyword that hold all of `rule`'s matches (counted by `reach`); None: it must
    read the whole text."""
    if rule.block or rule.in_runs or not holds_keyword(rule.pattern, rule.keywords):
        return None
    return reach(rule.pattern)


def _scan(
    rule: Rule,
    text: str,
    windows: list[tuple[int, int]],
    masked: list[tuple[int, int]],
    exact_ends: bool,
    cover: Cover | None = None,
) -> list[tuple[int, int, str]] | None:
    """The rule's secrets in `windows`; None when a match reaches a window's end short of the text's (there `$`
    holds and a lookahead sees nothing, unlike in the whole text): the caller reads the whole text instead."""
    matches: list[re.Match[str]] = []
    for start, end in windows:
        matches.extend(rule.pattern.finditer(text, start, end))
        if not exact_ends and end < len(text) and matches and matches[-1].end() >= end - 1:
            return None
    return _accepted(rule, matches, masked, cover)


def _lead_matches(
    pattern: re.Pattern[str], text: str, keywords: list[int], width: int, run: re.Pattern[str]
) -> list[re.Match[str]] | None:
    """`pattern.finditer(text)` for a pattern whose every match starts in a run of `run`'s class of at most `width`
    characters ending at a keyword (`reach.lead`): tried only at those starts, each match read on the whole text
    (its lookarounds and `$` as there), the next one looked for from its end, as `finditer` does. None on an
    empty match (finditer's own rules for those): the caller reads the whole text."""
    starts: list[list[int]] = []
    for position in keywords:
        first = max(0, position - width)
        while (reached := run.match(text, first, position).end()) != position:  # type: ignore[union-attr]
            first = reached + 1  # the run broke there: a match cannot start before it
        if starts and first <= starts[-1][1] + 1:
            starts[-1][1] = max(starts[-1][1], position)
        else:
            starts.append([first, position])
    matches: list[re.Match[str]] = []
    after = 0
    for first, last in starts:
        start = max(first, after)
        while start <= last:
            match = pattern.match(text, start)
            if match is None:
                start += 1
                continue
            if match.end() == match.start():
                return None
            matches.append(match)
            after = start = match.end()
    return matches


def _accepted(
    rule: Rule, matches: Iterable[re.Match[str]], masked: list[tuple[int, int]], cover: Cover | None = None
) -> list[tuple[int, int, str]]:
    """The matches that are secrets: trimmed, outside an earlier mask, random enough, passing the rule's check
    and no allowlist's. With `cover` (what earlier rules' secrets mask), a match inside it is skipped before its
    checks: masked already, and named by the earlier rule, it would change nothing (`Cover`)."""
    found = []
    for match in matches:
        text = match.string
        span = _trimmed(text, rule.secret_span(match), rule.block)
        if span is None or span[0] == span[1] or any(s < span[1] and span[0] < e for s, e in masked):
            continue
        if cover is not None and cover.holds(span):
            continue
        secret = text[span[0] : span[1]]
        if rule.entropy is not None and shannon_entropy(secret) < rule.entropy:
            continue
        if rule.check is not None and not rule.check(match):
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        line = text[line_start : line_end if line_end >= 0 else len(text)]
        if any(a.allows(secret, match.group(0), line) for a in rule.allow):
            continue
        found.append((span[0], span[1], rule.name))
        if cover is not None:
            cover.add(span)
    return found


class _Lines:
    """Where a text's lines start and end, to turn keyword positions into stretches of whole lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.size = len(text)
        self.breaks = [m.start() for m in _NEWLINE.finditer(text)]
        self._blank: list[bool] | None = None

    @property
    def blank(self) -> list[bool]:
        """Per line: whether it holds only whitespace (`str.isspace`, what `\\s` matches) or nothing."""
        if self._blank is None:
            self._blank = [not line.strip() for line in self.text.split("\n")]
        return self._blank

    def _spread(self, line: int, reach: int) -> tuple[int, int]:
        """The first and last line within `reach` non-blank lines of `line`, and every blank line next to them."""
        blank, first, last, up, down = self.blank, line, line, reach, reach
        while first > 0 and (blank[first - 1] or up):
            up -= not blank[first - 1]
            first -= 1
        while last < len(blank) - 1 and (blank[last + 1] or down):
            down -= not blank[last + 1]
            last += 1
        return first, last

    def around(self, positions: list[int], reach: int, skip_blank: bool = False) -> list[tuple[int, int]]:
        """The lines within `reach` of each position (line breaks included), overlapping stretches merged; with
        `skip_blank`, `reach` counts only lines that are not blank (`reach.blank_reach`)."""
        windows: list[tuple[int, int]] = []
        for position in positions:
            line = bisect_left(self.breaks, position)
            first, last = self._spread(line, reach) if skip_blank else (line - reach, line + reach)
            start = self.breaks[first - 1] + 1 if first > 0 else 0
            end = self.breaks[last] + 1 if last < len(self.breaks) else self.size
            if windows and start <= windows[-1][1]:
                windows[-1] = (windows[-1][0], max(end, windows[-1][1]))
            else:
                windows.append((start, end))
        return windows


_NEWLINE = re.compile("\n")
# The characters of the runs `in_runs` rules match in, and anything their lookaheads test (`\w` in full:
# a token followed by `é` is no token, in a run or in the whole text).
_RUN = re.compile(r"(?<![\w.\-+/@=])[\w.\-+/@=]{20,}")
_RUN_CHAR = re.compile(r"[\w.\-+/@=]")


def _runs(text: str, junctions: list[int] | None) -> list[tuple[int, int]]:
    """The runs of 20 or more run characters (the shortest `in_runs` match, machine-token's, is 20); with
    `junctions`, only the runs around them, found by looking out from each."""
    if junctions is None:
        return [m.span() for m in _RUN.finditer(text)]
    runs: list[tuple[int, int]] = []
    for junction in junctions:
        start = junction
        while start > 0 and _RUN_CHAR.match(text, start - 1):
            start -= 1
        end = junction
        while end < len(text) and _RUN_CHAR.match(text, end):
            end += 1
        if end - start >= 20 and (not runs or runs[-1] != (start, end)):
            runs.append((start, end))
    return runs


def _holds_junction(window: tuple[int, int], junctions: list[int]) -> bool:
    """Whether a junction lies strictly inside `window`: only a match across one is kept."""
    i = bisect_right(junctions, window[0])
    return i < len(junctions) and junctions[i] < window[1]


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/=")


def _wrap_breaks(text: str) -> list[tuple[int, int]]:
    """`_WRAP`'s matches, tried only at line breaks after a token character (it can match nowhere else):
    its look-behind tried at every position was a fifth of the time of reading a long text."""
    breaks = []
    newline = text.find("\n")
    while newline >= 0:
        start = newline - 1 if newline and text[newline - 1] == "\r" else newline
        if start >= 8 and text[start - 1] in _TOKEN_CHARS:
            match = _WRAP.match(text, start)
            if match:
                breaks.append(match.span())
        newline = text.find("\n", newline + 1)
    return breaks


def _join_at(text: str, breaks: list[tuple[int, int]]) -> tuple[str, list[int], list[int]]:
    """`text` without the wrapping line breaks; where each break was in it (a junction); and how many
    characters were removed before the k-th junction's right side (`removed[k]`, `removed[0] == 0`)."""
    parts, junctions, removed, position = [], [], [0], 0
    for start, end in breaks:
        parts.append(text[position:start])
        junctions.append(start - removed[-1])
        removed.append(removed[-1] + end - start)
        position = end
    parts.append(text[position:])
    return "".join(parts), junctions, removed


def _keep_crossing(
    text: str, breaks: list[tuple[int, int]], first: int, last: int, name: str, spans: list[tuple[int, int, str]]
) -> None:
    """Adds a span found on the joined text (`first`..`last` in `text`) when it crosses a wrapping break."""
    crossed = [b_end for b_start, b_end in breaks if first < b_start and b_end < last]
    # A next line that starts a `NAME=` or `key:` of its own is a line, not the token's tail:
    # joining it would erase it (`env` output: GITHUB_TOKEN=…, then LOG_LEVEL=info).
    if crossed and not any(_OWN_LINE.match(text, b_end) for b_end in crossed):
        spans.append((first, last, name))


# What a gitleaks pattern's secret may end on without being part of it: its terminator (`(?:[\s;"']|$)`).
_EDGE = frozenset(" \t\r\n\"'`,;")
_TOKEN_LINE = re.compile(r"[A-Za-z0-9+/=_\-]*")


def _trimmed(text: str, span: tuple[int, int] | None, block: bool = False) -> tuple[int, int] | None:
    """`span` without the spaces, quotes and separators at its ends: the secret's characters only, so the text
    around it (the next word, the next line) stays as it was. Unless the rule masks a `block` (a PEM key), a
    span goes on over a line break only into a line that is all token, 16 characters at least and no `NAME=`
    (a wrapped base64 value): gitleaks' jwt-base64 would otherwise take `EOF` or `LOG_LEVEL=` after it."""
    if span is None:
        return None
    start, end = span
    cut = text.find("\n", start, end)
    while not block and cut >= 0:
        line_end = text.find("\n", cut + 1)
        line_end = len(text) if line_end < 0 else line_end
        line = text[cut + 1 : line_end].strip("\r")
        if len(line) < 16 or not _TOKEN_LINE.fullmatch(line) or _OWN_LINE.match(line):
            end = cut
            break
        cut = text.find("\n", cut + 1, end)
    while start < end and text[start] in _EDGE:
        start += 1
    while end > start and text[end - 1] in _EDGE:
        end -= 1
    return start, end


def _join(text: str, breaks: list[tuple[int, int]]) -> tuple[str, list[int]]:
    """`text` without the wrapping line breaks, and for each character its index in `text`."""
    parts, origin, position = [], [], 0
    for start, end in breaks:
        parts.append(text[position:start])
        origin.extend(range(position, start))
        position = end
    parts.append(text[position:])
    origin.extend(range(position, len(text)))
    return "".join(parts), origin


# Provider formats first (certain, and they name the secret), then the contextual ones, the catch-all last.
DEFAULT_RULES: tuple[Rule, ...] = (
    *(r for r in gitleaks_rules() if r.name != GENERIC),
    *OWN_RULES,
    *(r for r in gitleaks_rules() if r.name == GENERIC),
    *SHAPE_RULES,
)


@cache
def _default_redactor() -> Redactor:
    return Redactor()


def masked_project(cwd: str | None) -> str | None:
    """A session's working directory as it is stored (the project of every row, the manifest, the workspace
    folder): a secret in the path (`/home/me/ghp_…/repo`) masked by the built-in rules, the same everywhere."""
    return _default_redactor().redact(cwd) if cwd else cwd


# A tool-call argument whose key names a secret (`{"password": "…"}`, `{"X-Api-Key": "…"}`): its value is one,
# whatever it looks like; scanned alone, a short password passes every pattern.
_SECRET_KEY = re.compile(
    r"(?i)^[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credentials?|auth(?:orization)?)[\w.-]*$"
)


def secret_argument(key: object, value: object) -> bool:
    """Whether a tool-call argument `key: value` holds a secret by its name (placeholders and empty values
    excepted)."""
    return (
        isinstance(key, str)
        and isinstance(value, str)
        and bool(_SECRET_KEY.match(key))
        and len(value.strip()) >= 4
        and not PLACEHOLDER.match(value.strip())
        and not MARKER.fullmatch(value.strip())
        and not key.lower().endswith(("_count", "_tokens", "tokens", "_type", "_name", "_file", "_path", "_url"))
    )
