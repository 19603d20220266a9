"""Helpers for ingest tests: re-dated copies of the real fixtures, runs, and a clean slate in ES."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster import DagsterInstance, ExecuteInProcessResult, materialize

from memory_pipeline.assets import ingest, recall, summarize
from memory_pipeline.instance import STORAGE_URL_VARIABLE, sqlalchemy_url
from memory_pipeline.partitions import RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client
from memory_pipeline.stores.indices import PIPELINE_INDICES, RAW_INDEX
from testkit.paths import SESSION_FIXTURES

INGEST_ASSETS = [ingest.session_files, ingest.raw_messages, ingest.turns, ingest.memory_raw_index]
# Ingest plus what search needs of the turns themselves (observations, embeddings, vectors), no chat LLM involved:
# for tests that plant the memories they recall.
RECALL_ASSETS = [
    *INGEST_ASSETS,
    recall.turn_observations,
    recall.memory_observations_index,
    recall.embeddings,
    recall.es_dense_vector,
]
# What a run without the chat model does (`partitions.LLM_FREE_ASSET_NAMES`: the fast path, `backfill --no-llm`)
# for search: the same, with the memories the turns' own words compose to.
LLM_FREE_RUN_ASSETS = [*INGEST_ASSETS, summarize.own_word_memories, *RECALL_ASSETS[len(INGEST_ASSETS) :]]
# Everything a day's memories need: ingest, the chat model's memories, observations and their vectors.
MEMORY_ASSETS = [
    *INGEST_ASSETS,
    summarize.llm_ideas,
    summarize.memory_summary_index,
    recall.turn_observations,
    recall.memory_observations_index,
    recall.embeddings,
    recall.es_dense_vector,
]


def copy_fixture(name: str, target: Path, session_id: str, day: str, project: str | None = None) -> Path:
    """A real fixture under a new session id and start day, and project if given (only its header changes)."""
    lines = (SESSION_FIXTURES / name).read_bytes().split(b"\n")
    header = json.loads(lines[0])
    header["id"] = session_id
    header["timestamp"] = f"{day}T09:00:00.000Z"
    if project is not None:
        header["cwd"] = project
    lines[0] = json.dumps(header).encode()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"\n".join(lines))
    return target


def cli_env(settings: Settings, **extra: str) -> dict[str, str]:
    """The environment under which `memory-pipeline ...` sees exactly these settings (for subprocess tests)."""
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    return env | {
        "SESSIONS_DIR": str(settings.sessions_dir),
        "CLAUDE_PROJECTS_DIR": str(settings.claude_projects_dir or ""),
        "CODEX_SESSIONS_DIR": str(settings.codex_sessions_dir or ""),
        "GEMINI_TMP_DIR": str(settings.gemini_tmp_dir or ""),
        "MEMORY_PIPELINE_STATE_DIR": str(settings.memory_pipeline_state_dir),
        "MEMORY_WORKSPACE": str(settings.memory_workspace),
        "MEMORY_PIPELINE_CACHE_DIR": str(settings.memory_pipeline_cache_dir),
        "LOCAL_ES_PORT": str(settings.local_es_port),
        "LOCAL_LLAMA_PORT": str(settings.local_llama_port),
        "LOCAL_EMBED_PORT": str(settings.local_embed_port),
        "LOCAL_API_KEY_FILE": str(settings.api_key_path),
        "LOCAL_ES_PASSWORD_FILE": str(settings.es_password_path),
        **storage_env(settings),
        **extra,
    }


def storage_env(settings: Settings) -> dict[str, str]:
    """Where Dagster's storage is: the local PostgreSQL when `settings` use it (a database per state folder)."""
    if not settings.uses_local_postgres:
        return {"LOCAL_POSTGRES": "false"}
    return {
        "LOCAL_POSTGRES": "true",
        "LOCAL_POSTGRES_PORT": str(settings.local_postgres_port),
        "LOCAL_POSTGRES_PASSWORD_FILE": str(settings.postgres_password_path),
    }


def stored_instance(settings: Settings, home: Path) -> DagsterInstance:
    """The Dagster instance in `home` as the CLI under `settings` made it (SQLite there, or PostgreSQL)."""
    url = settings.dagster_storage_url()
    if url is not None:
        os.environ[STORAGE_URL_VARIABLE] = sqlalchemy_url(url)
    return DagsterInstance.from_config(str(home))


def reset_days(settings: Settings, days: list[str]) -> None:
    """Remove every document these days have in any pipeline index (tests own their days)."""
    with make_client(settings) as client:
        delete_days(client, PIPELINE_INDICES, days)


def recall_history(settings: Settings, assets: list | None = None) -> list[str]:
    """Every day of the agents' session folders of `settings` through `assets` (the LLM-free ones: ingest,
    observations, vectors, by default no memories) in one backfill run, after a clean slate for those days; the
    days, in order."""
    resources = build_resources(settings)
    days = sorted({found.partition for found in scan_sessions(resources["sessions"].roots)[0]})
    reset_days(settings, days)
    result = materialize(
        assets or RECALL_ASSETS,
        resources=resources,
        instance=instance_with_days(days),
        tags={RANGE_START: days[0], RANGE_END: days[-1]},
    )
    assert result.success, f"{settings.sessions_dir} did not go through the pipeline"
    return days


@dataclass
class Run:
    success: bool
    metadata: dict[str, dict[str, Any]]
    checks: dict[str, bool]
    check_metadata: dict[str, dict[str, Any]]


def run_ingest(
    shared: Settings,
    sessions_dir: Path,
    state_dir: Path,
    partition: str | None = None,
    tags: dict[str, str] | None = None,
    redact_extra_patterns: list[str] | None = None,
) -> Run:
    settings = isolated_settings(
        shared,
        state_dir.parent,
        sessions_dir=sessions_dir,
        memory_pipeline_state_dir=state_dir,
        redact_extra_patterns=redact_extra_patterns or [],
    )
    result = materialize(
        INGEST_ASSETS,
        resources=build_resources(settings),
        partition_key=partition,
        instance=instance_with_days(_days(partition, tags)),
        tags=tags,
        raise_on_error=True,
    )
    return Run(result.success, *run_metadata(result))


def _days(partition: str | None, tags: dict[str, str] | None) -> list[str]:
    """The days a run covers: its partition, or its range's first and last day (tests use short ranges)."""
    tags = tags or {}
    ends = [tags.get("dagster/asset_partition_range_start"), tags.get("dagster/asset_partition_range_end")]
    return [d for d in [partition, *ends] if d]


def run_metadata(result: ExecuteInProcessResult) -> tuple[dict, dict, dict]:
    """(metadata per asset, pass/fail per check, metadata per check) of a run, as plain values."""
    metadata = {
        ev.asset_key.path[-1]: {k: v.value for k, v in ev.materialization.metadata.items()}
        for ev in result.get_asset_materialization_events()
    }
    evaluations = result.get_asset_check_evaluations()
    checks = {c.check_name: c.passed for c in evaluations}
    check_metadata = {c.check_name: {k: v.value for k, v in c.metadata.items()} for c in evaluations}
    return metadata, checks, check_metadata


def indexed(settings: Settings, query: dict[str, Any]) -> list[dict[str, Any]]:
    with make_client(settings) as client:
        client.indices.refresh(index=RAW_INDEX)
        response = client.search(index=RAW_INDEX, query=query, size=10_000)
    return [hit["_source"] | {"_id": hit["_id"]} for hit in response["hits"]["hits"]]
