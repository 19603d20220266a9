"""A memory is about what its evidence is about: the subject check of `summarize.faithful` (issue 43).

The cases are real: "Set the theme to 1 for true colors." is what the 0.5B model's restating pass made of "needs to
be set to 1 for true colors" (pi-mono fixture, turn L000681; the person meant COLORTERM), and "The `print-mode`
class is now 69 lines" came back for "The `AgentSession` class is now 885 lines" (labelled turn pi-004).
"""

from __future__ import annotations

import pytest

from memory_pipeline.language.kinds import Kind
from memory_pipeline.summarize.compose import make_idea
from memory_pipeline.summarize.extract import TurnOutcome, candidates_without_model, check_faithful
from memory_pipeline.summarize.faithful import invented_subject, subject_of, unfaithful
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.trust import TurnText

_TRUE_COLOURS = "needs to be set to 1 for true colors"
_LINES = "The `AgentSession` class is now 885 lines and contains all the shared logic."
PREFERENCES = [
    "I prefer tabs over spaces in this repo.",
    "Use 2-space indentation in Python files.",
    "always use pnpm, never npm",
]


def _idea(summary: str, evidence: str, kind: str = "gotcha") -> Idea:
    return Idea(
        summary=summary,
        tags=[kind, "memory", "note"],
        priority="high",
        kind=kind,
        evidence=evidence,
        evidence_role="user",
    )


@pytest.mark.parametrize(
    ("statement", "evidence", "named"),
    [
        ("Set the theme to 1 for true colors.", _TRUE_COLOURS, "theme"),
        ("The `print-mode` class is now 69 lines and contains all the shared logic.", _LINES, "print-mode"),
        (
            "The project uses RGB values in the themes, no RGB indices.",
            "use rgb values in the themes, no rgb indices!",
            "project",
        ),
        (
            "The component should handle single lines and stop at newlines.",
            "TruncatedText should only handle single lines and stop at newlines.",
            "component",
        ),
        # Another script: its ordinary words cannot be compared, its names can.
        (
            "The `print-mode` class holds the shared logic.",
            "`AgentSession` 类现在有 885 行，包含所有共享逻辑。",
            "print-mode",
        ),
    ],
)
def test_a_subject_its_evidence_does_not_name_is_caught(statement: str, evidence: str, named: str) -> None:
    assert named in invented_subject(statement, evidence)
    assert "subject" in unfaithful(statement, evidence) or named in unfaithful(statement, evidence)


@pytest.mark.parametrize(
    ("statement", "evidence"),
    [
        *((p, p) for p in PREFERENCES),
        ("I prefer tabs over spaces in this repo.", "I prefer tabs over spaces in this repo."),
        ("The person prefers tabs over spaces in this repo.", "I prefer tabs over spaces in this repo."),
        ("Python files use 2-space indentation.", "Use 2-space indentation in Python files."),
        ("Always use pnpm, never npm.", "always use pnpm, never npm"),
        ("Use pnpm, never npm, for every package.", "always use pnpm, never npm"),
        (
            "Local development uses Postgres instead of SQLite.",
            "From now on local development uses Postgres instead of SQLite.",
        ),
        (
            "Use Vitest instead of Jest, because Jest kept breaking on ESM imports.",
            "We decided to use Vitest instead of Jest, because Jest kept breaking on ESM imports.",
        ),
        # Light morphology: plural and singular, -ing, case, a word written together or apart.
        ("Invalid themes should never crash the app, especially on startup.", "invalid theme must NEVER explode"),
        ("Caching of builds is off in CI.", "we turned off build caching in ci"),
        (
            "Main dropdown: dedicated apply_patch filter button.",
            "apply_patch should have its own filter button in the main filter drop down.",
        ),
        ("No console logs - errors are returned to the caller.", "no conosle logs! setTheme should return an error"),
        # The words composition frames a claim with are not its subject.
        (
            "The cause was the console.logs/errors in theme.ts.",
            "it was actually the console.logs/errors in theme.ts that did that",
        ),
        ("The person's wife loves to cook.", "My wife loves to cook."),
        # Another language, and a statement in English of evidence in another script: names decide.
        ("Dùng pnpm cho dự án này.", "Dùng pnpm, không dùng npm."),
        ("Use pnpm for this project.", "用 pnpm，不要用 npm。"),
    ],
)
def test_a_statement_about_what_its_evidence_is_about_passes(statement: str, evidence: str) -> None:
    assert invented_subject(statement, evidence) == []
    assert unfaithful(statement, evidence) == ""


def test_a_file_named_by_the_last_part_of_its_path_is_no_invention() -> None:
    """The values a person set, composed with the file the turn edited: the turn's tool call names its full path."""
    turn = '(used the edit tool: {"path": "packages/coding-agent/src/theme/dark.json", "oldText": "…"})'
    assert unfaithful("Values set in `dark.json`: accent #8abeb7.", "accent #8abeb7", turn) == ""
    assert "light.json" in unfaithful("Values set in `light.json`: accent #8abeb7.", "accent #8abeb7", turn)


def test_evidence_that_points_back_leaves_its_subject_to_the_turn() -> None:
    """ "They hang because Redis is not running" names its subject by pointing at the question; the statement may
    name it from the turn. Evidence that names no subject at all leaves it to no one."""
    turn = "why do the tests hang?\nThey hang because Redis is not running."
    said = "They hang because Redis is not running"
    assert unfaithful("The tests hang because Redis is not running.", said, turn) == ""
    assert "theme" in unfaithful("Set the theme to 1 for true colors.", _TRUE_COLOURS, "add a section on themes")


def test_the_subject_is_the_first_noun_phrase_or_the_object_of_the_opening_verb() -> None:
    assert subject_of("Set the theme to 1 for true colors.") == ["theme"]
    assert subject_of("The `print-mode` class is now 69 lines.") == ["print-mode", "class"]
    assert subject_of("Always make the footer dimmer.") == ["footer", "dimmer"]
    assert subject_of("Postgres is the dev database. This will help.") == ["Postgres"]
    assert subject_of("Change the color of `dimGray` to #666666.") == ["dimGray"]
    assert subject_of("I prefer tabs. Investigate.") == []


def test_an_invented_subject_with_nothing_to_say_without_it_is_dropped_and_counted() -> None:
    """Composed again from its evidence alone, "Needs to be set to 1 for true colors." names nothing: dropped."""
    outcome = TurnOutcome("s", "t", status="summarised")
    turn = TurnText(user=_TRUE_COLOURS, assistant="Added a Themes section to the README.", other="")
    kept = check_faithful([_idea("Set the theme to 1 for true colors.", _TRUE_COLOURS)], turn, outcome)
    assert kept == []
    assert [why for why, _ in outcome.dropped] == ["unfaithful: names a subject its evidence does not (theme)"]


def test_a_subject_the_reply_opens_on_is_the_persons_when_they_left_it_out() -> None:
    """As `compose.reworded` names it (`knowledge.with_subject`): "should be dimmer" answered by "The footer is
    using …" is about the footer; a subject the reply does not open on stays invented."""
    said = "should be dimmer, don't modify the theme"
    turn = TurnText(user=said, assistant="The footer is using the dim color for everything.", other="")
    for statement, kept in (
        (
            "The footer should be dimmer, don't modify the theme.",
            "The footer should be dimmer, don't modify the theme.",
        ),
        (
            "The status bar should be dimmer, don't modify the theme.",
            "The footer should be dimmer, don't modify the theme.",
        ),
    ):
        outcome = TurnOutcome("s", "t", status="summarised")
        assert [i.summary for i in check_faithful([_idea(statement, said, "rule")], turn, outcome)] == [kept]


def test_an_invented_subject_is_recomposed_from_its_evidence_when_that_stands_alone() -> None:
    evidence = "TruncatedText should only handle single lines and stop at newlines."
    outcome = TurnOutcome("s", "t", status="summarised")
    turn = TurnText(user="truncated text must stop when it encounters a new line", assistant=evidence, other="")
    wrong = _idea("The component should handle single lines and stop at newlines.", evidence, "decision")
    kept = check_faithful([wrong], turn, outcome)
    assert [i.summary for i in kept] == [evidence]
    assert outcome.recomposed and "subject" in outcome.recomposed[0][0]


@pytest.mark.parametrize(
    ("said", "drafted"),
    [
        *((p, p) for p in PREFERENCES),
        ("I prefer tabs over spaces in this repo.", "The person prefers tabs over spaces in this repo."),
        ("Use 2-space indentation in Python files.", "Python files use 2-space indentation."),
        ("always use pnpm, never npm", "Use pnpm, never npm, for every package."),
    ],
)
def test_a_persons_stated_preference_is_kept_by_the_check(said: str, drafted: str) -> None:
    """A preference as the model drafts it, with the person's words as evidence, is kept as drafted. Before, "Use
    2-space indentation in Python files." was dropped: the check read the "2" of "2-space" as a number the turn does
    not hold."""
    outcome = TurnOutcome("s", "t", status="summarised")
    draft = make_idea(Kind.RULE, drafted, said, "user")
    assert draft is not None
    assert check_faithful([draft], TurnText(user=said, assistant="Noted.", other=""), outcome) == [draft]
    assert not outcome.dropped and not outcome.recomposed


def test_the_person_stated_preferences_are_memories_without_the_model() -> None:
    for said in ("I prefer tabs over spaces in this repo.", "always use pnpm, never npm"):
        assert len(candidates_without_model(TurnText(user=said, assistant="Noted.", other=""))) == 1
