"""The checks that need no server: nothing dropped without being listed, no empty LLM success."""

from __future__ import annotations

import polars as pl

from memory_pipeline.checks import (
    every_message_placed,
    index_equals_observations,
    knn_finds_itself,
    llm_answers_usable,
)
from memory_pipeline.sessions.messages import MESSAGE_SCHEMA, to_frame


def _messages(*rows: dict) -> pl.DataFrame:
    base = {name: None for name in MESSAGE_SCHEMA} | {"tool_calls": [], "image_mime_types": [], "labels": []}
    return to_frame([base | {"is_metadata": False, "session_file": "a.jsonl"} | row for row in rows])


def test_a_message_without_a_place_fails_and_is_named_by_file_and_line() -> None:
    placed = _messages({"doc_id": "s_t_0", "line": 2}, {"doc_id": None, "line": 3, "is_metadata": True})
    assert every_message_placed(placed).passed
    dropped = _messages({"doc_id": "s_t_0", "line": 2}, {"doc_id": None, "line": 7})
    result = every_message_placed(dropped)
    assert not result.passed and result.metadata["unplaced"].value == ["a.jsonl:7"]


def test_llm_answers_usable_fails_only_when_every_turn_of_the_day_failed() -> None:
    def outcomes(*statuses: tuple[str, int]) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "session_id": ["s"] * len(statuses),
                "turn_id": [f"t{i}" for i in range(len(statuses))],
                "status": [s for s, _ in statuses],
                "llm_calls": [c for _, c in statuses],
                "reason": ["not JSON" if s == "failed" else None for s, _ in statuses],
            }
        )

    assert llm_answers_usable(outcomes(("failed", 2), ("summarised", 1))).passed
    # a turn retried and failing again, beside turns read earlier: listed, not a failed day
    assert llm_answers_usable(outcomes(("failed", 2), ("summarised", 0), ("empty", 0))).passed
    every = llm_answers_usable(outcomes(("failed", 2), ("failed", 2)))
    assert not every.passed and every.metadata["failed"].value == 2
    assert every.metadata["first_failures"].value == ["s/t0: not JSON", "s/t1: not JSON"]


def test_knn_check_fails_when_it_tried_nothing_it_should_have() -> None:
    coverage = {"memory-summary": (0, 0), "memory-observations": (4, 4)}
    assert not knn_finds_itself(0, 0, coverage, sample=5).passed  # 4 vectors there, none queried: not a pass
    assert knn_finds_itself(4, 4, coverage, sample=5).passed
    assert not knn_finds_itself(3, 4, coverage, sample=5).passed
    assert knn_finds_itself(0, 0, {"memory-summary": (0, 0)}, sample=5).passed  # nothing there to try
    assert knn_finds_itself(7, 7, {"a": (9, 9), "b": (2, 2)}, sample=5).metadata["to_try"].value == 7


def test_the_observations_index_must_be_the_frame_by_id_and_content() -> None:
    run = {"obs_s_t0": "h0", "obs_s_t1": "h1"}
    assert index_equals_observations(run, dict(run)).passed
    result = index_equals_observations(run, {"obs_s_t1": "older", "obs_s_t9": "h9"})
    assert not result.passed
    assert result.metadata["missing"].value == ["obs_s_t0"]  # a turn whose observation is not stored
    assert result.metadata["stale"].value == ["obs_s_t1"]  # stored with another text
    assert result.metadata["not_in_run"].value == ["obs_s_t9"]  # a turn no longer there
    assert (result.metadata["expected"].value, result.metadata["stored"].value) == (2, 2)
