"""The hard retrieval corpus: long multi-session histories of four projects over eight months, and the
questions a person would ask about them later (bench/corpus/hard/).

    uv run python -m testkit.corpora.make_hard_corpus

Deterministic (seeded). Each project gets 12 pi v3 sessions, 19 days apart, with the facts to be recalled
planted in ordinary coding turns among distractor turns (tests, tidying, version bumps that name the same
libraries). Questions are written from a paraphrase of the fact's subject, never from the planted sentence:

- single: one fact (a preference, a root cause, a setting, an owner, a command);
- multi: the evidence is in two sessions (two options benchmarked, two vendors' quotes);
- temporal: a recurring meeting's outcome, asked by month ("in July") or relatively ("last week");
- update: a decision later replaced; the newer one is the answer and must rank above the older;
- abstention: a subject the project never discussed; the right answer is nothing.

Two more histories join them (`assemble`): the reflect corpus (bench/corpus/reflect, four weeks of one
project in July 2024, its sessions renumbered so their ids do not clash) and the largest real pi session of
the fixtures (pi-mono, November 2025). Their questions are written by hand, from the facts the reflect
corpus planted (bench/corpus/reflect/truth.json) and from the turns hand-labelled as memorable in the
fixture (bench/labels/summarize_turns.json); the evidence is found in the session files by its text.

Every question is assigned to `tune` or `held_out` (one in three) by a hash of its id, before any tuning.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_pipeline.sessions.discovery import scan_sessions
from testkit.corpora.make_reflect_corpus import Session
from testkit.paths import CORPUS as CORPUS_DIR
from testkit.paths import SESSION_FIXTURES

OUT = CORPUS_DIR / "hard"
REFLECT = CORPUS_DIR / "reflect"
FIXTURE = SESSION_FIXTURES / "pi-mono-large-session.v1.jsonl"  # noqa: E501
PROJECTS = ["/home/dev/shop-api", "/home/dev/billing-worker", "/home/dev/mobile-app", "/home/dev/data-lake"]
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SESSIONS, GAP_DAYS = 12, 19

# (subject, options, how a person would describe the need later)
PURPOSES = [
    ("HTTP client", ["httpx", "requests", "aiohttp"], "calling other services over the network"),
    ("task queue", ["Celery", "Dramatiq", "RQ"], "running jobs in the background"),
    ("ORM", ["SQLAlchemy", "Peewee", "Tortoise"], "talking to the database from Python"),
    ("structured logging", ["structlog", "loguru"], "writing log lines"),
    ("date parsing", ["pendulum", "arrow"], "dealing with timestamps and time zones"),
    ("feature flags", ["Unleash", "Flagsmith"], "switching features on for some users only"),
    ("error tracking", ["Sentry", "Rollbar"], "reporting crashes to us"),
    ("schema validation", ["pydantic", "marshmallow"], "checking incoming payloads"),
    ("package manager", ["pnpm", "yarn"], "installing the JavaScript dependencies"),
    ("test runner", ["pytest", "ward"], "executing the checks before a merge"),
    ("cache", ["Redis", "Memcached"], "keeping hot data around between requests"),
    ("full-text search", ["Meilisearch", "Typesense"], "letting customers look things up by keyword"),
    ("message broker", ["RabbitMQ", "NATS"], "passing events between services"),
    ("PDF rendering", ["WeasyPrint", "ReportLab"], "producing printable invoices"),
    ("image resizing", ["Pillow", "pyvips"], "making thumbnails of uploads"),
    ("CSV parsing", ["polars", "pandas"], "reading the spreadsheets finance exports"),
    ("charting", ["Vega-Lite", "Plotly"], "drawing graphs on the dashboard"),
    ("secrets storage", ["Vault", "SOPS"], "keeping passwords out of the repository"),
    ("load testing", ["k6", "Locust"], "hammering the API to find where it breaks"),
    ("migrations", ["Alembic", "yoyo"], "changing the database schema"),
]
GRIPES = ["memory leaks", "a painful upgrade", "silent failures", "slow cold starts", "licence trouble"]
SYMPTOMS = [
    ("checkout requests timing out", "the checkout page being so slow",
     "the connection pool was capped at 5 while the worker ran 20 threads", "raised the pool size to 25"),
    ("duplicate emails to customers", "people getting the same mail twice",
     "the retry decorator re-sent after the SMTP call had already succeeded", "made sending idempotent with a key"),
    ("the nightly export crashing", "the overnight job that kept dying",
     "a CSV row with an unescaped newline in the notes column", "now quote every field"),
    ("wrong totals on invoices", "bills adding up incorrectly",
     "float rounding of the discount before tax", "switched the maths to Decimal with ROUND_HALF_UP"),
    ("login failing for some users", "some people unable to sign in",
     "email addresses compared case-sensitively", "lower-case emails on write and on lookup"),
    ("memory growing until the pod restarts", "the service eating RAM until it got killed",
     "an lru_cache on a method that kept every request object alive", "moved the cache to a module function"),
    ("a flaky test in the payments suite", "that check failing at random in CI",
     "it depended on the wall clock crossing midnight", "froze time with a fixture"),
    ("webhooks arriving out of order", "events landing in the wrong sequence",
     "two consumers on one queue without partition keys", "keyed messages by account id"),
    ("search results taking seconds", "lookups being sluggish",
     "a missing index on the created_at column", "added a composite index"),
    ("broken images on mobile", "pictures not showing up on phones",
     "the CDN stripped the webp content type", "set Content-Type explicitly on upload"),
    ("a timezone bug in reports", "reports showing the wrong day",
     "naive datetimes read in the server's local zone", "store and compare everything in UTC"),
    ("deploys hanging at migrations", "releases getting stuck halfway",
     "a migration locking the orders table during traffic", "split it into batches of 1000 rows"),
    ("403 errors from the storage bucket", "permission denied when uploading files",
     "the service account lost objectCreator in the IAM cleanup", "granted the role back in terraform"),
    ("the cron job running twice", "the scheduled task firing double",
     "both replicas ran the scheduler", "put the scheduler behind a leader lock"),
    ("stale prices on the product page", "old prices still showing after an update",
     "the cache key ignored the currency", "added the currency to the key"),
    ("CI taking forty minutes", "the pipeline being painfully slow",
     "the dependency cache was keyed on the lockfile path", "keyed it on the lockfile hash"),
]  # fmt: skip
SETTINGS = [
    ("request timeout", "how long we wait on upstream calls", ["8 seconds", "12 seconds", "20 seconds"]),
    ("worker concurrency", "how many jobs run in parallel", ["4", "6", "16"]),
    ("session lifetime", "how long people stay logged in", ["7 days", "30 days", "12 hours"]),
    ("retry limit", "how many attempts before giving up", ["3", "5", "8"]),
    ("page size", "how many items an API list returns at once", ["50", "100", "25"]),
    ("log retention", "how long we keep logs around", ["14 days", "30 days", "90 days"]),
    ("rate limit", "how many calls one client may make", ["100 per minute", "600 per minute", "20 per second"]),
    ("upload size cap", "the biggest file people may send us", ["10 MB", "25 MB", "50 MB"]),
    ("password minimum length", "how short a password is allowed to be", ["12", "10", "14"]),
    ("cache TTL", "how long cached entries live", ["5 minutes", "60 seconds", "15 minutes"]),
    ("database pool size", "how many DB connections each instance opens", ["10", "20", "25"]),
    ("importer batch size", "how many rows the import handles at a time", ["500", "1000", "5000"]),
]
PEOPLE = [("Dana", "her"), ("Priya", "her"), ("Marco", "him"), ("Lena", "her"), ("Tomás", "him"), ("Aiko", "her")]
COMPONENTS = [
    ("payments module", "the code that charges cards"),
    ("auth service", "the sign-in flow"),
    ("search indexer", "whatever feeds the search box"),
    ("email templates", "the messages customers receive"),
    ("terraform setup", "our infrastructure code"),
    ("release pipeline", "shipping a new version out"),
    ("pricing rules", "how discounts get computed"),
    ("warehouse export", "the nightly dump for analytics"),
]
COMMANDS = [
    ("OpenAPI client", "the generated SDK", "uv run python scripts/gen_client.py --out sdk/"),
    ("seed database", "the sample data for local development", "docker compose run --rm seed"),
    ("translation catalogues", "the strings for other languages", "pnpm i18n:extract && pnpm i18n:compile"),
    ("icon sprite", "the svg icon bundle", "node tools/sprite.mjs"),
    ("docs site", "the documentation pages", "mkdocs build --strict"),
    ("protobuf stubs", "the generated gRPC code", "buf generate"),
    ("coverage report", "the numbers on how much code the tests exercise", "pytest --cov=src --cov-report=html"),
]
VENDORS = [
    ("email delivery", "sending transactional mail", ["Postmark", "SendGrid"]),
    ("uptime monitoring", "getting pinged when the site is down", ["Pingdom", "Better Stack"]),
    ("log hosting", "storing logs off the servers", ["Papertrail", "Logtail"]),
    ("SMS gateway", "texting customers", ["Twilio", "Vonage"]),
    ("CDN", "serving static files close to users", ["Fastly", "Bunny"]),
    ("CI runners", "running our pipelines", ["Buildkite", "CircleCI"]),
]
RECURRING = [
    ("retro", "retrospective meeting", [
        "alerts are too noisy, so we cut the paging rules to three",
        "code review waits too long, at most two reviewers per pull request",
        "Friday deploys hurt, no releases after Thursday noon",
        "onboarding docs are stale, Lena owns them from now on",
    ]),
    ("incident review", "postmortem", [
        "the outage came from an expired TLS certificate, add expiry monitoring",
        "the disk filled with debug logs, lower the verbosity in production",
        "a bad config push took us down, config changes need a second approver",
        "the DNS TTL was too long during failover, drop it to 60 seconds",
    ]),
    ("dependency upgrade", "round of version bumps", [
        "Django 5.0 went in after replacing the removed pytz usage",
        "the Node 20 bump broke the fetch polyfill, which we deleted",
        "Postgres 16 needed a reindex because of the collation warning",
        "Python 3.12 meant removing every distutils import",
    ]),
    ("client demo", "session where we showed the product to the customer", [
        "they want CSV export on the orders screen",
        "the onboarding wizard felt too long, cut it to three steps",
        "they asked for dark mode before launch",
        "they need single sign-on with Okta",
    ]),
]  # fmt: skip
UPDATES = [
    ("deploy target", "hosting production", "Heroku", "Fly.io", "Heroku's new pricing"),
    ("primary database", "the main data store", "MySQL", "Postgres", "we need JSONB columns"),
    ("CI provider", "running our builds", "Travis", "GitHub Actions", "the Travis credits ran out"),
    ("frontend framework", "building the web UI", "Vue", "Svelte", "bundle size on mobile"),
    ("identity provider", "signing people in", "Auth0", "Keycloak", "the per-user cost"),
    ("object storage", "keeping uploaded files", "S3", "Cloudflare R2", "egress fees"),
    ("container registry", "pushing our images", "Docker Hub", "GHCR", "pull rate limits"),
    ("metrics stack", "collecting metrics", "Datadog", "Prometheus with Grafana", "the monthly bill"),
    ("branching model", "organising branches", "git-flow", "trunk-based development", "merge pain"),
    ("code formatter", "formatting the code", "black", "ruff format", "speed in pre-commit"),
    ("mail sending job", "sending mail in the background", "a cron script", "the task queue", "missed sends"),
    ("API versioning", "versioning the endpoints", "URL prefixes", "a version header", "cleaner routes"),
]
ABSENT = [
    ("GraphQL", "What did we decide about GraphQL schema stitching?"),
    ("ingress", "Which Kubernetes ingress controller did we settle on?"),
    ("Rust", "What was the conclusion on rewriting the parser in Rust?"),
    ("Kafka", "How were the Kafka consumer groups configured?"),
    ("widget", "Who is responsible for the iOS home-screen widget?"),
    ("audit", "What did the security audit of the Android app find?"),
    ("GPU", "Which GPU instances did we benchmark for model training?"),
    ("GDPR", "How did we handle the GDPR data export request?"),
    ("WebSockets", "Did we agree to use WebSockets for live updates?"),
    ("font", "Which font did the designers choose for the marketing site?"),
    ("blue-green", "What did we pick for blue-green deployments?"),
    ("Safari", "What happened with the Safari autofill bug?"),
    ("Terraform Cloud", "Are we paying for Terraform Cloud or self-hosting state?"),
    ("accessibility", "What came out of the accessibility review of the checkout?"),
]
FILES = ["src/app.py", "src/orders.py", "src/cart.py", "src/users.py", "src/billing.py", "src/reports.py"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip


class History:
    """One project's sessions, with the turns planted in them."""

    def __init__(self, rng: random.Random, project: str, number: int) -> None:
        self.rng, self.project = rng, project
        self.sessions = [
            Session(
                rng,
                number * 100 + i + 1,
                START + timedelta(days=i * GAP_DAYS + number * 4, hours=rng.randint(0, 8)),
                cwd=project,
            )
            for i in range(SESSIONS)
        ]
        self.turns: list[list] = [[] for _ in range(SESSIONS)]  # per session: functions writing a turn

    def plant(self, session: int, write) -> dict:  # noqa: ANN001
        """Queue a turn in `session`; the returned reference is filled with the evidence message when written."""
        ref: dict = {"session_id": self.sessions[session].id}
        self.turns[session].append((write, ref))
        return ref

    def write(self, folder: Path) -> None:
        for session, turns in zip(self.sessions, self.turns, strict=True):
            planted = list(turns)
            distractors = [(self._distractor, {}) for _ in range(3)]
            order = planted + distractors
            self.rng.shuffle(order)
            for write, ref in order:
                ref["entry_id"] = write(session)
            session.write(folder)

    def _distractor(self, s: Session) -> str:
        file, rng = self.rng.choice(FILES), self.rng
        kind = rng.randrange(4)
        if kind == 0:
            entry = s.user("Run the test suite please.")
            s.tool("bash", {"command": "pytest -q"}, f"{rng.randint(40, 200)} passed in {rng.randint(3, 40)}s", False)
            s.assistant("All green.")
        elif kind == 1:
            entry = s.user(f"Tidy up {file}, the imports are a mess.")
            s.tool("edit", {"path": file}, "applied", False)
            s.assistant(f"Sorted the imports in {file} and removed two unused ones.")
        elif kind == 2:
            subject, options, _ = rng.choice(PURPOSES)
            entry = s.user(f"Bump {options[0]} to the latest patch release.")
            s.tool("bash", {"command": f"uv lock --upgrade-package {options[0]}"}, "Updated 1 package", False)
            s.assistant(f"{options[0]} is on the newest patch now; nothing else changed.")
        else:
            entry = s.user(f"What does {file} do again?")
            s.tool("read", {"path": file}, "def main():\n    ...\n", False)
            s.assistant(f"{file} wires the request handlers and the settings together.")
        return entry


def _qid(project: str, category: str, n: int) -> str:
    return f"{project.rsplit('/', 1)[1]}-{category}-{n:02d}"


def _split(qid: str) -> str:
    return "held_out" if int(hashlib.sha1(qid.encode()).hexdigest(), 16) % 3 == 0 else "tune"


def build_project(number: int, project: str) -> tuple[History, list[dict]]:
    rng = random.Random(1000 + number)
    history = History(rng, project, number)
    questions: list[dict] = []
    last_day = history.sessions[-1].lines[0]["timestamp"][:10]
    later = (datetime.fromisoformat(last_day) + timedelta(days=10)).date().isoformat()

    def ask(category: str, text: str, evidence: list[dict], asked_at: str = later, **extra: object) -> None:
        qid = _qid(project, category, sum(q["category"] == category for q in questions))
        questions.append(
            {"id": qid, "project": project, "category": category, "question": text, "asked_at": asked_at,
             "evidence": evidence, "split": _split(qid), **extra}
        )  # fmt: skip

    def anywhere() -> int:
        return rng.randrange(SESSIONS)

    purposes = rng.sample(PURPOSES, len(PURPOSES))
    for subject, options, need in purposes[:10]:  # preferences
        good, bad = rng.sample(options, 2)
        gripe = rng.choice(GRIPES)

        def said(s: Session, subject=subject, good=good, bad=bad, gripe=gripe) -> str:  # noqa: ANN001
            entry = s.user(
                rng.choice(
                    [
                        f"For {subject} let's standardise on {good}; {bad} gave us {gripe} last time, "
                        "so don't add it again.",
                        f"Going forward {good} is the one for {subject}. Please stop pulling in {bad}.",
                    ]
                )
            )
            s.assistant(f"Understood, {good} it is; I'll leave {bad} out.")
            return entry

        ref = history.plant(anywhere(), said)
        text = rng.choice(
            [f"Which library am I supposed to use for {need}?", f"Remind me which {subject} library we agreed on?"]
        )
        ask("single", text, [ref])
    for symptom, para, cause, fix in rng.sample(SYMPTOMS, 10):  # root causes, in the assistant's words

        def found(s: Session, symptom=symptom, cause=cause, fix=fix) -> str:  # noqa: ANN001
            s.user(f"Can you look into {symptom}?")
            s.tool("bash", {"command": "grep -rn TODO src/ | head"}, "src/app.py:12: TODO", False)
            s.assistant(f"Found the cause of {symptom}: {cause}. I {fix}.")
            return s.parent  # the reply holds the answer

        ref = history.plant(anywhere(), found)
        named = [f"What turned out to cause {symptom}?", f"Did we ever find out why we had {symptom}?"]
        ask("single", rng.choice([f"What was behind {para}?", f"Why were we seeing {para}?", *named]), [ref])
    for setting, para, values in rng.sample(SETTINGS, 8):
        value = rng.choice(values)

        def setv(s: Session, setting=setting, value=value) -> str:  # noqa: ANN001
            entry = s.user(f"Let's set the {setting} to {value}; other values caused trouble in staging.")
            s.tool("edit", {"path": "config/settings.toml"}, "applied", False)
            s.assistant("Done, it's in config/settings.toml.")
            return entry

        text = rng.choice([f"What value did we pick for {para}?", f"What did we end up setting the {setting} to?"])
        ask("single", text, [history.plant(anywhere(), setv)])
    people = rng.sample(PEOPLE, len(PEOPLE))
    for (component, para), (person, pronoun) in zip(rng.sample(COMPONENTS, 5), people, strict=False):

        def owner(s: Session, component=component, person=person, pronoun=pronoun) -> str:  # noqa: ANN001
            entry = s.user(f"Heads up: {person} owns the {component}, run any change there past {pronoun} first.")
            s.assistant("Noted.")
            return entry

        text = rng.choice(
            [f"Who do I need to check with before changing {para}?", f"Who is in charge of the {component}?"]
        )
        ask("single", text, [history.plant(anywhere(), owner)])
    for artifact, para, command in rng.sample(COMMANDS, 5):

        def cmd(s: Session, artifact=artifact, command=command) -> str:  # noqa: ANN001
            entry = s.user(f"The Makefile target for the {artifact} is broken; regenerate it with `{command}` instead.")
            s.assistant("Got it, I'll use that command.")
            return entry

        text = rng.choice([f"How do I rebuild {para}?", f"What's the working command for the {artifact}?"])
        ask("single", text, [history.plant(anywhere(), cmd)])

    # multi: two sessions hold the answer
    for subject, options, need in purposes[10:16]:
        a, b = options[:2]
        first = rng.randrange(SESSIONS - 4)
        second = rng.randrange(first + 3, SESSIONS)
        refs = []
        for session, option in ((first, a), (second, b)):

            def measured(s: Session, option=option, subject=subject) -> str:  # noqa: ANN001
                s.user(f"Benchmark {option} on our workload.")
                s.tool("bash", {"command": f"python bench.py --lib {option}"}, "done", False)
                s.assistant(f"{option} for {subject}: {rng.randint(8, 90)} ms at p95 on our data.")
                return s.parent

            refs.append(history.plant(session, measured))
        text = rng.choice([f"How did the options for {need} that we measured compare?",
                           f"What numbers did the {subject} benchmarks give?"])  # fmt: skip
        ask("multi", text, refs)
    for need_name, need, (a, b) in VENDORS:
        first = rng.randrange(SESSIONS - 4)
        second = rng.randrange(first + 3, SESSIONS)
        refs = []
        for session, vendor in ((first, a), (second, b)):

            def quoted(s: Session, vendor=vendor, need_name=need_name) -> str:  # noqa: ANN001
                entry = s.user(f"{vendor} quoted {rng.choice([29, 49, 99, 199, 450])} dollars a month for {need_name}.")
                s.assistant("I'll add it to the comparison sheet.")
                return entry

            refs.append(history.plant(session, quoted))
        ask(
            "multi",
            rng.choice([f"What prices were we quoted for {need}?", f"What did the {need_name} offers cost?"]),
            refs,
        )

    # temporal: a recurring meeting, four times; asked by month, or "last week"
    for offset, (subject, para, outcomes) in enumerate(rng.sample(RECURRING, 3)):
        for k, outcome in enumerate(outcomes):
            session = offset + 3 * k

            def notes(s: Session, subject=subject, outcome=outcome) -> str:  # noqa: ANN001
                entry = s.user(f"Notes from today's {subject}: {outcome}.")
                s.assistant("Thanks, I'll keep that in mind.")
                return entry

            ref = history.plant(session, notes)
            day = datetime.fromisoformat(history.sessions[session].lines[0]["timestamp"][:10])
            if k == 3:
                asked = (day + timedelta(days=6)).date().isoformat()
                ask("temporal", f"What did we conclude at the {para} last week?", [ref], asked_at=asked)
            else:
                what = rng.choice([para, subject])
                ask("temporal", f"What came out of the {what} in {MONTHS[day.month - 1]}?", [ref])

    # updates: a decision, replaced months later
    for subject, para, old, new, reason in rng.sample(UPDATES, 10):
        first = rng.randrange(SESSIONS - 5)
        second = rng.randrange(first + 4, SESSIONS)

        def decided(s: Session, subject=subject, old=old) -> str:  # noqa: ANN001
            entry = s.user(f"Decision: we'll use {old} for the {subject}.")
            s.assistant(f"OK, {old} for the {subject}.")
            return entry

        def changed(s: Session, subject=subject, old=old, new=new, reason=reason) -> str:  # noqa: ANN001
            entry = s.user(f"Change of plan on the {subject}: we're moving from {old} to {new} because of {reason}.")
            s.assistant(f"Understood, {new} from now on.")
            return entry

        before, after = history.plant(first, decided), history.plant(second, changed)
        text = rng.choice([f"What are we using for {para} these days?", f"Which {subject} are we on now?"])
        ask("update", text, [after], replaced=[before])
    return history, questions


def absent_questions(project: str, text: str, number: int) -> list[dict]:
    """Questions on subjects this project's sessions never mention (checked on the written text)."""
    rng = random.Random(2000 + number)
    lowered = text.lower()
    chosen = [q for key, q in ABSENT if key.lower() not in lowered]
    rng.shuffle(chosen)
    out = []
    for n, question in enumerate(chosen[:10]):
        qid = _qid(project, "abstention", n)
        out.append(
            {"id": qid, "project": project, "category": "abstention", "question": question, "asked_at": "2025-11-01",
             "evidence": [], "split": _split(qid)}
        )  # fmt: skip
    return out


def reflect_session_id(session_id: str) -> str:
    """The reflect corpus numbers its sessions from 1, as the first project here does: in the benchmark
    they are numbered from 401."""
    return f"00000000-0000-4000-8000-{400 + int(session_id.rsplit('-', 1)[1]):012d}"


def assemble(folder: Path) -> list[Path]:
    """The benchmark's sessions, copied into `folder`: the generated histories, the reflect corpus under
    its new ids, and the fixture."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(OUT / "sessions", folder)
    for source in sorted((REFLECT / "sessions").rglob("*.jsonl")):
        lines = source.read_text().split("\n")
        header = json.loads(lines[0])
        new_id = reflect_session_id(header["id"])
        lines[0] = json.dumps(header | {"id": new_id}, separators=(",", ":"))
        target = folder / "reflect" / source.name.replace(header["id"], new_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines))
    (folder / "fixtures").mkdir()
    shutil.copy(FIXTURE, folder / "fixtures" / FIXTURE.name)
    return sorted(folder.rglob("*.jsonl"))


def _entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _text(entry: dict) -> str:
    content = entry.get("message", {}).get("content", "")
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


# The reflect corpus: (category, question, what its evidence says, what the replaced decision said, or
# "toolResult" when the evidence is a tool's output). The evidence text is looked up in the user's messages
# and the agent's replies (else the tools'); every session that has it is evidence: the first mention in each.
REFLECT_QUESTIONS = [
    ("multi", "Which JavaScript package manager does this repo want me to run?", "pnpm", None),
    ("multi", "What options do I pass when running the Python test suite?", "pytest -x -q", None),
    (
        "multi",
        "Is it fine to debug with print statements here?",
        ["print debugging", "print() calls", "print statements"],
        None,
    ),
    ("multi", "How should I word commit messages?", "imperative", None),
    ("multi", "Do new functions need annotations?", ["type hints", "type annotations", "annotate the types"], None),
    (
        "multi",
        "Why did the migrations fail to reach the database?",
        "port 5432 failed: Connection refused",
        "toolResult",
    ),
    ("multi", "Why could the tests not import our own package?", "No module named 'shop_api'", "toolResult"),
    (
        "multi",
        "Why does type checking the client fail on the shared types?",
        "Cannot find module '@shop/types'",
        "toolResult",
    ),
    ("multi", "Why did bringing the containers up fail with a port error?", "port is already allocated", "toolResult"),
    ("multi", "Where is the checkout total computed?", "CheckoutService.total()", None),
    ("multi", "Where are discount codes checked?", ["discount codes are validated", "validates discount codes"], None),
    ("multi", "How does the orders list split its results into pages?", "limit and offset", None),
    ("update", "Where are user sessions stored now?", "Switched session storage", "keep user sessions in Redis"),
    ("update", "Is the public API still REST?", "moves to GraphQL", "The public API is REST under /v1"),
    ("update", "What database do the tests run against these days?", "Postgres container", "SQLite database"),
    ("update", "What format do application logs use now?", "JSON lines", "plain text lines"),
    ("update", "Where do we deploy to now?", "AWS ECS", "We deploy with GitHub Actions to Fly.io"),
    ("update", "How are money amounts stored now?", "integer cents", "stored as floats"),
    ("update", "Where do feature flags come from these days?", "LaunchDarkly", "read from environment variables"),
    ("update", "How is frontend state managed now?", "React Query", "Redux store"),
    ("single", "What backs the rate limiter's counters?", "rate limiter counters", None),
    ("single", "Which header do the versioned endpoints need on every call?", "X-Api-Key", None),
    ("single", "How do test fixtures set up their tables?", "SQLAlchemy models", None),
    ("single", "What do log lines carry so requests can be traced?", "request id", None),
    ("single", "Which region do the Fly.io machines run in?", "ams region", None),
    ("single", "Do order totals include tax?", "VAT", None),
    ("single", "What naming style do feature flag names follow?", "kebab-case", None),
    ("single", "When are the Redux DevTools switched on?", "DevTools", None),
    ("temporal", "What did we decide about session storage in July 2024?", "sessions in Redis", None),
    ("temporal", "What did we say about API keys for the endpoints in July 2024?", "X-Api-Key", None),
]


def reflect_questions() -> list[dict]:
    """Questions on the reflect corpus: its rules, failures, duplicates (several sessions each), its
    decisions and the ones that replaced them, and its compatible facts."""
    sessions = {p: _entries(p) for p in sorted((REFLECT / "sessions").rglob("*.jsonl"))}
    project = next(iter(sessions.values()))[0]["cwd"]

    def find(text: str | list[str], roles: tuple[str, ...]) -> list[dict]:
        texts = [text] if isinstance(text, str) else text
        found = []
        for entries in sessions.values():
            session_id = reflect_session_id(entries[0]["id"])
            for entry in entries[1:]:
                said = _text(entry)
                if entry.get("message", {}).get("role") in roles and any(t.lower() in said.lower() for t in texts):
                    found.append({"session_id": session_id, "entry_id": entry["id"]})
                    break  # the first mention in a session: the statement, not the echo
        if not found:
            raise ValueError(f"no message in the reflect corpus says {text!r}")
        return found

    questions: list[dict] = []
    for category, question, evidence, replaced in REFLECT_QUESTIONS:
        qid = f"reflect-{category}-{sum(q['category'] == category for q in questions):02d}"
        refs = find(evidence, ("toolResult",) if replaced == "toolResult" else ("user", "assistant"))
        if category in ("update", "single", "temporal"):
            refs = refs[-1:] if category == "update" else refs[:1]
        extra = {"replaced": find(replaced, ("user",))[:1]} if replaced and replaced != "toolResult" else {}
        questions.append(
            {"id": qid, "project": project, "category": category, "question": question, "asked_at": "2025-11-01",
             "evidence": refs, "split": _split(qid), **extra}
        )  # fmt: skip
    return questions


# The fixture: turns hand-labelled memorable, asked about as a person would weeks later.
FIXTURE_QUESTIONS = [
    (18, "What did I tell you to read before retrying a change to a component?"),
    (34, "How should the leftover chalk styling of the thinking border be handled?"),
    (70, "Where do the TUI tests get their default themes from?"),
    (231, "Does the editor's thinking-level border get a colour token of its own?"),
    (275, "What is the rule about how wide the lines a component renders may be?"),
    (299, "How should shortened text behave when it contains a line break?"),
    (389, "Should the theme files give colours as palette indices?"),
    (409, "Which theme's grays did we tweak because dim was too faint?"),
    (441, "What hex value did we pick for the accent colour?"),
    (499, "Do we keep a separate gray just for links?"),
    (523, "How should the footer be made less prominent without touching the palette?"),
    (531, "Which colour do markdown list markers use?"),
    (597, "At what percentage does the context usage indicator turn into an error?"),
    (681, "What must COLORTERM be set to for full colour in the terminal?"),
    (707, "Can someone live-edit a custom theme without restarting?"),
    (759, "What should the agent read first when asked to make a new theme?"),
    (791, "When should the theme picker apply the selected theme?"),
    (809, "What actually caused the rendering glitches when switching themes?"),
    (856, "What must happen when a theme file is broken?"),
    (864, "How should setTheme report a problem to its caller?"),
    (918, "What names did we settle on for the tool header and tool output tokens?"),
]
FIXTURE_ABSENT = [
    ("Kubernetes", "How did we configure the Kubernetes deployment?"),
    ("GraphQL", "What did we decide about GraphQL pagination?"),
    ("Stripe", "Which Stripe webhook events do we handle?"),
    ("Postgres", "Why did we pick Postgres for storing sessions?"),
    ("Docker", "How were the Docker images slimmed down?"),
]


def fixture_questions() -> list[dict]:
    """Questions on the real pi session: one per labelled memorable turn (its user message, `L` + line),
    and subjects it never mentions."""
    entries = _entries(FIXTURE)
    session_id, project = entries[0]["id"], entries[0]["cwd"]
    lines = FIXTURE.read_text().splitlines()
    questions: list[dict] = []
    for n, (line, question) in enumerate(FIXTURE_QUESTIONS):
        if json.loads(lines[line - 1])["message"]["role"] != "user":
            raise ValueError(f"{FIXTURE.name}:{line} is not the user's message")
        qid = f"pi-mono-single-{n:02d}"
        questions.append(
            {"id": qid, "project": project, "category": "single", "question": question, "asked_at": "2025-12-15",
             "evidence": [{"session_id": session_id, "entry_id": f"L{line:06d}"}], "split": _split(qid)}
        )  # fmt: skip
    lowered = FIXTURE.read_text().lower()
    for n, (key, question) in enumerate(FIXTURE_ABSENT):
        if key.lower() in lowered:
            raise ValueError(f"{FIXTURE.name} mentions {key}: not a question without an answer")
        qid = f"pi-mono-abstention-{n:02d}"
        questions.append(
            {"id": qid, "project": project, "category": "abstention", "question": question, "asked_at": "2025-12-15",
             "evidence": [], "split": _split(qid)}
        )  # fmt: skip
    return questions


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    sessions = OUT / "sessions"
    questions: list[dict] = []
    reflect = scan_sessions(REFLECT / "sessions")[0]
    for number, project in enumerate(PROJECTS):
        history, asked = build_project(number, project)
        history.write(sessions)
        text = "".join(json.dumps(line) for s in history.sessions for line in s.lines)
        text += "".join(found.path.read_text() for found in reflect if found.project == project)  # its history too
        questions += asked + absent_questions(project, text, number)
    questions += reflect_questions() + fixture_questions()
    (OUT / "questions.json").write_text(json.dumps(questions, indent=1, ensure_ascii=False) + "\n")
    files = assemble(OUT.parent / ".assembled")
    days = sorted({found.partition for found in scan_sessions(OUT.parent / ".assembled")[0]})
    shutil.rmtree(OUT.parent / ".assembled")
    by = {
        c: sum(q["category"] == c for q in questions) for c in ("single", "multi", "temporal", "update", "abstention")
    }
    held = sum(q["split"] == "held_out" for q in questions)
    print(f"{len(files)} sessions over {days[0]}..{days[-1]}; {len(questions)} questions {by}; held out {held}")


if __name__ == "__main__":
    main()
