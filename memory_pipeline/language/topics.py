"""The categories of the tools a text names and the files it names, as data and pure code.

- `topics_of`: the categories a statement's tools belong to ("pnpm" -> package manager), so a question that
  names the category ("which package manager do we use?") finds the memory that names the tool.
- `task_topics`: the categories a task touches, from the tools it names and the work it describes ("install a
  library for the map" -> package manager), so a briefing can show the rule about the tool a task will use
  although the task never names it.
- `files_of`: the file names and paths a statement names.
- `LAYOUT_DIRS`: the folder names that lay a source tree out rather than name a part of the product (`src`,
  `internal`, `components`), so a file's other folders (`src/fuel/FuelPanel.tsx` -> fuel) name its component.
"""

from __future__ import annotations

import re

# --- categories, so a question naming the category finds the tool ---

_TOPICS: dict[str, tuple[str, ...]] = {
    "package-manager": (
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "pip",
        "pipx",
        "uv",
        "poetry",
        "pdm",
        "conda",
        "cargo",
        "composer",
        "gem",
        "bundler",
        "brew",
        "apt",
        "apt-get",
    ),
    "test-runner": (
        "nextest",
        "gotestsum",
        "jest",
        "vitest",
        "mocha",
        "pytest",
        "unittest",
        "jasmine",
        "ava",
        "playwright",
        "cypress",
        "junit",
        "rspec",
        "nose",
    ),
    "linter": ("eslint", "ruff", "flake8", "pylint", "biome", "clippy", "golangci-lint", "shellcheck", "mypy"),
    "formatter": ("prettier", "black", "rustfmt", "gofmt", "isort", "dprint"),
    "bundler": ("webpack", "vite", "rollup", "esbuild", "parcel", "turbopack", "tsup"),
    "database": (
        "postgres",
        "postgresql",
        "mysql",
        "sqlite",
        "mongodb",
        "mongo",
        "redis",
        "mariadb",
        "dynamodb",
        "cassandra",
        "elasticsearch",
        "clickhouse",
        "supabase",
    ),
    "orm": ("prisma", "drizzle", "sqlalchemy", "typeorm", "sequelize", "django-orm", "knex", "diesel"),
    "web-framework": (
        "react",
        "vue",
        "svelte",
        "angular",
        "nextjs",
        "next.js",
        "nuxt",
        "django",
        "flask",
        "fastapi",
        "express",
        "rails",
        "spring",
        "remix",
        "astro",
    ),
    "container": ("docker", "podman", "kubernetes", "k8s", "kubectl", "helm", "compose"),
    "ci": ("github-actions", "gitlab-ci", "jenkins", "circleci", "buildkite", "travis"),
    "type-checker": ("typescript", "tsc", "mypy", "pyright"),
    "version-control": ("git", "jj", "mercurial", "svn"),
    "task-queue": ("celery", "dramatiq", "arq", "rq", "huey", "sidekiq", "bullmq", "temporal"),
    "charts": ("recharts", "echarts", "chart.js", "chartjs", "d3", "highcharts", "plotly", "nivo", "victory"),
    "http-client": ("httpx", "requests", "aiohttp", "axios", "got", "ky", "fetch"),
    "logging": ("structlog", "loguru", "slog", "zap", "zerolog", "logrus", "winston", "pino"),
    "cli-framework": ("cobra", "urfave/cli", "click", "typer", "argparse", "clap", "commander", "yargs"),
    "state-management": ("redux", "zustand", "mobx", "jotai", "recoil", "pinia", "vuex"),
    "date-library": ("date-fns", "moment", "dayjs", "luxon", "pendulum", "arrow"),
    # Not `make` nor `just`: English words first ("make sure", "I just want"); a memory names them as code.
    "migrations": ("alembic", "flyway", "liquibase", "goose", "dbmate"),
    "codegen": ("buf", "protoc", "sqlc", "openapi-generator", "openapi-generator-cli"),
    "build-tool": ("gradle", "gradlew", "maven", "mvn", "bazel", "sbt", "cmake", "meson", "ninja"),
    "infrastructure": ("terraform", "tofu", "opentofu", "pulumi", "ansible", "cloudformation", "cdk"),
    "app-server": ("gunicorn", "uvicorn", "granian", "hypercorn", "daphne", "puma", "waitress"),
    "web-server": ("nginx", "caddy", "traefik", "haproxy", "httpd"),
    "secrets-manager": ("doppler", "sops", "infisical", "1password"),
    "feature-flags": ("unleash", "launchdarkly", "flagsmith", "growthbook", "flipt"),
}
# The other names a tool goes by, or the command it is run by: one tool, whichever a text or a command says.
ALIASES: dict[str, str] = {
    "mvn": "maven",
    "postgresql": "postgres",
    "psql": "postgres",
    "opentofu": "tofu",
    "k8s": "kubernetes",
    "golang": "go",
    "python3": "python",
    "nodejs": "node",
    "podman-compose": "podman",
}


def canonical(name: str) -> str:
    """The one name of a tool (`mvn` -> maven); any other name as it is."""
    return ALIASES.get(name, name)


TOPICS = frozenset(_TOPICS)
# The categories whose tools are commands: a file uses one when a line of it runs it (a script, a Makefile recipe, a
# CI step), not when it holds the word ("background: black" is a colour); a library is used wherever it is named.
COMMANDS = frozenset(
    {"package-manager", "test-runner", "linter", "formatter", "bundler", "container", "build-tool", "infrastructure",
     "type-checker", "version-control", "migrations", "codegen"}
)  # fmt: skip
_TOPIC_OF = {name: topic for topic, names in _TOPICS.items() for name in names}
_NAME = re.compile(r"[a-z0-9][a-z0-9.+-]*[a-z0-9]|[a-z0-9]", re.I)


def topics_of(text: str) -> list[str]:
    """The categories of the tools a text names, in order of first mention."""
    seen: list[str] = []
    for name in _NAME.findall(text.lower()):
        topic = _TOPIC_OF.get(name)
        if topic and topic not in seen:
            seen.append(topic)
    return seen


# The work that touches each category: a task saying it will use that category's tool whether it names the tool
# or not ("add a dependency" runs the package manager). Words, not stems; plural forms listed.
_TASK_WORDS: dict[str, tuple[str, ...]] = {
    "package-manager": (
        "install",
        "installing",
        "dependency",
        "dependencies",
        "library",
        "libraries",
        "package",
        "packages",
        "upgrade",
        "lockfile",
        "setup",
    ),
    "test-runner": ("test", "tests", "testing", "spec", "specs", "coverage", "e2e"),
    "linter": ("lint", "linter", "linting", "lints"),
    "formatter": ("formatting", "reformat"),
    "bundler": ("bundle", "bundling", "build", "builds"),
    "database": ("migration", "migrations", "migrate", "column", "columns", "schema", "table", "database", "db"),
    "orm": ("migration", "migrations", "column", "columns", "model", "models"),
    "container": ("deploy", "deployment", "deployments", "rollback", "cluster", "pod", "pods", "ingress", "image"),
    "ci": ("ci", "workflow", "workflows", "pipeline"),
    "task-queue": ("job", "jobs", "background", "worker", "workers", "queue", "nightly", "scheduled"),
    "charts": ("chart", "charts", "graph", "graphs", "plot", "plots"),
    "logging": ("log", "logs", "logging"),
    "cli-framework": ("command", "commands", "subcommand", "subcommands", "flag", "flags", "cli"),
    "date-library": ("date", "dates", "datetime", "timestamp", "timestamps", "timezone", "time", "times"),
}
_TASK_TOPIC: dict[str, list[str]] = {}
for _topic, _words in _TASK_WORDS.items():
    for _word in _words:
        _TASK_TOPIC.setdefault(_word, []).append(_topic)


def task_topics(text: str) -> list[str]:
    """The categories a task touches: those of the tools it names, then those of the work it describes."""
    found = topics_of(text)
    for word in re.findall(r"[a-z0-9]+", text.lower().replace("set up", "setup").replace("roll back", "rollback")):
        for topic in _TASK_TOPIC.get(word, ()):
            if topic not in found:
                found.append(topic)
    return found


_EXTENSIONS = (
    "py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|mdx|yaml|yml|toml|ini|cfg|conf|env|lock|txt|rs|go|java|kt|rb|php|c|h"
    "|cc|cpp|hpp|cs|swift|sh|bash|zsh|css|scss|html|sql|xml|vue|svelte|proto|gradle|tf|dockerfile"
)
_FILE = re.compile(rf"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]*\w\.(?:{_EXTENSIONS})(?![\w/])", re.I)


def files_of(text: str) -> list[str]:
    """File names and paths a statement names (`theme.ts`, `src/app.py`), in order."""
    found = []
    for match in _FILE.findall(text):
        if match not in found:
            found.append(match)
    return found


# Folders that arrange a source tree in most ecosystems (JS/TS, Python, Go, Rust, JVM, Ruby, PHP) and so say
# nothing about which part of the product a file belongs to; any other folder of a path names a component.
LAYOUT_DIRS = frozenset(
    """
    src source sources lib libs internal pkg pkgs cmd app apps packages package modules module crates crate
    components component utils util utilities helpers helper common shared core base misc
    test tests testing spec specs __tests__ e2e fixtures mocks __mocks__ testdata
    api apis server servers client clients web frontend backend public assets static resources res
    scripts script bin tools tooling docs doc examples example build dist out target vendor node_modules
    config configs conf settings models model types typings interfaces services service hooks pages routes
    views templates layouts styles css scss store stores state features feature domain domains infra
    data db database migrations schema schemas main java kotlin scala python go js ts rust ruby php
    handlers controllers middleware middlewares providers contexts context plugins extensions ext
    """.split()  # noqa: SIM905
)
