"""Masking of secrets before any text leaves the parser.

Session logs hold what people pasted and what tools printed: API keys, tokens,
private keys, passwords in URLs, `.env` files. The rules come from two places:

- gitleaks' default rule set (`rules/gitleaks.toml`, MIT, provenance in
  `rules/SOURCES.md`): some 200 provider formats, each gated by keywords, many
  with an entropy threshold and allowlists, maintained upstream;
- the project's own rules for what session logs hold and gitleaks does not look
  for: values assigned to secret-looking names in env files, shell exports and
  CLI flags, `aws configure set`, defaults of `os.environ.get(...)`, passwords in
  URLs, authorization headers, bare AWS secret keys.

Only the secret value is masked (`[REDACTED:<rule>]`), never the code around
it. A token that a terminal wrapped onto the next line is found on the joined
text and masked on both lines. Extra rules (`REDACT_EXTRA_PATTERNS`) come last.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

import ahocorasick

GITLEAKS_RULES = Path(__file__).with_name("rules") / "gitleaks.toml"
MARKER = re.compile(r"\[REDACTED:[\w.\-]+\]")
# Characters a token is made of, for joining a token a terminal wrapped over two lines.
_TOKEN = "A-Za-z0-9_\\-+/="
_OWN_LINE = re.compile(r"[A-Za-z_][\w.\-]*[ \t]*[=:]")
_WRAP = re.compile(rf"(?<=[{_TOKEN}]{{8}})\r?\n[ \t]*(?=[{_TOKEN}]{{8}})")


@dataclass(frozen=True)
class Allow:
    """A gitleaks allowlist: the finding is not a secret when its regexes (on the secret, the whole match or
    the line) or its stopwords (in the secret) say so."""

    regexes: tuple[re.Pattern[str], ...] = ()
    stopwords: tuple[str, ...] = ()
    target: Literal["secret", "match", "line"] = "secret"

    def allows(self, secret: str, match: str, line: str) -> bool:
        text = {"secret": secret, "match": match, "line": line}[self.target]
        lowered = secret.lower()
        return any(r.search(text) for r in self.regexes) or any(s in lowered for s in self.stopwords)


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

    @classmethod
    def of(
        cls, name: str, regex: str, keywords: tuple[str, ...] = (), flags: int = 0, entropy: float | None = None
    ) -> Rule:
        return cls(name, re.compile(regex, flags), tuple(k.lower() for k in keywords), entropy)

    def secret_span(self, match: re.Match[str]) -> tuple[int, int] | None:
        if "secret" in self.pattern.groupindex:
            return match.span("secret") if match.group("secret") is not None else None
        for group in range(1, (self.pattern.groups or 0) + 1):
            if match.group(group):
                return match.span(group)
        return match.span()


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def go_regex(regex: str) -> str:
    """gitleaks' RE2 syntax as Python's: `\\z` is `\\Z`, and a `(?i)` after the start (RE2: "from here to
    the end of this group") becomes a scoped `(?i:...)` around the rest of its group."""
    regex = regex.replace("\\z", "\\Z")
    while True:
        start = regex.find("(?i)", 1)
        if start < 0:
            return regex
        end, depth, i, in_class = len(regex), 0, start + 4, False
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
            i += 1
        regex = regex[:start] + "(?i:" + regex[start + 4 : end] + ")" + regex[end:]


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
        )
        for spec in config["rules"]
        if spec.get("regex")
    )


_SECRET_NAME = r"[A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|PASS|CREDENTIALS?|AUTH)[A-Za-z0-9_]*"
# Values that name a secret rather than hold one.
_PLACEHOLDER = re.compile(
    r"(?i)^(?:true|false|null|none|nil|undefined|changeme|change_me|secret|password|example|test|dummy|x+|\*+|"
    r"<[^>]*>|your[_-].*|\$.*|%.*%|\{\{.*\}\})$"
)
_PLACEHOLDERS = (Allow(regexes=(_PLACEHOLDER,)),)
# Values that are code, not a secret: a call (`os.environ.get(`, `Path(__file__)`), an attribute path
# (`settings.api_token`, `process.env.TOKEN`), an interpolation. Seen swallowed whole on real histories.
_CODE_VALUE = re.compile(r"^(?:[A-Za-z_][\w.]*\(|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\)?[,)]*$|\$|`)")
_NOT_CODE = (*_PLACEHOLDERS, Allow(regexes=(_CODE_VALUE,)))
_PROSE = re.compile(r"(?i)\b(?:the|a|an|your|my|our|to|of|for|with|is|are|enter|please|not|and|or|here)\b")
# A password a person typed in chat: after a label in English, Vietnamese, Chinese or Japanese. Only a value
# that looks like one (a digit, a symbol or an inner capital; not a path or a URL) counts: "the password is
# required" stays as it was.
_CHAT_PASSWORD_LABEL = (
    r"(?:(?i:\b(?:password|passwd|passcode|pass\s?phrase)\b)(?:\s+(?:is|was|=)|\s*[:=：])"
    r"|(?i:\b(?:pw|pwd)\b)\s*[:：]"  # `pwd = …` in code is the working directory: a colon, as people type it
    r"|(?i:m[ậa]t\s+kh[ẩa]u)(?:\s+(?:là|la)|\s*[:=：])?"
    r"|(?:密码|密碼|口令|パスワード)(?:是|为|為|は|：|:|=)?)"
)
# CJK ideographs and punctuation (full-width comma, full stop): where a password typed in Chinese chat ends.
_CJK = "\u3000-\u303f\u3040-\u30ff\u4e00-\u9fff\uff00-\uffef"
_NOT_A_PASSWORD = (
    *_NOT_CODE,
    # A path, a URL, a word (letters only, no inner capital), or too short to be one.
    Allow(regexes=(re.compile(r"^(?:[/~.]|\w+://)|^(?!.*[a-z][A-Z])[^\W\d_]+$|^.{0,3}$"),)),
)

OWN_RULES: tuple[Rule, ...] = (
    Rule.of(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        keywords=("private key",),
    ),
    Rule.of("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", keywords=("sk-ant-",)),
    Rule.of("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", keywords=("sk-",)),
    Rule.of("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", keywords=("xox",)),
    # gitleaks reads key ids as base32; AWS documents [A-Z0-9]: ids with 0, 1, 8 or 9 exist too.
    Rule.of("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b", keywords=("akia", "asia", "abia", "acca")),
    Rule.of(
        "aws-cli-secret",
        r"(?i)\baws\s+configure\s+set\s+(?:[\w.-]*\.)?aws_(?:secret_access_key|session_token)\s+['\"]?"
        r"(?P<secret>[^\s'\"]{8,})",
        keywords=("aws configure",),
    ),
    Rule(
        "env-default",
        re.compile(
            rf"(?:getenv|environ\.get|env\.get|ENV\.fetch)\(\s*['\"]{_SECRET_NAME}['\"]\s*,\s*['\"]"
            r"(?P<secret>[^'\"\s]{8,})['\"]",
            re.I,
        ),
        ("getenv", "environ.get", "env.get", "env.fetch"),
        allow=_PLACEHOLDERS,
    ),
    Rule(
        "env-assignment",
        re.compile(
            rf"(?m)(?:^|(?<=[\s;&|(]))(?:export[ \t]+|set[ \t]+|\$env:)?(?-i:{_SECRET_NAME})[ \t]*[=:][ \t]*['\"]?"
            r"(?P<secret>[^\s'\"$`;#]{6,})",
        ),
        ("key", "token", "secret", "pass", "pwd", "credential", "auth"),
        allow=_NOT_CODE,
    ),
    # The same, quoted with spaces inside (a Gmail app password: `SMTP_PASSWORD="wxyz abcd qrst uvwk"`).
    Rule(
        "spaced-secret-assignment",
        re.compile(
            rf"(?m)(?:^|(?<=[\s;&|(]))(?:export[ \t]+)?(?-i:{_SECRET_NAME})[ \t]*[=:][ \t]*(?P<q>['\"])"
            r"(?P<secret>[^'\"\n$`]*\S \S[^'\"\n$`]*)(?P=q)"
        ),
        ("key", "token", "secret", "pass", "pwd", "credential", "auth"),
        # Prose is not a passphrase: `PASSWORD_PROMPT = "Enter your password"`.
        allow=(*_NOT_CODE, Allow(regexes=(_PROSE,))),
    ),
    Rule(
        "chat-password",
        re.compile(
            _CHAT_PASSWORD_LABEL + r"\s*['\"“「]?(?P<secret>[^\s'\"”」" + _CJK + r"]+?)['\"”」]?"
            r"(?=[.,;)]?(?:[\s" + _CJK + r"]|$))"
        ),
        (
            "password",
            "passwd",
            "passcode",
            "pass phrase",
            "passphrase",
            "pw",
            "pwd",
            "mật khẩu",
            "mat khau",
            "密码",
            "密碼",
            "口令",
            "パスワード",
        ),
        allow=_NOT_A_PASSWORD,
    ),
    Rule(
        "cli-secret-flag",
        re.compile(
            r"(?i)(?<![\w-])--?(?:password|passwd|token|api[-_]?key|secret|access[-_]?key|secret[-_]?key"
            r"|client[-_]?secret|auth[-_]?token)(?:=|[ \t]+)['\"]?(?P<secret>[^\s'\"$<>]{6,})"
        ),
        ("password", "passwd", "token", "key", "secret"),
        allow=_PLACEHOLDERS,
    ),
    Rule.of("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}\b", keywords=(":aa",)),
    Rule.of(
        "docker-login-password",
        r"\bdocker\s+login\b[^\n]*?\s(?:-p|--password)[ \t=]+['\"]?(?P<secret>[^\s'\"]{6,})",
        keywords=("docker login",),
    ),
    Rule(
        "quoted-secret-assignment",
        re.compile(
            r"(?i)\b[\w.-]*(?:password|passwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token"
            r"|access[_-]?token|client[_-]?secret|private[_-]?key)[\w.-]*['\"]?\s*(?:=|:|=>)\s*['\"]"
            r"(?P<secret>[^'\"\s]{8,})['\"]"
        ),
        ("password", "passwd", "secret", "key", "token"),
        entropy=2.5,
        allow=_PLACEHOLDERS,
    ),
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
    Rule(
        "webhook-url",
        re.compile(
            r"https://(?:hooks\.slack\.com/(?:services|workflows|triggers)/|(?:ptb\.|canary\.)?discord(?:app)?\.com"
            r"/api/webhooks/\d+/|[\w-]+\.webhook\.office\.com/webhookb2/|chat\.googleapis\.com/v1/spaces/)"
            r"(?P<secret>[\w\-/%?=&.]{16,})"
        ),
        ("hooks.slack.com", "discord", "webhook.office.com", "chat.googleapis.com"),
    ),
    # A bare AWS secret access key: 40 characters of base64 with all three character classes.
    Rule(
        "aws-secret-key",
        re.compile(r"(?<![A-Za-z0-9/+=])(?=[^\s]*[A-Z])(?=[^\s]*[a-z])(?=[^\s]*\d)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
        (),
        entropy=4.3,
    ),
)


class Redactor:
    """Applies the rules to text; counts what it masked, per rule."""

    def __init__(self, extra_rules: Iterable[Rule] = (), base: Iterable[Rule] | None = None) -> None:
        """`base` replaces the built-in rules (the benchmark compares rule sets); extras always come last."""
        self.extra_rules = tuple(extra_rules)
        self.rules = (*(DEFAULT_RULES if base is None else tuple(base)), *self.extra_rules)
        # Every rule's keywords in one automaton: a text is read once to learn which rules can match it.
        self._keywords = ahocorasick.Automaton()
        for keyword in {k for rule in self.rules for k in rule.keywords}:
            self._keywords.add_word(keyword, keyword)
        self._keywords.make_automaton()

    @classmethod
    def with_patterns(cls, patterns: Iterable[str]) -> Redactor:
        """Extra rules from plain regexes (configuration); each is named `custom-N`."""
        return cls([Rule.of(f"custom-{i}", p) for i, p in enumerate(patterns, start=1)])

    def redact(self, text: str, counts: Counter[str] | None = None) -> str:
        if not text:
            return text
        spans = self._spans(text)
        # A token a terminal wrapped: look again with such line breaks removed, keep what spans a break.
        breaks = [b.span() for b in _WRAP.finditer(text)]
        if breaks:
            joined, origin = _join(text, breaks)
            for start, end, name in self._spans(joined):
                first, last = origin[start], origin[end - 1] + 1
                crossed = [b_end for b_start, b_end in breaks if first < b_start and b_end < last]
                # A next line that starts a `NAME=` or `key:` of its own is a line, not the token's tail:
                # joining it would erase it (`env` output: GITHUB_TOKEN=…, then LOG_LEVEL=info).
                if crossed and not any(_OWN_LINE.match(text, b_end) for b_end in crossed):
                    spans.append((first, last, name))
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

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, rule) of every secret in `text`, in rule order (the earlier rule names a merged span)."""
        present = {keyword for _, keyword in self._keywords.iter(text.lower())} if len(self._keywords) else set()
        masked = [m.span() for m in MARKER.finditer(text)]
        found: list[tuple[int, int, str]] = []
        for rule in self.rules:
            # Most text holds no rule's keyword at all, and a regex scan costs far more than the lookup.
            if rule.keywords and present.isdisjoint(rule.keywords):
                continue
            for match in rule.pattern.finditer(text):
                span = rule.secret_span(match)
                if span is None or span[0] == span[1] or any(s < span[1] and span[0] < e for s, e in masked):
                    continue
                secret = text[span[0] : span[1]]
                if rule.entropy is not None and shannon_entropy(secret) < rule.entropy:
                    continue
                line_start = text.rfind("\n", 0, match.start()) + 1
                line_end = text.find("\n", match.end())
                line = text[line_start : line_end if line_end >= 0 else len(text)]
                if any(a.allows(secret, match.group(0), line) for a in rule.allow):
                    continue
                found.append((span[0], span[1], rule.name))
        return found


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


# Provider formats first (certain, and they name the secret), then the contextual ones, the catch-all last.
_GENERIC = "generic-api-key"
DEFAULT_RULES: tuple[Rule, ...] = (
    *(r for r in gitleaks_rules() if r.name != _GENERIC),
    *OWN_RULES,
    *(r for r in gitleaks_rules() if r.name == _GENERIC),
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
        and not _PLACEHOLDER.match(value.strip())
        and not MARKER.fullmatch(value.strip())
        and not key.lower().endswith(("_count", "_tokens", "tokens", "_type", "_name", "_file", "_path", "_url"))
    )
