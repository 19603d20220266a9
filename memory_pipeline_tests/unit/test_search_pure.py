"""The pure parts of search: fusion, filters, observations, the briefing's arithmetic."""

from __future__ import annotations

import polars as pl

from memory_pipeline.recall.observations import observe_turns
from memory_pipeline.search.engine import Filters
from memory_pipeline.search.rrf import reciprocal_rank_fusion
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline_tests.conftest import SESSION_FIXTURES


def test_rrf_rewards_agreement_and_breaks_ties_by_recency() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], {"a": "2024", "d": "2026", "c": "2025"})
    assert [d for d, _ in fused][:1] == ["b"]
    # "a" and "d" are both first-in-one-list-only... a is rank 1 in list 1, d rank 2 in list 2: a wins on score.
    assert fused[1][0] == "a"
    tie = reciprocal_rank_fusion([["old"], ["new"]], {"old": "2020-01-01", "new": "2026-01-01"})
    assert [d for d, _ in tie] == ["new", "old"]
    assert reciprocal_rank_fusion([]) == []


def test_filters_become_elasticsearch_clauses() -> None:
    clauses = Filters(project="/p", since="2026-01-01", priority=("high",), kind=("summary",)).clauses()
    assert {"term": {"project": "/p"}} in clauses and {"terms": {"priority": ["high"]}} in clauses
    assert {"range": {"established_at": {"gte": "2026-01-01"}}} in clauses
    assert Filters(kind=("summary",)).indices() == ["memory-summary"]
    assert Filters().indices() == ["memory-summary", "memory-observations", "memory-notes"]
    assert Filters(kind=("note",)).indices() == ["memory-notes"] and Filters().clauses() == []


def test_observations_say_what_was_asked_run_touched_and_how_it_ended() -> None:
    frame = to_frame(
        session_messages(
            parse_session(SESSION_FIXTURES / "generated-pi-0.73.1-branches-labels-compaction.v3.jsonl"), Redactor(), "p"
        )[0]
    )
    observations = observe_turns(group_turns(frame), frame)
    assert observations.height == 4 and observations["doc_id"].n_unique() == 4
    tests = observations.filter(pl.col("turn_id") == "c5bb4d36").row(0, named=True)
    assert tests["summary"].startswith("Asked: Now write tests.")
    assert "Tools: write." in tests["summary"] and "Files: src/util.test.ts." in tests["summary"]
    assert tests["kind"] == "observation" and tests["established_at"].endswith("Z")
