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

What looks random and is no secret stays: identifiers (`SN_id_Gost28147_89_None_KeyMeshing`,
`mv_ValidateRFC4281CodecId`: most of their letters are pronounceable words set apart by case or separators,
where a random body's letters fall into short unpronounceable runs), blobs longer than any credential (a
signature, a ciphertext), digests after their algorithm's name (`sha512-…` integrity, a
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
from collections.abc import Callable
from functools import lru_cache

# A token: letters, digits and what base64 and vendors put in them, `=` padding at its end; no dot (sentence
# ends, versions, hosts). After a `=` it may start: `UPSTREAM=<token>`.
TOKEN = r"(?<![\w\-+/@.%])[A-Za-z0-9][A-Za-z0-9_\-+/@]{19,}={0,2}(?![\w\-+/=@])"
# A vendor's prefix is a short word, perhaps with a digit or two after it (`figd_`, `da2-`, `CFPAT-`), never a
# random run (`Am4cx48a3q_`) or a letter alone (`A-`, `A1-`).
_PREFIX = re.compile(r"^(?=[A-Za-z0-9]{2,12}[_\-])[A-Za-z]{2,}\d{0,2}[_\-]")
_DIGEST = re.compile(r"(?i)^(?:sha\d*|md5|blake2[bs]?|xxh\d*|crc32|sri)[_\-:]")
_UUID = re.compile(r"^[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
_SEPARATORS = re.compile(r"[_\-]")

MIN_BODY, MIN_BARE = 16, 32
# Longer than any credential format without a prefix (the held-out formats' longest is 100): a signature, a
# ciphertext or an encoded blob (a 2048-bit RSA signature is 342 base64 characters).
MAX_BARE = 256
MIN_ENTROPY_BARE = 4.0
# Without a prefix, upper and lower case each make at least this share (random base62 holds ~42% of each; a
# lower-case body with one capital, `A_6gx9vp6mc5…`, or a file name with one word, is no random run of three).
MIN_CASE_SHARE = 0.1
MIN_CHANGES = 0.3  # share of consecutive characters that change class
# After a prefix, (entropy, class changes) at least one of: a short hex body changes class often but has few
# symbols (3.0 bits); a body of lower case and digits changes class less (~0.25: digits are 10 of 36
# characters) but has more symbols. Identifiers and words with digits change class on under 0.15.
PREFIXED_RANDOM = ((3.0, MIN_CHANGES), (3.5, 0.2))


def _random_body(bits: float, changes: float) -> bool:
    return any(bits >= b and changes >= c for b, c in PREFIXED_RANDOM)


def _share(text: str, test: Callable[[str], bool]) -> float:
    return sum(map(test, text)) / len(text)


def entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


def _class(ch: str) -> int:
    return 0 if ch.isdigit() else 1 if ch.isupper() else 2 if ch.islower() else 3


# ASCII characters by class, as `_class` sorts them (0 digit, 1 upper, 2 lower, 3 other): a token's classes as
# one string, its class changes counted as runs by a regex, where a loop over pairs was most of this test's time.
_ASCII_CLASS = str.maketrans({chr(c): "0123"[_class(chr(c))] for c in range(128)})
_CLASS_RUN = re.compile(r"(.)\1*")


def class_changes(text: str) -> float:
    """The share of consecutive characters of different classes (upper, lower, digit, other)."""
    if len(text) < 2:
        return 0.0
    if text.isascii():
        return (sum(1 for _ in _CLASS_RUN.finditer(text.translate(_ASCII_CLASS))) - 1) / (len(text) - 1)
    return sum(_class(a) != _class(b) for a, b in zip(text, text[1:], strict=False)) / (len(text) - 1)


# A name's words: camelCase humps, acronyms before a hump (`RFCCodec` is RFC, Codec), digit runs.
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_VOWELS = frozenset("aeiouyAEIOUY")
_CONSONANTS4 = re.compile(r"[^aeiouyAEIOUY]{4}")  # four in a row: no word
# An identifier has at least this share of its letters in pronounceable words: on the held-out corpus's tuning
# half random tokens reach 0.55 at most (a few words in their prefix), gitleaks' identifier examples 0.65-0.85.
MIN_WORD_SHARE = 0.6


def _pronounceable(word: str) -> bool:
    """A word of 3+ letters that reads as one: a fair share of vowels, no run of 4 consonants."""
    if len(word) < 3:
        return False
    vowels = sum(map(_VOWELS.__contains__, word))
    return 0.2 <= vowels / len(word) <= 0.7 and not _CONSONANTS4.search(word)


def identifier(token: str) -> bool:
    """Whether `token` reads as a name people wrote (`desktop-rhf_SponsoredProductsRemoteRHFSearch`): most of its
    letters are in pronounceable words. A word counts when case sets it apart (a capitalised hump) or it is a
    whole separated part: inside a part of lower case and digits, runs of letters are random, not words."""
    letters = sum(c.isalpha() for c in token)
    if not letters:
        return False
    in_words = 0
    for part in _SEPARATORS.split(token):
        if part.isalpha():
            words = _WORDS.findall(part)
        else:  # `Gost28147`: only humps count; `7to4tlglg8fmpz` has letter runs that are no words
            words = [w for w in _WORDS.findall(part) if w[0].isupper() and w[1:].islower() and len(w) > 1]
        in_words += sum(len(w) for w in words if w.isalpha() and _pronounceable(w))
    return in_words / letters >= MIN_WORD_SHARE


# The same token comes back many times in one history (a request id in every log line, a key pasted again, a
# hash in a lockfile read twice), and this test is the dearest of the redactor's per candidate: its answers are
# kept (a pure function of the token; bounded). bench redaction_speed empties it before each pass.
@lru_cache(maxsize=16384)
def machine_made(token: str) -> bool:
    """Whether `token` (a TOKEN match) looks minted by a machine: a vendor-like prefix and a long random body,
    or a long random run of all three character classes; never an identifier."""
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
            and not identifier(token)  # last: the dearest test, on the few tokens that pass the others
        )
    if "/" in token or "=" in token.rstrip("="):  # a path, a `name=value`: base64 pads only at its end
        return False
    core = _SEPARATORS.sub("", token)
    return (
        MIN_BARE <= len(core) <= MAX_BARE
        and any(c.isdigit() for c in core)
        and _share(core, str.isupper) >= MIN_CASE_SHARE
        and _share(core, str.islower) >= MIN_CASE_SHARE
        and entropy(core) >= MIN_ENTROPY_BARE
        and class_changes(core) >= MIN_CHANGES
        and not identifier(token)
    )


# Parts of a name that make it a secret's name, as data: the old fixed list's words and what it missed.
NAME_PARTS = (
    "password", "passwd", "passphrase", "pwd", "pass", "secret", "secrets", "token", "key", "apikey", "creds",
    "credential", "credentials", "auth", "pat", "webhook", "hook", "dsn", "signing", "private", "conn", "connstr",
    "cookie",
)  # fmt: skip
# Parts that say a value is meant to be seen or is no credential, whatever else the name holds: a public key or
# token (`public_key`, `publicToken`, `NEXT_PUBLIC_…`), an anti-forgery token a page carries (`csrf-token`,
# `authenticity_token`), a signature or a nonce (outputs of a secret, not the secret).
PUBLIC_PARTS = frozenset({"public", "publishable", "csrf", "xsrf", "authenticity", "signature", "nonce"})
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
# What may follow a name's secret part and leave it naming the secret (`SECRET_KEY_BASE`, `API_TOKEN_PROD`):
# any other last part names something of the secret's (`key_down_event` is an event).
QUALIFIERS = frozenset((
    "base", "value", "prod", "production", "dev", "staging", "test", "live", "sandbox", "local", "b64", "base64",
    "raw", "hex", "encoded", "v1", "v2", "v3", "new", "old", "primary", "secondary", "main", "default",
))  # fmt: skip


def name_parts(name: str) -> list[str]:
    """A name's parts, lower case: split on `_`, `.`, `-` and camelCase humps (`publicToken`: public, token)."""
    return [w.lower() for p in _NAME_SPLIT.split(name) if p for w in (_WORDS.findall(p) or [p])]


def secret_name(name: str) -> bool:
    """Whether `name` names a secret by its parts (`AZURE_DEVOPS_EXT_PAT`, `zapier_webhook_url`, `Secret`)."""
    parts = [p.lower() for p in _NAME_SPLIT.split(name) if p]
    if not parts or not any(p in NAME_PARTS for p in parts) or PUBLIC_PARTS.intersection(name_parts(name)):
        return False
    last_secret = max(i for i, p in enumerate(parts) if p in NAME_PARTS)
    trailing = parts[last_secret + 1 :]
    if trailing and trailing[-1] in NOT_SECRET_LAST:  # `_URL`, `_ID`…: decided below
        trailing = trailing[:-1]
    if any(p not in QUALIFIERS and not p.isdigit() for p in trailing):
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
