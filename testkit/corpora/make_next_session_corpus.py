"""The next-session corpus: histories where later sessions depend on what earlier ones learned, and, for every
later session, what it needs from the past (bench/corpus/next_session/).

    uv run python -m testkit.corpora.make_next_session_corpus

Three projects (a Python API, a TypeScript dashboard, a Go and Terraform toolbox), 15 pi v3 sessions each,
nine days apart from January to May 2025: 45 sessions. Each project's knowledge (`KNOWLEDGE`) is planted in
ordinary turns, in the words a person uses at the keyboard: rules the user states, decisions with their
reasons (two of them replaced later), gotchas whose root cause the assistant finds, facts the assistant
looks up. Each later session starts with a task, and its needs are labelled: the knowledge it relies on,
as it stands when the session starts (a replaced decision's newer choice, never the old one). Some later
sessions restate a rule because the agent got it wrong: that restatement is evidence the rule was needed.

A need is judged met by a briefing line that names it (`match`: any of the keyword sets, all words of the set
in the line, case-insensitive); a replaced decision shown as current is a line matching its `stale` set.
Every later session also carries the question its agent would ask the memory first, and the sessions that
hold the answer, for recall@5 through search.

Written before any tuning (the labels were fixed when this file was first committed); each later session is
assigned to `tune` or `held_out` (one in three) by a hash of its id.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from testkit.corpora.make_reflect_corpus import Session
from testkit.paths import CORPUS as CORPUS_DIR

OUT = CORPUS_DIR / "next_session"
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
GAP_DAYS = 9
FIRST_SESSION_NUMBER = 9001


@dataclass(frozen=True)
class Knowledge:
    kind: str  # rule | decision | gotcha | fact
    user: str  # what the person says
    assistant: str  # what the assistant answers (a finding lives here)
    match: list[list[str]]  # keyword sets: a line naming the knowledge holds every word of one set
    tool: tuple[str, dict, str, bool] | None = None  # a tool call and its output before the answer
    stale: list[list[str]] = field(default_factory=list)  # for a replaced decision: the old choice's words
    replaces: str | None = None


@dataclass(frozen=True)
class Later:
    prompt: str  # the session's first prompt
    needs: list[str]  # knowledge ids it relies on
    question: str  # what its agent would ask the memory first
    answer: str  # the knowledge id that answers the question
    restate: str | None = None  # a rule the person has to restate in this session (its id)


# --- recipe-api: Python, FastAPI ---------------------------------------------------------------------------
A = "/home/dev/recipe-api"
A_KNOWLEDGE = {
    "a-uv": Knowledge(
        "rule",
        "we use uv for everything in this repo. never pip install into the system python, it broke my machine twice",
        "Understood: dependencies go through uv (`uv add`, `uv run`), never a global pip install.",
        [["uv"]],
    ),
    "a-utc": Knowledge(
        "rule",
        "all timestamps are stored in UTC in the database, convert to local time only in the frontend",
        "Noted. I changed `created_at` to a timezone-aware UTC column and left conversion to the client.",
        [["utc"]],
    ),
    "a-dramatiq": Knowledge(
        "decision",
        "for the background jobs let's go with dramatiq over celery, the celery worker kept leaking memory in "
        "the old project",
        "Set up Dramatiq with the Redis broker in `app/jobs.py`; the first job resizes uploaded recipe photos.",
        [["dramatiq"]],
    ),
    "a-redis-tests": Knowledge(
        "gotcha",
        "the integration tests just hang forever now, can you look?",
        "Found it: the tests hung because Redis was not running. The root cause is the job fixture in "
        "`tests/conftest.py`, which connects to localhost:6379 and waits forever. Start it first with "
        "`docker compose up -d redis`, then the suite passes.",
        [["redis", "compose"], ["redis", "6379"]],
        tool=("bash", {"command": "pytest tests/integration -x"}, "collected 42 items\n^C KeyboardInterrupt", True),
    ),
    "a-migrate": Knowledge(
        "fact",
        "how do i run the database migrations again?",
        "`make migrate` runs `alembic upgrade head` against the dev database, which listens on port 5433 "
        "(not 5432, the system Postgres has that one).",
        [["make migrate"], ["5433"]],
        tool=(
            "read",
            {"path": "Makefile"},
            "migrate:\n\tDATABASE_URL=postgresql://localhost:5433/recipes alembic upgrade head",
            False,
        ),
    ),
    "a-problem-json": Knowledge(
        "decision",
        "errors from the api should follow rfc 7807, problem+json, so the mobile app can show them properly",
        "Added an exception handler that turns every HTTPException into an RFC 7807 problem+json body with "
        "type, title, status and detail.",
        [["7807"], ["problem+json"]],
    ),
    "a-from-attributes": Knowledge(
        "gotcha",
        "the recipe response is empty again after the pydantic upgrade, what happened?",
        "The cause: in pydantic v2 `orm_mode` was renamed `from_attributes`, and the old setting is silently "
        "ignored, so the models read nothing from the ORM objects. I set `from_attributes=True` in "
        "`app/schemas.py`.",
        [["from_attributes"]],
    ),
    "a-api-tests": Knowledge(
        "rule",
        "every endpoint must have a test in tests/api/, no exceptions, even the tiny ones",
        "Agreed. I added tests/api/test_health.py for the one endpoint that had none.",
        [["tests/api"]],
    ),
    "a-arq": Knowledge(
        "decision",
        "ok we're switching the background jobs from dramatiq to arq, we need asyncio-native workers now that "
        "everything is async",
        "Replaced Dramatiq with arq in `app/jobs.py`: the photo resize job is now an async function and the "
        "worker runs with `arq app.jobs.WorkerSettings`.",
        [["arq"]],
        stale=[["dramatiq"]],
        replaces="a-dramatiq",
    ),
}
A_SESSIONS: list[tuple[list[str], Later | None]] = [
    (["a-uv"], None),
    (["a-dramatiq", "a-utc"], None),
    (
        ["a-redis-tests"],
        Later(
            "Add a background job that emails the weekly meal plan.",
            ["a-dramatiq", "a-uv"],
            "which library do we use for background jobs?",
            "a-dramatiq",
        ),
    ),
    (
        ["a-migrate"],
        Later(
            "Add a dependency to parse ingredient quantities and use it in the importer.",
            ["a-uv"],
            "how do we install Python dependencies here?",
            "a-uv",
            restate="a-uv",
        ),
    ),
    (
        ["a-problem-json"],
        Later(
            "The integration tests for the photo job fail, fix them.",
            ["a-redis-tests"],
            "why do the integration tests hang?",
            "a-redis-tests",
        ),
    ),
    (
        ["a-from-attributes"],
        Later(
            "Add a column for the recipe's cooking time and migrate the database.",
            ["a-migrate", "a-utc"],
            "how do we run the database migrations?",
            "a-migrate",
        ),
    ),
    (
        ["a-api-tests"],
        Later(
            "Return a proper error when a recipe is not found.",
            ["a-problem-json"],
            "what format do our API errors use?",
            "a-problem-json",
        ),
    ),
    (
        [],
        Later(
            "Add an endpoint that lists recipes by cuisine.",
            ["a-api-tests", "a-problem-json", "a-from-attributes"],
            "where do endpoint tests go?",
            "a-api-tests",
            restate="a-api-tests",
        ),
    ),
    (
        ["a-arq"],
        Later(
            "Store when a meal plan was last sent and show it in the API.",
            ["a-utc", "a-migrate"],
            "how are timestamps stored in the database?",
            "a-utc",
        ),
    ),
    (
        [],
        Later(
            "Add a job that cleans up unused photo uploads every night.",
            ["a-arq", "a-redis-tests"],
            "which library runs our background jobs now?",
            "a-arq",
        ),
    ),
    (
        [],
        Later(
            "The shopping list response comes back empty, find out why.",
            ["a-from-attributes"],
            "why would a response model come back empty after the pydantic upgrade?",
            "a-from-attributes",
        ),
    ),
    (
        [],
        Later(
            "Add pagination to the recipes endpoint.",
            ["a-api-tests", "a-problem-json"],
            "what is the rule for endpoint tests?",
            "a-api-tests",
        ),
    ),
    (
        [],
        Later(
            "Retry the photo resize job when the storage is down.",
            ["a-arq", "a-uv"],
            "what runs the photo resize job?",
            "a-arq",
        ),
    ),
    (
        [],
        Later(
            "Add a created_by column to recipes, with a migration.",
            ["a-migrate", "a-utc", "a-uv"],
            "which port is the dev database on?",
            "a-migrate",
        ),
    ),
    (
        [],
        Later(
            "Set up the project on my new laptop.",
            ["a-uv", "a-migrate", "a-redis-tests"],
            "how do we install dependencies in this project?",
            "a-uv",
        ),
    ),
]

# --- fleet-dashboard: TypeScript, React ----------------------------------------------------------------------
B = "/home/dev/fleet-dashboard"
B_KNOWLEDGE = {
    "b-pnpm": Knowledge(
        "rule",
        "always use pnpm here, never npm or yarn. npm rewrote the lockfile last time and broke the build",
        "Got it: pnpm only. I removed the stray package-lock.json and reinstalled with `pnpm install`.",
        [["pnpm"]],
    ),
    "b-vitest": Knowledge(
        "decision",
        "we decided to use vitest instead of jest, jest kept breaking on our esm imports",
        "Switched the test runner to Vitest: `vitest.config.ts` added, Jest and babel-jest removed, 38 tests pass.",
        [["vitest"]],
    ),
    "b-recharts": Knowledge(
        "decision",
        "for the charts let's use recharts, it's simple and looks fine for now",
        "Added Recharts and built the fuel usage line chart in `src/charts/FuelChart.tsx`.",
        [["recharts"]],
    ),
    "b-vite-prefix": Knowledge(
        "gotcha",
        "the map is just blank, no tiles at all. the token is in .env",
        "The root cause: Vite only exposes environment variables prefixed with `VITE_` to the client, so "
        "`MAPBOX_TOKEN` was undefined in the browser. I renamed it to `VITE_MAPBOX_TOKEN` in `.env` and in "
        "`src/map/Map.tsx`; the tiles load now.",
        [["vite_mapbox_token"], ["vite_", "prefix"]],
    ),
    "b-port": Knowledge(
        "fact",
        "what port is the dev server on, and where does the api go?",
        "The dev server runs on port 5173; `vite.config.ts` proxies `/api` to the backend on localhost:8080.",
        [["5173"]],
        tool=(
            "read",
            {"path": "vite.config.ts"},
            "server: { port: 5173, proxy: { '/api': 'http://localhost:8080' } }",
            False,
        ),
    ),
    "b-pascal": Knowledge(
        "rule",
        "component files are PascalCase, one component per file. no index.tsx barrels please",
        "Renamed `vehicleList.tsx` to `VehicleList.tsx` and split `widgets.tsx` into one file per component.",
        [["pascalcase"]],
    ),
    "b-workers": Knowledge(
        "gotcha",
        "the e2e tests fail randomly in ci, different test every time",
        "They flake because the Playwright tests run in parallel against one seeded database and delete each "
        "other's vehicles. Running Playwright with `--workers=1` makes them pass every time; I set `workers: 1` "
        "in `playwright.config.ts`.",
        [["workers"]],
    ),
    "b-date-fns": Knowledge(
        "rule",
        "dates are shown with date-fns, format 'd MMM yyyy'. never pull in moment, it's huge",
        "Replaced the two moment calls with date-fns `format(date, 'd MMM yyyy')` and removed moment.",
        [["date-fns"]],
    ),
    "b-echarts": Knowledge(
        "decision",
        "recharts chokes on the 50k point trip history, we're switching the charts to echarts",
        "Moved all charts from Recharts to ECharts (`echarts-for-react`); the trip history renders 50k points "
        "smoothly now.",
        [["echarts"]],
        stale=[["recharts"]],
        replaces="b-recharts",
    ),
}
B_SESSIONS: list[tuple[list[str], Later | None]] = [
    (["b-pnpm"], None),
    (["b-vitest", "b-recharts"], None),
    (
        ["b-vite-prefix"],
        Later(
            "Add a test for the vehicle status badge.",
            ["b-vitest", "b-pnpm"],
            "which test runner does the dashboard use?",
            "b-vitest",
        ),
    ),
    (
        ["b-port"],
        Later(
            "Install a library for drawing the route polylines on the map.",
            ["b-pnpm"],
            "which package manager do we use?",
            "b-pnpm",
            restate="b-pnpm",
        ),
    ),
    (
        ["b-pascal"],
        Later(
            "Add a chart of maintenance costs per vehicle.",
            ["b-recharts", "b-pnpm"],
            "which charting library do we use?",
            "b-recharts",
        ),
    ),
    (
        ["b-workers"],
        Later(
            "The map shows no tiles on the staging build either, fix it.",
            ["b-vite-prefix"],
            "why was the map blank?",
            "b-vite-prefix",
        ),
    ),
    (
        ["b-date-fns"],
        Later(
            "Add a driver profile page component.",
            ["b-pascal", "b-vitest"],
            "how do we name component files?",
            "b-pascal",
            restate="b-pascal",
        ),
    ),
    (
        ["b-echarts"],
        Later(
            "The e2e tests are red again in CI, randomly.",
            ["b-workers"],
            "why do the e2e tests flake in CI?",
            "b-workers",
        ),
    ),
    (
        [],
        Later(
            "Show the last service date on each vehicle card.",
            ["b-date-fns", "b-pascal"],
            "how do we format dates in the UI?",
            "b-date-fns",
        ),
    ),
    (
        [],
        Later(
            "Add a chart of fuel usage per driver.",
            ["b-echarts", "b-pnpm"],
            "which charting library do we use now?",
            "b-echarts",
        ),
    ),
    (
        [],
        Later(
            "Point the dev proxy at the new API gateway.", ["b-port"], "which port does the dev server use?", "b-port"
        ),
    ),
    (
        [],
        Later(
            "Add a Mapbox geocoder search box to the map.",
            ["b-vite-prefix", "b-pnpm"],
            "how do environment variables reach the client?",
            "b-vite-prefix",
        ),
    ),
    (
        [],
        Later(
            "Write tests for the trip history chart.",
            ["b-vitest", "b-echarts"],
            "what do we write unit tests with?",
            "b-vitest",
        ),
    ),
    (
        [],
        Later(
            "Add an e2e test for the login flow.",
            ["b-workers", "b-pnpm"],
            "how must playwright be run in CI?",
            "b-workers",
        ),
    ),
    (
        [],
        Later(
            "Show trip start times in the trip table.", ["b-date-fns"], "which date library do we use?", "b-date-fns"
        ),
    ),
]

# --- infra-tools: Go CLI and Terraform ----------------------------------------------------------------------
C = "/home/dev/infra-tools"
C_KNOWLEDGE = {
    "c-no-apply": Knowledge(
        "rule",
        "never run terraform apply locally, only the ci pipeline applies. plan is fine",
        "Understood: I'll only run `terraform plan` locally and leave apply to the pipeline.",
        [["terraform", "apply"]],
    ),
    "c-cobra": Knowledge(
        "decision",
        "we'll use cobra for the cli instead of urfave/cli, we want nested subcommands and shell completions",
        "Set up the CLI with cobra: `cmd/root.go` plus `infra dns` and `infra certs` subcommands, completions "
        "included.",
        [["cobra"]],
    ),
    "c-ulimit": Knowledge(
        "gotcha",
        "go test dies halfway with some file error",
        "The integration suite fails with 'too many open files' because every test opens its own API client "
        "and never closes it. Raising the limit with `ulimit -n 4096` before `go test ./...` fixes it; I also "
        "close the clients in `t.Cleanup`.",
        [["ulimit"], ["too many open files"]],
        tool=("bash", {"command": "go test ./..."}, "dial tcp: socket: too many open files\nFAIL infra/dns", True),
    ),
    "c-context": Knowledge(
        "fact",
        "which kube context is staging?",
        "The staging cluster's context is `gke_infra_staging`; pass `--context gke_infra_staging` to kubectl so "
        "nothing lands on production by accident.",
        [["gke_infra_staging"]],
        tool=("bash", {"command": "kubectl config get-contexts"}, "gke_infra_prod\ngke_infra_staging", False),
    ),
    "c-go122": Knowledge(
        "decision",
        "pin go to 1.22 in go.mod and in ci, the build image doesn't have anything newer",
        "Pinned Go 1.22: `go 1.22` in go.mod and `go-version: '1.22'` in the CI workflow.",
        [["1.22"]],
    ),
    "c-errors": Knowledge(
        "rule",
        "wrap errors with fmt.Errorf and %w, never pkg/errors, we're dropping that dependency",
        'Replaced the pkg/errors calls with `fmt.Errorf("...: %w", err)` and removed the dependency.',
        [["%w"], ["fmt.errorf"]],
    ),
    "c-lint": Knowledge(
        "gotcha",
        "the lint job fails on files i didn't even touch",
        "It fails on the generated protobuf code: golangci-lint checks `internal/gen/` unless it is excluded. "
        "I added `internal/gen` to `exclude-dirs` in `.golangci.yml`.",
        [["golangci"], ["internal/gen"]],
    ),
    "c-state": Knowledge(
        "fact",
        "where does the terraform state live?",
        "The state is in the S3 bucket `infra-tf-state`, locked through the DynamoDB table `tf-locks` "
        "(see `backend.tf`).",
        [["infra-tf-state"]],
        tool=("read", {"path": "backend.tf"}, 'bucket = "infra-tf-state"\ndynamodb_table = "tf-locks"', False),
    ),
    "c-go123": Knowledge(
        "decision",
        "the build image has go 1.23 now, bump go to 1.23 everywhere and drop 1.22",
        "Bumped Go to 1.23 in go.mod and the CI workflow; 1.22 is gone.",
        [["1.23"]],
        stale=[["1.22"]],
        replaces="c-go122",
    ),
}
C_SESSIONS: list[tuple[list[str], Later | None]] = [
    (["c-no-apply"], None),
    (["c-cobra", "c-go122"], None),
    (
        ["c-ulimit"],
        Later(
            "Add a subcommand that rotates the TLS certificates.",
            ["c-cobra"],
            "which CLI library do we use?",
            "c-cobra",
        ),
    ),
    (
        ["c-context"],
        Later(
            "Change the DNS TTL for the api records and roll it out.",
            ["c-no-apply"],
            "can I run terraform apply from my machine?",
            "c-no-apply",
            restate="c-no-apply",
        ),
    ),
    (
        ["c-errors"],
        Later(
            "The integration tests fail again in the DNS package.",
            ["c-ulimit"],
            "why does go test fail with too many open files?",
            "c-ulimit",
        ),
    ),
    (
        ["c-lint"],
        Later(
            "Check that the new ingress works on staging.",
            ["c-context"],
            "what is the kubectl context for staging?",
            "c-context",
        ),
    ),
    (
        ["c-state"],
        Later(
            "Add a command to list expiring certificates, with proper error handling.",
            ["c-errors", "c-cobra"],
            "how do we wrap errors?",
            "c-errors",
            restate="c-errors",
        ),
    ),
    (
        ["c-go123"],
        Later(
            "The lint job is red on my branch but I only changed docs.",
            ["c-lint"],
            "why does the lint job fail on files nobody touched?",
            "c-lint",
        ),
    ),
    ([], Later("Update the CI workflow to cache Go modules.", ["c-go123"], "which Go version do we use?", "c-go123")),
    (
        [],
        Later(
            "Import the existing DNS zone into Terraform.",
            ["c-state", "c-no-apply"],
            "where is the terraform state stored?",
            "c-state",
        ),
    ),
    (
        [],
        Later(
            "Add a `infra status` subcommand that checks staging.",
            ["c-cobra", "c-context", "c-errors"],
            "how is the CLI built?",
            "c-cobra",
        ),
    ),
    (
        [],
        Later(
            "Run the whole test suite before the release.",
            ["c-ulimit", "c-go123"],
            "what do we need before running the integration tests?",
            "c-ulimit",
        ),
    ),
    (
        [],
        Later(
            "Add a new Terraform module for the monitoring bucket.",
            ["c-no-apply", "c-state"],
            "who applies terraform changes?",
            "c-no-apply",
        ),
    ),
    (
        [],
        Later(
            "Generate the protobuf code for the new audit service.",
            ["c-lint", "c-go123"],
            "how do we keep lint off the generated code?",
            "c-lint",
        ),
    ),
    (
        [],
        Later(
            "Roll back the staging deployment of the cert rotator.",
            ["c-context"],
            "which kube context is staging?",
            "c-context",
        ),
    ),
]

PROJECTS = [(A, A_KNOWLEDGE, A_SESSIONS), (B, B_KNOWLEDGE, B_SESSIONS), (C, C_KNOWLEDGE, C_SESSIONS)]

# Ordinary work between the knowledge: what a session also does (not needed later).
FILLER = {
    A: [("rename get_recipe to fetch_recipe everywhere", "Renamed it in 6 files; the tests pass."),
        ("add a docstring to the importer", "Added a docstring to `app/importer.py`."),
        ("bump fastapi to the latest patch", "FastAPI bumped to the latest patch release; nothing else changed.")],
    B: [("make the vehicle card a bit wider", "Widened the card to 320px in `VehicleCard.tsx`."),
        ("fix the typo in the header", "Fixed 'Dashbaord' in `Header.tsx`."),
        ("sort the vehicle list by name", "The list is sorted by name now.")],
    C: [("add a --verbose flag to the dns command", "Added `--verbose` to `infra dns`."),
        ("tidy the go.mod", "Ran `go mod tidy`; two unused modules removed."),
        ("update the README usage section", "Updated the usage section with the new subcommands.")],
}  # fmt: skip


def _assistant_reply(task: str) -> str:
    return f"Done: {task[0].lower()}{task[1:].rstrip('.')}. The tests pass."


def build(out: Path = OUT) -> dict:
    rng = random.Random(20250106)
    if out.exists():
        shutil.rmtree(out)
    sessions_dir = out / "sessions"
    labels: dict = {"projects": {}, "sessions": []}
    number = FIRST_SESSION_NUMBER
    for p, (project, knowledge, plan) in enumerate(PROJECTS):
        labels["projects"][project] = {
            key: {"kind": k.kind, "match": k.match, "stale": k.stale, "replaces": k.replaces}
            for key, k in knowledge.items()
        }
        planted_in: dict[str, str] = {}
        for i, (plants, later) in enumerate(plan):
            started = START + timedelta(days=i * GAP_DAYS + p * 3, hours=rng.randint(0, 8))
            session = Session(rng, number, started, cwd=project)
            number += 1
            if later:
                missing = [n for n in later.needs if n not in planted_in]
                assert not missing, f"{session.id} needs knowledge no earlier session holds: {missing}"
                session.user(later.prompt)
                session.assistant(_assistant_reply(later.prompt))
                if later.restate:
                    session.user(knowledge[later.restate].user)
                    session.assistant(knowledge[later.restate].assistant)
            for key in plants:
                item = knowledge[key]
                session.user(item.user)
                if item.tool:
                    session.tool(*item.tool)
                session.assistant(item.assistant)
                planted_in[key] = session.id
            task, reply = FILLER[project][i % len(FILLER[project])]
            session.user(task)
            session.assistant(reply)
            session.write(sessions_dir)
            if later:
                labels["sessions"].append(
                    {
                        "session_id": session.id,
                        "project": project,
                        "day": session.day,
                        "prompt": later.prompt,
                        "needs": later.needs,
                        "question": later.question,
                        "answer": later.answer,
                        "answer_sessions": [planted_in[later.answer]],
                        "restated": later.restate,
                        "split": "held_out"
                        if int(hashlib.sha1(session.id.encode()).hexdigest(), 16) % 3 == 0
                        else "tune",
                    }
                )
    (out / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")
    return labels


if __name__ == "__main__":
    made = build()
    later = made["sessions"]
    print(f"{OUT}: {sum(len(p[2]) for p in PROJECTS)} sessions, {len(later)} later sessions with needs "
          f"({sum(s['split'] == 'held_out' for s in later)} held out)")  # fmt: skip
