"""A person's remark in the better words its own turn gives, without the LLM: typos the rest of the turn spells
right, the assistant's echo of the remark, and a list of values the person set, kept with where they went."""

from __future__ import annotations

import pytest

from memory_pipeline.language.kinds import Kind
from memory_pipeline.summarize.compose import (
    echo_of,
    exact_words,
    from_draft,
    make_idea,
    missed_pieces,
    quotes_its_evidence,
    reworded,
    role_of,
    typed_by_the_person,
    without_orders,
)
from memory_pipeline.summarize.ideas import Drafted
from memory_pipeline.summarize.knowledge import (
    clean_statement,
    edited_files,
    imperative,
    mend_typos,
    pieces_of,
    stated_cause,
    unwrapped,
    values_of,
    with_subject,
)
from memory_pipeline.summarize.trust import TurnText

# The turn L000856 of the pi-mono fixture, shortened: the person's rule, the assistant's acknowledgement.
EXPLODED = TurnText(
    user="my dude, this exploded when i restarted with -r. invalid themes must NEVER explode",
    assistant="You're absolutely right - invalid themes should never crash the app, especially on startup! "
    "Let me wrap the theme initialization with proper error handling:\nNow invalid themes will fall back to dark.",
    other='(used the edit tool: {"path": "packages/coding-agent/src/theme/theme.ts", "oldText": "a"})',
)
# L000864: a typo, and the assistant's list of what now holds.
NO_LOGS = TurnText(
    user="no conosle logs! setTheme should return an error that the caller can display however they want",
    assistant="You're right! Let me fix this properly:\nPerfect! Now:\n\n1. **`initTheme()`** - Silently falls back "
    "to dark theme\n2. **No console logs** - All error handling is done through return values\n"
    "3. Added console.log calls for debugging the preview",
    other="",
)


@pytest.mark.parametrize(
    ("text", "vocabulary", "mended"),
    [
        ("No conosle logs.", "removed every console.log call", "No console logs."),
        ("The context suage in the footer", "the context usage is shown", "The context usage in the footer"),
        ("Conosle output is noise.", "console", "Console output is noise."),
        # Only a swap of neighbouring letters the turn spells right; short words and guesses are left alone.
        ("reda the full file", "read it", "reda the full file"),
        ("the form is broken", "from here", "the form is broken"),
        ("the colour is wrong", "the color is right", "the colour is wrong"),
        # A word the turn uses as written stays, even when a swap of it is also in the turn.
        ("trial and trail", "trail trial", "trial and trail"),
        ("No conosle logs.", "", "No conosle logs."),
    ],
)
def test_typos_are_mended_from_the_turns_own_words(text: str, vocabulary: str, mended: str) -> None:
    assert mend_typos(text, vocabulary) == mended


def test_the_assistants_echo_of_a_rule_becomes_its_text() -> None:
    echo = echo_of("Invalid themes must NEVER explode.", EXPLODED.assistant)
    assert echo == "Invalid themes should never crash the app, especially on startup."
    # A plan ("Let me wrap …") is no echo, nor is a sentence that adds nothing to the remark.
    assert echo_of("Wrap the theme initialization.", "Let me wrap the theme initialization with proper care.") == ""
    assert echo_of("Invalid themes never crash.", "Invalid themes never crash.") == ""


def test_an_echo_keeps_the_remarks_polarity() -> None:
    # "Added console.log calls" shares the words of "no console logs" but says the opposite: never its echo.
    assert (
        echo_of("No console logs.", NO_LOGS.assistant)
        == "No console logs - All error handling is done through return values."
    )
    assert echo_of("No console logs.", "3. Added console.log calls for debugging the preview") == ""


def test_a_rule_said_as_a_quote_is_reworded_from_its_turn() -> None:
    quoted = make_idea(Kind.RULE, "invalid themes must NEVER explode", "invalid themes must NEVER explode", "user")
    assert quoted is not None and quotes_its_evidence(quoted, EXPLODED)
    better = reworded(quoted.model_copy(update={"priority": "medium"}), EXPLODED)
    assert better.summary == "Invalid themes should never crash the app, especially on startup."
    assert better.evidence == "invalid themes must NEVER explode"  # the person's words stay its evidence
    assert better.kind is Kind.RULE and better.priority == "medium"  # kind and earned priority kept
    assert not quotes_its_evidence(better, EXPLODED)


def test_a_typo_alone_still_counts_as_a_quote() -> None:
    typo = make_idea(Kind.RULE, "no conosle logs!", "no conosle logs!", "user")
    assert typo is not None and quotes_its_evidence(typo, NO_LOGS)
    assert reworded(typo, NO_LOGS).summary == "No console logs - All error handling is done through return values."
    # With no echo in the reply, the mended words are kept and the memory is still a quote (the LLM's turn next).
    bare = TurnText(user=NO_LOGS.user, assistant="Removed every console.log call.", other="")
    mended = reworded(typo, bare)
    assert mended.summary == "No console logs." and quotes_its_evidence(mended, bare)


def test_a_statement_of_the_models_own_is_left_as_it_is() -> None:
    own = make_idea(Kind.RULE, "Never let an invalid theme crash startup.", "invalid themes must NEVER explode", "user")
    assert own is not None and reworded(own, EXPLODED) == own


VALUES = """green diff is #b5bd68
red diff #283228
accent #8abeb7
error cc6666
user bg 343541"""


def test_a_list_of_values_is_one_decision_naming_where_they_went() -> None:
    files = edited_files(
        '(used the read tool: {"path": "src/theme/light.json"})\n'
        '(used the edit tool: {"path": "src/theme/dark.json", "oldText": "x"})\n'
        "(used the Edit tool: {'file_path': 'src/theme/dark.json'})"
    )
    assert files == ["src/theme/dark.json"]  # read files are not edited ones; a path is listed once
    piece = values_of(VALUES, files)
    assert piece is not None and piece.kind is Kind.DECISION and piece.role == "user"
    assert piece.statement == (
        "Values set in `dark.json`: green diff #b5bd68, red diff #283228, accent #8abeb7, error cc6666, user bg 343541."
    )
    assert values_of(VALUES, []).statement.startswith("Values set: green diff #b5bd68")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "message",
    [
        "make the accent #8abeb7",  # one value is a request, not a list
        "port 8080\nthe server is slow, why?\ncan you look at the logs\nand the config",  # mostly not values
        "green #b5bd68\nred #283228",  # two lines
    ],
)
def test_a_message_that_is_no_list_of_values_gives_none(message: str) -> None:
    assert values_of(message, ["a.json"]) is None


def test_the_values_reach_the_memories_the_model_missed() -> None:
    turn = TurnText(
        user=VALUES, assistant="Updated the dark theme.", other='(used the edit tool: {"path": "dark.json"})'
    )
    added = missed_pieces(turn, [])
    assert [i.summary for i in added] == [
        "Values set in `dark.json`: green diff #b5bd68, red diff #283228, accent #8abeb7, error cc6666, user bg 343541."
    ]
    assert added[0].files == ["dark.json"] and added[0].priority == "high"


@pytest.mark.parametrize(
    ("said", "rule"),
    [
        (
            "The theme selector needs to push the theme update to the next tick, or else we get rendering artifacts.",
            "Make the theme selector push the theme update to the next tick, or else we get rendering artifacts.",
        ),
        ("Link text should be same as accent.", "Make link text same as accent."),
        ("Invalid themes should never explode.", "Never let invalid themes explode."),
        ("API errors must always follow RFC 7807.", "Always make API errors follow RFC 7807."),
        ("The `truncatedText` component should only handle single lines.",
         "Make the `truncatedText` component only handle single lines."),
        # Not a subject, a modal and what it must do: left to the model's restating pass.
        ("Should be dimmer, don't modify the theme.", ""),
        ("We should use pnpm.", ""),
        ("dimGray should be that, no need for linkGray.", ""),  # "that" points into the conversation
        ("Every line returned by a component's render method must not be wider than the width.", ""),
    ],
)  # fmt: skip
def test_a_rule_said_as_what_something_should_do_is_put_in_the_imperative(said: str, rule: str) -> None:
    assert imperative(said) == rule


def test_a_cause_named_by_pointing_back_is_said_as_a_cause() -> None:
    said = "yeah you can undo that, it was actually the console.logs/errors in theme.ts that did that fuck up"
    assert clean_statement(said).endswith("in theme.ts that did that.")  # "fuck up" goes whole, not "that up"
    assert stated_cause(clean_statement(said)) == "The cause was the console.logs/errors in theme.ts."
    [piece] = pieces_of(said)
    assert piece.kind is Kind.GOTCHA and piece.statement == "The cause was the console.logs/errors in theme.ts."
    assert stated_cause("It was fine yesterday.") == ""


def test_a_quoted_rule_without_an_echo_is_reworded_in_the_imperative() -> None:
    turn = TurnText(
        user="the theme selector needs to push the theme update to the next tick", assistant="Done.", other=""
    )
    quoted = make_idea(Kind.RULE, turn.user, turn.user, "user")
    assert quoted is not None and quotes_its_evidence(quoted, turn)
    better = reworded(quoted, turn)
    assert better.summary == "Make the theme selector push the theme update to the next tick."
    assert not quotes_its_evidence(better, turn) and better.evidence == turn.user
    # A decision is not a rule: it keeps its words (the model's restating pass is its way out of a quote).
    decided = make_idea(Kind.DECISION, turn.user, turn.user, "user")
    assert decided is not None and reworded(decided, turn).summary == decided.summary


def test_a_rule_said_without_its_subject_takes_the_one_the_reply_opens_on() -> None:
    reply = '\nThe footer is using `theme.fg("muted", ...)` for both the pwd and stats lines. It should use "dim".'
    said = "Should be dimmer, don't modify the theme, look into the footer sources."
    assert (
        with_subject(said, reply)
        == "The footer should be dimmer, don't modify the theme, look into the footer sources."
    )
    assert with_subject("The footer should be dimmer.", reply) == ""  # it has its subject
    assert with_subject(said, "Let me look at the footer.") == ""  # the reply opens on no subject
    turn = TurnText(user=f"what's footer using? {said.lower()}", assistant=reply, other="")
    quoted = make_idea(Kind.RULE, said, said.lower(), "user")
    assert quoted is not None and quotes_its_evidence(quoted, turn)
    assert (
        reworded(quoted, turn).summary
        == "Make the footer dimmer, don't modify the theme, look into the footer sources."
    )


def test_a_drafts_evidence_is_the_speakers_exact_words_not_the_models() -> None:
    said = "ok, i manually removed almost all chalk uses, except for the thinking border shit. how can we solve this?"
    model_words = "The user manually removed almost all chalk uses, except for the thinking border."
    assert (
        exact_words(model_words, said)
        == "ok, i manually removed almost all chalk uses, except for the thinking border shit."
    )
    assert exact_words("I MANUALLY removed  almost all chalk uses", said) == "I MANUALLY removed  almost all chalk uses"
    assert exact_words("Redis keeps the sessions.", said) == "Redis keeps the sessions."  # nothing close: as it was
    turn = TurnText(user=said, assistant="Added a theme method for the thinking border.", other="")
    draft = Drafted(evidence=model_words, kind=Kind.DECISION, subject="chalk", statement=model_words)
    idea, why = from_draft(draft, turn)
    assert (
        idea is not None
        and idea.evidence == "ok, i manually removed almost all chalk uses, except for the thinking border shit."
    )
    assert idea.evidence_role == "user" and not quotes_its_evidence(idea, turn)


def test_a_draft_copying_a_request_and_a_rule_as_one_becomes_the_rule() -> None:
    said = (
        "ok, the thinking level colors are too intense, adjust. and also, the context usage in the footer should be "
        '"warning" if it\'s > 70%'
    )
    turn = TurnText(user=said, assistant="Done!", other="")
    copied = "The thinking level colors are too intense, adjust. and also, the context usage in the footer should be "
    copy = make_idea(Kind.RULE, copied + "'warning' if it's > 70%.", said, "user")
    assert copy is not None and quotes_its_evidence(copy, turn)
    [rule] = [reworded(i, turn) for i in typed_by_the_person(turn, [copy])]
    assert rule.summary == 'Make the context usage in the footer "warning" if it\'s > 70%.'
    assert "thinking level" not in rule.evidence and rule.kind is Kind.RULE


def test_an_announced_plan_of_the_assistants_is_no_knowledge() -> None:
    turn = TurnText(
        user="the footer should warn above 70%",
        assistant="Let me adjust the thinking level colors first:\nPerfect! Now let's fix the footer to colorize it:\n"
        "The root cause is that the footer reads the raw percentage.",
        other="",
    )
    for plan in ("Let me adjust the thinking level colors first:", "Now let's fix the footer to colorize it:"):
        draft = Drafted(evidence=plan, kind=Kind.DECISION, subject="footer", statement=plan)
        assert from_draft(draft, turn) == (None, "a plan, not knowledge")
    found = "The root cause is that the footer reads the raw percentage."
    idea, _ = from_draft(Drafted(evidence=found, kind=Kind.GOTCHA, subject="footer", statement=found), turn)
    assert idea is not None and idea.evidence_role == "assistant"


def test_a_draft_in_the_persons_own_words_holding_more_than_a_piece_becomes_the_piece() -> None:
    said = "the thinking level colors are too intense, adjust. and also, the footer should be dimmer"
    turn = TurnText(user=said, assistant="Done!", other="")
    # Not a quote of its evidence (the model picked one sentence as evidence), yet all the person's words.
    copy = make_idea(Kind.RULE, "The thinking level colors are too intense, adjust, and the footer should be dimmer.",
                     "and also, the footer should be dimmer", "user")  # fmt: skip
    assert copy is not None
    [typed] = typed_by_the_person(turn, [copy])
    assert typed.summary == "The footer should be dimmer." and "thinking" not in typed.summary


def test_a_plan_copied_in_part_is_still_a_plan() -> None:
    turn = TurnText(user="fix it", assistant="Let me adjust the thinking level colors first:\nDone!", other="")
    part = "adjust the thinking level colors first"  # the model's evidence: words of the plan, not the plan's opening
    draft = Drafted(evidence=part, kind=Kind.DECISION, subject="colors", statement="Adjust the thinking colors first.")
    assert from_draft(draft, turn) == (None, "a plan, not knowledge")


def test_the_model_putting_the_assistants_plan_in_the_users_mouth_changes_nothing() -> None:
    turn = TurnText(
        user="ok, the thinking level colors are too intense, adjust.",
        assistant="Let me adjust the thinking level colors first:\nDone!",
        other="",
    )
    wrapped = "The user said 'Let me adjust the thinking level colors first'"
    assert unwrapped(wrapped) == "Let me adjust the thinking level colors first"
    # Its words stand as written in the assistant's reply: the assistant's, whatever share the user's message holds.
    assert role_of(unwrapped(wrapped), turn) == "assistant"
    draft = Drafted(evidence=wrapped, kind=Kind.DECISION, subject="colors", statement=wrapped)
    assert from_draft(draft, turn) == (None, "not the user's words")
    plain = Drafted(evidence=wrapped, kind=Kind.DECISION, subject="colors", statement="Adjust the colors first.")
    assert from_draft(plain, turn) == (None, "a plan, not knowledge")


# Memories the fixture table (bench fixture_memories) showed a reader could not act on, from pi-mono turns.
@pytest.mark.parametrize(
    ("said", "statement"),
    [
        ("read README.md that details everything", "Read the README.md file to understand everything."),
        (
            "ok, copy the dark theme over to the .pi/agent/themes folder and let me try the live edit",
            "Copy the dark theme over to the .pi/agent/themes folder and let me try the live edit.",
        ),
    ],
)
def test_a_persons_order_for_the_moment_is_no_decision(said: str, statement: str) -> None:
    turn = TurnText(user=said, assistant="Done.", other="")
    draft = Drafted(evidence=said, kind=Kind.DECISION, subject="theme", statement=statement)
    assert from_draft(draft, turn) == (None, "a request, not knowledge")
    # The same order with a sign of lasting is a rule the person keeps.
    lasting = "always read README.md before a release"
    kept, _ = from_draft(
        Drafted(evidence=lasting, kind=Kind.DECISION, subject="release", statement="Always read README.md first."),
        TurnText(user=lasting, assistant="Done.", other=""),
    )
    assert kept is not None and kept.summary == "Always read README.md first."


def test_an_order_reworded_back_by_a_later_pass_is_still_dropped_and_a_report_of_the_persons_stays() -> None:
    said = "ok, copy the dark theme over to the .pi/agent/themes folder and let me try the live edit"
    order = make_idea(Kind.DECISION, "Copy the dark theme over to the .pi/agent/themes folder.", said, "user")
    # L000034: what the person did by hand, no order: the context a later session needs.
    manual = "ok, i manually removed almost all chalk uses, except for the thinking border shit"
    report = make_idea(Kind.DECISION, "The user manually removed almost all chalk uses.", manual, "user")
    rule = make_idea(Kind.RULE, "Copy themes with cp -r, never by hand.", "always copy themes with cp -r", "user")
    assert order is not None and report is not None and rule is not None
    assert without_orders([order, report, rule]) == ([report, rule], [order])


@pytest.mark.parametrize(
    "statement",
    [
        "This is a big change.",  # points at a "this" next week's reader does not have
        "I don't tink the component invalidate works correctly.",  # the speaker's doubt, not yet known
        "The tool execution that doesn't change is the bg color of the tool execution that doesn't change.",
        "Files: index.ts, util.ts. Files: index.ts, util.ts.",
    ],
)
def test_a_statement_a_reader_cannot_act_on_alone_makes_no_memory(statement: str) -> None:
    assert make_idea(Kind.DECISION, statement, statement.lower(), "user") is None


@pytest.mark.parametrize(
    "statement",
    [
        "It is required to run migrations with make migrate.",
        "It was actually the console.logs in theme.ts that broke the rendering.",
        "This project uses Vitest, not Jest.",
        "Use X for the tests and use X for the builds.",
    ],
)
def test_a_statement_naming_what_it_speaks_of_is_kept(statement: str) -> None:
    idea = make_idea(Kind.DECISION, statement, statement.lower(), "user")
    assert idea is not None and idea.summary == statement


def test_a_doubt_is_no_rule_and_a_markdown_remnant_is_no_text() -> None:
    assert pieces_of("i don't tink the component invalidate works correctly") == []
    [rule] = pieces_of("i don't want console logs in theme.ts")
    assert rule.kind is Kind.RULE
    assert clean_statement("Updated the light theme to match the dark theme's color scheme: **.") == (
        "Updated the light theme to match the dark theme's color scheme."
    )
    assert clean_statement("use **pnpm**") == "Use **pnpm**."


def test_make_sure_is_dropped_only_before_an_action_never_from_a_name() -> None:
    # L000898: "make sure toolText is also used" once read "olText is also used." (the "to" of toolText eaten).
    assert clean_statement("make sure toolText is also used") == "Make sure toolText is also used."
    assert clean_statement("make sure to run the tests") == "Run the tests."
    assert clean_statement("make sure that the footer is dim") == "Make sure that the footer is dim."
    assert clean_statement("make migrate before the tests") == "make migrate before the tests."


def test_a_run_on_message_is_no_piece_and_a_negation_is_no_subject() -> None:
    # The telegram fixture's message (the issue's own example): 65 words in one "sentence", several requests.
    said = (
        "[User sent a photo] Dont need to show orice just marketcap and shouod be to the right under spike and "
        "updated tab snd those shouod be more clean uniform not lapping and offset randomly there clean up that "
        "area and then work on the action buttons lets start cleaning up layouts in small areas to maximize "
        "spaceike its a mobile trading app what do u think"
    )
    assert pieces_of(said) == []
    assert imperative("Dont need to show the price") == ""  # never "Make dont show the price."
    [rule] = pieces_of("the footer needs to be dimmer")
    assert imperative(rule.statement) == "Make the footer dimmer."
