"""Secrets in the forms real sessions hold them (issue 27's probe): tokens whose prefix names them, in six
contexts with no secret-named variable next to them, and contextual forms (URL query keys, `.netrc`, an
environment lookup's literal fallback…); the text around each stays byte for byte."""

from __future__ import annotations

import json
import random
import string

import pytest

from memory_pipeline.sessions.redact import Redactor

_RANDOM = random.Random(27)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _draw(n: int, chars: str = ALNUM) -> str:
    return "".join(_RANDOM.choice(chars) for _ in range(n))


# Made up here at the vendors' documented shapes (never real credentials).
TOKENS = {
    "aws-session-token": "IQoJb3JpZ2luX2VjE" + _draw(180),
    "dockerhub-pat": "dckr_pat_" + _draw(27),
    "bitbucket-app-password": "ATBB" + _draw(32),
    "discord-bot-token": "MTE" + _draw(23) + "." + _draw(6) + "." + _draw(38),
    "mailgun-key": "key-" + _draw(32, HEX),
    "stripe-webhook-secret": "whsec_" + _draw(32),
    "braintree-token": "access_token$production$" + _draw(16, HEX) + "$" + _draw(32, HEX),
    "tavily-key": "tvly-dev-" + _draw(32),
    "groq-key": "gsk_" + _draw(52),
    "replicate-token": "r8_" + _draw(37),
    "xai-key": "xai-" + _draw(80),
    "newrelic-user-key": "NRAK-" + _draw(27, string.ascii_uppercase + string.digits),
    "atlassian-token": "ATATT3xFfGF0" + _draw(180),
    "doppler-token": "dp.st." + _draw(43, string.ascii_lowercase + string.digits),
    "google-client-secret": "GOCSPX-" + _draw(28),
    "google-oauth-token": "ya29." + _draw(150),
    "supabase-token": "sbp_" + _draw(40, HEX),
    "mapbox-secret-token": "sk.eyJ1Ijoi" + _draw(40) + "." + _draw(22),
}
CONTEXTS = {
    "prose": "I rotated it, the new one is {t} and it works now.",
    "thinking": "The user pasted {t}; I should pass it to the client.",
    "shell": "curl -s https://api.example.com/v1/items -d 'value={t}' | jq .",
    "printenv": "HOME=/root\nUPSTREAM={t}\nLOG_LEVEL=info\nPORT=8080",
    "k8s": '        - name: UPSTREAM\n          value: "{t}"\n        - name: REGION',
    "tool arguments": json.dumps({"command": "deploy", "value": "{t}", "region": "eu-west-1"}),
}


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_a_prefixed_token_is_masked_in_every_context_and_nothing_else_changes(kind: str, context: str) -> None:
    token = TOKENS[kind]
    text = CONTEXTS[context].replace("{t}", token)
    masked = Redactor().redact(text)
    assert token not in masked and token[8:24] not in masked
    before, after = text.split(token)
    assert masked.startswith(before) and masked.endswith(after)  # only the token's characters are replaced
    assert masked.count("\n") == text.count("\n")


CONTEXTUAL = [
    ("redis://:s3cr3tPassw0rd@cache.internal:6379/0", "s3cr3tPassw0rd"),
    ("GET https://api.example.com/data?api_key=" + (k := _draw(32)) + "&format=json", k),
    ("http://api.openweathermap.org/data/2.5/weather?q=Hanoi&appid=" + (k := _draw(32, HEX)), k),
    ("https://api.telegram.org/bot123456789:AA" + (k := _draw(33)) + "/sendMessage", k),
    ('key = os.getenv("OPENWEATHER") or "' + (k := _draw(32, HEX)) + '"', k),
    ('const key = process.env.MAPS_KEY ?? "' + (k := _draw(39)) + '";', k),
    ("Authorization: SSWS 00" + (k := _draw(40)), k),
    ("machine api.heroku.com\n  login me@example.com\n  password " + (k := _draw(36, HEX)), k),
    ("mysql -u root -p'Tr0ub4dor&3x' shop < dump.sql", "Tr0ub4dor&3x"),
    ('server.login("me@gmail.com", "abcdwxyzqrstuvwk")', "abcdwxyzqrstuvwk"),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIQDk" + (k := _draw(40)) + "=\nPrivate-MAC: 00", k),
    ("sentry_sdk.init(dsn='https://" + (k := _draw(32, HEX)) + "@o12345.ingest.us.sentry.io/12345')", k),
]


@pytest.mark.parametrize(("text", "secret"), CONTEXTUAL)
def test_secrets_known_by_where_they_stand_are_masked(text: str, secret: str) -> None:
    masked = Redactor().redact(text)
    assert secret not in masked and "[REDACTED:" in masked
    assert masked.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    "text",
    [
        "Use a key-value store for the sessions; the key-based lookup is O(1).",
        "GET /api/items?page=2&sort=created_at_desc&key=created_at",
        "curl 'https://api.example.com/data?api_key=YOUR_API_KEY&format=json'",
        "fetch(`https://maps.example.com/tiles?token=${token}`)",
        "mysql -u root -p shop < dump.sql",
        'port = os.getenv("PORT") or "8080"',
        'const base = process.env.API_URL ?? "http://localhost:3000/api/v1";',
        "machine learning is the subject of the talk",
        "server.login(user, password)",
        "The sk.eyJ prefix marks a Mapbox secret token; pk.eyJ is a public one.",
    ],
)
def test_look_alikes_stay_as_they_were(text: str) -> None:
    assert Redactor().redact(text) == text
