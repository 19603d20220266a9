"""Every environment variable the pipeline reads, validated once.

Settings come from the process environment and an optional `.env` file in the
current directory (see `.env.example`). A URL left unset means "use the embedded
default": the local runtime starts that server on 127.0.0.1. A URL that is set
means the user brings their own server and nothing local starts for it.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AnyHttpUrl, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Port = Annotated[int, Field(ge=1, le=65535)]
POSTGRES_ROLE = "memory_pipeline"
LOCAL_ES_USER = "elastic"  # the local node's built-in superuser; its password is generated (es_password_path)
ServiceName = Literal["elasticsearch", "chat", "embed", "postgres"]


class ConfigError(ValueError):
    """Invalid configuration; the message names the offending variable."""


def revealed(secret: SecretStr | None) -> str | None:
    """A secret's value, where a client needs it (settings keep keys as `SecretStr`: never printed, never in a
    repr, masked by `config` from their type)."""
    return secret.get_secret_value() if secret is not None else None


def memory_home() -> Path:
    """Where the memory keeps its state, its workspace and its `.env`: MEMORY_PIPELINE_HOME; else the checkout
    it runs from (a clone keeps `.state/` and `memory/` beside its code, git-ignored); else
    `$XDG_STATE_HOME/memory-pipeline` (`~/.local/state/memory-pipeline`). Never the folder a command is run
    from: `memory-pipeline remember` in a project must not leave keys and logs in that repository."""
    configured = os.environ.get("MEMORY_PIPELINE_HOME", "").strip()
    if configured:
        return Path(configured).expanduser().absolute()
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file() and (checkout / "memory_pipeline" / "settings.py").is_file():
        return checkout
    return Path(os.environ.get("XDG_STATE_HOME") or "~/.local/state").expanduser().absolute() / "memory-pipeline"


def _default_cache_dir() -> Path:
    # An unprivileged service user (Elasticsearch refuses to run as root) must be
    # able to read the unpacked distribution, and /root is private.
    if os.geteuid() == 0:
        return Path("/var/cache/memory-pipeline")
    return Path.home() / ".cache" / "memory-pipeline"


class Settings(BaseSettings):
    """The pipeline's configuration; field names are the environment variables."""

    model_config = SettingsConfigDict(
        env_file_encoding="utf-8",
        case_sensitive=False,
        extra="ignore",
        frozen=True,
    )

    es_url: AnyHttpUrl | None = Field(None, description="Elasticsearch URL; unset = local runtime.")
    es_api_key: SecretStr | None = Field(None, description="API key for ES_URL.")
    es_username: str | None = Field(None, description="Basic-auth user for ES_URL (instead of an API key).")
    es_password: SecretStr | None = Field(None, description="Basic-auth password for ES_URL.")
    es_verify_certs: bool = Field(True, description="Verify ES_URL's TLS certificate.")
    es_ca_certs: Path | None = Field(None, description="CA bundle for ES_URL.")

    llama_url: AnyHttpUrl | None = Field(None, description="Chat server (OpenAI-compatible); unset = local runtime.")
    llama_model: str | None = Field(None, description="Chat model id; unset = what the server reports.")
    llama_api_key: SecretStr | None = Field(None, description="Bearer key for LLAMA_URL, if it wants one.")
    llama_timeout: float = Field(
        300.0,
        ge=5,
        description="Seconds a chat request may wait for its answer, at least; a longer prompt gets more, from its "
        "size and the server's measured speed. A request still unanswered fails its turn only (read again next run).",
    )
    memory_pipeline_no_llm: bool = Field(
        False,
        description="Ingest and index without the chat model (raw messages, observations, embeddings); the days "
        "are summarised by a later `backfill` once this is unset, without ingesting them again.",
    )
    embed_url: AnyHttpUrl | None = Field(
        None, description="Embedding server (OpenAI-compatible); unset = local runtime."
    )
    embed_model: str | None = Field(None, description="Embedding model id; unset = what the server reports.")
    embed_api_key: SecretStr | None = Field(None, description="Bearer key for EMBED_URL, if it wants one.")
    embed_dims: int | None = Field(
        None, ge=8, le=8192, description="Matryoshka truncation (re-normalised); unset = the model's full size."
    )
    embed_doc_prefix: str | None = Field(
        None, description='Prefix for stored texts (jina: "Document: "); unset = by model.'
    )
    embed_query_prefix: str | None = Field(None, description='Prefix for queries (jina: "Query: "); unset = by model.')
    dagster_postgres_url: str | None = Field(
        None,
        description="PostgreSQL for Dagster's run, event and schedule storage (postgresql://user:pass@host:port/db); "
        "unset = SQLite in DAGSTER_HOME, or the local PostgreSQL after `local up --postgres`.",
    )
    embed_max_tokens: int | None = Field(
        None, ge=16, description="Tokens one input may hold; unset = the server's context (llama-server), else 512."
    )

    sessions_dir: Path = Field(Path("~/.pi/agent/sessions"), description="Where pi writes session logs.")
    claude_projects_dir: Path | None = Field(
        Path("~/.claude/projects"),
        description='Where Claude Code writes transcripts, read when it exists; "" = not read.',
    )
    codex_sessions_dir: Path | None = Field(
        Path("~/.codex/sessions"), description='Where Codex CLI writes rollouts, read when it exists; "" = not read.'
    )
    gemini_tmp_dir: Path | None = Field(
        Path("~/.gemini/tmp"),
        description='Where Gemini CLI keeps chats per project, read when it exists; "" = not read.',
    )
    redact_extra_patterns: list[str] = Field(
        default_factory=list, description='Extra secret regexes to mask, as a JSON list: ["corp-[0-9a-f]{32}"].'
    )
    memory_exclude: list[str] = Field(
        default_factory=list,
        description='Projects never read, as a JSON list of folders (and all below) or globs: ["~/clients/acme", '
        '"/work/secret-*"]. `memory-pipeline purge-excluded` removes what was stored of them before.',
    )

    memory_workspace: Path = Field(
        default_factory=lambda: memory_home() / "memory",
        description="Human-readable memory files: daily logs, REVIEW.md and MEMORY.md per project.",
    )
    maturity_half_life_days: float = Field(
        90.0, gt=0, description="Evidence for a promoted rule counts half after this many days."
    )
    auto_promote_min_sessions: int = Field(
        0, ge=0, description="Promote proposals backed by this many sessions without review; 0 = off."
    )
    followthrough_model: bool = Field(
        False,
        description="Follow-through also asks the chat model about a turn whose commands or files touch an injected "
        "memory the rules find no signal for (followed or ignored only, never contradicted; bench followthrough).",
    )
    memory_pipeline_state_dir: Path = Field(
        default_factory=lambda: memory_home() / ".state",
        description="Local runtime state: Elasticsearch data, PID files, logs.",
    )
    memory_pipeline_cache_dir: Path = Field(
        default_factory=_default_cache_dir,
        description="Downloads and builds shared by every checkout: ES distribution, llama-server, models.",
    )
    local_es_port: Port = 9200
    local_llama_port: Port = 8080
    local_embed_port: Port = 8081
    local_es_heap_mb: int = Field(512, ge=256, le=8192)
    local_es_nodes: int | None = Field(
        None,
        ge=1,
        le=5,
        description="Nodes of the local Elasticsearch (`local up --nodes N`); default: as the last `local up` left it, "
        "else 1. Node i serves HTTP on LOCAL_ES_PORT+i-1 and transport on LOCAL_ES_PORT+100+i-1.",
    )
    local_threads: int = Field(2, ge=1, le=256)
    local_llama_slots: int = Field(1, ge=1, le=64, description="Parallel slots of the local chat server.")
    local_llama_ctx: int = Field(8192, ge=512, le=131072, description="Context tokens per chat slot.")
    local_postgres: bool | None = Field(
        None,
        description="Keep Dagster's storage in a local PostgreSQL (`local up --postgres`); default: as the last "
        "`local up` left it, else off (SQLite).",
    )
    local_postgres_port: Port = 5433
    local_postgres_password_file: Path | None = Field(
        None, description="Password of the local PostgreSQL, made on first use; default <state>/postgres-password."
    )
    local_api_key_file: Path | None = Field(
        None,
        description="Key the local llama-servers require, made on first use; default <state>/llama-api-key.",
    )
    local_es_password_file: Path | None = Field(
        None,
        description="Password of the local Elasticsearch's `elastic` user, made on first use; "
        "default <state>/elasticsearch-password.",
    )

    @field_validator(
        "sessions_dir", "memory_workspace", "memory_pipeline_state_dir", "memory_pipeline_cache_dir", mode="after"
    )
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().absolute()

    @field_validator("claude_projects_dir", "codex_sessions_dir", "gemini_tmp_dir", mode="before")
    @classmethod
    def _optional_folder(cls, value: object) -> object:
        return None if value is None or str(value).strip() == "" else Path(str(value)).expanduser().absolute()

    @field_validator(
        "es_api_key",
        "es_username",
        "es_password",
        "llama_model",
        "embed_model",
        "llama_api_key",
        "embed_api_key",
        mode="before",
    )
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("es_url", "llama_url", "embed_url", mode="before")
    @classmethod
    def _blank_url_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("redact_extra_patterns", mode="after")
    @classmethod
    def _compilable(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a valid regex: {exc}") from None
        return patterns

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        for name, value in (("ES_API_KEY", self.es_api_key), ("ES_USERNAME", self.es_username)):
            if value and self.es_url is None:
                raise ValueError(
                    f"{name} is set but ES_URL is not: the local Elasticsearch takes its own generated password"
                )
        if bool(self.es_username) != bool(self.es_password):
            raise ValueError("ES_USERNAME and ES_PASSWORD go together")
        ports = {
            "LOCAL_ES_PORT": self.local_es_port,
            "LOCAL_LLAMA_PORT": self.local_llama_port,
            "LOCAL_EMBED_PORT": self.local_embed_port,
            "LOCAL_POSTGRES_PORT": self.local_postgres_port,
        }
        if len(set(ports.values())) != len(ports):
            raise ValueError(f"LOCAL_*_PORT values must differ, got {ports}")
        return self

    @property
    def agent_folders(self) -> tuple[Path, Path | None, Path | None, Path | None]:
        """pi's sessions folder, then Claude Code's, Codex's and Gemini CLI's (None: not read), in the order
        `sessions.discovery.agent_roots` takes them: the one list every reader of sessions starts from."""
        return self.sessions_dir, self.claude_projects_dir, self.codex_sessions_dir, self.gemini_tmp_dir

    @cached_property
    def elasticsearch_url(self) -> str:
        return _strip(self.es_url) or f"http://127.0.0.1:{self.local_es_port}"

    @property
    def es_nodes_path(self) -> Path:
        """Where `local up` records how many Elasticsearch nodes it runs, so every later command finds them."""
        return self.memory_pipeline_state_dir / "run" / "elasticsearch-nodes"

    @property
    def es_node_count(self) -> int:
        """How many nodes the local Elasticsearch has: LOCAL_ES_NODES, else what `local up` recorded, else 1."""
        if self.local_es_nodes is not None:
            return self.local_es_nodes
        try:
            return max(1, int(self.es_nodes_path.read_text().strip()))
        except (OSError, ValueError):
            return 1

    @property
    def elasticsearch_hosts(self) -> list[str]:
        """Every node a client may send requests to: ES_URL, or each local node (so a client goes on
        through another node when one dies)."""
        if self.es_url is not None:
            return [self.elasticsearch_url]
        return [f"http://127.0.0.1:{self.local_es_port + i}" for i in range(self.es_node_count)]

    @property
    def postgres_choice_path(self) -> Path:
        """Where `local up --postgres` records that Dagster's storage is the local PostgreSQL."""
        return self.memory_pipeline_state_dir / "run" / "dagster-storage"

    @property
    def uses_local_postgres(self) -> bool:
        """Whether the local runtime runs a PostgreSQL for Dagster: LOCAL_POSTGRES, else what `local up` recorded
        (never when DAGSTER_POSTGRES_URL names the user's own)."""
        if self.dagster_postgres_url is not None:
            return False
        if self.local_postgres is not None:
            return self.local_postgres
        try:
            return self.postgres_choice_path.read_text().strip() == "postgres"
        except OSError:
            return False

    @property
    def es_password_path(self) -> Path:
        """The local Elasticsearch's password (security is on: no process without it reads a session)."""
        path = self.local_es_password_file or self.memory_pipeline_state_dir / "elasticsearch-password"
        return path.expanduser().absolute()

    def es_basic_auth(self) -> tuple[str, str] | None:
        """User and password: the local Elasticsearch's (made on first use), or ES_USERNAME and ES_PASSWORD for
        a cluster of the user's (None: it takes ES_API_KEY, or nothing)."""
        if self.es_url is not None:
            password = revealed(self.es_password)
            return (self.es_username, password) if self.es_username and password else None
        return (LOCAL_ES_USER, local_secret(self.es_password_path))

    @property
    def postgres_password_path(self) -> Path:
        """The local PostgreSQL's password for its one role (made on first use, owner-only)."""
        path = self.local_postgres_password_file or self.memory_pipeline_state_dir / "postgres-password"
        return path.expanduser().absolute()

    def dagster_storage_url(self) -> str | None:
        """The PostgreSQL URL Dagster keeps its runs, events and schedules in; None = SQLite in DAGSTER_HOME."""
        if self.dagster_postgres_url is not None:
            return self.dagster_postgres_url
        if not self.uses_local_postgres:
            return None
        # A database per state folder: two checkouts (or tests) sharing one server never share run history.
        database = "dagster_" + hashlib.sha1(str(self.memory_pipeline_state_dir).encode()).hexdigest()[:12]
        password = local_secret(self.postgres_password_path)
        return f"postgresql://{POSTGRES_ROLE}:{password}@127.0.0.1:{self.local_postgres_port}/{database}"

    @cached_property
    def chat_url(self) -> str:
        return _strip(self.llama_url) or f"http://127.0.0.1:{self.local_llama_port}"

    @cached_property
    def embeddings_url(self) -> str:
        return _strip(self.embed_url) or f"http://127.0.0.1:{self.local_embed_port}"

    @cached_property
    def api_key_path(self) -> Path:
        """The file the local llama-servers read their key from (`--api-key-file`) and clients send."""
        return (self.local_api_key_file or self.memory_pipeline_state_dir / "llama-api-key").expanduser().absolute()

    def api_key(self, service: ServiceName) -> str | None:
        """The bearer key for the chat or embedding server: the configured one for a server of the user's,
        the local runtime's own (made now if needed) for a local one."""
        if not self.is_local(service):
            return revealed(self.llama_api_key if service == "chat" else self.embed_api_key)
        return local_secret(self.api_key_path)

    @property
    def service_token_path(self) -> Path:
        return (self.memory_pipeline_state_dir / "service-token").expanduser().absolute()

    def service_token(self) -> str:
        """The token every write to the memory service carries (made on first use, owner-only)."""
        return local_secret(self.service_token_path)

    @property
    def memory_id(self) -> str:
        """Which memory these settings name (its Elasticsearch and its state folder), as the service reports it
        at /health: a command asks a running service only when it serves the same memory."""
        named = f"{self.elasticsearch_url}|{self.memory_pipeline_state_dir.expanduser().absolute()}"
        return hashlib.sha256(named.encode()).hexdigest()[:16]

    @property
    def service_login_path(self) -> Path:
        return (self.memory_pipeline_state_dir / "service-login").expanduser().absolute()

    def is_local(self, service: ServiceName) -> bool:
        """Whether the local runtime owns this server (its URL is not configured)."""
        configured = {
            "elasticsearch": self.es_url,
            "chat": self.llama_url,
            "embed": self.embed_url,
            "postgres": self.dagster_postgres_url,
        }
        return configured[service] is None


def local_secret(path: Path) -> str:
    """A local secret (the llama-servers' key, the memory service's token): read from `path`, or made there
    (random, owner-only) the first time, so no other user's process or web page can use what it guards."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
        os.replace(path.with_suffix(".tmp"), path)
    return path.read_text().split()[0]


def _strip(url: AnyHttpUrl | None) -> str | None:
    return str(url).rstrip("/") if url is not None else None


def load_settings(**overrides: object) -> Settings:
    """Read and validate the configuration, or raise ConfigError naming the variable."""
    try:
        # The `.env` of the memory's home, never of the folder a command is run from (a project's own `.env`).
        return Settings(_env_file=memory_home() / ".env", **overrides)  # type: ignore[arg-type, call-arg]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            variable = "_".join(str(part) for part in error["loc"]).upper() or "configuration"
            problems.append(
                f"{variable}: {error['msg']} (got {error.get('input')!r})"
                if error["loc"]
                else error["msg"].removeprefix("Value error, ")
            )
        raise ConfigError("invalid configuration: " + "; ".join(problems)) from None


def isolated_settings(base: Settings, folder: Path, **overrides: object) -> Settings:
    """Settings for a run that keeps its sessions, state and memory workspace in `folder` (tests,
    benchmarks), talking to `base`'s servers and sharing its download cache."""
    return load_settings(
        **{
            "sessions_dir": folder / "sessions",
            "claude_projects_dir": folder / "claude-projects",
            "codex_sessions_dir": folder / "codex-sessions",
            "gemini_tmp_dir": folder / "gemini-tmp",
            "memory_pipeline_state_dir": folder / "state",
            "memory_workspace": folder / "memory",
            "memory_pipeline_cache_dir": base.memory_pipeline_cache_dir,
            "local_es_port": base.local_es_port,
            "local_llama_port": base.local_llama_port,
            "local_embed_port": base.local_embed_port,
            "local_api_key_file": base.api_key_path,  # the servers are base's: so is their key
            "local_es_password_file": base.es_password_path,
            "local_postgres": base.uses_local_postgres,
            "local_postgres_port": base.local_postgres_port,
            "local_postgres_password_file": base.postgres_password_path,
            "dagster_postgres_url": base.dagster_postgres_url,
            **overrides,
        }
    )
