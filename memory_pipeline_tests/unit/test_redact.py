"""Secret masking: each built-in rule on a planted secret, no false alarm on ordinary text, extensibility."""

from __future__ import annotations

from collections import Counter

import pytest

from memory_pipeline.sessions.redact import Redactor, Rule

# rule -> (text with a planted secret, the secret itself)
PLANTED = {
    "anthropic-key": (
        "export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    "openai-key": ("# sk-proj-4f9aB7cD1eF3gH5iJ7kL9mN1oP3qR5sT7u", "4f9aB7cD1eF3gH5iJ7kL9mN1oP3qR5sT7u"),
    "stripe-key": ("stripe.api_key = sk_live_51HxYzAbCdEfGhIjKlMnOpQr", "51HxYzAbCdEfGhIjKlMnOpQr"),
    "github-token": (
        "git clone https://x:ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789@github.com/a/b",
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    "slack-token": ("SLACK=xoxb-1234567890-abcdefghijkl", "1234567890-abcdefghijkl"),
    "aws-access-key-id": ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "google-api-key": ("key=AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    "jwt": (
        "cookie: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    "bearer-token": (
        "curl -H 'Authorization: Bearer abcdef0123456789abcdef0123456789'",
        "abcdef0123456789abcdef0123456789",
    ),
    "url-password": ("DATABASE_URL=postgres://admin:hunter2secret@db.internal:5432/app", "hunter2secret"),
    "private-key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA7",
    ),
    "secret-assignment": ("DB_PASSWORD=correct-horse-battery-staple", "correct-horse-battery-staple"),
}


@pytest.mark.parametrize("rule", sorted(PLANTED))
def test_each_rule_masks_its_secret(rule: str) -> None:
    text, secret = PLANTED[rule]
    counts: Counter[str] = Counter()
    masked = Redactor().redact(text, counts)
    assert secret not in masked
    assert "[REDACTED:" in masked and sum(counts.values()) >= 1


def test_ordinary_text_is_untouched() -> None:
    text = (
        "Run `pytest -x` before committing. The token budget is 4096. See https://example.com/docs "
        "and the function get_api_key() in auth.py; password reset flow lives in views.py."
    )
    counts: Counter[str] = Counter()
    assert Redactor().redact(text, counts) == text and not counts


def test_keeps_context_around_assigned_secrets() -> None:
    assert Redactor().redact("DB_PASSWORD=correct-horse-battery-staple") == "DB_PASSWORD=[REDACTED:secret-assignment]"
    assert (
        Redactor().redact("postgres://admin:hunter2secret@db:5432")
        == "postgres://admin:[REDACTED:url-password]@db:5432"
    )


def test_masking_twice_changes_nothing() -> None:
    redactor = Redactor()
    once = redactor.redact(PLANTED["openai-key"][0] + " " + PLANTED["secret-assignment"][0])
    counts: Counter[str] = Counter()
    assert redactor.redact(once, counts) == once and not counts


def test_rule_set_is_extensible() -> None:
    text = "internal token corp-0123456789abcdef0123456789abcdef here"
    assert Redactor().redact(text) == text
    custom = Redactor([Rule.of("corp-token", r"corp-[0-9a-f]{32}")])
    assert custom.redact(text) == "internal token [REDACTED:corp-token] here"
    assert Redactor.with_patterns([r"corp-[0-9a-f]{32}"]).redact(text) == "internal token [REDACTED:custom-1] here"
