"""The same knowledge said in several sessions is read as one memory that counts them and keeps every evidence;
a replaced decision is read with what holds now and when it held: pure code, and the lines every surface prints."""

from __future__ import annotations

import math

from memory_pipeline.language.words import content_words
from memory_pipeline.search.consolidate import folded, interval, replaced, same_knowledge
from memory_pipeline.search.models import Detail, MemoryDetail, Row
from memory_pipeline.search.render import detail_text, row_line


def _row(doc_id: str, summary: str, session: str, day: str = "2025-01-10", **extra: object) -> Row:
    return Row(
        id=doc_id,
        kind="summary",
        time=f"{day}T10:00:00Z",
        priority="high",
        summary=summary,
        project="/work/shop",
        session_id=session,
        turn_id="t1",
        **extra,  # type: ignore[arg-type]
    )


PNPM = [
    _row("m1", "Use pnpm, never npm.", "s1"),
    _row("m2", "Use Vitest instead of Jest.", "s1"),
    _row("m3", "Always use pnpm, never npm.", "s2", "2025-02-01"),
    _row("m4", "Use pnpm and never npm!", "s3", "2025-03-01"),
    _row("m5", "Use pnpm, never npm.", "s3", "2025-03-01"),  # said twice in one session: one session
]


def test_the_same_rule_said_in_three_sessions_is_one_row_counting_them() -> None:
    rows = folded(PNPM)
    assert [r.id for r in rows] == ["m1", "m2"]
    pnpm, vitest = rows
    assert pnpm.said_in == 3 and pnpm.restatements == ["m3", "m4", "m5"] and pnpm.restated_in == ["s2", "s3"]
    assert vitest.said_in == 1 and vitest.restatements == []
    assert "(said in 3 sessions)" in row_line(pnpm) and "said in" not in row_line(vitest)
    # Folding what is already folded keeps the count: the briefing folds the search's rows again.
    assert folded(rows)[0].said_in == 3


def test_a_turns_observation_never_folds_into_a_memory() -> None:
    asked = _row("obs_s2_u1", "Asked: Always use pnpm, never npm. Outcome: noted.", "s2").model_copy(
        update={"kind": "observation", "priority": "low"}
    )
    again = asked.model_copy(update={"id": "obs_s3_u1", "session_id": "s3"})
    rows = folded([PNPM[0], asked, again])
    assert [r.id for r in rows] == ["m1", "obs_s2_u1"] and rows[0].said_in == 1 and rows[1].said_in == 2


def test_a_line_shown_elsewhere_is_left_out_and_different_knowledge_is_kept_apart() -> None:
    assert [r.id for r in folded(PNPM, [content_words("Always use pnpm, never npm.")])] == ["m2"]
    assert same_knowledge("Use pnpm, never npm.", "Always use pnpm, never npm.")
    assert not same_knowledge("Use pnpm, never npm.", "Use Vitest instead of Jest.")
    assert not same_knowledge("Deploy with the blue-green script.", "Deploy staging every Friday afternoon.")


def test_a_replaced_decision_carries_what_holds_now_and_when_it_held() -> None:
    old = _row("m7", "Use Dramatiq for background jobs.", "s1", superseded_by="r-20250302-001")
    current = {"summary": "Replaced Dramatiq with arq: arq is async like the API. " + "More words. " * 40,
               "established_at": "2025-03-02T09:00:00Z"}  # fmt: skip
    [row] = replaced([old], {"r-20250302-001": current})
    assert row.held_until == "2025-03-02" and interval(row) == "2025-01-10 to 2025-03-02"
    # What holds now is whole sentences, marked where it was shortened: never cut mid-word.
    assert row.current is not None and row.current.startswith("Replaced Dramatiq with arq: arq is async like the API.")
    assert row.current.endswith("[…]") and len(row.current) <= 205
    line = row_line(row)
    assert "replaced on 2025-03-02 (held 2025-01-10 to 2025-03-02); now: Replaced Dramatiq with arq" in line
    # A replacement that cannot be read leaves the mark as it was.
    [unknown] = replaced([old], {})
    assert unknown.current is None and "(superseded by r-20250302-001)" in row_line(unknown)


def test_the_detail_layer_lists_every_session_that_said_it_with_its_evidence() -> None:
    record = PNPM[0].to_dict() | {
        "evidence": "use pnpm, never npm",
        "evidence_role": "user",
        "source_turn": [],
        "said_in": 3,
        "said_again": [
            {"id": "m3", "time": "2025-02-01T10:00:00Z", "session_id": "s2", "evidence": "always pnpm, never npm",
             "evidence_role": "user"},
            {"id": "m4", "time": "2025-03-01T10:00:00Z", "session_id": "s3", "evidence": "", "evidence_role": ""},
        ],
    }  # fmt: skip
    text = detail_text(Detail.model_validate(record))
    assert "said in 3 sessions; the others:" in text
    assert '- m3  2025-02-01  session s2  "always pnpm, never npm" (user)' in text
    assert "- m4  2025-03-01  session s3" in text
    detail = MemoryDetail.of(Detail.model_validate(record))  # what MCP's memory_show and the API return
    assert detail.said_in == 3 and [r.id for r in detail.said_again] == ["m3", "m4"]


def test_paraphrases_of_one_kind_fold_by_their_vectors() -> None:
    a = _row("m1", "Please use pnpm, not npm.", "s1", knowledge="rule")
    b = _row("m2", "Don't run npm here, we go with pnpm for everything.", "s2", knowledge="rule")
    c = b.model_copy(update={"id": "m3", "session_id": "s3", "knowledge": "decision"})
    near, far = [0.9, math.sqrt(1 - 0.81)], [0.5, math.sqrt(1 - 0.25)]  # unit vectors: cosine 0.9, 0.5 to [1, 0]
    assert not same_knowledge(a.summary, b.summary)  # their words alone do not fold them
    assert [r.said_in for r in folded([a, b], vectors={"m1": [1.0, 0.0], "m2": near})] == [2]
    assert len(folded([a, b], vectors={"m1": [1.0, 0.0], "m2": far})) == 2
    assert len(folded([a, c], vectors={"m1": [1.0, 0.0], "m3": near})) == 2  # a rule and a decision stay apart


def test_the_same_trap_in_two_parts_of_a_project_is_two_memories() -> None:
    said = '`pnpm vitest run src/{c}` fails with "expected 2024-03-31": set `{C}_FAKE_CLOCK=1` for the frozen clock.'
    pilots = _row("m1", said.format(c="pilots", C="PILOTS"), "s1", knowledge="gotcha")
    tariffs = _row("m2", said.format(c="tariffs", C="TARIFFS"), "s2", knowledge="gotcha")
    assert same_knowledge(pilots.summary, tariffs.summary)  # alike in words, and in their vectors below
    assert len(folded([pilots, tariffs], vectors={"m1": [1.0, 0.0], "m2": [1.0, 0.0]})) == 2
    # Said again with one more particular, or with none, it is the same knowledge.
    port = _row("m3", "The staging database listens on port 6543.", "s1", knowledge="fact")
    again = _row("m4", "The staging database listens on port 6543 (`db.yaml`).", "s2", knowledge="fact")
    plain = _row("m5", "The staging database listens on port 6543!", "s3", knowledge="fact")
    assert [r.said_in for r in folded([port, again, plain])] == [3]
