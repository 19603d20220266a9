"""Dagster resources: one per outside server, built from the validated settings."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dagster import ConfigurableResource, EnvVar, InitResourceContext
from dagster_elasticsearch import ElasticsearchResource, HostsConfig
from dotenv import dotenv_values
from pydantic import Field, PrivateAttr, SecretStr

from memory_pipeline.io_managers import PolarsParquetIOManager
from memory_pipeline.locks import DayHold
from memory_pipeline.partitions import ordered_days, run_days, uses_llm
from memory_pipeline.reflect.condense import ReflectPolicy
from memory_pipeline.reflect.maturity import MaturityPolicy
from memory_pipeline.sessions.discovery import SessionRoot, agent_roots
from memory_pipeline.sessions.exclude_list import exclusions_path, merged_patterns
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.settings import LOCAL_ES_USER, ServiceName, Settings, local_secret, memory_home
from memory_pipeline.stores.elasticsearch import CLIENT_OPTIONS
from memory_pipeline.stores.embeddings import EmbeddingsClient
from memory_pipeline.stores.injections import InjectionLedger
from memory_pipeline.stores.llm import ChatClient


class LlamaResource(ConfigurableResource):
    """The chat server (llama-server or any OpenAI-compatible endpoint)."""

    url: str
    model: str | None = Field(None, description="Model id; None = the first one the server lists.")
    timeout_seconds: float = Field(300.0, description="Shortest read timeout of a request (LLAMA_TIMEOUT).")
    enabled: bool = Field(True, description="False: days are ingested without the chat model (MEMORY_PIPELINE_NO_LLM).")
    journal_dir: str = Field(description="Each turn's outcome, kept as it completes (a crash loses no finished turn).")
    api_key: str | None = Field(None, description="Bearer key of a server of the user's (LLAMA_API_KEY).")
    api_key_file: str | None = Field(None, description="File holding the local server's key.")

    def get_client(self) -> ChatClient:
        return ChatClient(self.url, model=self.model, timeout=self.timeout_seconds, api_key=_key(self))


class EmbeddingsResource(ConfigurableResource):
    """The embedding server (llama-server --embedding or any OpenAI-compatible endpoint)."""

    url: str
    model: str | None = Field(None, description="Model id; None = the first one the server lists.")
    dims: int | None = Field(None, description="Matryoshka truncation; None = the model's full size.")
    doc_prefix: str | None = None
    query_prefix: str | None = None
    max_input_tokens: int | None = Field(None, description="Tokens one input may hold; None = the server's context.")
    timeout_seconds: float = 120.0
    api_key: str | None = Field(None, description="Bearer key of a server of the user's (EMBED_API_KEY).")
    api_key_file: str | None = Field(None, description="File holding the local server's key.")

    def get_client(self) -> EmbeddingsClient:
        return EmbeddingsClient(
            self.url,
            model=self.model,
            dims=self.dims,
            doc_prefix=self.doc_prefix,
            query_prefix=self.query_prefix,
            max_input_tokens=self.max_input_tokens,
            timeout=self.timeout_seconds,
            api_key=_key(self),
        )


def _key(resource: LlamaResource | EmbeddingsResource) -> str | None:
    """The configured key, or the local servers' own, read (or made) when a client is opened."""
    return resource.api_key or (local_secret(Path(resource.api_key_file)) if resource.api_key_file else None)


class SessionsResource(ConfigurableResource):
    """Where pi's session logs are read from, and how they are read."""

    sessions_dir: str
    claude_dir: str = Field("", description="Claude Code's transcripts (~/.claude/projects); empty = not read.")
    codex_dir: str = Field("", description="Codex CLI's rollouts (~/.codex/sessions); empty = not read.")
    gemini_dir: str = Field("", description="Gemini CLI's chats by project (~/.gemini/tmp); empty = not read.")
    cache_dir: str = Field(description="Parsed frames of unchanged files, keyed by content fingerprint.")
    redact_patterns: list[str] = Field(
        default_factory=list, description="Extra regexes to mask, on top of the built-in secret rules."
    )
    debounce_seconds: float = Field(30.0, description="The sensor leaves files modified this recently for later.")
    exclude: list[str] = Field(
        default_factory=list, description="Projects never read: folders (and all below) or globs (MEMORY_EXCLUDE)."
    )
    exclude_file: str = Field("", description="The exclusions a person added (<state>/exclusions.json), read per run.")

    @property
    def root(self) -> Path:
        return Path(self.sessions_dir).expanduser()

    @property
    def roots(self) -> list[SessionRoot]:
        """Every agent's folder: pi's, then Claude Code's, Codex's and Gemini CLI's."""
        other = [Path(d).expanduser() if d else None for d in (self.claude_dir, self.codex_dir, self.gemini_dir)]
        return agent_roots(self.root, *other)

    def redactor(self) -> Redactor:
        return Redactor.with_patterns(self.redact_patterns)

    def exclusion_patterns(self) -> list[str]:
        """MEMORY_EXCLUDE's patterns and the person's, read now: an exclusion added since the code loaded applies."""
        return merged_patterns(self.exclude, Path(self.exclude_file) if self.exclude_file else None)


class MemoryWorkspaceResource(ConfigurableResource):
    """The folder of human-readable memory files (daily logs, REVIEW.md, MEMORY.md per project)."""

    path: str

    @property
    def root(self) -> Path:
        return Path(self.path).expanduser()


class LedgerResource(ConfigurableResource):
    """The injection ledger's folder (`<state>/injected`): what each session was given from memory."""

    folder: str

    def ledger(self) -> InjectionLedger:
        # Read only: a reader never writes a delivery, so the default redactor is enough.
        return InjectionLedger(Path(self.folder).expanduser(), Redactor())


class DayLocksResource(ConfigurableResource):
    """One run of a kind per session day at a time, for runs from the UI, the sensor, the schedules, the CLI and
    the service's fast path alike: the run holds its days' locks from its first step to its last (see
    `locks.py`), except that a run with the chat model lets the LLM-free (`ingest`) locks go while it waits for
    the model (`calling_the_llm`), so a fast run of its days indexes new turns meanwhile."""

    folder: str
    wait_seconds: float = Field(3600.0, description="How long a run waits for another run of its days.")
    _hold: DayHold | None = PrivateAttr(None)

    @contextmanager
    def yield_for_execution(self, context: InitResourceContext) -> Iterator[DayLocksResource]:
        run = context.dagster_run
        days = sorted(run_days(run.tags, ordered_days(context.instance))) if run and context.instance else []
        with_llm = uses_llm(run.asset_selection if run else None)
        holder = f"run {context.run_id}"
        with DayHold(Path(self.folder), days, holder, with_llm, self.wait_seconds, context.log.warning) as hold:
            self._hold = hold
            try:
                yield self
            finally:
                self._hold = None

    @contextmanager
    def calling_the_llm(self) -> Iterator[None]:
        """The block of a step that waits for the chat model (and writes none of the LLM-free outputs): a fast
        run of the same days may index them meanwhile; the step's own LLM-free steps after it wait for that."""
        if self._hold is None:
            yield
            return
        with self._hold.letting_go():
            yield


# The policies' own defaults: the resource restates none of them.
_REFLECT, _MATURITY = ReflectPolicy(), MaturityPolicy()


class ReflectPolicyResource(ConfigurableResource):
    """How reflection condenses and judges: similarity thresholds, age tiers, maturity, auto-promotion."""

    window_days: int = Field(
        _REFLECT.window_days, ge=1, description="Days reflected together (7 = ISO weeks); daily by default."
    )
    merge_threshold: float = Field(
        _REFLECT.merge_threshold, ge=0, le=1, description="Cosine at which two memories are near-duplicates."
    )
    related_threshold: float = Field(
        _REFLECT.related_threshold, ge=0, le=1, description="Cosine at which a newer memory may replace an older."
    )
    recent_days: int = Field(
        _REFLECT.recent_days, ge=0, description="Windows younger than this keep every memory verbatim."
    )
    old_days: int = Field(
        _REFLECT.old_days, ge=0, description="Windows older than this keep only high priority, compressed hardest."
    )
    half_life_days: float = Field(
        _MATURITY.half_life_days, gt=0, description="Evidence for a rule counts half after this many days."
    )
    established_at: float = Field(
        _MATURITY.established_at, gt=0, description="Decayed session evidence for `established`."
    )
    proven_at: float = Field(_MATURITY.proven_at, gt=0, description="Decayed session evidence for `proven`.")
    proposal_same_threshold: float = Field(
        0.8, ge=0, le=1, description="Cosine at which a candidate is a known proposal."
    )
    support_threshold: float = Field(0.75, ge=0, le=1, description="Cosine at which a memory supports a promoted rule.")
    auto_promote_min_sessions: int = Field(
        0, ge=0, description="Promote without review at this many sessions; 0 = off."
    )
    friction_min_sessions: int = Field(2, ge=1, description="Sessions a friction finding needs.")
    followthrough_model: bool = Field(
        False, description="Follow-through asks the chat model where the rules find no signal (FOLLOWTHROUGH_MODEL)."
    )

    def reflect_policy(self) -> ReflectPolicy:
        return ReflectPolicy(
            window_days=self.window_days,
            merge_threshold=self.merge_threshold,
            related_threshold=self.related_threshold,
            recent_days=self.recent_days,
            old_days=self.old_days,
        )

    def maturity_policy(self) -> MaturityPolicy:
        return MaturityPolicy(self.half_life_days, self.established_at, self.proven_at)


class NodesConfig(HostsConfig):
    """dagster-elasticsearch's hosts config, with the local node's password read from its file when a client
    is made (resource config shows in the UI; the file's path may, the password may not)."""

    password_file: str | None = Field(None, description="File holding the local `elastic` user's password.")

    def to_client_kwargs(self) -> dict:
        kwargs = super().to_client_kwargs()
        if self.password_file and self.username:
            kwargs["basic_auth"] = (self.username, local_secret(Path(self.password_file)))
        return kwargs


def _secret(value: SecretStr | None, variable: str) -> Any:
    """A secret of the user's as an EnvVar, which Dagster never displays: one read from the home's `.env` is
    put in this process's environment first (its runs, and the code servers Dagster starts, inherit it). A
    value given in code (a test's override) is passed as it is."""
    if value is None:
        return None
    plain = value.get_secret_value()
    if variable not in os.environ and dotenv_values(memory_home() / ".env").get(variable) == plain:
        os.environ[variable] = plain
    return EnvVar(variable) if os.environ.get(variable) == plain else plain


def _es_connection(settings: Settings) -> NodesConfig:
    local = settings.es_url is None
    return NodesConfig(
        hosts=settings.elasticsearch_hosts,
        api_key=_secret(settings.es_api_key, "ES_API_KEY"),
        username=LOCAL_ES_USER if local else settings.es_username,
        password=None if local else _secret(settings.es_password, "ES_PASSWORD"),
        password_file=str(settings.es_password_path) if local else None,
        verify_certs=settings.es_verify_certs,
        ca_certs=str(settings.es_ca_certs) if settings.es_ca_certs else None,
    )


def _auth(settings: Settings, service: ServiceName, variable: str) -> dict[str, Any]:
    """How a resource authenticates: the local key's file (not the key: resource config shows in the UI),
    or the user's key as an EnvVar, which Dagster never displays."""
    if settings.is_local(service):
        return {"api_key_file": str(settings.api_key_path)}
    return {"api_key": _secret(settings.llama_api_key if service == "chat" else settings.embed_api_key, variable)}


def build_resources(settings: Settings) -> dict[str, ConfigurableResource]:
    return {
        "es": ElasticsearchResource(
            connection_config=_es_connection(settings),
            request_timeout=CLIENT_OPTIONS["request_timeout"],
            additional_client_kwargs={k: v for k, v in CLIENT_OPTIONS.items() if k != "request_timeout"},
        ),
        "llm": LlamaResource(
            url=settings.chat_url,
            model=settings.llama_model,
            timeout_seconds=settings.llama_timeout,
            enabled=not settings.memory_pipeline_no_llm,
            journal_dir=str(settings.memory_pipeline_state_dir / "llm-journal"),
            **_auth(settings, "chat", "LLAMA_API_KEY"),
        ),
        "embedder": EmbeddingsResource(
            url=settings.embeddings_url,
            model=settings.embed_model,
            dims=settings.embed_dims,
            doc_prefix=settings.embed_doc_prefix,
            query_prefix=settings.embed_query_prefix,
            max_input_tokens=settings.embed_max_tokens,
            **_auth(settings, "embed", "EMBED_API_KEY"),
        ),
        "sessions": SessionsResource(
            sessions_dir=str(settings.sessions_dir),
            claude_dir=str(settings.claude_projects_dir or ""),
            codex_dir=str(settings.codex_sessions_dir or ""),
            gemini_dir=str(settings.gemini_tmp_dir or ""),
            cache_dir=str(settings.memory_pipeline_state_dir / "parsed"),
            redact_patterns=settings.redact_extra_patterns,
            exclude=settings.memory_exclude,
            exclude_file=str(exclusions_path(settings)),
        ),
        "workspace": MemoryWorkspaceResource(path=str(settings.memory_workspace)),
        "ledger": LedgerResource(folder=str(settings.memory_pipeline_state_dir / "injected")),
        "day_locks": DayLocksResource(folder=str(settings.memory_pipeline_state_dir / "locks")),
        "reflect_policy": ReflectPolicyResource(
            half_life_days=settings.maturity_half_life_days,
            auto_promote_min_sessions=settings.auto_promote_min_sessions,
            followthrough_model=settings.followthrough_model,
        ),
        "io_manager": PolarsParquetIOManager(base_dir=str(settings.memory_pipeline_state_dir / "frames")),
    }
