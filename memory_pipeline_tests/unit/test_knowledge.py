"""A memory is knowledge readable alone: the pure code that cleans statements, splits a person's message into
its pieces of knowledge, keeps the assistant's findings, and names the categories of the tools a statement
names."""

from __future__ import annotations

import json

import pytest

from memory_pipeline.language.kinds import Kind
from memory_pipeline.language.topics import files_of, task_topics, topics_of
from memory_pipeline.summarize.compose import make_idea, tags_for, typed_by_the_person
from memory_pipeline.summarize.extract import TurnJob, summarise_turn
from memory_pipeline.summarize.knowledge import about_itself, clean_statement, findings_of, pieces_of
from memory_pipeline.summarize.prompt import TurnMessage
from memory_pipeline.summarize.trust import TurnText
from memory_pipeline_tests.unit.mock_llm import chat_client, completion


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ('The user said: "always use pnpm".', "Always use pnpm."),
        ("The user wants to always run the linter first", "Always run the linter first."),
        ("ok, so we should keep the API versioned under /v2", "Keep the API versioned under /v2."),
        ("We decided to use Vitest instead of Jest, because Jest broke on ESM.",
         "Use Vitest instead of Jest, because Jest broke on ESM."),
        ("[User sent a photo] show only the market cap!", "Show only the market cap."),
        ("omfg use fucking rgb values", "Use rgb values."),
        # A clause that only vents goes whole; apostrophes are no quotes; inner quotes that pair up keep the
        # outer pair a pair, and quotes that do not (`"a" and "b"`) are left as written.
        ("the footer should turn 'warning' above 70% so the user sees shit is about to get fucked",
         "The footer should turn 'warning' above 70%."),
        ("'Now let's fix the footer colours'.", "Fix the footer colours."),
        ("'the badge should say 'beta' in grey'", "The badge should say 'beta' in grey."),
        ('"pnpm" and "vitest"', '"pnpm" and "vitest".'),
        ("dimGray should be that, no need for linkGray", "dimGray should be that, no need for linkGray."),
        ("From now on, never push to main", "Never push to main."),
        ("", ""),
        ("[image]", ""),
    ],
)  # fmt: skip
def test_a_statement_is_cleaned_never_cut(raw: str, clean: str) -> None:
    assert clean_statement(raw) == clean


def test_a_restatement_describing_its_input_is_no_memory() -> None:
    assert about_itself("The context is about a situation where the colours are too intense.")
    assert about_itself("This remark says to use pnpm.")
    assert not about_itself("The footer shows a warning above 70% context usage.")


def test_a_long_statement_is_kept_whole() -> None:
    long = "Keep every migration reversible " + "and documented " * 60 + "in the changelog."
    assert clean_statement(long).endswith("in the changelog.") and "…" not in clean_statement(long)


def test_one_message_gives_one_piece_per_rule_decision_or_gotcha_in_order() -> None:
    said = (
        "Always use pnpm, never npm; and we go with Vitest over Jest because Jest broke on ESM. "
        "The theme selector must apply on the next tick, otherwise it renders artifacts. Thanks!"
    )
    assert [(p.kind, p.statement) for p in pieces_of(said)] == [
        (Kind.RULE, "Always use pnpm, never npm."),
        (Kind.DECISION, "Use Vitest over Jest because Jest broke on ESM."),
        (Kind.GOTCHA, "The theme selector must apply on the next tick, otherwise it renders artifacts."),
    ]


def test_questions_requests_and_commands_are_no_knowledge() -> None:
    for said in ("can you run the tests?", "delete the file", "/compact", "thanks, looks good", "why is it slow?"):
        assert pieces_of(said) == [], said


def test_the_assistants_found_cause_is_a_gotcha_in_its_own_words() -> None:
    answer = (
        "I looked at the logs.\n"
        "The root cause was a missing index on orders.customer_id, which made the report scan the table.\n"
        "Should I add it?"
    )
    [finding] = findings_of(answer)
    assert finding.kind is Kind.GOTCHA and finding.role == "assistant"
    assert finding.statement.startswith("The root cause was a missing index on orders.customer_id")
    assert findings_of("Let me check the logs. Would that be the cause?") == []


def test_categories_and_files_let_a_question_find_the_tool() -> None:
    assert topics_of("Always use pnpm, never npm; tests run with Vitest.") == ["package-manager", "test-runner"]
    assert files_of("The bug was in src/theme.ts and vite.config.ts, not in v1.2 or e.g. this.") == [
        "src/theme.ts",
        "vite.config.ts",
    ]
    assert task_topics("Install a library for drawing the route on the map") == ["package-manager"]
    assert task_topics("Write vitest tests for the chart") == ["test-runner", "charts"]  # named, then described
    assert task_topics("Roll back the staging deployment") == ["container"]
    assert task_topics("Rename the helper in utils") == []
    tags = tags_for(Kind.RULE, "pnpm", "Always use pnpm, never npm.", [])
    assert tags[0] == "rule" and "package-manager" in tags and 3 <= len(tags) <= 8


def test_a_memory_made_from_a_piece_carries_its_evidence_and_priority() -> None:
    idea = make_idea(Kind.DECISION, "we'll use Redis for the cache", "we'll use Redis for the cache", "user")
    assert idea is not None
    assert (idea.summary, idea.priority, idea.kind) == ("Use Redis for the cache.", "high", "decision")
    assert idea.evidence == "we'll use Redis for the cache" and idea.evidence_role == "user"
    assert "database" in idea.tags  # Redis is a data store: "which database…" finds it
    assert make_idea(Kind.FACT, "[photo]", "[photo]", "user") is None


def test_a_decision_the_model_stored_without_its_choice_takes_the_persons_statement() -> None:
    evidence = "We decided to use Vitest instead of Jest, because Jest kept breaking on our ESM imports."
    turn = TurnText(user=f"Always use pnpm, never npm. {evidence}", assistant="Noted.", other="")
    reason_only = make_idea(Kind.GOTCHA, "Jest kept breaking on our ESM imports.", evidence, "user")
    whole = make_idea(Kind.RULE, "Use pnpm, never npm.", "Always use pnpm, never npm.", "user")
    assert reason_only is not None and whole is not None
    fixed, kept = typed_by_the_person(turn, [reason_only, whole])
    assert fixed.kind == "decision" and "Vitest" in fixed.summary and "Jest" in fixed.summary
    assert fixed.evidence == evidence
    # It cites the person's sentence: the person's statement, not the model's rewording of it.
    assert kept.summary == "Always use pnpm, never npm." and kept.kind == "rule"
    # A memory that names the choice and rests on the reply is left as the model had it.
    echoed = make_idea(Kind.RULE, "Use pnpm, never npm.", "I will use pnpm, never npm.", "assistant")
    assert echoed is not None
    [left] = typed_by_the_person(TurnText(turn.user, "I will use pnpm, never npm.", ""), [echoed])
    assert left.summary == "Use pnpm, never npm."


@pytest.mark.parametrize(
    ("statement", "alone"),
    [
        ("Remove the dependency.", False),  # which one? (a memory a small model made on the benchmark)
        ("Run the tests.", False),
        ("Delete the file.", False),
        ("Use uv.", True),
        ("Use pnpm, never npm.", True),
        ("Always run the tests before committing.", True),
    ],
)
def test_a_memory_must_name_what_it_is_about(statement: str, alone: bool) -> None:
    from memory_pipeline.summarize.compose import stands_alone

    assert stands_alone(statement) is alone
    if len(statement) >= 10:  # shorter ones are no memory anyway
        assert (make_idea(Kind.DECISION, statement, statement, "user") is not None) is alone


def test_a_decision_that_points_back_names_the_choice_it_points_to() -> None:
    # The sample session (data/sessions/--home-alice-work-demo-shop--): the choice is in the sentence before
    # "We decided this because …"; stored alone, the memory said why but not what (issue 49).
    said = (
        "Let's move the tests from Jest to Vitest. We decided this because Jest keeps breaking on our ESM "
        "imports, while Vitest runs ESM natively."
    )
    [piece] = pieces_of(said)
    assert piece.kind is Kind.DECISION and piece.evidence == said
    assert piece.statement == (
        "Move the tests from Jest to Vitest, because Jest keeps breaking on our ESM imports, while Vitest runs "
        "ESM natively."
    )
    # With nothing before it to point to, the sentence stays as it was said; a rule before it keeps its kind.
    assert [p.statement for p in pieces_of("We decided this because Jest broke on ESM imports.")] == [
        "We decided this because Jest broke on ESM imports."
    ]
    [rule] = pieces_of("Always use pnpm, never npm. We agreed on this because CI fails on package-lock.json.")
    assert rule.kind is Kind.RULE and rule.statement.startswith("Always use pnpm, never npm, because CI fails")


def test_a_model_draft_that_only_gives_the_reason_takes_the_named_choice() -> None:
    reason = "We decided this because Jest keeps breaking on our ESM imports."
    turn = TurnText(user=f"Let's move the tests from Jest to Vitest. {reason}", assistant="Done.", other="")
    draft = make_idea(Kind.DECISION, reason, reason, "user")
    assert draft is not None
    [fixed] = typed_by_the_person(turn, [draft])
    assert fixed.summary.startswith("Move the tests from Jest to Vitest, because") and fixed.kind == "decision"


@pytest.mark.parametrize(
    ("said", "stored"),
    [
        (
            "for state management in berths let's use valtio, not redux, less boilerplate",
            "For state management in berths, use valtio, not redux, less boilerplate.",
        ),
        ("For the CLI, we go with typer over click.", "For the CLI, use typer over click."),
        ("We decided to use Vitest instead of Jest.", "Use Vitest instead of Jest."),
    ],
)
def test_a_decision_keeps_the_scope_it_was_made_for(said: str, stored: str) -> None:
    # Without it, "Use logrus, not log/slog" and "Use zap, not logrus" (two modules' choices) read as one
    # project contradicting itself.
    assert [p.statement for p in pieces_of(said)] == [stored]


def test_a_full_width_stop_ends_a_sentence_so_a_question_after_it_leaves_the_rule_a_rule() -> None:
    # "…。这样可以吗" ("is that ok?") is a question of its own, typed with no space after the full stop.
    stated = [p.statement for p in pieces_of("Always use pnpm, never npm。这样可以吗")]
    assert stated == ["Always use pnpm, never npm。"]


def test_a_draft_that_mixes_the_replys_report_into_the_persons_rule_takes_the_persons_words() -> None:
    # The embedded model on bench needs (ledger-api): the reply's report and the person's rule drafted as one
    # rule, which covered both of the person's pieces, so neither was stored in their words.
    said = (
        "don't call the reminders api with a raw client. always use reminders_client() from "
        "app/reminders/service.py, it adds the auth header and the retries"
    )
    reply = "Understood: I switched the two raw calls to `reminders_client()`."
    mixed = (
        "I switched the two raw calls to `reminders_client()` from app/reminders/service.py, it adds the auth "
        "header and the retries."
    )
    job = TurnJob("s", "t", "/home/dev/ledger", [TurnMessage("user", said), TurnMessage("assistant", reply)])
    # The draft as the model wrote it: the reply's first sentence, then the person's rule.
    draft = [
        {
            "kind": "decision",
            "subject": "reminders_client()",
            "statement": f"{reply} {said.split('. ', 1)[1]}",
            "evidence": f"The user said: {said}",
        }
    ]
    outcome = summarise_turn(chat_client([completion(json.dumps(draft))], []), job, 4096, 256)
    stored = sorted(i.summary for i in outcome.ideas)
    assert stored == [
        "Always use reminders_client() from app/reminders/service.py, it adds the auth header and the retries.",
        "Don't call the reminders api with a raw client.",
    ]
    assert all(i.evidence_role == "user" for i in outcome.ideas)
    # Drafted from the reply, the same words are the person's rule in the person's words.
    turn = TurnText(user=said, assistant=reply, other="")
    cited = make_idea(Kind.RULE, mixed, reply, "assistant")
    assert cited is not None
    [typed] = typed_by_the_person(turn, [cited])
    assert "switched" not in typed.summary and typed.evidence_role == "user"
    # A memory that only rewords the person (no word of the reply they did not say) is left as the model had it.
    turn = TurnText(user="always use pnpm, never npm", assistant="I will use pnpm from now on.", other="")
    worded = make_idea(Kind.RULE, "Use pnpm, never npm.", "I will use pnpm from now on.", "assistant")
    assert worded is not None
    assert [i.summary for i in typed_by_the_person(turn, [worded])] == ["Use pnpm, never npm."]
