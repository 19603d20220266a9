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
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

import ahocorasick

from memory_pipeline.sessions import shapes
from memory_pipeline.sessions.reach import blank_reach, holds_keyword, lead, line_reach

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


# A name that names a secret (`DB_PASSWORD`), not one that names where or what it is (`CREDENTIALS_ID`,
# `LLM_SECRET_NAME`, `TOKEN_URL`).
_NOT_THE_SECRET = r"(?<!_ID)(?<!_NAME)(?<!_URL)(?<!_PATH)(?<!_FILE)(?<!_TYPE)(?<!_FIELD)(?<!_HEADER)"
_SECRET_NAME = (
    r"[A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|PASS|CREDENTIALS?|AUTH)[A-Za-z0-9_]*" + _NOT_THE_SECRET
)
# Values that name a secret rather than hold one.
_PLACEHOLDER = re.compile(
    r"(?i)^(?:true|false|null|none|nil|undefined|changeme|change_me|secret|password|example|test|dummy|x+|\*+|"
    r"<[^>]*>|your[_-].*|\$.*|%.*%|\{.*\}|https?://.*"
    # Written to be seen, not used (gitleaks' own false-positive examples): `hf_xxxxxxxx`, `pnu_XXXX`, `ops_…`,
    # `glc_1111111111`, `sk-ant-api03-abc123xyz-…`.
    r"|.*(?:x{6}|\*{4}|#{4}|\.\.\.|…|abc123xyz).*|.*(.)\1{9}.*|.*example)$"
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

# Tokens whose prefix names them, masked wherever they stand (prose, `printenv` output, a k8s `value:`, tool
# arguments): gitleaks gates most of these on a vendor word next to them, which real sessions rarely hold.
_B = r"(?<![A-Za-z0-9_\-])"  # not inside a longer word
# Without a keyword (discord's bot token) a rule reads only runs of token characters: 59 at least, its shortest.
_E = r"(?![A-Za-z0-9_\-])"
PREFIXED_TOKENS: tuple[Rule, ...] = tuple(
    Rule(name, re.compile(_B + regex + _E), (keyword,) if keyword else (), in_runs=0 if keyword else 59)
    for name, regex, keyword in (
        ("aws-session-token", r"IQoJb3JpZ2luX2Vj[A-Za-z0-9+/=]{60,}", "iqojb3jpz2lux2vj"),
        ("aws-session-token", r"FwoGZXIvYXdzE[A-Za-z0-9+/=]{60,}", "fwogzxivyxdze"),
        ("dockerhub-pat", r"dckr_pat_[A-Za-z0-9_-]{27}", "dckr_pat_"),
        ("bitbucket-app-password", r"ATBB[A-Za-z0-9]{28,}", "atbb"),
        ("discord-bot-token", r"[MN][A-Za-z0-9]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}", ""),
        ("mailgun-key", r"key-[0-9a-f]{32}", "key-"),
        ("stripe-webhook-secret", r"whsec_[A-Za-z0-9]{24,}", "whsec_"),
        ("braintree-token", r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}", "access_token$"),
        ("tavily-key", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}", "tvly-"),
        ("groq-key", r"gsk_[A-Za-z0-9]{48,}", "gsk_"),
        ("replicate-token", r"r8_[A-Za-z0-9]{37}", "r8_"),
        ("xai-key", r"xai-[A-Za-z0-9]{60,}", "xai-"),
        ("newrelic-user-key", r"NRAK-[A-Z0-9]{27}", "nrak-"),
        ("atlassian-token", r"ATATT3[A-Za-z0-9_\-=]{100,}", "atatt3"),
        ("doppler-token", r"dp\.(?:st|ct|pt|sa|scim|audit)\.[A-Za-z0-9_.-]{40,}", "dp."),
        ("google-client-secret", r"GOCSPX-[A-Za-z0-9_-]{28}", "gocspx-"),
        ("google-oauth-token", r"ya29\.[A-Za-z0-9_-]{30,}", "ya29."),
        ("supabase-token", r"sbp_(?:v0_)?[0-9a-f]{40}", "sbp_"),
        ("mapbox-secret-token", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", "sk.eyj"),
    )
)


OWN_RULES: tuple[Rule, ...] = (
    Rule.of(
        "private-key",
        # With a body (16 base64 characters, after any `Proc-Type:` headers): `…KEY-----\nanything\n-----END`
        # is an example.
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?=\s*(?:[A-Za-z-]+:[^\n]*\n\s*)*[A-Za-z0-9+/=]{16})[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        keywords=("private key",),
        block=True,
    ),
    Rule("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), ("sk-ant-",), allow=_PLACEHOLDERS),
    *PREFIXED_TOKENS,
    Rule(
        "openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), ("sk-",), allow=_PLACEHOLDERS
    ),
    # Digits, then more: `xoxb-12345-abcd234` and `xoxo-indieweb` are gitleaks' own false-positive examples.
    Rule.of("slack-token", r"\bxox[abposr]-\d{8,}-[A-Za-z0-9\-]{8,}(?![A-Za-z0-9\-#*])", keywords=("xox",)),
    # gitleaks reads key ids as base32; AWS documents [A-Z0-9]: ids with 0, 1, 8 or 9 exist too.
    Rule(
        "aws-access-key-id",
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
        ("akia", "asia", "abia", "acca"),
        allow=_PLACEHOLDERS,
    ),
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
            _CHAT_PASSWORD_LABEL + r"[ \t]*['\"“「]?(?P<secret>[^\s'\"”」" + _CJK + r"]+?)['\"”」]?"
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
    # In a bot API URL the token follows "bot" without a word boundary (`api.telegram.org/bot123…:AA…/`).
    Rule.of("telegram-bot-token", r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])", keywords=(":aa",)),
    Rule.of(
        "docker-login-password",
        r"\bdocker\s+login\b[^\n]*?\s(?:-p|--password)[ \t=]+['\"]?(?P<secret>[^\s'\"]{6,})",
        keywords=("docker login",),
    ),
    Rule(
        "quoted-secret-assignment",
        re.compile(
            r"(?i)\b[\w.-]*(?:password|passwd|secret|api[_-]?key|apikey|access[_-]?key|auth[_-]?token"
            r"|access[_-]?token|client[_-]?secret|private[_-]?key)[\w.-]*"
            + _NOT_THE_SECRET.lower()
            + r"['\"]?\s*(?:=|:|=>)\s*['\"]"
            r"(?P<secret>[^'\"\s]{8,})['\"]"
        ),
        ("password", "passwd", "secret", "key", "token"),
        entropy=2.5,
        allow=_PLACEHOLDERS,
    ),
    Rule.of(
        "bearer-token",
        r"(?i)(?:\bbearer\s+|\bauthorization:\s*(?:token|ssws)\s+)(?P<secret>[A-Za-z0-9_\-.=+/]{16,})",
        keywords=("bearer", "authorization"),
    ),
    Rule.of(
        "basic-auth-header",
        r"(?i)\bauthorization:\s*basic\s+(?P<secret>[A-Za-z0-9+/=]{8,})",
        keywords=("authorization",),
    ),
    # The user may be empty: `redis://:password@host`.
    Rule.of("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]*:(?P<secret>[^\s@/]{3,})@", keywords=("://",)),
    # A key in a URL's query: `?api_key=…&`, `&appid=…` (with a digit: `?key=created_at_desc` is a sort order).
    Rule(
        "url-query-key",
        re.compile(
            r"(?i)[?&](?:api[_-]?key|apikey|appid|app[_-]?key|key|token|access[_-]?token|auth[_-]?token|secret"
            r"|client[_-]?secret|password|sig|signature)=(?=[^&\s#]*\d)(?P<secret>[^&\s#'\"<>{}$]{8,})"
        ),
        ("key=", "appid=", "token=", "secret=", "password=", "sig=", "signature="),
        allow=_PLACEHOLDERS,
    ),
    # A literal fallback after an environment lookup: `os.getenv("X") or "<key>"`, `process.env.X ?? "<key>"`.
    Rule(
        "env-fallback",
        re.compile(
            r"(?:getenv\([^()\n]*\)|environ(?:\.get\([^()\n]*\)|\[[^\]\n]*\])|process\.env(?:\.\w+|\[[^\]\n]*\])"
            r"|ENV\[[^\]\n]*\])\s*(?:\bor\b|\|\||\?\?)\s*['\"`](?P<secret>[A-Za-z0-9_\-.+/=]{16,})['\"`]"
        ),
        ("getenv", "environ", "process.env", "env["),
        entropy=3.0,
        allow=_PLACEHOLDERS,
    ),
    Rule.of(
        "netrc-password",
        r"(?i)\bmachine\s+\S+(?:\s+login\s+\S+)?\s+password\s+(?P<secret>\S+)",
        keywords=("machine",),
    ),
    Rule.of(
        "mysql-password-flag",
        r"\bmysql(?:dump|admin|sh)?\b[^\n]*?\s-p(?P<q>['\"]?)(?P<secret>[^\s'\"]{4,})(?P=q)",
        keywords=("mysql",),
    ),
    Rule(
        "login-call-password",
        re.compile(r"\.login\(\s*[^,()\n]+,\s*['\"](?P<secret>[^'\"\n]{6,})['\"]\s*\)"),
        ("login(",),
        allow=_PLACEHOLDERS,
    ),
    Rule.of(
        "putty-private-key",
        r"(?i)Private-Lines:\s*\d+\s*\r?\n(?P<secret>(?:[A-Za-z0-9+/=]{8,}(?:\r?\n|$))+)",
        keywords=("private-lines",),
        block=True,
    ),
    Rule.of(
        "sentry-dsn",
        r"\bhttps?://(?P<secret>[0-9a-f]{32})(?::[0-9a-f]{32})?@[\w.-]*sentry",
        keywords=("sentry",),
    ),
    Rule(
        "webhook-url",
        re.compile(
            r"https://(?:hooks\.slack\.com/(?:services|workflows|triggers)/|(?:ptb\.|canary\.)?discord(?:app)?\.com"
            r"/api/webhooks/\d+/|[\w-]+\.webhook\.office\.com/webhookb2/|chat\.googleapis\.com/v1/spaces/)"
            r"(?P<secret>[\w\-/%?=&.]{16,})"
        ),
        ("hooks.slack.com", "discord", "webhook.office.com", "chat.googleapis.com"),
    ),
    # A bare AWS secret access key: 40 characters of base64 with all three character classes. The classes are
    # looked for within those 40 only: looking to the end of the run from every token start was quadratic on
    # long unbroken lines (minified code, JSON in tool output) and a third of the time of reading such output.
    Rule(
        "aws-secret-key",
        re.compile(
            r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))"
            r"(?=[a-z0-9/+]{0,39}[A-Z])(?=[A-Z0-9/+]{0,39}[a-z])(?=[A-Za-z/+]{0,39}\d)[A-Za-z0-9/+]{40}"
        ),
        (),
        entropy=4.3,
        in_runs=40,
    ),
)


_APP_PASSWORD = re.compile(r"^(?:[a-z]{4} ){3}[a-z]{4}$")  # Google's app passwords: four groups of four
_SYMBOL = re.compile(r"[\d!#$%&*+/<>?@^~|]")


def _named_value(match: re.Match[str]) -> bool:
    """A value under a secret's name (by its parts) that is a secret: a URL only under a webhook's or DSN's name;
    under a name in lower or mixed case (code, YAML, JSON), only a value with a digit or a symbol, or an app
    password: `key=lambda`, `"sort_key": "created"` are code."""
    name, value = match.group("name"), match.group("secret").strip()
    if not shapes.secret_name(name) or MARKER.search(value):
        return False
    if value.lower().startswith(("http://", "https://")):
        return shapes.url_secret_name(name) and len(value) > 12 and not _PLACEHOLDER_WORDS.match(value)
    if _PLACEHOLDER.match(value) or _CODE_VALUE.match(value) or _VERSION.match(value):
        return False
    if " " in value and (_PROSE.search(value) or _MARKUP.search(value)):
        return False
    if _vendor_owned(value):  # `AIzaSy…` under any name: gcp-api-key's rule decides
        return False
    if not name.isupper() and shapes.identifier(value):  # `"bucket_key": "SalesResults-1.2"` names a thing
        return False
    return name.isupper() or bool(_SYMBOL.search(value)) or bool(_APP_PASSWORD.match(value))


# Code or markup, not a passphrase: `telegram_api_token = "<xsd:element name="…`.
_MARKUP = re.compile(r"[<>=(){}]")


# A version (`"cookie-signature": "1.0.6"` in a lockfile, `^7.16.0`): a package's name is no secret's name.
_VERSION = re.compile(r"^[\^~>=<v]*\d+(?:\.\d+)+[\w.\-+]*$")


def _machine_token(match: re.Match[str]) -> bool:
    """A machine-made token, unless it is a data URI's content (`data:image/png;base64,…`: an image, no key), a
    file's name (`…-OTA-97B6C6C5.bfu`), a piece of a `~`-joined string the token pattern sees only in parts
    (CloudFront signatures, image-service URLs; azure-ad-client-secret owns the secrets with `Q~`), inside a
    public key's armour, a vendor's (`_vendor_owned`) or under a public name (`publicToken = "…"`)."""
    text, start, end = match.string, match.start(), match.end()
    if text.endswith("base64,", 0, start) or not shapes.machine_made(match.group(0)):
        return False
    if _FILE_EXTENSION.match(text, end) or text.startswith("~", end) or text.endswith("~", 0, start):
        return False
    return not (_in_public_armour(text, start) or _vendor_owned(match.group(0)) or _public_name_before(match))


def _url_token(token: str) -> bool:
    """A URL's path segment or user that is machine-made, not a vendor's, and not hex: in a path, hex is an
    object's id (a commit, a page: `notion.site/API-BD80F56C…`)."""
    return shapes.machine_made(token) and not _vendor_owned(token) and not _HEX_TAIL.search(token)


_HEX_TAIL = re.compile(r"(?:^|[_\-])[0-9a-fA-F]{16,}$")


_FILE_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}(?![\w.])")
_ARMOUR = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----")


def _in_public_armour(text: str, position: int) -> bool:
    """Whether `position` is inside a `-----BEGIN … PUBLIC KEY…-----` block or a certificate: published keys."""
    begin = text.rfind("-----BEGIN ", 0, position)
    header = _ARMOUR.match(text, begin) if begin >= 0 else None
    return (
        header is not None
        and ("PUBLIC KEY" in header.group(1) or "CERTIFICATE" in header.group(1))
        and text.find("-----END ", begin, position) < 0
    )


# The generic rule's keywords name no vendor, nor do an environment's words (`live_`, `test_`: Stripe's
# keywords, and in many vendors' `…_live_…` tokens): a vendor keyword that is one of them is no vendor's.
_GENERIC_WORDS = frozenset(
    {"access", "api", "auth", "key", "credential", "creds", "passwd", "password", "secret", "token", "live", "test"}
)


@cache
def _vendor_keywords() -> ahocorasick.Automaton:
    """The keywords of the rules that name a vendor's format (gitleaks' but its generic rule, the prefixed
    tokens), 4 characters or more (shorter ones occur in random text by chance) and not a generic word: where
    one occurs, that rule knows the format (its length, its checksum, its allowlist) better than a shape does."""
    automaton = ahocorasick.Automaton()
    rules = (*(r for r in gitleaks_rules() if r.name != _GENERIC), *PREFIXED_TOKENS)
    for keyword in {k for rule in rules for k in rule.keywords}:
        if len(keyword) >= 4 and keyword.strip("_-.") not in _GENERIC_WORDS:
            automaton.add_word(keyword, keyword)
    automaton.make_automaton()
    return automaton


def _vendor_owned(token: str) -> bool:
    """Whether a vendor's rule owns `token`: it holds the vendor's keyword (`AIzaSy…` of the wrong kind, an
    `sntryu_…` with a bad checksum). That rule saw the text and found no secret of its format. A vendor named
    beside the token decides nothing: `AZURE_DEVOPS_EXT_PAT` is no format azure's rules know."""
    return next(_vendor_keywords().iter(token.lower()), None) is not None


# The name a value is written under, just before it on its line: `publicToken = "`, `"public_key": "`.
_NAME_BEFORE = re.compile(r"([A-Za-z_][\w.\-]*)\\?['\"]?\s*(?:=|:=|:|=>)\s*\\?['\"]?$")


def _public_name_before(match: re.Match[str]) -> bool:
    """Whether the name the token is written under says it is public (`publicToken = "…"`)."""
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    name = _NAME_BEFORE.search(match.string, max(line_start, match.start() - 80), match.start())
    return name is not None and bool(shapes.PUBLIC_PARTS.intersection(shapes.name_parts(name.group(1))))


_PLACEHOLDER_WORDS = re.compile(r"(?i).*(?:x{6}|\*{4}|\.\.\.|…|example|your[_-]|<[^>]*>|\{[^}]*\}|\$)")
_VALUE_END = r"(?=[\s,;}\])]|\\|$)"
# Secrets by their shape and by their name's parts (memory_pipeline/sessions/shapes.py says why).
SHAPE_RULES: tuple[Rule, ...] = (
    # A value under a secret's name: bare (`AZURE_DEVOPS_EXT_PAT=…`, `Secret=…;`) or quoted, spaces allowed
    # (`"app_password": "wxyz abcd qrst uvwk"`, also as escaped JSON inside a string: `\"key\": \"…\"`).
    Rule(
        "named-secret",
        re.compile(shapes.NAME + r"\\?['\"]?[ \t]*(?:=|:)[ \t]*\\?(?P<q>['\"])(?P<secret>[^'\"\n\\]{4,200}?)\\?(?P=q)"),
        tuple(shapes.NAME_PARTS),
        check=_named_value,
    ),
    Rule(
        "named-secret",
        re.compile(shapes.NAME + r"[ \t]*(?:=|:)[ \t]*(?P<secret>[^\s'\"$`;#,{}\[\]\\]{6,})" + _VALUE_END),
        tuple(shapes.NAME_PARTS),
        check=_named_value,
    ),
    # A webhook's path after its `hooks/`, `webhook/`, `catch/` or `triggers/` segment (with a digit in it).
    Rule(
        "webhook-path",
        re.compile(
            r"\bhttps?://[^\s'\"<>]*?/(?i:hooks?|webhooks?|webhookb2|catch|triggers?)/"
            r"(?=[^\s'\"<>?#]*\d)(?P<secret>[^\s'\"<>?#]{8,})"
        ),
        ("hook", "catch/", "trigger"),
    ),
    # A path segment or a user name in a URL that looks machine-made (`https://<token>@host`).
    Rule(
        "url-token",
        re.compile(
            r"\bhttps?://(?:(?P<user>[^\s:/@'\"<>]{16,})@)?[^\s'\"<>/]+(?:/[^\s'\"<>/?#]*)*?"
            r"(?:/(?P<secret>[A-Za-z0-9_\-]{20,})(?=[/?#\s'\"<>)\]]|$)|(?=[\s'\"<>)\]]|$))"
        ),
        ("://",),
        check=lambda m: bool(m.group("secret")) and _url_token(m.group("secret")),
    ),
    Rule(
        "url-token",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://(?P<secret>[^\s:/@'\"<>]{16,})@"),
        ("://",),
        check=lambda m: _url_token(m.group("secret")),
    ),
    # A password typed beside an email address, no label: `me@gmail.com / Hunter2024!`, `me@x.io pass: …`.
    Rule(
        "email-password",
        re.compile(
            r"[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+[ \t]*(?:[/|,:]|(?i:pass(?:word)?:?)|[ \t])[ \t]*"
            r"(?P<secret>(?=[^\s'\"<>]*[A-Za-z])(?=[^\s'\"<>]*[\d!#$%&*?^~])[^\s'\"<>@/]{6,64}?)[.,;)]?(?=\s|$)"
        ),
        ("@",),
        allow=_NOT_A_PASSWORD,
    ),
    # Last: any token that looks machine-made, wherever it stands.
    Rule("machine-token", re.compile(shapes.TOKEN), (), check=lambda m: _machine_token(m), in_runs=20),
)


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
        # Per rule, the lines around a keyword its matches stay within; None: the whole text (see reach.py).
        self._reach = tuple(_line_reach(rule) for rule in self.rules)
        # For the rules unbounded only by runs of whitespace (`\s*` between a name and its `=`): the non-blank
        # lines around a keyword their matches stay within, blank lines not counted (see reach.blank_reach).
        self._blank_reach = tuple(
            _line_reach(rule, blank_reach) if reach is None else None
            for rule, reach in zip(self.rules, self._reach, strict=True)
        )
        # The rules whose every match starts in a short run right before a keyword (gitleaks' generated rules):
        # tried only at those starts (`_lead_matches`), not at every position of the lines around.
        self._lead = tuple(
            lead(rule.pattern, rule.keywords) if rule.keywords and not (rule.block or rule.in_runs) else None
            for rule in self.rules
        )
        # The rules each keyword can wake, and those without keywords: a text wakes only its keywords' rules
        # (asking each of the ~270 rules about its keywords, per text, was a third of the time on tool output).
        self._waking: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for keyword in set(rule.keywords):
                self._waking.setdefault(keyword, []).append(i)
        self._sleepless = [i for i, rule in enumerate(self.rules) if not rule.keywords]

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
        return _apply(text, spans, counts)

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
        return _apply(text, spans, counts)

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
        masked = [m.span() for m in MARKER.finditer(text)]
        lines: _Lines | None = None
        runs: list[tuple[int, int]] | None = None
        found: list[tuple[int, int, str]] = []
        woken = set(self._sleepless).union(*(self._waking[k] for k in hits))
        for index in sorted(woken):  # rule order: the earlier rule names a merged span
            rule, reach, blank, opening = (
                self.rules[index],
                self._reach[index],
                self._blank_reach[index],
                self._lead[index],
            )
            if opening is not None and junctions is None:
                starts = sorted({p for k in rule.keywords for p in hits.get(k, ())})
                matches = _lead_matches(rule.pattern, text, starts, *opening)
                found.extend(_accepted(rule, rule.pattern.finditer(text) if matches is None else matches, masked))
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
            spans = _scan(rule, text, windows, masked, exact_ends=bool(rule.in_runs) or whole)
            found.extend(spans if spans is not None else _accepted(rule, rule.pattern.finditer(text), masked))
        return found


def _line_reach(rule: Rule, reach: Callable[[re.Pattern[str]], int | None] = line_reach) -> int | None:
    """The lines either side of a keyword that hold all of `rule`'s matches (counted by `reach`); None: it must
    read the whole text."""
    if rule.block or rule.in_runs or not holds_keyword(rule.pattern, rule.keywords):
        return None
    return reach(rule.pattern)


def _scan(
    rule: Rule, text: str, windows: list[tuple[int, int]], masked: list[tuple[int, int]], exact_ends: bool
) -> list[tuple[int, int, str]] | None:
    """The rule's secrets in `windows`; None when a match reaches a window's end short of the text's (there `$`
    holds and a lookahead sees nothing, unlike in the whole text): the caller reads the whole text instead."""
    matches: list[re.Match[str]] = []
    for start, end in windows:
        matches.extend(rule.pattern.finditer(text, start, end))
        if not exact_ends and end < len(text) and matches and matches[-1].end() >= end - 1:
            return None
    return _accepted(rule, matches, masked)


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
    rule: Rule, matches: Iterable[re.Match[str]], masked: list[tuple[int, int]]
) -> list[tuple[int, int, str]]:
    """The matches that are secrets: trimmed, outside an earlier mask, random enough, passing the rule's check
    and no allowlist's."""
    found = []
    for match in matches:
        text = match.string
        span = _trimmed(text, rule.secret_span(match), rule.block)
        if span is None or span[0] == span[1] or any(s < span[1] and span[0] < e for s, e in masked):
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


def _apply(text: str, spans: list[tuple[int, int, str]], counts: Counter[str] | None) -> str:
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
        and not _PLACEHOLDER.match(value.strip())
        and not MARKER.fullmatch(value.strip())
        and not key.lower().endswith(("_count", "_tokens", "tokens", "_type", "_name", "_file", "_path", "_url"))
    )
