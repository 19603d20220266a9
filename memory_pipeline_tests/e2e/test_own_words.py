"""A run without the chat model stores what a turn's own words compose to, for the turns no model has read yet,
and the model's reading replaces them: on the real Elasticsearch and embedding server."""

from __future__ import annotations

import uuid
from pathlib import Path

import polars as pl
from dagster import materialize

from memory_pipeline.checks import no_duplicate_summaries
from memory_pipeline.partitions import LLM_FREE_ASSET_NAMES, RANGE_END, RANGE_START, instance_with_days
from memory_pipeline.resources import build_resources
from memory_pipeline.search.open import open_search
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
    assert len({(d.session_id, d.turn_id) for d in stored}) == 6, [d.summary for d in stored]
    assert {d.turn_id for d in stored if d.session_id == first_id} == {
        d.turn_id for d in stored if d.session_id == second_id
    }
    assert any("pnpm" in d.summary and d.kind == "rule" for d in stored)
    assert any("pull request" in d.summary and d.kind == "rule" for d in stored)
    assert any("Vitest instead of Jest" in d.summary and d.kind == "decision" for d in stored)
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


LATER = "2024-06-13"
_BEFORE = [
    ("For local development we use SQLite, never Postgres: it needs no server.", "Noted."),
    (
        "The root cause of the `database is locked` failures was pytest-xdist workers sharing one SQLite file.",
        "Each worker gets its own file now.",
    ),
]
_AFTER = [
    (
        "SQLite keeps giving us locking pain. From now on local development uses Postgres instead of SQLite. "
        "The dev database runs in docker: `docker compose up -d db`, listening on port 55432.",
        "Switched the dev settings.",
    )
]


def test_a_later_decision_marks_the_choice_it_replaced_at_once_and_no_cause(
    local_runtime: Settings, tmp_path: Path
) -> None:
    """Issue 43's example, without the model: the decision and the fact are two memories; the earlier SQLite
    choice is marked replaced by the decision (search shows what holds now), the root cause about the test suite
    is not; and when the replacing memory goes, the mark goes with it."""
    reset_days(local_runtime, [DAY, LATER])
    sessions = tmp_path / "sessions"
    write_session(sessions / "before.jsonl", f"rep-a-{uuid.uuid4().hex[:8]}", DAY, PROJECT, _BEFORE)
    write_session(sessions / "after.jsonl", f"rep-b-{uuid.uuid4().hex[:8]}", LATER, PROJECT, _AFTER)
    settings = isolated_settings(local_runtime, tmp_path, sessions_dir=sessions)
    days = [DAY, LATER]
    result = materialize(
        LLM_FREE_RUN_ASSETS,
        resources=build_resources(settings),
        instance=instance_with_days(days),
        tags={RANGE_START: DAY, RANGE_END: LATER},
    )
    assert result.success
    with make_client(settings) as client:
        docs = {d.doc_id: d for d in read_summaries(client, days) if d.model == OWN_WORDS}
        marks = {
            h["_id"]: h["_source"].get("superseded_by")
            for h in client.search(index="memory-summary", query={"ids": {"values": list(docs)}}, size=20)["hits"][
                "hits"
            ]
        }
    by_text = {d.summary: d.doc_id for d in docs.values()}
    decision = by_text["Local development uses Postgres instead of SQLite."]
    assert "The dev database runs in docker: `docker compose up -d db`, listening on port 55432." in by_text
    old = next(i for t, i in by_text.items() if t.startswith("For local development, use SQLite"))
    cause = next(i for t, i in by_text.items() if "pytest-xdist" in t)
    assert marks[old] == decision
    assert marks[cause] is None and marks[decision] is None
    with open_search(settings) as search:
        row = next(r for r in search.find("local development SQLite", k=10) if r.id == old)
    assert row.superseded_by == decision and row.current == "Local development uses Postgres instead of SQLite."

    # The later session rewound away: its decision goes, and so does the mark naming it.
    write_session(sessions / "after.jsonl", f"rep-c-{uuid.uuid4().hex[:8]}", LATER, PROJECT, [("Thanks.", "Sure.")])
    result = materialize(
        LLM_FREE_RUN_ASSETS,
        resources=build_resources(settings),
        partition_key=LATER,
        instance=instance_with_days(days),
    )
    assert result.success
    with make_client(settings) as client:
        source = client.get(index="memory-summary", id=old)["_source"]
    assert source.get("superseded_by") is None
