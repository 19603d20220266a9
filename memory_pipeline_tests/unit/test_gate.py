"""Facts by shape, and the learned gate: pure functions."""

from __future__ import annotations

import json

import pytest

from memory_pipeline.language.kinds import Kind
from memory_pipeline.summarize import gate
from memory_pipeline.summarize import keep as keep_filter
from memory_pipeline.summarize.compose import facts_of, make_idea
from memory_pipeline.summarize.extract import candidates_without_model
from memory_pipeline.summarize.logistic import LearnedWeights, fit
from memory_pipeline.summarize.trust import TurnText

_DEV_DB = (
    "SQLite keeps giving us locking pain. From now on local development uses Postgres instead of SQLite. "
    "The dev database runs in docker: `docker compose up -d db`, listening on port 55432."
)


def test_the_decision_example_gives_the_choice_and_the_fact_as_two_pieces() -> None:
    ideas = candidates_without_model(TurnText(user=_DEV_DB, assistant="", other=""))
    assert [(i.kind, i.summary) for i in ideas] == [
        (Kind.DECISION, "Local development uses Postgres instead of SQLite."),
        (Kind.FACT, "The dev database runs in docker: `docker compose up -d db`, listening on port 55432."),
    ]


@pytest.mark.parametrize(
    "said",
    [
        "Can you run `make test` for me?",  # a question
        "Let me check `src/app.py` first.",  # a plan
        "Run `pnpm install` now.",  # an order for the moment
        "We met at 10:00 to talk it over.",  # a time is no port
    ],
)
def test_questions_plans_orders_and_times_are_no_facts(said: str) -> None:
    assert facts_of(TurnText(user=said, assistant="", other="")) == []


def test_a_fact_the_assistant_states_is_the_assistants() -> None:
    reply = "The MCP endpoint is `https://mcp.example.com/v1` and it only accepts GET requests."
    [fact] = facts_of(TurnText(user="why does it fail?", assistant=reply, other=""))
    assert fact.kind is Kind.FACT and fact.evidence_role == "assistant"


def test_the_gate_keeps_everything_until_it_is_trained_then_follows_its_weights(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    idea = make_idea(Kind.FACT, "The dev database listens on port 55432.", "dev db on port 55432", "user")
    selfish = make_idea(Kind.FACT, "`src/app.ts`, `src/util.ts` were changed.", "`src/app.ts`, `src/util.ts`",
                        "assistant")  # fmt: skip
    rule = make_idea(Kind.RULE, "Always use pnpm, never npm.", "always use pnpm, never npm", "user")
    assert idea is not None and selfish is not None and rule is not None
    turn = TurnText(user="dev db on port 55432", assistant="`src/app.ts`, `src/util.ts`", other="")
    monkeypatch.setattr(gate, "LEARNED", LearnedWeights(tmp_path / "gate.json", gate.FEATURES))
    # The other kinds are the keep filter's (test_keep_filter.py): untrained here, so only this gate decides.
    monkeypatch.setattr(keep_filter, "LEARNED", LearnedWeights(tmp_path / "keep.json", keep_filter.FEATURES))
    assert gate.keeps(idea, turn) and gate.keeps(selfish, turn)  # untrained: every candidate kept
    # Train on rows where the assistant's file list is never knowledge and the person's fact always is; a rule
    # scored like the file list is still kept: the gate judges facts only.
    rows = [gate.features(idea, turn), gate.features(selfish, turn), gate.features(rule, turn)] * 20
    weights = fit(rows, [1, 0, 0] * 20)
    gate.LEARNED.save(weights, 0.5, {"trained_on": "test"})
    assert gate.keeps(idea, turn) and not gate.keeps(selfish, turn)
    assert gate.score(rule, turn) < 0.5 and gate.keeps(rule, turn)  # its weights judge facts only
    saved = json.loads((tmp_path / "gate.json").read_text())
    assert saved["features"] == list(gate.FEATURES) and len(saved["weights"]) == len(gate.FEATURES)


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("My wife loves to cook.", "The person's wife loves to cook."),
        ("My name is Reba. What's yours?", "The person's name is Reba."),
        ("I work for IIoT Solutions in Jeddah.", "The person works for IIoT Solutions in Jeddah."),
    ],
)
def test_what_a_person_says_of_themselves_is_a_fact_said_of_them(said: str, expected: str) -> None:
    from memory_pipeline.summarize.compose import disclosed

    [fact] = disclosed(TurnText(user=said, assistant="", other=""))
    assert (fact.kind, fact.summary, fact.evidence_role) == (Kind.FACT, expected, "user")


def test_a_question_to_the_person_is_not_what_they_say_of_themselves() -> None:
    from memory_pipeline.summarize.compose import disclosed

    assert disclosed(TurnText(user="can you call me later?", assistant="", other="")) == []


@pytest.mark.parametrize(
    ("kind", "evidence", "reason"),
    [
        ("decision", "I'm an AI coding assistant operating within pi, a coding agent harness.", "describing itself"),
        ("decision", "Are we all committed? if yes, do it", "a question"),
    ],
)
def test_self_descriptions_and_questions_make_no_decision(kind: str, evidence: str, reason: str) -> None:
    from memory_pipeline.summarize.compose import from_draft
    from memory_pipeline.summarize.ideas import Drafted

    turn = TurnText(user="Who are you?" if "AI" in evidence else evidence, assistant=evidence, other="")
    draft = Drafted(kind=kind, subject="x", statement=evidence, evidence=evidence)
    idea, why = from_draft(draft, turn)
    assert idea is None and reason in why


@pytest.mark.parametrize(
    "text",
    [
        "I'm here to help you with tasks like.",
        "The steps are:",
        "You may need to.",
        "It uses the",
        "We did it so that.",
    ],
)
def test_a_statement_cut_mid_sentence_or_mid_list_is_no_memory(text: str) -> None:
    assert make_idea(Kind.FACT, text, text, "assistant") is None


def test_a_statement_ending_on_a_word_that_can_end_one_is_whole() -> None:
    assert make_idea(Kind.RULE, "Use pnpm for this.", "use pnpm for this", "user") is not None
    # "that" after a preposition is the thing pointed at, not a clause left open.
    flags = "Feature flags for fuel go through `flags.fuel_enabled`, don't read env vars for that."
    assert make_idea(Kind.RULE, flags, flags, "user") is not None


def test_a_dotted_name_of_three_parts_is_a_facts_shape_and_an_abbreviation_is_not() -> None:
    [fact] = facts_of(TurnText(user="the queue is ledger.audits.updates", assistant="Right, fixed that.", other=""))
    assert fact.summary == "The queue is ledger.audits.updates." and fact.evidence_role == "user"
    said = "We tried it, e.g. with version 1.2.3 and it was fine."
    assert facts_of(TurnText(user=said, assistant="", other="")) == []
