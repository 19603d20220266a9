"""Generate the synthetic multi-session corpus for the reflect stage: `python -m testkit.corpora.make_reflect_corpus`.

Four weeks of pi v3 sessions on one project (July 2024), with what is planted written to `truth.json`:
- repeated rules: the same correction stated by the user, in other words, in several sessions;
- recurring failures: the same command failing the same way in several sessions (some with the command
  that worked instead, later in the same turn);
- tool misuse: `edit` with text that is not in the file, `read` of paths that do not exist, `cat` through
  bash instead of the read tool, each in several sessions;
- contradictions: a decision, and weeks later a decision that replaces it;
plus noise: one-off rules and failures, related-but-compatible decisions, ordinary working context.

The sessions are ingested like any other; `memories.jsonl` holds the memories the summarise stage is meant
to extract from them (one per planted fact, near-duplicates included), so the reflect stage is measured
on its own and not through the local 0.5B extractor. Deterministic: the same output on every run.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from testkit.paths import CORPUS as CORPUS_DIR

OUT = CORPUS_DIR / "reflect"
PROJECT = "/home/dev/shop-api"
START = datetime(2024, 7, 1, 9, 0, tzinfo=UTC)  # a Monday
WEEKS = 4

# --- what is planted -----------------------------------------------------------------------------

RULES = {
    "rule-pnpm": [
        "Please use pnpm, not npm. This repo is a pnpm workspace.",
        "Don't run npm here, we use pnpm for everything.",
        "Again: pnpm only, never npm install in this repo.",
        "Stop using npm, use pnpm like I said before.",
    ],
    "rule-pytest": [
        "Always run the tests with pytest -x -q so it stops at the first failure.",
        "Run pytest with -x -q please, I don't want the full output.",
        "Use pytest -x -q for the test run, not plain pytest.",
    ],
    "rule-logging": [
        "No print debugging. Use the logging module instead of print().",
        "Don't leave print() calls in the code, use the logger.",
        "Never add print statements for debugging; use logging.",
    ],
    "rule-commit": [
        "Write commit messages in the imperative mood, like 'Add cart endpoint'.",
        "Commit messages must be imperative: 'Fix totals', not 'Fixed totals'.",
    ],
}
ONE_OFF_USER = [
    "Never mind, let's look at the cart endpoint instead.",
    "Always nice to see green tests. Now the checkout flow.",
    "Don't worry about the docs for now.",
    "Please use a shorter variable name in that loop.",
    "Can you explain what the discount service does?",
    "Let's add pagination to the orders list.",
    "What does the retry decorator in utils do?",
    "Rename the helper to parse_price.",
]
FAILURES = {
    "fail-db-down": {
        "command": "make migrate",
        "error": 'psql: error: connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection '
        "refused\nmake: *** [Makefile:12: migrate] Error 2",
        "fix": "docker compose up -d db && make migrate",
    },
    "fail-module-path": {
        "command": "pytest -x -q",
        "error": "ImportError while loading conftest '/home/dev/shop-api/tests/conftest.py'.\n"
        "ModuleNotFoundError: No module named 'shop_api'",
        "fix": "uv run pytest -x -q",
    },
    "fail-types-pkg": {
        "command": "pnpm tsc --noEmit",
        "error": "src/client.ts(3,24): error TS2307: Cannot find module '@shop/types' or its corresponding "
        "type declarations.",
        "fix": None,
    },
}
ONE_OFF_FAILURES = [
    (
        "git push",
        "error: failed to push some refs to 'origin'\nhint: Updates were rejected because the tip of "
        "your current branch is behind",
    ),
    ("curl -s localhost:8000/health", "curl: (7) Failed to connect to localhost port 8000 after 0 ms"),
    ("ruff check src", "src/orders.py:14:5: F841 Local variable `total` is assigned to but never used"),
]
MISUSE = {
    "misuse-edit-mismatch": (
        "edit",
        lambda p: {"path": p, "oldText": "def total(self):\n    return sum(self.items)", "newText": "..."},
        lambda p: (
            f"Could not find the exact text in {p}. The old text must match exactly including all "
            "whitespace and newlines."
        ),
    ),
    "misuse-missing-path": (
        "read",
        lambda p: {"path": p.replace(".py", ".yaml")},
        lambda p: f"ENOENT: no such file or directory, access '/home/dev/shop-api/{p.replace('.py', '.yaml')}'",
    ),
    "misuse-bash-cat": ("bash", lambda p: {"command": f"cat {p}"}, None),
}
FILES = ["src/cart.py", "src/orders.py", "src/checkout.py", "src/users.py", "src/discounts.py", "src/app.py"]

CONTRADICTIONS = [
    (
        "Decided to keep user sessions in Redis for fast lookups.",
        "Switched session storage from Redis to Postgres because Redis lost sessions on every restart.",
    ),
    (
        "The public API is REST under /v1, chosen for compatibility with the mobile app.",
        "The public API moves to GraphQL; the /v1 REST endpoints are deprecated and will be removed.",
    ),
    (
        "Tests use an SQLite database because it needs no setup.",
        "Tests now run against a Postgres container, since SQLite behaves differently with JSON columns.",
    ),
    (
        "Application logs are written as plain text lines.",
        "Application logs are written as JSON lines so the log shipper can parse them.",
    ),
]
COMPATIBLE = [  # related to a contradiction's topic but not contradicting it: must not supersede anything
    "Redis is used as the store for the rate limiter counters.",
    "The /v1 endpoints require an X-Api-Key header on every request.",
    "Test fixtures create their tables from the SQLAlchemy models.",
    "Log lines include the request id for tracing.",
]
DUPLICATES = [  # the same fact captured in two sessions of the same day: merged into one reflection
    (
        "The checkout total is computed in src/checkout.py by CheckoutService.total().",
        "CheckoutService.total() in src/checkout.py computes the checkout total.",
    ),
    (
        "Discount codes are validated in src/discounts.py before the order is created.",
        "src/discounts.py validates discount codes before an order gets created.",
    ),
    (
        "The orders list endpoint is paginated with limit and offset query parameters.",
        "Pagination of the orders list uses limit and offset query parameters.",
    ),
]
NOISE = [
    ("Added a unit test for the empty cart case in tests/test_cart.py.", "medium", ["tests", "cart"]),
    ("Renamed the price helper to parse_price in src/utils.py.", "low", ["refactor", "utils"]),
    ("The user explored the discount service and asked how codes expire.", "low", ["discounts", "question"]),
    ("Configured ruff with line length 100 in pyproject.toml.", "medium", ["ruff", "config", "lint"]),
    ("The order confirmation email template lives in templates/email/confirm.html.", "medium", ["email", "templates"]),
    ("Looked up how FastAPI dependencies are cached per request.", "low", ["fastapi", "lookup"]),
    ("Fixed a typo in the README setup section.", "low", ["docs", "readme"]),
    ("The admin dashboard reads stock levels from the inventory service.", "medium", ["admin", "inventory"]),
]


def _id(rng: random.Random) -> str:
    return f"{rng.getrandbits(32):08x}"


class Session:
    """A pi v3 session file under construction, with the turns that planted memories point to."""

    def __init__(self, rng: random.Random, number: int, started: datetime, cwd: str = PROJECT) -> None:
        self.rng, self.clock, self.cwd = rng, started, cwd
        self.id = f"00000000-0000-4000-8000-{number:012d}"
        self.lines = [{"type": "session", "version": 3, "id": self.id, "timestamp": _ts(started), "cwd": cwd}]
        self.parent: str | None = None
        self.calls = 0

    def _entry(self, message: dict) -> str:
        self.clock += timedelta(seconds=self.rng.randint(5, 90))
        entry_id = _id(self.rng)
        message["timestamp"] = int(self.clock.timestamp() * 1000)
        line = {"type": "message", "id": entry_id, "parentId": self.parent, "timestamp": _ts(self.clock)}
        self.lines.append({**line, "message": message})
        self.parent = entry_id
        return entry_id

    def user(self, text: str) -> str:
        return self._entry({"role": "user", "content": [{"type": "text", "text": text}]})

    def assistant(self, text: str, call: tuple[str, dict] | None = None) -> str | None:
        content: list[dict] = [{"type": "text", "text": text}]
        call_id = None
        if call:
            self.calls += 1
            call_id = f"call_{self.id[-4:]}_{self.calls}"
            content.append({"type": "toolCall", "id": call_id, "name": call[0], "arguments": call[1]})
        self._entry(
            {
                "role": "assistant",
                "content": content,
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-5",
                "usage": {"input": 900, "output": 60, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 960},
                "stopReason": "toolUse" if call else "stop",
            }
        )
        return call_id

    def tool(self, name: str, arguments: dict, output: str, error: bool) -> None:
        call_id = self.assistant(f"Running {name}.", (name, arguments))
        self._entry(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": [{"type": "text", "text": output}],
                "isError": error,
            }
        )

    @property
    def day(self) -> str:
        return self.lines[0]["timestamp"][:10]

    def write(self, folder: Path) -> str:
        name = f"{self.lines[0]['timestamp'].replace(':', '-').replace('.', '-')}_{self.id}.jsonl"
        path = folder / f"--{self.cwd.strip('/').replace('/', '-')}--" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in self.lines))
        return str(path.relative_to(folder))


def _ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def memory(session: Session, turn_id: str, summary: str, priority: str, tags: list[str], kind: str) -> dict:
    doc_id = hashlib.sha1(f"{session.id}_{turn_id}_{summary}".encode()).hexdigest()
    return {
        "doc_id": doc_id,
        "summary": summary,
        "tags": tags,
        "priority": priority,
        "session_id": session.id,
        "turn_id": turn_id,
        "established_at": _ts(session.clock),
        "partition": session.day,
        "planted": kind,
    }


def plant_contradiction(
    sides: tuple[Session, Session, Session],
    old: str,
    new: str,
    compatible: str,
    say: str,
    name: str,
    memories: list[dict],
    truth: dict,
) -> None:
    """A decision (first session), the decision replacing it (second), a compatible fact on its topic (third)."""
    ids = []
    for session, text in ((sides[0], old), (sides[1], new)):
        turn = session.user(f"{say}{text}")
        session.assistant("Noted.")
        record = memory(session, turn, text, "high", ["decision", "architecture"], f"contradiction-{name}")
        memories.append(record)
        ids.append(record["doc_id"])
    truth["supersessions"].append({"old": ids[0], "new": ids[1]})
    turn = sides[2].user(f"Note: {compatible}")
    sides[2].assistant("Noted.")
    record = memory(sides[2], turn, compatible, "high", ["decision", "architecture"], f"compatible-{name}")
    memories.append(record)
    truth["compatible"].append(record["doc_id"])


def build() -> tuple[list[Session], list[dict], dict]:
    rng = random.Random(7)
    days = [START + timedelta(days=d) for d in range(WEEKS * 7) if (START + timedelta(days=d)).weekday() < 5]
    sessions = [
        Session(rng, i + 1, day + timedelta(hours=h))
        for i, (day, h) in enumerate((day, h) for day in days for h in (0, 4))
    ]
    memories: list[dict] = []
    truth: dict = {"rules": {}, "failures": {}, "misuse": {}, "supersessions": [], "compatible": []}

    def week(number: int) -> list[Session]:
        return sessions[(number % WEEKS) * 10 : (number % WEEKS) * 10 + 10]

    # Rules: each statement in its own session, all of one rule in one week (friction is weekly).
    for r, (key, statements) in enumerate(RULES.items()):
        for statement, session in zip(statements, rng.sample(week(r), len(statements)), strict=True):
            turn = session.user(statement)
            session.assistant("Understood, I'll do that from now on.")
            memories.append(
                memory(session, turn, f'The user stated "{statement}"', "high", ["user-rule", key[5:]], key)
            )
            truth["rules"].setdefault(key, []).append(session.id)
    for text in ONE_OFF_USER:
        session = rng.choice(sessions)
        session.user(text)
        session.assistant("Sure.")

    for k, (key, failure) in enumerate(FAILURES.items()):
        for session in rng.sample(week(k + 1), 3):
            turn = session.user("Let's get the database and the tests going.")
            session.tool(
                "bash", {"command": failure["command"]}, failure["error"] + "\n\nCommand exited with code 1", True
            )
            if failure["fix"]:
                session.tool("bash", {"command": failure["fix"]}, "ok", False)
            truth["failures"].setdefault(key, []).append(session.id)
            del turn
    for command, error in ONE_OFF_FAILURES:
        session = rng.choice(sessions)
        session.user("Check this please.")
        session.tool("bash", {"command": command}, error + "\n\nCommand exited with code 1", True)

    for k, (key, (tool, arguments, error)) in enumerate(MISUSE.items()):
        for session in rng.sample(week(k + 2), 3):
            path = rng.choice(FILES)
            session.user(f"Look at {path} and tidy it up.")
            session.tool(tool, arguments(path), error(path) if error else f"# {path}\nimport logging\n", bool(error))
            truth["misuse"].setdefault(key, []).append(session.id)

    # Contradictions: the old decision in week 1, the new one in week 3 or 4; compatible facts in between.
    for c, (old, new) in enumerate(CONTRADICTIONS):
        sides = (sessions[1 + c * 2], sessions[24 + c * 3], sessions[12 + c * 2])
        plant_contradiction(sides, old, new, COMPATIBLE[c], "Decision time: ", str(c), memories, truth)

    for d, pair in enumerate(DUPLICATES):
        first, second = sessions[4 + d * 6], sessions[5 + d * 6]  # the two sessions of one day
        for session, text in ((first, pair[0]), (second, pair[1])):
            turn = session.user("Where does this happen?")
            session.assistant(text)
            memories.append(memory(session, turn, text, "medium", ["code-map"], f"duplicate-{d}"))

    for s, session in enumerate(sessions):
        for n in range(2):
            summary, priority, tags = NOISE[(s * 2 + n) % len(NOISE)]
            turn = session.user("Next small thing.")
            session.assistant(summary)
            memories.append(memory(session, turn, f"{summary} (session {s + 1})", priority, tags, "noise"))
    plant_held_out(rng, sessions, memories, truth, week)
    return sessions, memories, truth


# --- held out ------------------------------------------------------------------------------------
# Written after the reflect stage's heuristics (change words, restatement words, thresholds) were settled on the
# items above, and never used to tune them: the benchmark reports them apart, as the honest figure.

HELD_OUT_RULES = {
    "rule-type-hints": [
        "Add type hints to every new function.",
        "All new functions need type annotations, please.",
        "Once more: annotate the types on new functions.",
    ],
}
HELD_OUT_FAILURES = {
    "fail-port-taken": {
        "command": "docker compose up -d",
        "error": "Error response from daemon: driver failed programming external connectivity on endpoint db: "
        "Bind for 0.0.0.0:5432 failed: port is already allocated",
        "fix": "docker compose down && docker compose up -d",
    },
}
HELD_OUT_MISUSE = {
    "misuse-invalid-arguments": (
        "write",
        lambda p: {"path": p},
        lambda p: "Validation failed for tool \"write\": content: must have required property 'content'",
    ),
}
HELD_OUT_CONTRADICTIONS = [
    (
        "We deploy with GitHub Actions to Fly.io.",
        "Deployment moved off Fly.io; GitHub Actions now ships the container to AWS ECS.",
    ),
    (
        "Money amounts are stored as floats in the orders table.",
        "Money amounts are stored as integer cents, because floats caused rounding errors in totals.",
    ),
    (
        "Feature flags are read from environment variables.",
        "Feature flags come from LaunchDarkly instead of environment variables.",
    ),
    (
        "Frontend state lives in a Redux store.",
        "We dropped Redux; frontend state now lives in React Query and component state.",
    ),
]
HELD_OUT_COMPATIBLE = [
    "The Fly.io machines run in the ams region.",
    "Order totals include VAT.",
    "Feature flag names use kebab-case.",
    "Redux DevTools are enabled only in development builds.",
]


def plant_held_out(rng: random.Random, sessions: list[Session], memories: list[dict], truth: dict, week) -> None:  # noqa: ANN001
    held: dict = {"rules": {}, "failures": {}, "misuse": {}, "supersessions": [], "compatible": []}
    for key, statements in HELD_OUT_RULES.items():
        for statement, session in zip(statements, rng.sample(week(3), len(statements)), strict=True):
            turn = session.user(statement)
            session.assistant("Will do.")
            memories.append(
                memory(session, turn, f'The user stated "{statement}"', "high", ["user-rule", "typing"], key)
            )
            held["rules"].setdefault(key, []).append(session.id)
    for key, failure in HELD_OUT_FAILURES.items():
        for session in rng.sample(week(0), 2):
            session.user("Start the stack.")
            session.tool(
                "bash", {"command": failure["command"]}, failure["error"] + "\n\nCommand exited with code 1", True
            )
            session.tool("bash", {"command": failure["fix"]}, "ok", False)
            held["failures"].setdefault(key, []).append(session.id)
    for key, (tool, arguments, error) in HELD_OUT_MISUSE.items():
        for session in rng.sample(week(1), 2):
            path = rng.choice(FILES)
            session.user(f"Create a new version of {path}.")
            session.tool(tool, arguments(path), error(path), True)
            held["misuse"].setdefault(key, []).append(session.id)
    for c, (old, new) in enumerate(HELD_OUT_CONTRADICTIONS):
        sides = (sessions[9 + c * 2], sessions[31 + c * 2], sessions[18 + c * 2])
        plant_contradiction(
            sides, old, new, HELD_OUT_COMPATIBLE[c], "For the record: ", f"held-out-{c}", memories, held
        )
    truth["held_out"] = held


def main() -> None:
    sessions, memories, truth = build()
    if OUT.exists():
        for path in sorted(OUT.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
    (OUT / "sessions").mkdir(parents=True)
    files = [session.write(OUT / "sessions") for session in sessions]
    for record in memories:
        record["project"] = PROJECT
    (OUT / "memories.jsonl").write_text("".join(json.dumps(m, sort_keys=True) + "\n" for m in memories))
    truth["project"] = PROJECT
    truth["days"] = sorted({s.day for s in sessions})
    truth["sessions"] = {s.id: f for s, f in zip(sessions, files, strict=True)}
    (OUT / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    print(f"{len(sessions)} sessions, {len(memories)} memories -> {OUT}")


if __name__ == "__main__":
    main()
