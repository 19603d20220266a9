"""The keep filter (`summarize/keep.py`): its plain features, each of which could fail, and its weights file."""

from __future__ import annotations

import json

import pytest

from memory_pipeline.language.kinds import Kind
from memory_pipeline.summarize import keep
from memory_pipeline.summarize.compose import make_idea
from memory_pipeline.summarize.ideas import Idea, Priority
from memory_pipeline.summarize.logistic import LearnedWeights, cross_validated, keeping_every_positive
from memory_pipeline.summarize.trust import TurnText


def _idea(summary: str, evidence: str, role: str = "user", kind: Kind = Kind.RULE, subject: str = "") -> Idea:
    return Idea(
        summary=summary,
        tags=["one", "two", "three"],
        priority=Priority.HIGH,
        kind=kind,
        subject=subject,
        evidence=evidence,
        evidence_role=role,
    )


def _feature(name: str, idea: Idea, turn: TurnText | None = None) -> float:
    text = turn or TurnText(user=idea.evidence, assistant="", other="")
    return keep.features(idea, text)[keep.FEATURES.index(name)]


def test_the_first_words_a_statement_names_are_its_head() -> None:
    assert keep.head_words("Set the theme to 1 for true colors.") == ["set", "theme", "1"]
    assert keep.head_words("The the the.") == []


def test_an_invented_subject_is_absent_from_the_evidence_and_a_faithful_one_is_not() -> None:
    evidence = "For true colors in VS Code set COLORTERM to 1, see the README."
    invented = _idea("Set the theme to 1 for true colors.", evidence, subject="theme")
    faithful = _idea("Set COLORTERM to 1 for true colors in VS Code.", evidence, subject="COLORTERM")
    name = "share of its first content words absent from its evidence"
    assert _feature(name, invented) == pytest.approx(1 / 3)
    assert _feature(name, faithful) == 0.0


@pytest.mark.parametrize(
    ("statement", "intention"),
    [
        ("To determine if the MD files are clear enough, we need to analyze the content.", True),
        ("Let me check the footer sources.", True),
        ("We need to add a watcher.", True),
        ("To investigate the code flow and understand how this happens, let me look at it.", True),
        ("Always use pnpm, never npm.", False),
        ("The dev database listens on port 55432.", False),
    ],
)
def test_plans_and_intentions_are_told_from_knowledge(statement: str, intention: bool) -> None:
    assert keep.holds_intention(statement) is intention


def test_an_intention_opening_is_told_from_one_inside() -> None:
    inside = "To investigate the code flow and understand how this happens, let me look at it."
    assert keep.opens_on_intention(inside)  # "To investigate …"
    assert not keep.opens_on_intention("The flow is simple, let me explain it.")
    assert keep.holds_intention("The flow is simple, let me explain it.")


@pytest.mark.parametrize(
    ("statement", "status"),
    [
        ("The `AgentSession` class is now 885 lines and contains all the shared logic.", True),
        ("Footer now uses dim instead of muted.", True),
        ("Added `showStatus()` helper to the interactive mode.", True),
        ("The TruncatedText component must stop at a newline.", False),
    ],
)
def test_the_state_of_the_work_is_a_status_report(statement: str, status: bool) -> None:
    assert keep.reports_status(statement) is status


def test_an_order_at_the_end_of_a_rule_is_found_and_one_sentence_is_no_such_ending() -> None:
    assert keep.ends_on_order("The bash command bypasses the streaming check. Investigate.")
    assert not keep.ends_on_order("Investigate the streaming check.")  # one sentence: the order is all of it
    assert not keep.ends_on_order("Never push to main. Always open a pull request first.")


def test_who_speaks_in_the_first_and_second_person_by_speaker() -> None:
    reply = _idea(
        "You're right. I've updated our memory workflow to create the entity first.",
        "You're right. I've updated our memory workflow to create the entity first.",
        role="assistant",
    )
    assert _feature("first person, said by the assistant or neither", reply) == 1.0
    assert _feature("second person, said by the assistant or neither", reply) == 1.0
    assert _feature("first person, said by the person", reply) == 0.0
    rule = _idea("Make sure you never use CODEX_HOME.", "make sure you dont use CODEX_HOME", role="user")
    assert _feature("second person, said by the person", rule) == 1.0
    assert _feature("first person, said by the person", rule) == 0.0


def test_a_fragment_and_a_document_line_are_marked() -> None:
    fragment = _idea("Going forward.", "going forward", kind=Kind.DECISION)
    assert _feature("fewer than three content words", fragment) == 1.0
    notes = "# Summary\n- one\n- two\n- three\n- four\nThe session is being continued from a previous conversation."
    continued = _idea(
        "The session is being continued from a previous conversation.",
        "The session is being continued from a previous conversation.",
        role="other",
    )
    turn = TurnText(user="", assistant="", other=notes)
    assert _feature("evidence in a message that is a document (headings, many list lines)", continued, turn) == 1.0
    plain = TurnText(user="", assistant="", other=continued.evidence)
    assert _feature("evidence in a message that is a document (headings, many list lines)", continued, plain) == 0.0


def test_the_absent_share_counts_only_what_the_source_lacks() -> None:
    assert keep.absent(["theme", "color"], "the colors of the terminal") == 0.5
    assert keep.absent([], "anything") == 0.0


def test_the_shipped_weights_load_and_score_every_memory() -> None:
    saved = json.loads(keep.WEIGHTS.read_text())
    assert saved["features"] == list(keep.FEATURES) and len(saved["weights"]) == len(keep.FEATURES)
    assert 0.0 < saved["threshold"] < 1.0 and "tuning half" in saved["trained_on"]
    assert keep.LEARNED.model is not None  # the file matches the features: the filter is on
    idea = make_idea(Kind.RULE, "Always use pnpm, never npm.", "always use pnpm, never npm", "user")
    assert idea is not None
    score = keep.score(idea, TurnText(user="always use pnpm, never npm", assistant="", other=""))
    assert 0.0 < score < 1.0
    assert keep.keeps(idea, TurnText(user="always use pnpm, never npm", assistant="", other="")) is (
        score >= saved["threshold"]
    )


def test_without_weights_every_memory_is_kept_and_trained_weights_are_followed(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    turn = TurnText(user="always use pnpm, never npm", assistant="I need to add a watcher.", other="")
    rule = _idea("Always use pnpm, never npm.", "always use pnpm, never npm")
    plan = _idea("I need to add a watcher.", "I need to add a watcher.", role="assistant", kind=Kind.DECISION)
    monkeypatch.setattr(keep, "LEARNED", LearnedWeights(tmp_path / "keep.json", keep.FEATURES))
    assert keep.keeps(rule, turn) and keep.keeps(plan, turn)
    rows = [keep.features(rule, turn), keep.features(plan, turn)] * 10
    weights, threshold = keeping_every_positive(rows, [1, 0] * 10, folds=5)
    keep.LEARNED.save(weights, threshold, {"trained_on": "test"})
    assert keep.keeps(rule, turn) and not keep.keeps(plan, turn)
    # A fact shaped like the plan is the gate's to judge, not the filter's.
    fact = _idea("I need to add a watcher.", "I need to add a watcher.", role="assistant", kind=Kind.FACT)
    assert keep.score(fact, turn) < threshold and keep.keeps(fact, turn)


def test_cross_validation_scores_each_group_by_a_fit_that_never_saw_it() -> None:
    # The same row is positive in group 0 and negative in group 1: scored by the other group only, each row gets
    # the opposite of its own label, which a fit that saw its twin in the same group could not give.
    rows = [[1.0, 1.0]] * 4 + [[1.0, 0.0]] * 4
    targets = [1, 1, 0, 0, 0, 0, 1, 1]
    scores = cross_validated(rows, targets, folds=2, groups=[0, 0, 1, 1, 0, 0, 1, 1])
    assert scores[0] < 0.5 < scores[2] and scores[4] > 0.5 > scores[6]


def test_extraction_drops_what_the_filter_does_not_keep_and_counts_it_under_keep() -> None:
    from memory_pipeline.summarize.extract import NOT_KEPT, TurnJob, summarise_turn
    from memory_pipeline.summarize.prompt import TurnMessage
    from memory_pipeline_tests.unit.mock_llm import chat_client, completion

    said = "From now on always run pytest -x before saying it is fixed."
    draft = [{"kind": "rule", "subject": "pytest", "statement": "Always run pytest -x before saying a fix works.",
              "evidence": "always run pytest -x before saying it is fixed"}]  # fmt: skip
    job = TurnJob("s1", "t1", "/p", [TurnMessage("user", said)])
    kept = summarise_turn(chat_client([completion(json.dumps(draft))], []), job, 4096, 256)
    assert [i.summary for i in kept.ideas] == ["Always run pytest -x before saying a fix works."]
    assert NOT_KEPT not in [why for why, _ in kept.dropped]  # the shipped filter keeps a person's plain rule
    refused = summarise_turn(
        chat_client([completion(json.dumps(draft))], []), job, 4096, 256, learned_keep=lambda *_: False
    )
    assert refused.ideas == [] and refused.status == "empty"
    assert ("keep" in NOT_KEPT.split(":")[0]) and (NOT_KEPT, "Always run pytest -x before saying a fix works.") in (
        refused.dropped
    )


def test_a_gotcha_that_states_its_cause_is_not_judged_and_a_plan_typed_as_one_is() -> None:
    found = _idea("The tests hang because Redis is not running.", "They hang because Redis is not running",
                  role="assistant", kind=Kind.GOTCHA)  # fmt: skip
    plan = _idea("To investigate the code flow, let me read the handler.", "let me read the handler",
                 role="assistant", kind=Kind.GOTCHA)  # fmt: skip
    assert not keep.judges(found) and keep.judges(plan)
    assert not keep.judges(_idea("The dev database listens on port 55432.", "port 55432", kind=Kind.FACT))
