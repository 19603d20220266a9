"""Secrets by their shape: what a credential looks like when no rule names its format.

Vendors mint tokens the same way: a short prefix naming the product and kind (`figd_`, `pat-na1-`, `CFPAT-`),
a separator, then a long random body; or the random body alone. Random bodies differ from what people and
programs write by three measurable things, used here together:

- length: a body of at least 16 characters after a prefix, 32 without one (shorter random runs are ids);
- mixed classes: letters and digits both (all three of upper, lower and digits without a prefix), where
  identifiers, words and numbers have one or two;
- randomness: Shannon entropy (3.0 bits a character after a prefix: a 16-character hex body reaches ~3.5;
  4.0 without one: 32 random base62 characters reach ~4.6, camelCase identifiers ~3.5-3.9) and how often
  consecutive characters change class (upper, lower, digit: random base62 changes on ~60% of characters,
  words and identifiers on under 20%).

What looks random and is no secret stays: digests after their algorithm's name (`sha512-…` integrity, a
`sha256:` digest), a UUID after a single word (`req-<uuid>` is a request id; after a two-part prefix, as in
`pat-na1-<uuid>`, it is a vendor's key), hex without a prefix (git SHAs, digests: hex has no upper case, so
the three-class test leaves it), paths (a `/` ends a prefix-less token's candidacy).

Names by their parts: a name (`ZAPIER_WEBHOOK_URL`, `azure_devops_ext_pat`, `Secret`) names a secret when one
of its parts (split on `_`, `.`, `-`) is in NAME_PARTS, unless its last part says it names something else
(`_ID`, `_PATH`, `_COUNT`…; `_URL` only when no part says the URL itself is the secret).
"""

from __future__ import annotations

import math
import re
from collections import Counter

# A token: letters, digits and what base64 and vendors put in them, `=` padding at its end; no dot (sentence
# ends, versions, hosts). After a `=` it may start: `UPSTREAM=<token>`.
TOKEN = r"(?<![\w\-+/@.%])[A-Za-z0-9][A-Za-z0-9_\-+/@]{19,}={0,2}(?![\w\-+/=@])"
_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,11}[_\-]")
_DIGEST = re.compile(r"(?i)^(?:sha\d*|md5|blake2[bs]?|xxh\d*|crc32|sri)[_\-:]")
_UUID = re.compile(r"^[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
_SEPARATORS = re.compile(r"[_\-]")

MIN_BODY, MIN_BARE = 16, 32
MIN_ENTROPY_BARE = 4.0
MIN_CHANGES = 0.3  # share of consecutive characters that change class
# After a prefix, (entropy, class changes) at least one of: a short hex body changes class often but has few
# symbols (3.0 bits); a body of lower case and digits changes class less (~0.25: digits are 10 of 36
# characters) but has more symbols. Identifiers and words with digits change class on under 0.15.
PREFIXED_RANDOM = ((3.0, MIN_CHANGES), (3.5, 0.2))


def _random_body(bits: float, changes: float) -> bool:
    return any(bits >= b and changes >= c for b, c in PREFIXED_RANDOM)


def entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


def _class(ch: str) -> int:
    return 0 if ch.isdigit() else 1 if ch.isupper() else 2 if ch.islower() else 3


def class_changes(text: str) -> float:
    """The share of consecutive characters of different classes (upper, lower, digit, other)."""
    if len(text) < 2:
        return 0.0
    return sum(_class(a) != _class(b) for a, b in zip(text, text[1:], strict=False)) / (len(text) - 1)


def machine_made(token: str) -> bool:
    """Whether `token` (a TOKEN match) looks minted by a machine: a vendor-like prefix and a long random body,
    or a long random run of all three character classes."""
    if _DIGEST.match(token) or _UUID.match(token):
        return False
    prefix = _PREFIX.match(token)
    if prefix:
        body = token[prefix.end() :]
        if _UUID.match(body):
            return False
        core = _SEPARATORS.sub("", body)
        return (
            len(core) >= MIN_BODY
            and any(c.isdigit() for c in core)
            and any(c.isalpha() for c in core)
            and _random_body(entropy(core), class_changes(core))
        )
    if "/" in token or "=" in token.rstrip("="):  # a path, a `name=value`: base64 pads only at its end
        return False
    core = _SEPARATORS.sub("", token)
    return (
        len(core) >= MIN_BARE
        and any(c.isdigit() for c in core)
        and any(c.isupper() for c in core)
        and any(c.islower() for c in core)
        and entropy(core) >= MIN_ENTROPY_BARE
        and class_changes(core) >= MIN_CHANGES
    )


# Parts of a name that make it a secret's name, as data: the old fixed list's words and what it missed.
NAME_PARTS = (
    "password", "passwd", "passphrase", "pwd", "pass", "secret", "secrets", "token", "key", "apikey", "creds",
    "credential", "credentials", "auth", "pat", "webhook", "hook", "dsn", "signing", "private", "conn", "connstr",
    "cookie",
)  # fmt: skip
# Parts whose name's value is the secret even when it is a URL (a webhook's path, a DSN's key).
URL_PARTS = frozenset({"webhook", "hook", "dsn", "conn", "connstr"})
# A last part that names where or what the secret is, not the secret.
NOT_SECRET_LAST = frozenset((
    "id", "ids", "name", "names", "path", "file", "files", "type", "field", "header", "count", "tokens", "length",
    "len", "size", "ttl", "expiry", "expires", "timeout", "prefix", "suffix", "enabled", "enable", "disabled",
    "ref", "arn", "version", "mode", "format", "algorithm", "alg", "max", "min", "limit", "url", "uri",
    "endpoint", "host", "port", "region", "env", "label", "description", "policy", "rotation", "provider",
    "store", "vault",
))  # fmt: skip
_NAME_SPLIT = re.compile(r"[_.\-]")


def secret_name(name: str) -> bool:
    """Whether `name` names a secret by its parts (`AZURE_DEVOPS_EXT_PAT`, `zapier_webhook_url`, `Secret`)."""
    parts = [p.lower() for p in _NAME_SPLIT.split(name) if p]
    if not parts or not any(p in NAME_PARTS for p in parts):
        return False
    url_secret = parts[-1] in {"url", "uri"} and bool(URL_PARTS.intersection(parts))
    return parts[-1] not in NOT_SECRET_LAST or url_secret


def url_secret_name(name: str) -> bool:
    """Whether `name`'s value is a secret even when it is a URL (`SLACK_WEBHOOK_URL`, `SENTRY_DSN`)."""
    return bool(URL_PARTS.intersection(p.lower() for p in _NAME_SPLIT.split(name)))


# The name-part regex for the rules: any name with one of NAME_PARTS delimited as a part, case-insensitive.
NAME = (
    r"(?<![\w.\-])(?P<name>(?:[A-Za-z0-9]+[_.\-])*(?i:"
    + "|".join(sorted(NAME_PARTS, key=len, reverse=True))
    + r")(?:[_.\-][A-Za-z0-9]+)*)(?![\w.\-])"
)
