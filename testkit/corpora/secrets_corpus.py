"""The planted-secrets corpus and the false-positive corpus, made deterministically (no file to go stale).

`KINDS`: 50 kinds of secret, each a realistic random value (`core` is its random part, the bytes that must
never be stored) in the context it turns up in (an export, a CLI flag, a config file, a header, a wrapped
terminal line). `write_sessions` plants every kind in every text field of a pi session: the session name,
a label, the user's message, the assistant's text, thinking and error, a tool call's arguments, a tool
result, a `!command` the user ran, an extension message, a branch summary and a compaction summary.

`ordinary_lines`: 320 lines of code and config that hold no secret but look close (env lookups, config
loaders, test fixtures, hashes, UUIDs, base64 images, digests, lockfile integrity); a redactor must leave
them as they are.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from dataclasses import dataclass
from pathlib import Path

DAY = "2024-09-09"
FIELDS = (
    "session name",
    "label",
    "user message",
    "assistant text",
    "thinking",
    "assistant error",
    "tool call arguments",
    "tool result",
    "user shell command",
    "extension message",
    "branch summary",
    "compaction summary",
)


@dataclass(frozen=True)
class Planted:
    kind: str
    text: str  # the secret in its context, as it appears in a session
    core: str  # its random part: no 12 characters of it may be stored anywhere


def _rand(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def kinds(seed: int = 11) -> list[Planted]:
    rng = random.Random(seed)
    hexa, b64, upper = "0123456789abcdef", string.ascii_letters + string.digits + "+/", string.ascii_uppercase
    r = lambda n, a=string.ascii_letters + string.digits: _rand(rng, n, a)  # noqa: E731
    pem = "\n".join(r(64, b64) for _ in range(6))
    items = []

    def add(kind: str, template: str, core: str) -> None:
        items.append(Planted(kind, template.format(core), core))

    add("openai project key", "export OPENAI_API_KEY=sk-proj-{}", r(20) + "T3BlbkFJ" + r(20))
    add("openai legacy key", "openai.api_key = 'sk-{}'", r(20) + "T3BlbkFJ" + r(20))
    add("anthropic key", "ANTHROPIC_API_KEY=sk-ant-api03-{}AA", r(93, string.ascii_letters + string.digits + "_-"))
    add("github classic token", "git remote set-url origin https://{}@github.com/acme/app.git", "ghp_" + r(36))
    add("github fine-grained token", "GH_TOKEN={}", "github_pat_" + r(22) + "_" + r(59))
    add("github oauth token", "token: {}", "gho_" + r(36))
    add("gitlab token", "curl --header 'PRIVATE-TOKEN: glpat-{}' https://gitlab.com/api/v4/projects", r(20))
    add("slack bot token", "SLACK_BOT_TOKEN=xoxb-{}", f"{r(12, '0123456789')}-{r(13, '0123456789')}-{r(24)}")
    add(
        "slack user token",
        "the old token was xoxp-{} (revoked?)",
        f"{r(12, '0123456789')}-{r(12, '0123456789')}-{r(13, '0123456789')}-{r(32, hexa)}",
    )
    add(
        "slack webhook",
        "curl -X POST -d @msg.json https://hooks.slack.com/services/{}",
        f"T{r(10, upper)}/B{r(10, upper)}/{r(24)}",
    )
    add(
        "discord webhook",
        "WEBHOOK=https://discord.com/api/webhooks/1234567890123456789/{}",
        r(68, string.ascii_letters + string.digits + "_-"),
    )
    add("stripe secret key", 'stripe.api_key = "sk_live_{}"', r(99))
    add("stripe restricted key", "STRIPE_KEY=rk_live_{}", r(99))
    add("aws access key id", "aws_access_key_id = AKIA{}", r(16, upper + "234567"))
    add("aws secret key, bare", "here is the secret you asked for: {}", r(40, b64))
    add("aws configure", "aws configure set aws_secret_access_key {}", r(40, b64))
    add("google api key", 'const key = "AIza{}";', r(35, string.ascii_letters + string.digits + "_-"))
    add("huggingface token", "huggingface-cli login --token hf_{}", r(34))
    add("npm token", "//registry.npmjs.org/:_authToken=npm_{}", r(36))
    add("pypi token", "password = pypi-AgEIcHlwaS5vcmc{}", r(70, string.ascii_letters + string.digits + "_-"))
    add("sendgrid key", "SENDGRID_API_KEY='SG.{}'", f"{r(22)}.{r(43)}")
    add("twilio key", "TWILIO_API_KEY=SK{}", r(32, hexa))
    add("telegram bot token", 'bot = Bot(token="{}")', f"{r(10, '123456789')}:AA{r(33, string.ascii_letters + '_-')}")
    add(
        "jwt",
        "Cookie: session={}",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
        + base64.urlsafe_b64encode(json.dumps({"sub": r(12), "name": r(8)}).encode()).decode().rstrip("=")
        + "."
        + r(43),
    )
    add("rsa private key", "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", pem)
    add(
        "openssh private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----",
        "\n".join(r(70, b64) for _ in range(4)),
    )
    add("database url password", "DATABASE_URL=postgres://app:{}@db.internal:5432/shop", r(18))
    add("bearer header", 'curl -H "Authorization: Bearer {}" https://api.internal/v1/me', r(40))
    add("basic auth header", "Authorization: Basic {}", base64.b64encode(f"deploy:{r(16)}".encode()).decode())
    add("env token", "MY_SERVICE_TOKEN={}", r(32, hexa))
    add("env password", "DB_PASSWORD={}", r(14) + "!7")
    add("cli password flag", "mysql -u root --password={} shop", r(12) + "#2")
    add("cli token flag", "gh auth login --with-token --token {}", r(30))
    add("env lookup default", 'key = os.environ.get("SEARCH_API_KEY", "{}")', r(32))
    add("quoted assignment", 'client_secret = "{}"', r(40))
    add("json config secret", '{{"client_secret": "{}", "client_id": "web"}}', r(36))
    add("token over two lines", "REFRESH_TOKEN={}", r(20, hexa) + "\n" + r(20, hexa))
    add("wrapped openai key", "sk-proj-{}", r(30) + "\n" + r(30))
    add("digitalocean token", "DIGITALOCEAN_TOKEN=dop_v1_{}", r(64, hexa))
    add("shopify token", "X-Shopify-Access-Token: shpat_{}", r(32, hexa))
    add("linear key", "LINEAR_API_KEY=lin_api_{}", r(40))
    add("databricks token", "DATABRICKS_TOKEN=dapi{}", r(32, hexa))
    add("age secret key", "AGE-SECRET-KEY-1{}", r(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"))
    add("vault token", "VAULT_TOKEN=hvs.{}", r(90))
    add("docker login", "docker login -u ci -p {} registry.acme.io", r(24))
    azure = "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=core.windows.net"
    add("azure storage key", azure, r(86, b64) + "==")
    add("datadog key", "DD_API_KEY={}", r(32, hexa))
    add("mailgun key", "MAILGUN_API_KEY=key-{}", r(32, hexa))
    gcp = '{{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n{}'
    gcp += '\\n-----END PRIVATE KEY-----\\n"}}'
    add("gcp service account key", gcp, r(64, b64))
    add("heroku api key", "HEROKU_API_KEY={}", str(uuid.UUID(int=rng.getrandbits(128))))
    return items


def _message(eid: str, parent: str | None, n: int, message: dict) -> dict:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": f"{DAY}T10:{n // 60:02d}:{n % 60:02d}Z",
        "message": {"timestamp": 1_725_000_000_000 + n, **message},
    }


def _assistant(text: str = "", **extra: object) -> dict:
    content = [{"type": "text", "text": text}] if text else []
    return {
        "role": "assistant",
        "content": content,
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "api": "anthropic-messages",
        "usage": {"input": 1, "output": 1},
        "stopReason": "stop",
        **extra,
    }


def session_lines(field: str, blob: str, sid: str) -> list[dict]:
    """A small session whose `field` holds `blob` (every planted secret), the rest ordinary."""
    header = {"type": "session", "version": 3, "id": sid, "timestamp": f"{DAY}T10:00:00Z", "cwd": "/work/secrets"}
    ask = "Set up the deploy credentials for the staging environment."
    lines: list[dict] = [
        header,
        _message("u1", None, 1, {"role": "user", "content": blob if field == "user message" else ask}),
    ]
    if field == "session name":
        lines.append(
            {"type": "session_info", "id": "n1", "parentId": "u1", "timestamp": f"{DAY}T10:00:02Z", "name": blob}
        )
    if field == "label":
        lines.append(
            {
                "type": "label",
                "id": "l1",
                "parentId": "u1",
                "timestamp": f"{DAY}T10:00:02Z",
                "targetId": "u1",
                "label": blob,
            }
        )
    parent = lines[-1]["id"]
    if field in ("tool call arguments", "tool result"):
        command = blob if field == "tool call arguments" else "cat .env.staging"
        call = _assistant(stopReason="toolUse")
        call["content"] = [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": command}}]
        output = blob if field == "tool result" else "ok"
        lines += [
            _message("a1", parent, 3, call),
            _message(
                "t1",
                "a1",
                4,
                {
                    "role": "toolResult",
                    "toolCallId": "c1",
                    "toolName": "bash",
                    "content": [{"type": "text", "text": output}],
                    "isError": False,
                },
            ),
        ]
        parent = "t1"
    if field == "thinking":
        thought = _assistant("Noted.")
        thought["content"].insert(0, {"type": "thinking", "thinking": blob})
        lines.append(_message("a2", parent, 5, thought))
    elif field == "assistant error":
        lines.append(_message("a2", parent, 5, _assistant(stopReason="error", errorMessage=blob)))
    else:
        done = blob if field == "assistant text" else "Done: credentials set."
        lines.append(_message("a2", parent, 5, _assistant(done)))
    parent = "a2"
    if field == "user shell command":
        lines.append(
            _message(
                "b1", parent, 6, {"role": "bashExecution", "command": "cat ~/.netrc", "output": blob, "exitCode": 0}
            )
        )
    if field == "extension message":
        lines.append(
            {
                "type": "custom_message",
                "id": "x1",
                "parentId": parent,
                "timestamp": f"{DAY}T10:00:07Z",
                "customType": "vault-sync",
                "content": blob,
                "display": True,
            }
        )
    if field == "branch summary":
        lines.append(
            {
                "type": "branch_summary",
                "id": "s1",
                "parentId": parent,
                "timestamp": f"{DAY}T10:00:08Z",
                "fromId": "u1",
                "summary": blob,
            }
        )
    if field == "compaction summary":
        lines.append(
            {
                "type": "compaction",
                "id": "k1",
                "parentId": parent,
                "timestamp": f"{DAY}T10:00:09Z",
                "summary": blob,
                "firstKeptEntryId": "a2",
                "tokensBefore": 1000,
            }
        )
    return lines


def write_sessions(root: Path, planted: list[Planted]) -> list[str]:
    """One session per field under `root`, each with every planted secret in that field; their ids."""
    blob = "\n".join(f"{p.kind}: {p.text}" for p in planted)
    ids = []
    for n, field in enumerate(FIELDS):
        sid = f"secrets-{n:02d}-{field.replace(' ', '-')}"
        path = root / "--work-secrets--" / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(json.dumps(line) for line in session_lines(field, blob, sid)) + "\n")
        ids.append(sid)
    return ids


def leaks(text: str, planted: list[Planted], window: int = 12) -> set[str]:
    """The kinds of which any `window` characters of the random core appear in `text`."""
    found = set()
    for p in planted:
        core = p.core.replace("\n", "")
        pieces = {core[i : i + window] for i in range(0, max(len(core) - window, 0) + 1, 4)}
        if any(piece in text for piece in pieces):
            found.add(p.kind)
    return found


def ordinary_lines(seed: int = 5) -> list[str]:
    """320 lines that hold no secret and must come out of the redactor unchanged."""
    rng = random.Random(seed)
    hexa = "0123456789abcdef"
    names = [
        "API_KEY",
        "SECRET_KEY",
        "AUTH_TOKEN",
        "DB_PASSWORD",
        "GITHUB_TOKEN",
        "OPENAI_API_KEY",
        "SLACK_TOKEN",
        "STRIPE_SECRET_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "JWT_SECRET",
        "CLIENT_SECRET",
        "PRIVATE_KEY_PATH",
    ]
    lines: list[str] = []
    for name in names:
        lines += [
            f'{name.lower()} = os.environ.get("{name}")',
            f'{name.lower()} = os.environ["{name}"]',
            f"const {name.lower()} = process.env.{name} || '';",
            f"const {name.lower()} = process.env.{name} ?? config.get('{name.lower()}');",
            f"{name}=${{{name}}}",
            f'{name}: "${{{{ secrets.{name} }}}}"',
            f"export {name}=$(vault kv get -field=value secret/{name.lower()})",
            f'if not settings.{name.lower()}: raise ConfigError("{name} is not set")',
            f"  {name.lower()}: str = Field(default=None, description='{name} from the environment')",
            f"{name}=<your-{name.lower().replace('_', '-')}-here>",
        ]
    for _ in range(40):
        digest = "".join(rng.choice(hexa) for _ in range(64))
        sha1 = "".join(rng.choice(hexa) for _ in range(40))
        ident = uuid.UUID(int=rng.getrandbits(128))
        lines += [
            f"sha256:{digest}",
            f"commit {sha1}",
            f'request_id = "{ident}"',
        ]
    for i in range(20):
        raw = hashlib.sha512(f"package-{i}".encode()).digest()
        image = base64.b64encode(hashlib.sha256(f"img{i}".encode()).digest() * 12).decode()
        lines += [
            f'"integrity": "sha512-{base64.b64encode(raw).decode()}",',
            f'<img src="data:image/png;base64,{image}" alt="chart {i}">',
            f"image: ghcr.io/acme/api@sha256:{hashlib.sha256(str(i).encode()).hexdigest()}",
        ]
    lines += [
        "password = forms.CharField(widget=forms.PasswordInput)",
        "token_count = len(tokenizer.encode(text))",
        "def get_api_key(self) -> str: return self._settings.api_key",
        "api_key_header = APIKeyHeader(name='X-API-Key', auto_error=False)",
        "secret_santa_assignments = shuffle(participants)",
        "TOKEN_EXPIRY_SECONDS = 3600",
        "MAX_TOKENS=4096",
        "password_min_length: 12",
        'assert user.check_password("correct horse battery staple") is False',
        "@pytest.fixture\ndef api_key(): return 'test-key'",
        "key_id = request.headers.get('X-Key-Id')",
        "primary_key=True, autoincrement=True",
        "Authorization: Bearer $TOKEN",
        'curl -H "Authorization: Bearer ${GITHUB_TOKEN}" https://api.github.com/user',
        "git clone https://github.com/acme/app.git",
        "postgres://localhost:5432/shop",
        "redis://cache:6379/0",
        "ssh-keygen -t ed25519 -C 'ci@acme.io' -f ~/.ssh/id_ed25519",
        "aws configure set region eu-west-1",
        "aws s3 cp build/ s3://acme-static/ --recursive",
        "The secret to fast tests is running them in parallel with pytest -n auto.",
        "Rotate the API key in the dashboard, then update .env and restart the worker.",
        "docker login registry.acme.io -u ci --password-stdin < token.txt",
        "kubectl create secret generic db --from-env-file=.env.prod",
        "color: #3f786850; background: #ffffff;",
        "SELECT id, password_hash FROM users WHERE email = %s",
        "npm install --save-dev @types/node@22",
        "uv add 'httpx>=0.28' && uv lock",
        "if token.kind == TokenKind.IDENTIFIER and token.text in KEYWORDS:",
        "private_key_path = Path('~/.ssh/id_rsa').expanduser()",
    ]
    return lines[:320]
