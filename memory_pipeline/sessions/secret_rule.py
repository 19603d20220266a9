"""What a secret-masking rule is: its pattern, keywords, entropy and allowlists (`Rule`, `Allow`), and the
gitleaks default rule set read into rules (`gitleaks_rules`: `rules/gitleaks.toml`, MIT, provenance in
`rules/SOURCES.md`; Go's regex dialect translated by `go_regex`). `redact` applies them."""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Literal

import ahocorasick

GITLEAKS_RULES = Path(__file__).with_name("rules") / "gitleaks.toml"
GENERIC = "generic-api-key"  # gitleaks' catch-all rule, applied after the project's own
# What a masked secret becomes: `[REDACTED:<rule>]`.
MARKER = re.compile(r"\[REDACTED:[\w.\-]+\]")


@dataclass(frozen=True)
class Allow:
    """A gitleaks allowlist: the finding is not a secret when its regexes (on the secret, the whole match or
    the line) or its stopwords (in the secret) say so."""

    regexes: tuple[re.Pattern[str], ...] = ()
    stopwords: tuple[str, ...] = ()
    target: Literal["secret", "match", "line"] = "secret"

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = secret if self.target == "secret" else match if self.target == "match" else line
        if any(r.search(text) for r in self.regexes):
            return True
        if not self.stopwords:
            return False
        lowered = secret.lower()
        if self._stopwords is None:
            return any(s in lowered for s in self.stopwords)
        return next(self._stopwords.iter(lowered), None) is not None

    @cached_property
    def _stopwords(self) -> ahocorasick.Automaton | None:
        """generic-api-key's ~1,450 stopwords in one automaton: one pass over a secret instead of a `in` per
        stopword (that loop was a quarter of the redaction time of short texts with secrets)."""
        if len(self.stopwords) < 16:
            return None
        automaton = ahocorasick.Automaton()
        for word in self.stopwords:
            automaton.add_word(word, word)
        automaton.make_automaton()
        return automaton


@dataclass(frozen=True)
class Rule:
    """A named secret pattern. `keywords` (lowercase) gate it: no keyword in the text, no regex run. The
    secret is the `secret` group, else the first capture group that matched, else the whole match; with
    `entropy`, only a secret at least that random (Shannon bits per character) counts."""

    name: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...] = ()
    entropy: float | None = None
    allow: tuple[Allow, ...] = field(default=(), compare=False)
    secret_group: int = 0  # gitleaks' `secretGroup`: the capture group that is the secret
    block: bool = False  # masks a block of lines (a PEM or PuTTY key): its span crosses line breaks whole
    # A last say on a match a regex cannot give (the shape rules: is the token random enough, is it a name).
    check: Callable[[re.Match[str]], bool] | None = field(default=None, compare=False)
    # When > 0: every match lies in a run of at least this many `_RUN` characters and reads no character past
    # the run's ends (its lookbehind aside, which reads the whole text in any scan): a rule with no keyword
    # need look only at such runs.
    in_runs: int = 0

    @classmethod
    def of(
        cls,
        name: str,
        regex: str,
        keywords: tuple[str, ...] = (),
        flags: int = 0,
        entropy: float | None = None,
        block: bool = False,
    ) -> Rule:
        return cls(name, re.compile(regex, flags), tuple(k.lower() for k in keywords), entropy, block=block)

    def secret_span(self, match: re.Match[str]) -> tuple[int, int] | None:
        if "secret" in self.pattern.groupindex:
            return match.span("secret") if match.group("secret") is not None else None
        if self.secret_group:
            return match.span(self.secret_group) if match.group(self.secret_group) else None
        if self.pattern.groupindex:
            return match.span()  # named groups mark parts of one token (gitleaks' jwt-base64): mask it whole
        for group in range(1, (self.pattern.groups or 0) + 1):
            if match.group(group):
                return match.span(group)
        return match.span()


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


_POSIX_CLASSES = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "xdigit": "0-9A-Fa-f",
    "upper": "A-Z",
    "lower": "a-z",
    "space": "\\s",
    "word": "\\w",
    "punct": "!-/:-@\\[-`{-~",
}


def go_regex(regex: str) -> str:
    """gitleaks' RE2 syntax as Python's: `\\z` is `\\Z`, POSIX classes are spelt out, and a `(?i)` after the
    start (RE2: "from here to the end of this group", later alternatives of the group included) becomes a
    scoped `(?i:...)` around the rest of each of those alternatives: `(?:"(?i)a|b)` is `(?:"(?i:a)|(?i:b))`,
    not `"` then a or b."""
    regex = regex.replace("\\z", "\\Z")
    for posix, chars in _POSIX_CLASSES.items():  # `[[:alnum:]]`: Python has no POSIX classes
        regex = regex.replace(f"[:{posix}:]", chars)
    while True:
        start = regex.find("(?i)", 1)
        if start < 0:
            return regex
        end, depth, i, in_class, bars = len(regex), 0, start + 4, False, []
        while i < len(regex):
            ch = regex[i]
            if ch == "\\":
                i += 2
                continue
            if in_class:
                in_class = ch != "]"
            elif ch == "[":
                in_class = True
                if regex[i + 1 : i + 2] == "]":  # `[]...]`: a literal ] first
                    i += 1
            elif ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    end = i
                    break
                depth -= 1
            elif ch == "|" and depth == 0:
                bars.append(i)
            i += 1
        cuts = [start + 4, *(b + 1 for b in bars)]
        ends = [*bars, end]
        pieces = [f"(?i:{regex[a:b]})" if b > a else "" for a, b in zip(cuts, ends, strict=True)]
        regex = regex[:start] + "|".join(pieces) + regex[end:]


def _allow(spec: dict) -> Allow | None:
    if "paths" in spec and (spec.get("condition") == "AND" or not ({"regexes", "stopwords"} & spec.keys())):
        return None  # an allowlist that needs a file path never applies to a session's text
    return Allow(
        tuple(re.compile(go_regex(r)) for r in spec.get("regexes", ())),
        tuple(s.lower() for s in spec.get("stopwords", ())),
        spec.get("regexTarget", "secret"),
    )


@cache
def gitleaks_rules() -> tuple[Rule, ...]:
    """gitleaks' rules (those with a regex), each with its own allowlists and the global one, compiled once."""
    config = tomllib.loads(GITLEAKS_RULES.read_text())
    shared = tuple(a for a in [_allow(config.get("allowlist", {}))] if a)
    return tuple(
        Rule(
            spec["id"],
            re.compile(go_regex(spec["regex"])),
            tuple(k.lower() for k in spec.get("keywords", ())),
            spec.get("entropy"),
            (*(a for a in map(_allow, spec.get("allowlists", ())) if a), *shared),
            spec.get("secretGroup", 0),
            block=spec["id"] == "private-key",
        )
        for spec in config["rules"]
        if spec.get("regex")
    )
