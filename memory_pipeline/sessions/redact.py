"""Masking of secrets before any text leaves the parser.

Session logs hold what people pasted and what tools printed: API keys, tokens,
private keys, passwords in URLs. Each rule is a named regex; what it matches (or
its `secret` group) becomes `[REDACTED:<rule>]`. Rules are data: pass extra ones
to `Redactor` (or `REDACT_EXTRA_PATTERNS` through the sessions resource) to extend
the set without touching this module.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """A named secret pattern; `keywords` (lowercase) gate it: no keyword in the text, no regex run."""

    name: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...] = ()

    @classmethod
    def of(cls, name: str, regex: str, keywords: tuple[str, ...] = (), flags: int = 0) -> Rule:
        return cls(name, re.compile(regex, flags), tuple(k.lower() for k in keywords))


# Provider-specific formats first (they are certain), generic assignments last.
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule.of(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        keywords=("private key",),
    ),
    Rule.of("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", keywords=("sk-ant-",)),
    Rule.of("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", keywords=("sk-",)),
    Rule.of("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", keywords=("_live_", "_test_")),
    Rule.of(
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
        keywords=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule.of("gitlab-token", r"\bglpat-[A-Za-z0-9_\-]{20,}", keywords=("glpat-",)),
    Rule.of("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", keywords=("xox",)),
    Rule.of("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", keywords=("akia", "asia", "abia", "acca")),
    Rule.of("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}\b", keywords=("aiza",)),
    Rule.of("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b", keywords=("hf_",)),
    Rule.of("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", keywords=("npm_",)),
    Rule.of("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", keywords=("eyj",)),
    Rule.of(
        "bearer-token",
        r"(?i)(?:\bbearer\s+|\bauthorization:\s*token\s+)(?P<secret>[A-Za-z0-9_\-.=+/]{16,})",
        keywords=("bearer", "authorization"),
    ),
    Rule.of(
        "basic-auth-header",
        r"(?i)\bauthorization:\s*basic\s+(?P<secret>[A-Za-z0-9+/=]{8,})",
        keywords=("authorization",),
    ),
    Rule.of("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:(?P<secret>[^\s@/]{3,})@", keywords=("://",)),
    # Anchored on the keyword itself (not on the variable name before it): no backtracking from every
    # position of every text, and the name prefix ("DB_") stays as it was anyway.
    Rule.of(
        "secret-assignment",
        r"(?i)(?:password|passwd|pwd|secret|api[_\-]?key|apikey|access[_\-]?key|auth[_\-]?token"
        r"|access[_\-]?token|client[_\-]?secret|private[_\-]?key)[\w\-]*[\"']?\s*[:=]\s*[\"']?"
        r"(?P<secret>[^\s\"',;}{]{8,})",
        keywords=(
            "password",
            "passwd",
            "pwd",
            "secret",
            *(
                f"{a}{sep}{b}"
                for a, b in (
                    ("api", "key"),
                    ("access", "key"),
                    ("auth", "token"),
                    ("access", "token"),
                    ("private", "key"),
                )
                for sep in ("", "_", "-")
            ),
        ),
    ),
)


class Redactor:
    """Applies the rules to text; counts what it masked, per rule."""

    def __init__(self, extra_rules: Iterable[Rule] = ()) -> None:
        self.rules = (*DEFAULT_RULES, *extra_rules)

    @classmethod
    def with_patterns(cls, patterns: Iterable[str]) -> Redactor:
        """Extra rules from plain regexes (configuration); each is named `custom-N`."""
        return cls([Rule.of(f"custom-{i}", p) for i, p in enumerate(patterns, start=1)])

    def redact(self, text: str, counts: Counter[str] | None = None) -> str:
        if not text:
            return text
        lowered = text.lower()
        for rule in self.rules:
            # A substring test is far cheaper than a regex scan, and most text has no secret at all.
            if rule.keywords and not any(k in lowered for k in rule.keywords):
                continue
            text = rule.pattern.sub(lambda m, rule=rule: self._mask(m, rule, counts), text)
        return text

    @staticmethod
    def _mask(match: re.Match[str], rule: Rule, counts: Counter[str] | None) -> str:
        if match.group(0).startswith("[REDACTED:") or "[REDACTED:" in (match.groupdict().get("secret") or ""):
            return match.group(0)
        if counts is not None:
            counts[rule.name] += 1
        marker = f"[REDACTED:{rule.name}]"
        if "secret" in match.re.groupindex and match.group("secret") is not None:
            start, end = match.span("secret")
            offset = match.start()
            whole = match.group(0)
            return whole[: start - offset] + marker + whole[end - offset :]
        return marker
