"""A run without the chat model stores what a turn's own words compose to, for the turns no model has read yet,
and the model's reading replaces them: on the real Elasticsearch and embedding server."""

from __future__ import annotations

import uuid
from pathlib import Path

import polars as pl
from dagster import materialize

from memory_pipeline.checks import no_duplicate_summaries
from memory_pipeline.partitions import LLM_FREE_ASSET_NAMES, instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.summary_store import OWN_WORDS, read_summaries, sync_summaries
from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, ledger_rows, summary_documents
from testkit.browser import write_session
from testkit.ingest_helpers import LLM_FREE_RUN_ASSETS, reset_days, run_metadata

DAY = "2024-06-12"
PROJECT = "/home/dev/own-words"
TURNS = [
    ("Always use pnpm in this repo, never npm: the lockfile is pnpm-lock.yaml.", "Understood: pnpm only."),
    ("Never commit straight to main: every change goes through a pull request.", "Understood."),
    # A decision waits for the model's run (its reflection marks what a later one replaces).
    ("From now on we use Vitest instead of Jest, because Jest kept breaking on our ESM imports.", "Switched."),
]


def _run(settings: Settings) -> tuple[dict, dict]:
    result = materialize(
        LLM_FREE_RUN_ASSETS, resources=build_resources(settings), partition_key=DAY, instance=instance_with_days([DAY])
    )
    assert result.success
    metadata, checks, _ = run_metadata(result)
    return metadata, checks


def _own_words(settings: Settings) -> list:
    with make_client(settings) as client:
        return sorted((d for d in read_summaries(client, [DAY]) if d.model == OWN_WORDS), key=lambda d: d.turn_id)


def test_own_words_are_searchable_without_the_model_and_give_way_to_its_reading(
    local_runtime: Settings, tmp_path: Path
) -> None:
    # The selection here is the one the fast path and `backfill --no-llm` run.
    assert {a.key.path[-1] for a in LLM_FREE_RUN_ASSETS} == set(LLM_FREE_ASSET_NAMES) - {"memory_followthrough"}
    reset_days(local_runtime, [DAY])
    sessions = tmp_path / "sessions"
    write_session(sessions / "a.jsonl", f"own-{uuid.uuid4().hex[:8]}", DAY, PROJECT, TURNS)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)

    metadata, checks = _run(settings)
    assert checks["own_words_in_step"] and checks["every_memory_has_a_vector"], checks
    stored = _own_words(settings)
    turns = sorted({d.turn_id for d in stored})
    assert len(turns) == 2, [d.summary for d in stored]
    assert any("pnpm" in d.summary and d.kind == "rule" for d in stored)
    assert any("pull request" in d.summary and d.kind == "rule" for d in stored)
    assert not any("Vitest" in d.summary for d in stored)
    assert metadata["own_word_memories"]["written"] == len(stored)
    with make_client(settings) as client:
        client.indices.refresh(index="memory-summary")
        vectors = client.search(
            index="memory-summary",
            query={"bool": {"filter": [{"term": {"model": OWN_WORDS}}, {"terms": {"turn_id": turns}}]}},
            source=False,
            fields=["doc_id"],
            docvalue_fields=[],
            size=20,
        )["hits"]["hits"]
        assert len(vectors) == len(stored)

    # Again: nothing changes.
    metadata, checks = _run(settings)
    assert metadata["own_word_memories"]["written"] == 0 and checks["own_words_in_step"]
    assert metadata["own_word_memories"]["unchanged"] == len(stored)

    # The model's run read the first turn only (the second arrived after it started): the first turn's own words
    # give way to what the model kept, the second's stay.
    first, second = turns
    row = stored[0]
    model_read = pl.DataFrame(
        [
            {
                "partition": DAY,
                "session_id": row.session_id,
                "turn_id": first,
                "project": PROJECT,
                "agent": "pi",
                "established_at": row.established_at,
                "content_hash": row.turn_content_hash,
                "prompt_version": row.prompt_version,
                "model": "a-chat-model",
                "status": "summarised",
                "reason": None,
                "ideas": [
                    {
                        "summary": "Use pnpm in this repository, never npm.",
                        "tags": ["pnpm", "npm", "package-manager"],
                        "priority": "high",
                        "kind": "rule",
                    }
                ],
                "summarized_at": "2024-06-12T11:00:00+00:00",
                "llm_calls": 1,
                "seconds": 1.0,
                "prompt_tokens": 1,
                "completion_tokens": 1,
                "generation_seconds": 0.5,
            }
        ],
        schema=OUTCOME_SCHEMA,
    )
    with make_client(settings) as client:
        sync_summaries(client, summary_documents(model_read), ledger_rows(model_read), [DAY])
        assert no_duplicate_summaries(client, summary_documents(model_read), [DAY], seen={first}).passed
        # Seen as if it had read both turns, the index holds more than the run: the check says so.
        assert not no_duplicate_summaries(client, summary_documents(model_read), [DAY]).passed
    left = _own_words(settings)
    assert {d.turn_id for d in left} == {second}
    assert left == [d for d in stored if d.turn_id == second]

    # The next run without the model leaves the turn the model read to it, and keeps the other's own words.
    metadata, checks = _run(settings)
    assert checks["own_words_in_step"], checks
    assert _own_words(settings) == left
    assert metadata["own_word_memories"]["turns_not_read_by_a_model"] == 2
    with make_client(settings) as client:
        models = {d.model for d in read_summaries(client, [DAY]) if d.turn_id == first}
    assert models == {"a-chat-model"}
