"""The compaction summary from a session's memory (pure): knowledge first, the project's rules, then the turns
(the first and the newest that fit, in order), every line cited, within the budget and cut by whole lines."""

from __future__ import annotations

from memory_pipeline.search.briefing import tokens
from memory_pipeline.search.compaction import HEADER, compaction_summary
from memory_pipeline.search.models import Row


def _row(id_: str, kind: str, time: str, summary: str, knowledge: str = "", **kw) -> Row:  # noqa: ANN003
    return Row(
        id=id_,
        kind=kind,
        time=time,
        priority="high",
        summary=summary,
        project="/w/shop",
        session_id="s1",
        turn_id=id_,
        knowledge=knowledge,
        **kw,
    )


TURNS = [
    _row(f"obs-{i}", "observation", f"2026-03-04T10:{i:02d}:00Z", f"Asked: step {i} of the migration. Outcome: done.")
    for i in range(40)
]
RULE = _row("m-rule", "summary", "2026-03-04T10:00:30Z", "Use pnpm, never npm.", "rule")
OLD = _row("m-old", "summary", "2026-03-04T10:01:00Z", "Use Jest for tests.", "decision", superseded_by="m-new")
NEW = _row("m-new", "summary", "2026-03-04T10:20:00Z", "Use Vitest instead of Jest: ESM.", "decision")
GOTCHA = _row("m-gotcha", "summary", "2026-03-04T10:10:00Z", "The dev server needs port 5173 free.", "gotcha")


def test_knowledge_then_rules_then_the_first_and_newest_turns_all_cited() -> None:
    made = compaction_summary([*TURNS, GOTCHA, NEW, OLD, RULE], ["- Always run the linter. _(MEMORY.md)_\n"], 600)
    text = made.markdown
    assert text.startswith(HEADER) and tokens(text) <= 600
    knowledge = text.split("### What this session established")[1].split("###")[0]
    assert [line.split("** ")[0] for line in knowledge.strip().splitlines()] == [
        "- **rule", "- **decision", "- **gotcha"
    ]  # fmt: skip
    assert "Jest for tests" not in text and "m-old" not in text  # a replaced decision is not what holds
    assert text.index("What this session established") < text.index("Rules of this project") < text.index("Turns")
    turns = text.split("### Turns\n")[1].splitlines()
    assert "step 0 of" in turns[0] and f"({made.left_out} earlier turns are in memory, not shown)" in turns[1]
    assert "step 39 of" in turns[-1] and made.turns == 40 and 0 < made.left_out < 40
    shown = [int(line.split("step ")[1].split(" ")[0]) for line in turns if "step " in line]
    assert shown == sorted(shown) and shown[1:] == list(range(40 - len(shown) + 1, 40))  # the newest, in order
    assert all(f"`{i}`" in text for i in made.ids) and {"m-rule", "m-new", "obs-0", "obs-39"} <= set(made.ids)


def test_a_larger_budget_shows_every_turn_and_nothing_known_gives_nothing() -> None:
    made = compaction_summary(TURNS, [], 20000)
    assert made.left_out == 0 and made.markdown.count("Asked: step") == 40 and "not shown" not in made.markdown
    assert compaction_summary([], ["- a rule _(MEMORY.md)_\n"], 2000).markdown == ""
