"""The redactor's fast path (`redact`: each rule read only where it can match) gives the reference's output
(`redact_reference`: every rule on the whole text) byte for byte; `bench redaction_speed` checks every text of
every corpus, this a sample of each. And the regex reading it rests on (`sessions/reach.py`)."""

from __future__ import annotations

import random
import re
import string

import pytest

from memory_pipeline.sessions.reach import holds_keyword, line_reach
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
