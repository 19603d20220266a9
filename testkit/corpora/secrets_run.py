"""The planted secrets run through the whole job, and every place a secret could leak to: what the e2e test
and `bench secrets` both measure."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import polars as pl
from dagster import instance_for_test

from memory_pipeline.backfill import day_ranges, plan_backfill, run_backfill
from memory_pipeline.definitions import build_definitions
from memory_pipeline.partitions import ordered_days
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import delete_days, make_client, stored_sources
from memory_pipeline.stores.indices import PIPELINE_INDICES
from memory_pipeline.stores.openai_compat import OpenAICompatibleClient
from testkit.corpora.secrets_corpus import DAY, Planted, leaks, write_sessions

RUN_CONFIG = {"ops": {"llm_ideas": {"config": {"context_tokens": 2048, "max_output_tokens": 384}}}}


class RequestLog:
    """Every JSON body the pipeline's OpenAI-compatible clients send, while in use."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def __enter__(self) -> RequestLog:
        self._original = OpenAICompatibleClient.request
        log = self

        def request(client, method, path, json=None, **options):  # noqa: ANN001, ANN003, ANN202
            if json is not None:
                log.bodies.append(_dump(json))
            return log._original(client, method, path, json=json, **options)

        OpenAICompatibleClient.request = request
        return self

    def __exit__(self, *exc: object) -> None:
        OpenAICompatibleClient.request = self._original


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _file_text(path: Path) -> str:
    if path.suffix == ".parquet":
        try:
            frame = pl.read_parquet(path)
        except Exception:  # noqa: BLE001 - a torn file is searched as bytes
            return path.read_bytes().decode("latin-1")
        return frame.write_ndjson()
    return path.read_bytes().decode("utf-8", errors="replace") + path.read_bytes().decode("latin-1")


def find_leaks(settings: Settings, planted: list[Planted], requests: list[str]) -> dict[str, set[str]]:
    """place -> kinds of which any 12 characters of the random part are stored or were sent there."""
    found: dict[str, set[str]] = defaultdict(set)
    with make_client(settings) as es:
        for index in PIPELINE_INDICES:
            if es.indices.exists(index=index):
                es.indices.refresh(index=index)
                documents = stored_sources(es, index, {"match_all": {}})
                text = "\n".join(_dump(d) for d in documents.values())
                found[f"index {index}"] |= leaks(text, planted)
    for folder, label in ((settings.memory_pipeline_state_dir, "state"), (settings.memory_workspace, "workspace")):
        for path in sorted(folder.rglob("*")) if folder.exists() else []:
            if path.is_file() and path.name != "llama-api-key":
                kinds_found = leaks(_file_text(path), planted)
                if kinds_found:
                    found[f"{label} {path.relative_to(folder)}"] |= kinds_found
    found["requests to the LLM and embedding servers"] |= leaks("\n".join(requests), planted)
    return {place: kinds for place, kinds in found.items() if kinds}


def run_planted(settings: Settings, planted: list[Planted]) -> tuple[list, dict[str, set[str]], int]:
    """The whole job over the planted sessions, as `backfill` runs it; (runs, leaks by place, requests)."""
    write_sessions(settings.sessions_dir, planted)
    with make_client(settings) as es:
        delete_days(es, PIPELINE_INDICES, [DAY])
    instance_dir = settings.memory_pipeline_state_dir / "dagster"
    instance_dir.mkdir(parents=True, exist_ok=True)
    definitions = build_definitions(settings)
    with RequestLog() as log, instance_for_test(temp_dir=str(instance_dir)) as instance:
        plan = plan_backfill(instance, settings.sessions_dir, everything=True)
        runs = [
            run_backfill(instance, first, last, definitions, RUN_CONFIG)
            for first, last in day_ranges(plan.todo, ordered_days(instance))
        ]
    return runs, find_leaks(settings, planted, log.bodies), len(log.bodies)
