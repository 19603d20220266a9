"""Secret masking: each built-in rule on a planted secret, no false alarm on ordinary text, extensibility."""

from __future__ import annotations

import re
import warnings
from collections import Counter

import pytest

from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.secret_rule import Rule

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
    "aws-access-key-id": ("aws_access_key_id = AKIAZ7Y6X5W4V3U2T1S0", "AKIAZ7Y6X5W4V3U2T1S0"),
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
    assert Redactor().redact("DB_PASSWORD=correct-horse-battery-staple") == "DB_PASSWORD=[REDACTED:env-assignment]"
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


# What leaked before gitleaks' rules and the contextual ones (issue 11), each with the secret that must go.
LEAKED = [
    ("Slack token in prose", "the bot uses xoxb-2244668800-1357924680-ZyXwVuTsRqPoNmLkJiHgFeDc now",
     "ZyXwVuTsRqPoNmLkJiHgFeDc"),
    ("bare AWS secret key", "my secret is Kq3Zt8PmW2xYv7Nc5Rb1Lh9Jf4Dg6Ts0Ua2Ee8Oi",
     "Kq3Zt8PmW2xYv7Nc5Rb1Lh9Jf4Dg6Ts0Ua2Ee8Oi"),
    ("aws configure", "aws configure set aws_secret_access_key Kq3Zt8PmW2xYv7Nc5Rb1Lh9Jf4Dg6Ts0Ua2Ee8Oi",
     "Kq3Zt8PmW2xYv7Nc5Rb1Lh9Jf4Dg6Ts0Ua2Ee8Oi"),
    ("env assignment", "MY_SERVICE_TOKEN=9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee", "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee"),
    ("Slack webhook", "curl -X POST https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/q8w7e6r5t4y3u2i1o0p9a8s7",
     "q8w7e6r5t4y3u2i1o0p9a8s7"),
    ("token over two lines", "API_TOKEN=f3a9c2e8b1d7\n4e6a0c9b2d8f5e1a", "4e6a0c9b2d8f5e1a"),
    ("wrapped sk-proj key", "export OPENAI_API_KEY=sk-proj-Zq8XwV2bN4mK6jH8gF0dS2\naP4oI6uY8tR0eWvB3nM5kL",
     "aP4oI6uY8tR0eWvB3nM5kL"),
    ("env lookup default", 'key = os.environ.get("X_API_KEY", "a8Fk2LmQ9zR4tW7yB1nC5vX3")', "a8Fk2LmQ9zR4tW7yB1nC5vX3"),
    ("CLI flag", "mysql -u root --password=Sup3rS3cret! app", "Sup3rS3cret!"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "secret"), [c[1:] for c in LEAKED], ids=[c[0] for c in LEAKED])
def test_what_leaked_before_is_masked(text: str, secret: str) -> None:
    masked = Redactor().redact(text)
    assert secret not in masked and "[REDACTED:" in masked
    assert masked.count("\n") == text.count("\n")  # lines stay lines


@pytest.mark.parametrize(
    "code",
    [
        "const apiKey = process.env.API_KEY || '';",
        'api_key = os.environ.get("SEARCH_API_KEY")',
        "password = forms.CharField(widget=forms.PasswordInput)",
        "token_count = len(tokenizer.encode(text))",
        'sha = "3f786850e387550fdab836ed7e6dc881de23001b"',
        'id = "123e4567-e89b-12d3-a456-426614174000"',
        "SECRET_KEY = env('DJANGO_SECRET_KEY')",
        "DB_PASSWORD=${DB_PASSWORD}",
    ],
)
def test_code_around_secrets_stays_as_it_was(code: str) -> None:
    counts: Counter[str] = Counter()
    assert Redactor().redact(code, counts) == code and not counts


def test_only_the_value_is_masked_never_the_call_around_it() -> None:
    masked = Redactor().redact('key = os.environ.get("X_API_KEY", "a8Fk2LmQ9zR4tW7yB1nC5vX3")')
    assert masked.startswith('key = os.environ.get("X_API_KEY", "[REDACTED:') and masked.endswith('")')


def test_go_syntax_of_the_vendored_rules_compiles_in_python() -> None:
    import tomllib

    from memory_pipeline.sessions.secret_rule import GITLEAKS_RULES, gitleaks_rules, go_regex

    specs = [s for s in tomllib.loads(GITLEAKS_RULES.read_text())["rules"] if s.get("regex")]
    assert len(gitleaks_rules()) == len(specs) >= 200
    # RE2: a mid-pattern flag holds to the end of its group, over later alternatives too, not around them.
    assert go_regex(r"ab(?i)cd|ef\z") == r"ab(?i:cd)|(?i:ef\Z)"
    assert go_regex(r"(x(?i)y)z") == r"(x(?i:y))z"
    curl = re.compile(go_regex(r"""-H (?:"(?i)(?:Authorization: (\w{8,}))"|'(?i)(?:Authorization: (\w{8,}))')"""))
    assert curl.search("curl -H 'authorization: 5eb4223e5008'")  # the second alternative, not `"` then it
    assert go_regex(r"\b(pat[[:alnum:]]{14})") == r"\b(pat[A-Za-z0-9]{14})"  # POSIX classes spelt out
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # `[[:alnum:]]` read as a nested set would warn, and match wrongly
        for spec in specs:
            re.compile(go_regex(spec["regex"]) + "(?#fresh)")  # past re's cache


def test_no_planted_secret_survives_parsing_in_any_field(tmp_path) -> None:  # noqa: ANN001
    """50 kinds in each of 12 fields (testkit/corpora/secrets_corpus.py), through the parser: no 12 characters of any
    secret's random part in any row, tool-call arguments and names and labels included."""
    from memory_pipeline.sessions.messages import session_messages, to_frame
    from memory_pipeline.sessions.parse import parse_session
    from testkit.corpora.secrets_corpus import FIELDS, kinds, leaks, write_sessions

    planted = kinds()
    write_sessions(tmp_path, planted)
    paths = sorted(tmp_path.rglob("*.jsonl"))
    assert len(paths) == len(FIELDS)
    for path in paths:
        rows, counts = session_messages(parse_session(path), Redactor(), "d")
        assert leaks(to_frame(rows).write_ndjson(), planted) == set(), path.name
        assert sum(counts.values()) >= len(planted)


# Issue 31: what real histories held in clear, each with the secret that must go.
TYPED = [
    ("spaced app password", 'SMTP_PASSWORD="wxyz abcd qrst uvwk"', "wxyz abcd qrst uvwk"),
    ("spaced, single quotes", "export MAIL_APP_PASSWORD='abcd efgh ijkl mnop'", "abcd efgh ijkl mnop"),
    ("English chat", "ok the password is Hunter2024! for the admin panel", "Hunter2024!"),
    ("pw:", "login with pw: s3cr3t-Pa55 please", "s3cr3t-Pa55"),
    ("Vietnamese chat", "tài khoản admin, mật khẩu là Abc@12345 nhé", "Abc@12345"),
    ("Vietnamese without accents", "mat khau: Zx9!kQ2w", "Zx9!kQ2w"),
    ("Chinese chat", "服务器密码是abc12345记得改", "abc12345"),
    ("Chinese, full-width colon", "数据库密码：Qw3rty!9，别外传", "Qw3rty!9"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "secret"), [c[1:] for c in TYPED], ids=[c[0] for c in TYPED])
def test_passwords_people_type_and_spaced_values_are_masked(text: str, secret: str) -> None:
    masked = Redactor().redact(text)
    assert secret not in masked and "[REDACTED:" in masked
    # Only the value goes: the words around it stay (the Chinese after the password included).
    before, after = text.split(secret)
    assert masked.startswith(before) and masked.endswith(after)


@pytest.mark.parametrize(
    "text",
    [
        "the password is required.",
        "Password is incorrect, try again",
        "your password was reset",
        "mật khẩu là đúng rồi",
        "pwd\n/home/user/project",
        'PASSWORD_PROMPT = "Enter your password"',
        'API_KEY = os.environ.get("API_KEY")',
        'ROOT_PASSWORD_FILE = Path(__file__).parent / "pw.txt"',
        "TOKEN = settings.api_token",
        "password = forms.CharField(widget=forms.PasswordInput)",
        # From the pi-mono fixture: the working directory, not a password.
        "let pwd = process.cwd();\n\t\t\tpwd = `${start}...${end}`;",
    ],
)
def test_prose_about_passwords_and_code_stay_as_they_were(text: str) -> None:
    counts: Counter[str] = Counter()
    assert Redactor().redact(text, counts) == text and not counts


def test_no_line_without_a_secret_is_erased_around_masked_ones() -> None:
    env = (
        "GITHUB_TOKEN=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\nLOG_LEVEL=info\nPORT=8080\n"
        "OPENAI_API_KEY=sk-proj-Zq8XwV2bN4mK6jH8gF0dS2aP4oI6uY8tR0eWvB3nM5kL\nHOME=/root\n"
        "DATABASE_URL=postgresql://postgres:Sup3rPass@db:5432/app\nFIRST_SUPERUSER=admin@example.com\n"
        "AWS_SECRET_ACCESS_KEY=Kq3Zt8PmW2xYv7Nc5Rb1Lh9Jf4Dg6Ts0Ua2Ee8Oi\nAWS_REGION=eu-west-1\n"
    )
    masked = Redactor().redact(env)
    kept = masked.split("\n")
    for before, after in zip(env.split("\n"), kept, strict=True):
        if "[REDACTED:" not in after:
            assert after == before  # byte for byte
        else:
            assert after.split("=", 1)[0] == before.split("=", 1)[0]  # the name stays
    assert sum("[REDACTED:" in line for line in kept) == 4
    assert "LOG_LEVEL=info" in kept and "PORT=8080" in kept and "AWS_REGION=eu-west-1" in kept
    assert "postgresql://postgres:[REDACTED:url-password]@db:5432/app" in masked


def test_tool_call_arguments_named_as_secrets_and_the_working_directory_are_masked(tmp_path) -> None:  # noqa: ANN001
    import json

    from memory_pipeline.sessions.messages import session_messages, to_frame
    from memory_pipeline.sessions.parse import parse_session

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    header = {
        "type": "session",
        "version": 3,
        "id": "s-args",
        "timestamp": "2026-03-01T10:00:00Z",
        "cwd": f"/home/me/{token}/shop",
    }
    call = {
        "type": "toolCall",
        "id": "c1",
        "name": "http",
        "arguments": {
            "url": "https://api.example.com",
            "headers": {"X-Api-Key": "9f8e7d6c5b4a3921"},
            "body": {"password": "Winter2026!116", "max_tokens": 300, "token_count": "12"},
        },
    }
    entries = [
        header,
        {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-03-01T10:00:01Z",
         "message": {"role": "user", "content": "call the API"}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-03-01T10:00:02Z",
         "message": {"role": "assistant", "content": [call], "stopReason": "toolUse"}},
    ]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    rows, counts = session_messages(parse_session(path), Redactor(), "p")
    frame = to_frame(rows)
    arguments = json.loads(frame.filter(frame["role"] == "assistant")["tool_calls"][0][0]["arguments"])
    assert arguments["headers"]["X-Api-Key"] == "[REDACTED:secret-argument]"
    assert arguments["body"]["password"] == "[REDACTED:secret-argument]"
    assert arguments["body"]["max_tokens"] == 300 and arguments["body"]["token_count"] == "12"  # not secrets
    assert arguments["url"] == "https://api.example.com" and counts["secret-argument"] == 2
    assert set(frame["project"]) == {"/home/me/[REDACTED:github-pat]/shop"}
    from memory_pipeline.sessions.discovery import scan_sessions

    [found], _ = scan_sessions(tmp_path)
    assert found.project == "/home/me/[REDACTED:github-pat]/shop"  # the manifest and the workspace: the same
