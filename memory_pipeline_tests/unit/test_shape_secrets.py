"""Issue 44: credentials no rule names, masked by their shape and their name's parts wherever they stand, and
what only looks random left as it was; a frame preview (Dagster metadata) never holds them."""

from __future__ import annotations

import json
import random
import string
from collections import Counter

import polars as pl
import pytest

from memory_pipeline.assets.metadata import preview
from memory_pipeline.sessions.messages import redact_arguments
from memory_pipeline.sessions.redact import Redactor

_RANDOM = random.Random(44)
B62 = string.ascii_letters + string.digits


def _draw(n: int, chars: str = B62) -> str:
    return "".join(_RANDOM.choice(chars) for _ in range(n))


def _hex(n: int) -> str:
    return _draw(n, "0123456789abcdef")


# The issue's examples, made up here at the vendors' documented shapes (never real credentials).
TOKENS = {
    "figma": "figd_" + _draw(40, B62 + "_-"),
    "contentful": "CFPAT-" + _draw(43),
    "hubspot": f"pat-na1-{_hex(8)}-{_hex(4)}-{_hex(4)}-{_hex(4)}-{_hex(12)}",
    "posthog": "phx_" + _draw(45),
    "nvidia": "nvapi-" + _draw(64, B62 + "_-"),
    "pinecone": "pcsk_" + _draw(6) + "_" + _draw(63),
    "tailscale": "tskey-api-" + _draw(12) + "CNTRL-" + _draw(32),
    "zapier webhook": f"https://hooks.zapier.com/hooks/catch/{_draw(7, string.digits)}/{_draw(7, 'abcdefk0123')}/",
    "slack webhook": f"https://hooks.slack.com/services/T{_draw(10, string.ascii_uppercase)}/B{_draw(10)}/{_draw(24)}",
    "discord webhook": f"https://discord.com/api/webhooks/{_draw(19, string.digits)}/{_draw(68, B62 + '_-')}",
}
CONTEXTS = {
    "prose": "I rotated it, the new one is {t} and it works now.",
    "printenv": "HOME=/root\nUPSTREAM={t}\nLOG_LEVEL=info",
    "k8s value": '        - name: UPSTREAM\n          value: "{t}"\n        - name: REGION',
}


def _secret_part(token: str) -> str:
    return token.rstrip("/").rsplit("/", 1)[-1][-16:] if token.startswith("http") else token[-20:]


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_a_token_no_rule_names_is_masked_by_its_shape_and_the_text_around_stays(kind: str, context: str) -> None:
    token = TOKENS[kind]
    text = CONTEXTS[context].replace("{t}", token)
    masked = Redactor().redact(text)
    assert _secret_part(token) not in masked and "[REDACTED:" in masked
    before, after = text.split(token)
    assert masked.startswith(before) and masked.endswith(after)


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_a_token_under_a_neutral_tool_argument_is_masked(kind: str) -> None:
    arguments = {"command": "deploy", "value": TOKENS[kind], "region": "eu-west-1"}
    out = redact_arguments(arguments, Redactor(), Counter())
    assert _secret_part(TOKENS[kind]) not in json.dumps(out)
    assert out["command"] == "deploy" and out["region"] == "eu-west-1"


PAT = _draw(52, string.ascii_lowercase + string.digits)
NAMED = [
    ("AZURE_DEVOPS_EXT_PAT=" + PAT, PAT),
    ("ZAPIER_WEBHOOK_URL=https://hooks.zapier.com/hooks/catch/1234567/abc9def/", "1234567/abc9def"),
    ("SENTRY_DSN=https://" + (k := _hex(32)) + "@o1.ingest.sentry.io/42", k),
    ('{\n  "gmail": {"app_password": "wxyz abcd qrst uvwk"}\n}', "wxyz abcd qrst uvwk"),
    ('{"content": "{\\"app_password\\": \\"wxyz abcd qrst uvwk\\"}"}', "wxyz abcd qrst uvwk"),
    ("Endpoint=https://acme.azconfig.io;Id=ab12-l0-s0:x;Secret=" + (k := _draw(43)) + "=", k),
    ("my login is jane.doe@gmail.com / Hunter2024! for the staging panel", "Hunter2024!"),
]


@pytest.mark.parametrize(("text", "secret"), NAMED)
def test_names_by_their_parts_json_in_strings_and_typed_passwords_are_masked(text: str, secret: str) -> None:
    masked = Redactor().redact(text)
    assert secret not in masked and "[REDACTED:" in masked
    assert masked.count("\n") == text.count("\n")


def test_json_written_through_a_tool_is_masked_by_its_keys() -> None:
    content = json.dumps({"installed": {"client_id": "web", "app_password": "wxyz abcd qrst uvwk"}}, indent=2)
    out = redact_arguments({"path": "secrets/gmail.json", "content": content}, Redactor(), Counter())
    assert "wxyz abcd qrst uvwk" not in out["content"] and '"client_id": "web"' in out["content"]


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        'request_id = "123e4567-e89b-12d3-a456-426614174000"',
        "[req-3ea4052c-895d-4b64-9e2d-04d64c4d94ab - - - - -] instance claimed",
        '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",'  # noqa: E501
        "image: ghcr.io/acme/api@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "version = 2.31.0-rc.1+build.20240101",
        "/usr/local/lib/python3.11/site-packages/dagster/_core/execution/context_creation_job.py",
        "color: #3f7868; background: #ffffff; border-color: #00ff00aa;",
        "internationalizationConfigurationSettingsForDeployment",
        "const getUserAccountSettingsForTenantId = async (tenantId) => {};",
        "See https://github.com/acme/app/blob/main/docs/getting-started.md#install for the steps.",
        '"cookie-signature": "1.0.6",',
        "token_count = len(tokenizer.encode(text))",
        "KEY_ID=AbCdEf01",
        "the sort key is created_at and the primary key is id",
    ],
)
def test_what_only_looks_random_stays_as_it_was(text: str) -> None:
    counts: Counter[str] = Counter()
    assert Redactor().redact(text, counts) == text and not counts, counts


def test_a_base64_image_in_a_data_uri_is_no_secret() -> None:
    image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    text = f'<img src="data:image/png;base64,{image}">'
    assert Redactor().redact(text) == text


def test_a_frame_preview_never_holds_a_secret_in_the_clear() -> None:
    token = TOKENS["hubspot"]
    frame = pl.DataFrame({"session_id": ["s1", "s2"], "content": [f'{{"content": "{token}"}}', "plain text"]})
    value = preview(frame, ["session_id", "content"])
    cells = [str(v) for record in value.records for v in record.data.values()]
    assert token[:20] not in " ".join(cells) and "[REDACTED:" in " ".join(cells)
    assert "plain text" in cells and "s1" in cells


@pytest.mark.parametrize(
    "text",
    [
        # Identifiers: most letters in pronounceable words set apart by case or separators.
        'pub const SN_id_Gost28147_89_None_KeyMeshing = "id-Gost28147-89-None-KeyMeshing"',
        "static int mv_ValidateRFC4281CodecId(const char *codec);",
        'amazon.de#@#div[data-cel-widget="desktop-rhf_SponsoredProductsRemoteRHFSearchEXPSubsK2ClickPagination"]',
        # A value under a secret-named key that names a thing, with a version-like suffix.
        '"bucket_key": "SalesResults-1.2"',
        # A name whose secret part is followed by what it describes; public and anti-forgery names.
        "key_down_event=Qa=ET59je8cql4A0LE-w97wKbgW2.g",
        'public_key = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
        'publicToken = "9Cnzj4p4WGeKLs1Pt8QuKUpRKfFLfRYC9AIKjbJTWit"',
        # A file's name, a vendor's own prefix its rule rejected (wrong kind), a document id, a Notion page.
        "├── R21A-A-V010SP13RC181024R16900-CN-B_250K-Release-OTA-97B6C6C59241976086FABDC41472150C.bfu",
        "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
        "https://docs.google.com/document/d/1W7KCxOxP-1Fy5EyF2lbJGE2WuKmu5v0suYqoHas1jRM",
        "https://fog-ringer-f42.notion.site/API-BD80F56CDC1441E6BF6011AB6D852875",
    ],
)
def test_identifiers_public_names_and_vendor_formats_stay(text: str) -> None:
    counts: Counter[str] = Counter()
    assert Redactor().redact(text, counts) == text and not counts, counts


def test_a_public_key_block_is_left_and_a_private_one_masked() -> None:
    body = "\n".join(_draw(64, B62 + "+/") for _ in range(4))
    public = f"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{body}\n-----END PGP PUBLIC KEY BLOCK-----"
    assert Redactor().redact(public) == public
    private = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
    assert body.splitlines()[1] not in Redactor().redact(private)


@pytest.mark.parametrize(
    ("token", "machine"),
    [
        ("SN_id_Gost28147_89_None_KeyMeshing", False),
        ("A_6gx9vp6mc5ucifodzj1yzzgs403sr61vtf", False),  # one capital: no random run of three classes
        (_draw(300), False),  # longer than any credential without a prefix: a signature or a blob
        ("figd_" + _draw(40), True),
        (_draw(40), True),
    ],
)
def test_machine_made_tells_random_bodies_from_names_and_blobs(token: str, machine: bool) -> None:
    from memory_pipeline.sessions import shapes

    assert shapes.machine_made(token) is machine
