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
from memory_pipeline.stores.summary_store import OWN_WORDS, SummaryDoc, read_summaries, sync_summaries
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


def _own_words(settings: Settings) -> list[SummaryDoc]:
    with make_client(settings) as client:
        found = [d for d in read_summaries(client, [DAY]) if d.model == OWN_WORDS]
    return sorted(found, key=lambda d: (d.session_id, d.turn_id))


def _model_read(doc: SummaryDoc) -> pl.DataFrame:
    """A model run's outcome for `doc`'s turn alone: one rule of its own."""
    idea = {"summary": "Use pnpm in this repository, never npm.", "tags": ["pnpm", "npm"], "priority": "high"}
    return pl.DataFrame(
        [
            {
                "partition": DAY,
                "session_id": doc.session_id,
                "turn_id": doc.turn_id,
                "project": PROJECT,
                "agent": "pi",
                "established_at": doc.established_at,
                "content_hash": doc.turn_content_hash,
                "prompt_version": doc.prompt_version,
                "model": "a-chat-model",
                "status": "summarised",
                "reason": None,
                "ideas": [idea | {"kind": "rule"}],
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


def test_own_words_are_searchable_without_the_model_and_give_way_to_its_reading(
    local_runtime: Settings, tmp_path: Path
) -> None:
    # The selection here is the one the fast path and `backfill --no-llm` run.
    assert {a.key.path[-1] for a in LLM_FREE_RUN_ASSETS} == set(LLM_FREE_ASSET_NAMES) - {"memory_followthrough"}
    reset_days(local_runtime, [DAY])
    sessions = tmp_path / "sessions"
    # Two sessions whose turns have the same ids (as Codex's line-number ids do): a turn is its session's.
    first_id, second_id = f"own-a-{uuid.uuid4().hex[:8]}", f"own-b-{uuid.uuid4().hex[:8]}"
    write_session(sessions / "a.jsonl", first_id, DAY, PROJECT, TURNS)
    write_session(sessions / "b.jsonl", second_id, DAY, PROJECT, TURNS)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)

    metadata, checks = _run(settings)
    assert checks["own_words_in_step"] and checks["every_memory_has_a_vector"], checks
    stored = _own_words(settings)
    assert len({(d.session_id, d.turn_id) for d in stored}) == 4, [d.summary for d in stored]
    assert {d.turn_id for d in stored if d.session_id == first_id} == {
        d.turn_id for d in stored if d.session_id == second_id
    }
    assert any("pnpm" in d.summary and d.kind == "rule" for d in stored)
    assert any("pull request" in d.summary and d.kind == "rule" for d in stored)
    assert not any("Vitest" in d.summary for d in stored)
    assert metadata["own_word_memories"]["written"] == len(stored)
    with make_client(settings) as client:
        hits = client.search(
            index="memory-summary",
            query={
                "bool": {"filter": [{"term": {"model": OWN_WORDS}}, {"terms": {"session_id": [first_id, second_id]}}]}
            },
            size=20,
        )["hits"]["hits"]
        # Each has its vector: search finds it by meaning, not only by its words.
        assert len(hits) == len(stored) and all(any(k.startswith("vector_") for k in h["_source"]) for h in hits)

    # Again: nothing changes.
    metadata, checks = _run(settings)
    assert metadata["own_word_memories"]["written"] == 0 and checks["own_words_in_step"]
    assert metadata["own_word_memories"]["unchanged"] == len(stored)

    # The model's run read the first session's first turn only (the rest arrived after it started): that turn's
    # own words give way to what the model kept; the others stay, the second session's turn of the same id too.
    read = next(d for d in stored if d.session_id == first_id)
    model_read = _model_read(read)
    with make_client(settings) as client:
        sync_summaries(client, summary_documents(model_read), ledger_rows(model_read), [DAY])
        seen = {(read.session_id, read.turn_id)}
        assert no_duplicate_summaries(client, summary_documents(model_read), [DAY], seen=seen).passed
        # Seen as if it had read every turn, or another turn whose own words are still there, the index holds more
        # than the run: the check says so.
        assert not no_duplicate_summaries(client, summary_documents(model_read), [DAY]).passed
        other = next((d.session_id, d.turn_id) for d in stored if d.session_id == second_id)
        assert not no_duplicate_summaries(client, summary_documents(model_read), [DAY], seen=seen | {other}).passed
    left = _own_words(settings)
    assert left == [d for d in stored if (d.session_id, d.turn_id) != (read.session_id, read.turn_id)]

    # The next run without the model leaves the turn the model read to it, and keeps the others' own words.
    metadata, checks = _run(settings)
    assert checks["own_words_in_step"], checks
    assert _own_words(settings) == left
    with make_client(settings) as client:
        models = {d.model for d in read_summaries(client, [DAY]) if (d.session_id, d.turn_id) in seen}
    assert models == {"a-chat-model"}

    # A turn gone from its session (the person rewound it away) takes its own words with it.
    write_session(sessions / "b.jsonl", second_id, DAY, PROJECT, TURNS[:1])
    metadata, checks = _run(settings)
    assert checks["own_words_in_step"], checks
    kept_turn = min(d.turn_id for d in left if d.session_id == second_id)
    assert {d.turn_id for d in _own_words(settings) if d.session_id == second_id} == {kept_turn}
