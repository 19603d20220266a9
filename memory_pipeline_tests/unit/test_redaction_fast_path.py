"""The redactor's fast path (`redact`: each rule read only where it can match) gives the reference's output
(`redact_reference`: every rule on the whole text) byte for byte; `bench redaction_speed` checks every text of
every corpus, this a sample of each. And the regex reading it rests on (`sessions/reach.py`)."""

from __future__ import annotations

import random
import re
import string

import pytest

from memory_pipeline.sessions import shapes
from memory_pipeline.sessions.cover import Cover, _merge
from memory_pipeline.sessions.reach import blank_reach, holds_keyword, lead, line_reach
from memory_pipeline.sessions.redact import Redactor
from testkit.corpora.redaction_texts import texts


def test_fast_path_output_is_the_reference_output_on_a_sample_of_every_corpus() -> None:
    redactor = Redactor()
    seen: dict[str, int] = {}
    differ = []
    for corpus, text in texts(step=25):
        seen[corpus] = seen.get(corpus, 0) + 1
        if redactor.redact(text) != redactor.redact_reference(text):
            differ.append((corpus, text[:120]))
    assert not differ
    assert {"gitleaks/prose", "heldout/standalone in prose", "real lines", "real line blocks"} <= set(seen)
    assert any(c.startswith("sessions/") for c in seen)


def test_a_wrapped_token_is_masked_alike_on_both_paths() -> None:
    rng = random.Random(5)
    token = "figd_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(40))
    text = "log line\n" * 50 + f"UPSTREAM={token[:24]}\n  {token[24:]}\nLOG_LEVEL=info\n" + "done\n" * 50
    redactor = Redactor()
    assert redactor.redact(text) == redactor.redact_reference(text)
    assert token[5:17] not in redactor.redact(text)


@pytest.mark.parametrize(
    ("pattern", "reach"),
    [
        (r"key=\w+", 0),
        (r"key\s{0,3}=\S+", 3),
        (r"key\s*=", None),
        (r"(?s)key.{0,5}", 5),
        (r"key[^\n]*(?=\s)", 1),
        (r"(?<=\s)key", 0),
        (r"[\s\S]*?", None),
    ],
)
def test_line_reach_counts_the_line_breaks_a_match_or_its_lookahead_can_hold(pattern: str, reach: int | None) -> None:
    assert line_reach(re.compile(pattern)) == reach


@pytest.mark.parametrize(
    ("pattern", "keywords", "holds"),
    [
        (
            r"(?i)[\w.-]{0,50}?(?:access|cred(?:s|ential)|passw(?:or)?d)=\w+",
            ("access", "creds", "credential", "passwd", "password"),
            True,
        ),  # noqa: E501
        (r"\b(?:sgp_[a-f0-9]{40}|[a-f0-9]{40})\b", ("sgp_", "sourcegraph"), False),
        (r"[Aa]pi_key=\w+", ("api",), True),
        (r"(?:tok)?en=\w+", ("token",), False),
        (r"key=\w+", (), False),
    ],
)
def test_holds_keyword_only_when_every_match_holds_one(pattern: str, keywords: tuple[str, ...], holds: bool) -> None:
    assert holds_keyword(re.compile(pattern), keywords) is holds


@pytest.mark.parametrize(
    ("pattern", "reach"),
    [
        (r"key\s*=\s*'\w+'", 2),  # a run of whitespace: blank lines, then one line at most
        (r"key[ \t\n]+=", 1),
        (r"key(?:\r?\n)+=", 1),
        (r"key\s{0,3}=\S+", 1),
        (r"key[^\n]*(?=\s)", 1),
        (r"(?s)key.*", None),  # any character: no line is out of reach
        (r"key[\s\S]*?=", None),
        (r"key(?:\s*x)*", None),  # whitespace between other characters, repeated without bound
    ],
)
def test_blank_reach_counts_a_run_of_whitespace_as_one_line(pattern: str, reach: int | None) -> None:
    assert blank_reach(re.compile(pattern)) == reach


@pytest.mark.parametrize(
    ("pattern", "keywords", "width"),
    [
        (r"(?i)[\w.-]{0,50}?(?:access|auth|passw(?:or)?d|key)(?:[ \t\w.-]{0,20})=(\w{10,})", ("access", "auth",
         "key", "passwd", "password"), 50),
        (r"[\w.-]{0,10}(?:\bkey)=\w+", ("key",), 10),
        (r"[\w.-]{0,50}?x?key=\w+", ("key",), None),  # the keyword does not open what follows the run
        (r"[\w.-]*key=\w+", ("key",), None),  # a run without bound
        (r"[\s\w]{0,5}key=\w+", ("key",), None),  # a run that can cross a line
        (r"\bkey=\w+", ("key",), None),
    ],
)  # fmt: skip
def test_lead_finds_the_run_every_match_starts_in(pattern: str, keywords: tuple[str, ...], width: int | None) -> None:
    found = lead(re.compile(pattern), keywords)
    assert (found[0] if found else None) == width


def _long_output(rng: random.Random, secrets: list[str]) -> str:
    """Tool output with keywords on most lines, blank lines between names and values, and a few secrets."""
    words = ["api_key", "token", "auth", "password", "x.secret", "access", "keyboard", "monkey", "passwd"]
    lines = []
    for i in range(3000):
        word = rng.choice(words)
        kind = i % 7
        if kind == 0:
            lines += [f"{word}", "", "   ", f'  = "{rng.choice(secrets)}"']
        elif kind == 1:
            lines.append(f"config.{word}={rng.choice(secrets)} # {word}")
        elif kind == 2:
            lines.append(f'{word}: "{rng.choice(secrets)}",')
        else:
            lines.append(f"log {i}: {word} looked up in {rng.getrandbits(40):x}")
    return "\n".join(lines)


def test_fast_path_is_the_reference_on_long_output_with_blank_lines_and_keywords_everywhere() -> None:
    rng = random.Random(11)
    alphabet = string.ascii_letters + string.digits
    secrets = ["".join(rng.choice(alphabet) for _ in range(n)) for n in (12, 24, 40)] + ["changeme", "x"]
    redactor = Redactor()
    for _ in range(3):
        text = _long_output(rng, secrets)
        masked = redactor.redact(text)
        assert masked == redactor.redact_reference(text)
        assert masked != text  # the secrets after a blank line are masked too


def test_the_cover_joins_spans_as_merge_does_overlapping_not_touching() -> None:
    """`Cover` holds the stretches `_merge` makes of the spans: a span inside one is skipped unchecked, so a
    stretch it made too wide (joining spans that only touch) would lose a secret's own mask."""
    rng = random.Random(7)
    for _ in range(2000):
        cover, spans = Cover(), []
        for _ in range(rng.randint(1, 8)):
            start = rng.randint(0, 40)
            span = (start, start + rng.randint(1, 10))
            cover.add(span)
            spans.append((*span, "r"))
        stretches = [(s, e) for s, e, _ in _merge(spans)]
        assert list(zip(cover.starts, cover.ends, strict=True)) == stretches
        probe = (rng.randint(0, 45), 0)
        probe = (probe[0], probe[0] + rng.randint(1, 8))
        assert cover.holds(probe) == any(s <= probe[0] and probe[1] <= e for s, e in stretches)


def test_a_token_found_again_by_a_later_rule_is_masked_once_under_the_first_rule_s_name() -> None:
    """A provider's token the machine-token rule matches again is skipped (inside what the first rule masked):
    the output names the provider's rule, as the reference does."""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
    text = f"export GITHUB_TOKEN={token}\n"
    redactor = Redactor()
    assert redactor.redact(text) == redactor.redact_reference(text)
    assert "[REDACTED:github-pat]" in redactor.redact(text)


def test_the_shape_tests_ascii_shortcuts_agree_with_the_general_path() -> None:
    rng = random.Random(3)
    alphabet = string.ascii_letters + string.digits + "_-+/@=. é"
    for _ in range(5000):
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        pairs = zip(word, word[1:], strict=False)
        expected = sum(shapes._class(a) != shapes._class(b) for a, b in pairs) / (len(word) - 1) if len(word) > 1 else 0
        assert shapes.class_changes(word) == expected
