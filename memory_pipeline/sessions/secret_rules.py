"""The project's own secret-masking rules, for what session logs hold and gitleaks does not look for: tokens
whose prefix names them, values assigned to secret-looking names in env files, shell exports and CLI flags,
`aws configure set`, defaults of `os.environ.get(...)`, passwords in URLs and chat, authorization headers, and
secrets by their shape (`shapes`). `redact` applies them after gitleaks' provider formats."""

from __future__ import annotations

import re
from functools import cache

import ahocorasick

from memory_pipeline.sessions import shapes
from memory_pipeline.sessions.secret_rule import GENERIC, MARKER, Allow, Rule, gitleaks_rules

# A name that names a secret (`DB_PASSWORD`), not one that names where or what it is (`CREDENTIALS_ID`,
# `LLM_SECRET_NAME`, `TOKEN_URL`).
_NOT_THE_SECRET = r"(?<!_ID)(?<!_NAME)(?<!_URL)(?<!_PATH)(?<!_FILE)(?<!_TYPE)(?<!_FIELD)(?<!_HEADER)"
_SECRET_NAME = (
    r"[A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PWD|PASS|CREDENTIALS?|AUTH)[A-Za-z0-9_]*" + _NOT_THE_SECRET
)
# Values that name a secret rather than hold one.
PLACEHOLDER = re.compile(
    r"(?i)^(?:true|false|null|none|nil|undefined|changeme|change_me|secret|password|example|test|dummy|x+|\*+|"
    r"<[^>]*>|your[_-].*|\$.*|%.*%|\{.*\}|https?://.*"
    # Written to be seen, not used (gitleaks' own false-positive examples): `hf_xxxxxxxx`, `pnu_XXXX`, `ops_…`,
    # `glc_1111111111`, `sk-ant-api03-abc123xyz-…`.
    r"|.*(?:x{6}|\*{4}|#{4}|\.\.\.|…|abc123xyz).*|.*(.)\1{9}.*|.*example)$"
)
_PLACEHOLDERS = (Allow(regexes=(PLACEHOLDER,)),)
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
    if PLACEHOLDER.match(value) or _CODE_VALUE.match(value) or _VERSION.match(value):
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
GENERIC_WORDS = frozenset(
    {"access", "api", "auth", "key", "credential", "creds", "passwd", "password", "secret", "token", "live", "test"}
)


@cache
def _vendor_keywords() -> ahocorasick.Automaton:
    """The keywords of the rules that name a vendor's format (gitleaks' but its generic rule, the prefixed
    tokens), 4 characters or more (shorter ones occur in random text by chance) and not a generic word: where
    one occurs, that rule knows the format (its length, its checksum, its allowlist) better than a shape does."""
    automaton = ahocorasick.Automaton()
    rules = (*(r for r in gitleaks_rules() if r.name != GENERIC), *PREFIXED_TOKENS)
    for keyword in {k for rule in rules for k in rule.keywords}:
        if len(keyword) >= 4 and keyword.strip("_-.") not in GENERIC_WORDS:
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
    # It starts only where a run of address characters starts (the lookbehind): the same matches, since a start
    # inside the run reaches the same `@` and the same rest, and a match ends before a space; but a long run with
    # no `@` (a hash, base64) is read once, not once from each of its characters (a quarter of the heavy history's
    # redaction time went there).
    Rule(
        "email-password",
        re.compile(
            r"(?<![\w.+\-])[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+[ \t]*(?:[/|,:]|(?i:pass(?:word)?:?)|[ \t])[ \t]*"
            r"(?P<secret>(?=[^\s'\"<>]*[A-Za-z])(?=[^\s'\"<>]*[\d!#$%&*?^~])[^\s'\"<>@/]{6,64}?)[.,;)]?(?=\s|$)"
        ),
        ("@",),
        allow=_NOT_A_PASSWORD,
    ),
    # Last: any token that looks machine-made, wherever it stands.
    Rule("machine-token", re.compile(shapes.TOKEN), (), check=lambda m: _machine_token(m), in_runs=20),
)
