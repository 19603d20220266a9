"""The memories a run without the chat model stores for the turns no model has read yet (`own_word_outcomes`):
what the turn's own words compose to, through the same checks and gate as the model's."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.stores.summary_store import OWN_WORDS, LedgerDoc
from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, own_word_outcomes, summary_documents
from testkit.browser import write_session

TURNS = [
    ("Always use pnpm in this repo, never npm: the lockfile is pnpm-lock.yaml.", "Understood: pnpm only."),
    ("thanks, looks good", "Glad it helps."),
    ("Ship it to staging now.", "Deployed to staging."),
    ("From now on we use Vitest instead of Jest, because Jest kept breaking on our ESM imports.", "Switched."),
]


def _frames(tmp_path: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    path = write_session(tmp_path / "s.jsonl", "own-words-1", "2024-06-10", "/home/dev/shop", TURNS)
    frame = to_frame(session_messages(parse_session(path), Redactor(), "/home/dev/shop")[0])
    return frame, group_turns(frame)


def _read_by_a_model(turn: dict, content_hash: str) -> LedgerDoc:
    """The ledger's record of a model's reading of `turn` when it held `content_hash`."""
    return LedgerDoc(
        session_id=turn["session_id"],
        turn_id=turn["turn_id"],
        partition=turn["partition"],
        content_hash=content_hash,
        prompt_version="v",
        model="qwen",
        status="summarised",
        summarized_at="2024-06-10T10:00:00+00:00",
    )


def test_a_turn_no_model_read_keeps_the_persons_rule_marked_as_own_words(tmp_path: Path) -> None:
    messages, turns = _frames(tmp_path)
    outcomes = own_word_outcomes(turns, messages, {})
    assert outcomes.schema == pl.Schema(OUTCOME_SCHEMA)
    assert outcomes.height == turns.height == 4
    assert set(outcomes["model"]) == {OWN_WORDS}
    assert set(outcomes["llm_calls"]) == {0}
    # Dated by the turn, not by the run: the same words compose to the same documents on every run.
    assert outcomes["summarized_at"].to_list() == outcomes["established_at"].to_list()
    docs = summary_documents(outcomes)
    rules = docs.filter(pl.col("kind") == "rule")
    assert any("pnpm" in s and "npm" in s for s in rules["summary"]), docs["summary"].to_list()
    assert set(docs["evidence_role"]) == {"user"}
    # Thanks and a one-off order are no knowledge: nothing stored from them. The person's decision is kept, with
    # its reason (what a later one replaces is marked at once: `reflect.replacing`).
    ordered = turns.sort("turn_index")["turn_id"].to_list()
    assert set(docs["turn_id"]) == {ordered[0], ordered[3]}, docs.select("turn_id", "summary").to_dicts()
    decisions = docs.filter(pl.col("kind") == "decision")["summary"].to_list()
    assert decisions == ["Use Vitest instead of Jest, because Jest kept breaking on our ESM imports."]


def test_a_turn_a_model_has_read_is_left_to_the_model(tmp_path: Path) -> None:
    messages, turns = _frames(tmp_path)
    first = turns.sort("turn_index").row(0, named=True)
    read = _read_by_a_model(first, first["content_hash"])
    outcomes = own_word_outcomes(turns, messages, {(read.session_id, read.turn_id): read})
    assert first["turn_id"] not in set(outcomes["turn_id"])
    assert outcomes.height == 3
    # Only the later decision's turn holds knowledge of the three left.
    assert summary_documents(outcomes)["kind"].to_list() == ["decision"]


def test_a_turn_that_changed_since_the_model_read_it_is_read_from_its_own_words_again(tmp_path: Path) -> None:
    messages, turns = _frames(tmp_path)
    first = turns.sort("turn_index").row(0, named=True)
    older = _read_by_a_model(first, "what the turn held when the model read it")
    outcomes = own_word_outcomes(turns, messages, {(older.session_id, older.turn_id): older})
    assert first["turn_id"] in set(outcomes["turn_id"])
    assert any("pnpm" in s for s in summary_documents(outcomes)["summary"])
