"""The keep filter (`summarize.keep`): the learned judge of rules, decisions, gotchas and tasks. Pure functions."""

from __future__ import annotations

import pytest

from memory_pipeline.language.kinds import Kind
from memory_pipeline.summarize import gate
from memory_pipeline.summarize import keep as keep_filter
from memory_pipeline.summarize.compose import make_idea
from memory_pipeline.summarize.extract import candidates_without_model
from memory_pipeline.summarize.logistic import LearnedWeights, fit
from memory_pipeline.summarize.prompt import TurnMessage, turn_text
from testkit.preferences import PREFERENCES


@pytest.mark.parametrize(("said", "kind", "written"), PREFERENCES)
def test_the_shipped_filter_keeps_a_persons_preferences(said: str, kind: Kind, written: str) -> None:
    turn = turn_text([TurnMessage("user", said), TurnMessage("assistant", "Understood.")])
    idea = make_idea(kind, written, said, "user")
    assert idea is not None
    own = [i for i in candidates_without_model(turn) if keep_filter.judges(i)]
    for memory in (idea, *own):
        assert keep_filter.keeps(memory, turn) and gate.keeps(memory, turn), memory.summary


def test_the_shipped_filter_drops_the_assistants_plans_status_and_hedges() -> None:
    reply = (
        "Let me check the config loader before touching the tests. Maybe the cache is stale. "
        "I've updated 3 files and the build is now 885 lines shorter."
    )
    turn = turn_text([TurnMessage("user", "why does the build fail?"), TurnMessage("assistant", reply)])
    drafts = [
        (Kind.TASK, "Let me check the config loader before touching the tests."),
        (Kind.GOTCHA, "Maybe the cache is stale."),
        (Kind.DECISION, "I've updated 3 files and the build is now 885 lines shorter."),
    ]
    for kind, text in drafts:
        idea = make_idea(kind, text, text, "assistant")
        assert idea is not None
        assert not keep_filter.keeps(idea, turn), text


def test_untrained_it_keeps_everything_trained_it_follows_its_weights_and_never_judges_a_fact(
    tmp_path,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
) -> None:
    said = "Always run the linter before you push."
    turn = turn_text([TurnMessage("user", said), TurnMessage("assistant", "Let me look at the logs first.")])
    rule = make_idea(Kind.RULE, said, said, "user")
    plan = make_idea(Kind.TASK, "Let me look at the logs first.", "Let me look at the logs first.", "assistant")
    fact = make_idea(Kind.FACT, "The logs are in /var/log/app.", "Let me look at the logs first.", "assistant")
    assert rule is not None and plan is not None and fact is not None
    monkeypatch.setattr(keep_filter, "LEARNED", LearnedWeights(tmp_path / "keep.json", keep_filter.FEATURES))
    assert all(keep_filter.keeps(i, turn) for i in (rule, plan, fact))  # no weights: every candidate kept
    rows = [keep_filter.features(rule, turn), keep_filter.features(plan, turn)] * 20
    keep_filter.LEARNED.save(fit(rows, [1, 0] * 20), 0.5, {"trained_on": "test"})
    assert keep_filter.keeps(rule, turn) and not keep_filter.keeps(plan, turn)
    assert not keep_filter.judges(fact) and keep_filter.keeps(fact, turn)  # facts are the gate's
    # Weights trained on other features are never misread: the file is ignored, everything kept.
    (tmp_path / "keep.json").write_text('{"features": ["bias"], "weights": [-9.0], "threshold": 0.5}')
    monkeypatch.setattr(keep_filter, "LEARNED", LearnedWeights(tmp_path / "keep.json", keep_filter.FEATURES))
    assert keep_filter.keeps(plan, turn)


def test_the_shipped_weights_are_read() -> None:
    assert keep_filter.WEIGHTS.exists() and keep_filter.LEARNED.model is not None
    assert len(keep_filter.LEARNED.model[0]) == len(keep_filter.FEATURES)


@pytest.mark.parametrize(
    ("output", "confirmed"),
    [
        (["FAILED tests/test_db.py::test_lock - sqlite3.OperationalError", "14 passed in 2.0s"], True),
        (["Traceback (most recent call last):\n  File 'x'", "exit code 0"], True),
        (["14 passed in 2.0s", "error: cannot find module"], False),  # passed, then failed: not fixed
        (["1 failed, 13 passed in 2.0s"], False),  # one run that failed
        (["14 passed in 2.0s"], False),  # nothing failed: nothing found
        ([], False),
    ],
)
def test_a_finding_is_confirmed_by_a_failure_then_a_pass(output: list[str], confirmed: bool) -> None:
    messages = [TurnMessage("user", "why does the test fail?")]
    messages += [TurnMessage("toolResult", o, tool_name="bash") for o in output]
    turn = turn_text([*messages, TurnMessage("assistant", "It was caused by two workers sharing one SQLite file.")])
    assert keep_filter.confirmed(turn) is confirmed
    cause = make_idea(
        Kind.GOTCHA, "Two workers sharing one SQLite file caused the lock.", "caused by two workers", "assistant"
    )
    assert cause is not None
    assert keep_filter.confirmed_finding(cause, turn) is confirmed


@pytest.mark.parametrize(
    ("text", "alone"),
    [
        ("It should end up on the main branch.", False),
        ("It's always wrong when it calls a failure preexisting.", False),
        ("They think the test decides the hire.", False),
        ("This plan must be written so a new session can pick it up.", True),  # a determiner before its noun
        ("The tests hang because Redis is not running.", True),
        ("Always use pnpm, never npm.", True),
    ],
)
def test_a_memory_that_opens_on_a_pronoun_does_not_stand_alone_and_is_not_stored(text: str, alone: bool) -> None:
    turn = turn_text([TurnMessage("user", text), TurnMessage("assistant", "Understood.")])
    for kind in (Kind.RULE, Kind.FACT):
        idea = make_idea(kind, text, text, "user")
        assert idea is not None
        assert keep_filter.stands_alone(idea) is alone
        if not alone:
            assert not gate.keeps(idea, turn)  # whatever the learned weights say


def test_a_confirmed_cause_the_model_typed_as_a_decision_is_a_finding_a_confirmed_status_line_is_not() -> None:
    reply = "The formatter returned NaN for empty carts; fixed by defaulting the total to 0."
    messages = [
        TurnMessage("user", "why is the total NaN?"),
        TurnMessage("toolResult", "FAILED test_cart.py::test_empty_total", tool_name="bash"),
        TurnMessage("assistant", reply),
        TurnMessage("toolResult", "12 passed in 0.3s", tool_name="bash"),
    ]
    turn = turn_text(messages)
    cause = make_idea(Kind.DECISION, reply, reply, "assistant")
    status = make_idea(Kind.DECISION, "The suite ran twice.", "The suite ran twice.", "assistant")
    assert cause is not None and status is not None
    assert keep_filter.confirmed_finding(cause, turn) and gate.keeps(cause, turn)
    assert not keep_filter.confirmed_finding(status, turn)


def test_a_preference_the_model_worded_badly_is_stored_in_the_persons_words() -> None:
    from memory_pipeline.summarize.extract import gate_with_own_words

    said = "Always use pnpm, never npm. <script>window.__pwned = 1</script>"
    turn = turn_text([TurnMessage("user", said), TurnMessage("assistant", "Understood: pnpm only.")])
    drafted = make_idea(Kind.RULE, "Always use pnpm, never npm.", "Always use pnpm, never npm.", "user")
    assert drafted is not None
    fragment = drafted.model_copy(update={"summary": "pnpm only."})  # as the model worded it
    assert not gate.keeps(fragment, turn)  # two words: not a memory a reader can use
    kept, dropped = gate_with_own_words([fragment], turn, gate.keeps)
    assert dropped == [fragment]
    assert [i.summary for i in kept] == ["Always use pnpm, never npm."]
    # Nothing of the evidence's own passes the gate: nothing is put in the dropped one's place.
    plan = make_idea(Kind.TASK, "Let me check the config loader.", "Let me check the config loader.", "assistant")
    assert plan is not None
    quiet = turn_text([TurnMessage("user", "ok"), TurnMessage("assistant", "Let me check the config loader.")])
    assert gate_with_own_words([plan], quiet, gate.keeps)[0] == []
