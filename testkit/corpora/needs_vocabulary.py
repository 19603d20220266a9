"""The words of the needs corpus (make_needs_corpus.py): three projects, each with its components, its
language's files and commands, and the choices its decisions are made between.

Pure data: the generator draws from it with a fixed seed, so the corpus is the same on every run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Purpose:
    """What a decision is about, the libraries it chooses between, and the tasks that rely on it."""

    name: str
    options: tuple[str, ...]
    reasons: tuple[str, ...]
    tasks: tuple[str, ...]  # "{comp}" is the component


@dataclass(frozen=True)
class Language:
    source: str  # a component's main file ("{comp}")
    config: str  # where its local settings live
    test: str  # the command that runs its tests
    helper: str  # the client helper a rule makes mandatory ("{comp}", "{Comp}")
    id_helper: str  # the id constructor a rule makes mandatory
    purposes: tuple[Purpose, ...]


@dataclass(frozen=True)
class Project:
    cwd: str
    name: str
    language: Language
    components: tuple[str, ...]


PYTHON = Language(
    source="app/{comp}/service.py",
    config="config/{comp}.env",
    test="uv run pytest tests/{comp} -x -q",
    helper="{comp}_client",
    id_helper="new_{comp}_id",
    purposes=(
        Purpose("the HTTP client", ("httpx", "requests", "aiohttp", "urllib3"),
                ("it has proper timeouts", "the old one leaked connections", "we need async calls"),
                ("Call the partner API from the {comp} module.", "Fetch the exchange rates for {comp}.")),
        Purpose("retries", ("tenacity", "backoff", "stamina", "retrying"),
                ("it supports jitter", "the decorator is simpler", "it logs every attempt"),
                ("Retry the {comp} sync when the upstream times out.",
                 "Make the {comp} import survive flaky network.")),
        Purpose("serialisation", ("orjson", "msgspec", "ujson", "simplejson"),
                ("it is much faster", "it handles datetimes", "it validates while decoding"),
                ("Speed up the {comp} export, the JSON step is slow.", "Serialise the {comp} snapshots to disk.")),
        Purpose("the cache", ("cachetools", "diskcache", "redis", "aiocache"),
                ("it survives restarts", "it needs no server", "it is shared between workers"),
                ("Cache the {comp} lookups, they hit the database too often.", "Add caching to the {comp} read path.")),
        Purpose("scheduling", ("apscheduler", "rq-scheduler", "celery-beat", "huey"),
                ("it has cron syntax", "it persists jobs", "it is tiny"),
                ("Run the {comp} cleanup every night.", "Schedule the {comp} report for Monday mornings.")),
        Purpose("the CSV parser", ("polars", "pandas", "clevercsv", "pyarrow"),
                ("it is faster on big files", "it keeps types", "it has no dependency"),
                ("Import the {comp} spreadsheet the finance team sent.", "Parse the {comp} bank export.")),
    ),
)  # fmt: skip

TYPESCRIPT = Language(
    source="src/{comp}/{Comp}Panel.tsx",
    config="src/{comp}/{comp}.config.ts",
    test="pnpm vitest run src/{comp}",
    helper="use{Comp}Client",
    id_helper="make{Comp}Id",
    purposes=(
        Purpose("state management", ("zustand", "redux", "jotai", "valtio"),
                ("less boilerplate", "devtools support", "it works with suspense"),
                ("Keep the {comp} filters when the user navigates away.",
                 "Share the {comp} selection between panels.")),
        Purpose("data fetching", ("tanstack-query", "swr", "rtk-query", "apollo"),
                ("it caches and dedupes", "it retries on focus", "it has mutations"),
                ("Load the {comp} list from the API with paging.", "Refresh the {comp} data every minute.")),
        Purpose("forms", ("react-hook-form", "formik", "final-form", "conform"),
                ("fewer re-renders", "schema validation", "simpler API"),
                ("Add an edit form for {comp}.", "Validate the {comp} form before saving.")),
        Purpose("styling", ("tailwind", "vanilla-extract", "styled-components", "css-modules"),
                ("no runtime cost", "typed styles", "the designers know it"),
                ("Restyle the {comp} panel to match the mockups.", "Make the {comp} table denser.")),
        Purpose("date handling", ("date-fns", "dayjs", "luxon", "temporal-polyfill"),
                ("tree-shakable", "time zones", "small bundle"),
                ("Show the {comp} timestamps in the user's time zone.", "Group the {comp} entries by week.")),
        Purpose("charts", ("echarts", "recharts", "visx", "nivo"),
                ("handles 50k points", "simple API", "SVG output"),
                ("Add a chart of {comp} per month.", "Plot the {comp} trend on the overview.")),
    ),
)  # fmt: skip

GO = Language(
    source="internal/{comp}/{comp}.go",
    config="deploy/{comp}/values.yaml",
    test="go test ./internal/{comp}/...",
    helper="New{Comp}Client",
    id_helper="New{Comp}ID",
    purposes=(
        Purpose("logging", ("log/slog", "zap", "zerolog", "logrus"),
                ("it is in the standard library", "structured and fast", "zero allocations"),
                ("Add logging to the {comp} reconciler.", "Log why the {comp} sync skipped a record.")),
        Purpose("the CLI framework", ("cobra", "urfave-cli", "kong", "go-arg"),
                ("subcommands and completion", "less code", "struct tags"),
                ("Add a `{comp}` subcommand to the ops tool.", "Add flags to the {comp} command.")),
        Purpose("configuration", ("viper", "koanf", "envconfig", "cleanenv"),
                ("it reads env and files", "no global state", "tiny"),
                ("Make the {comp} timeout configurable.", "Read the {comp} settings from the environment.")),
        Purpose("the metrics library", ("prometheus-client", "opentelemetry", "statsd", "victoriametrics"),
                ("the cluster scrapes it", "vendor neutral", "push based"),
                ("Expose metrics for the {comp} queue depth.", "Count the {comp} failures.")),
        Purpose("the database driver", ("pgx", "lib-pq", "gorm", "sqlc"),
                ("it is maintained", "typed queries", "connection pooling"),
                ("Store the {comp} state in Postgres.", "Query the {comp} history table.")),
        Purpose("the mocking library", ("gomock", "testify-mock", "moq", "counterfeiter"),
                ("generated from interfaces", "simple assertions", "no reflection"),
                ("Write unit tests for the {comp} client.", "Mock the {comp} API in the tests.")),
    ),
)  # fmt: skip

PROJECTS = (
    Project(
        "/home/dev/needs-ledger-api",
        "ledger",
        PYTHON,
        ("invoices", "refunds", "payouts", "customers", "taxes", "currencies", "ledgers", "statements", "disputes",
         "coupons", "subscriptions", "receipts", "vendors", "budgets", "forecasts", "audits", "webhooks", "exports",
         "reminders", "accounts", "transfers", "fees", "reports", "limits", "journals", "settlements"),
    ),
    Project(
        "/home/dev/needs-harbor-web",
        "harbor",
        TYPESCRIPT,
        ("berths", "vessels", "crews", "cargo", "tides", "permits", "manifests", "pilots", "tugs", "cranes",
         "gates", "invoices", "customs", "moorings", "schedules", "weather", "alerts", "tenders", "inspections",
         "fuel", "containers", "yards", "shifts", "docks", "notices", "tariffs"),
    ),
    Project(
        "/home/dev/needs-atlas-ops",
        "atlas",
        GO,
        ("certs", "dns", "backups", "ingress", "secrets", "nodes", "volumes", "quotas", "tenants", "alerts",
         "registry", "mirrors", "runners", "leases", "snapshots", "firewall", "peering", "buckets", "queues",
         "tokens", "probes", "routes", "zones", "gateways", "archives", "budgets"),
    ),
)  # fmt: skip

# What a component's data is reset, rebuilt or moved with (a command fact): one verb per component.
VERBS = ("seed", "reindex", "backfill", "export", "rebuild", "replay", "purge", "snapshot", "restore", "warm")
NOUNS = ("jobs", "events", "tasks", "updates", "retries", "batches")
# A gotcha: what the tests print, its root cause and the fix (its unique words hold the component).
GOTCHAS = (
    ("connection refused on 127.0.0.1:{port}",
     "the tests need the {comp} stub server, which nothing starts",
     "start it first with `make stub-{comp}`", "stub-{comp}"),
    ("assertion failed: expected 2024-03-31, got 2024-04-01",
     "the {comp} tests depend on the wall clock and break near midnight UTC",
     "set `{COMP}_FAKE_CLOCK=1` so they use the frozen clock", "{COMP}_FAKE_CLOCK"),
    ("fixture '{comp}_db' not found",
     "the {comp} fixtures live in a plugin that is only loaded with its marker",
     "run them with `-m {comp}_db` or the fixture is missing", "-m {comp}_db"),
    ("permission denied: /var/cache/{comp}",
     "the {comp} cache folder defaults to a system path",
     "point `{COMP}_CACHE_DIR` at a folder under `.cache/` before running them", "{COMP}_CACHE_DIR"),
    ("too many open files",
     "each {comp} test opens a socket pool that is never closed",
     "raise the limit with `ulimit -n 4096` in the shell first; the `{comp}-pool` fix is pending", "{comp}-pool"),
    ("golden file mismatch in testdata/{comp}.golden",
     "the golden files are regenerated only with the update flag",
     "regenerate them with `UPDATE_GOLDEN={comp}` and review the diff", "UPDATE_GOLDEN={comp}"),
)  # fmt: skip
# A second rule per component: a constraint on how its code is written (its unique words hold the component).
RULES = (
    ("amounts in {comp} are integer cents, never floats, use the `{comp}_cents` helpers",
     "Amounts in {comp} are integer cents, never floats (`{comp}_cents` helpers).", "{comp}_cents"),
    ("every change to {comp} must write an audit row through `audit_{comp}()`, no exceptions",
     "Every change to {comp} writes an audit row through `audit_{comp}()`.", "audit_{comp}"),
    ("{comp} ids are generated with `{id_helper}()`, never uuid4 directly",
     "{Comp} ids come from `{id_helper}()`, never a bare uuid4.", "{id_helper}"),
    ("the {comp} code must never log the payload, only `{comp}_ref`, there's personal data in it",
     "{Comp} code never logs the payload, only `{comp}_ref` (personal data).", "{comp}_ref"),
    ("feature flags for {comp} go through `flags.{comp}_enabled`, don't read env vars for that",
     "{Comp} feature flags go through `flags.{comp}_enabled`, never an env var read.", "{comp}_enabled"),
)  # fmt: skip
FILLER = (
    ("rename the helper in {comp} to something clearer", "Renamed it in 4 files; the tests pass."),
    ("fix the typo in the {comp} docstring", "Fixed."),
    ("can you add type hints to the {comp} module", "Added them; the type check is clean."),
    ("tidy the imports in {comp}", "Sorted and removed two unused imports."),
)  # fmt: skip
