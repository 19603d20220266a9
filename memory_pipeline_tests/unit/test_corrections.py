"""People's corrections, applied to what a re-run derives: forgotten memories stay gone (also reworded, from
the same turn), edits stay, the newest edit wins, and other memories are untouched."""

from __future__ import annotations

import polars as pl
import pytest

from memory_pipeline.curation.corrections import Correction, apply_corrections, correct_frame, same_idea

IDEAS = [
    {
        "doc_id": "a",
        "session_id": "s1",
        "turn_id": "t1",
        "summary": "The user said always use pnpm.",
        "priority": "high",
    },
    {
        "doc_id": "b",
        "session_id": "s1",
        "turn_id": "t1",
        "summary": "Vitest replaced Jest for ESM.",
        "priority": "medium",
    },
    {
        "doc_id": "c",
        "session_id": "s2",
        "turn_id": "t9",
        "summary": "The user said always use pnpm.",
        "priority": "high",
    },
]


def _forget(memory: dict, at: str = "2026-12-01T10:00:00+00:00") -> Correction:
    return Correction(memory_id=memory["doc_id"], action="forget", session_id=memory["session_id"],
                      turn_id=memory["turn_id"], original=memory["summary"], at=at)  # fmt: skip


def test_a_forgotten_memory_never_comes_back_from_its_turn_even_reworded() -> None:
    forgotten = _forget(IDEAS[0])
    assert [m["doc_id"] for m in apply_corrections(IDEAS, [forgotten])] == ["b", "c"]  # c: another turn
    reworded = {**IDEAS[0], "doc_id": "a2", "summary": "The user said: always use pnpm"}
    assert same_idea(reworded["summary"], IDEAS[0]["summary"])
    assert [m["doc_id"] for m in apply_corrections([reworded, IDEAS[1]], [forgotten])] == ["b"]


def test_edits_keep_the_id_and_the_newest_wins() -> None:
    older = Correction(memory_id="b", action="edit", session_id="s1", turn_id="t1", original=IDEAS[1]["summary"],
                       text="Vitest, not Jest", at="2026-12-01T10:00:00+00:00")  # fmt: skip
    newer = Correction(memory_id="b", action="edit", session_id="s1", turn_id="t1", original=IDEAS[1]["summary"],
                       priority="high", text="Vitest, not Jest: ESM", at="2026-12-01T11:00:00+00:00")  # fmt: skip
    [a, b, c] = apply_corrections(IDEAS, [newer, older])
    assert (b["doc_id"], b["summary"], b["priority"]) == ("b", "Vitest, not Jest: ESM", "high")
    assert a == IDEAS[0] and c == IDEAS[2] and IDEAS[1]["summary"] == "Vitest replaced Jest for ESM."  # not mutated
    frame = correct_frame(pl.DataFrame(IDEAS), [newer, _forget(IDEAS[2])])
    assert frame.schema == pl.DataFrame(IDEAS).schema and frame["doc_id"].to_list() == ["a", "b"]


def test_an_edit_must_change_something() -> None:
    with pytest.raises(ValueError, match="an edit needs a new text or a new priority"):
        Correction(memory_id="a", action="edit", text="  ")


def test_the_trail_is_appended_read_back_in_order_and_survives_a_torn_line(tmp_path) -> None:  # noqa: ANN001
    from memory_pipeline.curation.trail import read_corrections, record, trail_path

    second = Correction(memory_id="b", action="edit", text="new", at="2026-12-01T11:00:00+00:00")
    first = _forget(IDEAS[0])
    record(tmp_path, second)
    record(tmp_path, first)
    with trail_path(tmp_path).open("a") as trail:
        trail.write('{"memory_id": "c", "action": "forg')  # a crash mid-write
    assert read_corrections(tmp_path) == [first, second]
    assert read_corrections(tmp_path, "b") == [second] and read_corrections(tmp_path / "none") == []
    assert len(trail_path(tmp_path).read_text().splitlines()) == 3  # appended, never rewritten


# The same knowledge as two models wrote it (issue 30): other words, the same kind, evidence and subject.
BY_QWEN = {
    "doc_id": "q1",
    "session_id": "s5",
    "turn_id": "t2",
    "kind": "rule",
    "subject": "package manager",
    "summary": "Use pnpm, never npm.",
    "evidence": "always use pnpm, never npm",
    "tags": ["rule"],
    "priority": "high",
}
BY_OTHER = {
    "doc_id": "o7",
    "session_id": "s5",
    "turn_id": "t2",
    "kind": "rule",
    "subject": "Package manager",
    "summary": "Install dependencies with pnpm instead of npm in this repository.",
    "priority": "high",
    "evidence": "Always use pnpm, never npm.",
    "tags": ["rule", "package-manager"],
}
DECISION = {
    "doc_id": "d3", "session_id": "s5", "turn_id": "t2", "kind": "decision", "subject": "test runner",
    "summary": "Use Vitest over Jest because Jest broke on ESM imports.", "priority": "high",
    "evidence": "We go with Vitest over Jest because Jest broke on our ESM imports.", "tags": ["decision"],
}  # fmt: skip


def test_a_decision_holds_for_the_knowledge_whatever_model_words_it_again() -> None:
    forgotten = Correction.of(BY_QWEN, action="forget")
    assert not same_idea(BY_QWEN["summary"], BY_OTHER["summary"])  # the words alone would not find it
    assert apply_corrections([BY_OTHER, DECISION], [forgotten]) == [DECISION]  # the other piece stays
    edited = Correction.of(BY_QWEN, action="edit", text="Use pnpm (v9), never npm or yarn.")
    [again, decision] = apply_corrections([BY_OTHER, DECISION], [edited])
    assert again["summary"] == "Use pnpm (v9), never npm or yarn." and again["doc_id"] == "o7"
    assert decision == DECISION
    # Another turn's same words are another memory.
    assert apply_corrections([BY_OTHER | {"turn_id": "t3"}], [forgotten])[0]["doc_id"] == "o7"


def test_the_trail_keeps_hashes_not_the_forgotten_text_and_only_its_owner_reads_it(tmp_path) -> None:  # noqa: ANN001
    import stat

    from memory_pipeline.curation.trail import read_corrections, record, trail_path

    record(tmp_path, Correction.of(BY_QWEN, action="forget"))
    record(tmp_path, _forget(IDEAS[0]))  # made the old way, with the text: hashed all the same
    written = trail_path(tmp_path).read_text()
    for words in ("pnpm", "npm", "package", "always use"):
        assert words not in written
    assert stat.S_IMODE(trail_path(tmp_path).stat().st_mode) == 0o600
    [old, new] = read_corrections(tmp_path)  # oldest first
    assert new.kind == "rule" and new.original == "" and new.evidence_words
    assert old.original == "" and old.original_words
    assert apply_corrections([BY_OTHER, IDEAS[0], IDEAS[1]], [old, new]) == [IDEAS[1]]


def test_edited_memories_are_named_so_no_grounding_check_judges_them() -> None:
    from memory_pipeline.curation.corrections import edited_ids

    frame = pl.DataFrame([BY_OTHER, DECISION])
    assert edited_ids(frame, [Correction.of(BY_QWEN, action="edit", text="Use pnpm 9.")]) == {"o7"}
    assert edited_ids(frame, [Correction.of(BY_QWEN, action="edit", priority="low")]) == set()
    assert edited_ids(frame, [Correction.of(BY_QWEN, action="forget")]) == set()


def test_forgetting_a_turn_drops_its_messages_observation_and_every_memory_of_it() -> None:
    from memory_pipeline.curation.corrections import drop_forgotten_turns

    whole = Correction(memory_id="a", action="forget_turn", session_id="s1", turn_id="t1", original="x")
    # Every memory of the turn goes, whatever its words; another turn's twin stays.
    assert [m["doc_id"] for m in apply_corrections(IDEAS, [whole])] == ["c"]
    messages = pl.DataFrame(
        {"session_id": ["s1", "s1", "s1", "s2"], "turn_id": ["t1", "t1", "t2", "t1"], "message_index": [0, 1, 0, 0]}
    )
    kept = drop_forgotten_turns(messages, [whole, _forget(IDEAS[2])])  # a plain forget keeps the messages
    assert kept.select("session_id", "turn_id").rows() == [("s1", "t2"), ("s2", "t1")]
    assert drop_forgotten_turns(messages, [_forget(IDEAS[0])]).height == 4
    assert drop_forgotten_turns(messages.clear(), [whole]).is_empty()


class _OneMemory:
    """The search and the store of one stored memory, as the curation actions use them."""

    def __init__(self, row: object) -> None:
        self.row, self.updates, self.deleted = row, [], []

    def get(self, ids: list[str]) -> list:
        return [self.row] if self.row.id in ids else []  # type: ignore[attr-defined]

    def update(self, index: str, memory_id: str, text: str | None, priority: str | None) -> None:
        self.updates.append((index, memory_id, text, priority))

    def delete(self, index: str, memory_id: str) -> None:
        self.deleted.append((index, memory_id))


def _summary_row(text: str, evidence: str) -> dict:
    from memory_pipeline.stores.summary_store import summary_doc_id

    return {"doc_id": summary_doc_id("s1", "t1", text), "session_id": "s1", "turn_id": "t1", "summary": text,
            "priority": "high", "kind": "rule", "tags": ["rule"], "evidence": evidence,
            "subject": "package manager"}  # fmt: skip


def test_an_edited_memory_keeps_its_id_through_re_runs_that_word_it_anew(tmp_path) -> None:  # noqa: ANN001
    from memory_pipeline.curation import actions
    from memory_pipeline.curation.trail import read_corrections
    from memory_pipeline.search.models import Row
    from memory_pipeline.stores.indices import SUMMARY_INDEX

    said = "always use pnpm here, never npm"
    first = _summary_row("Use pnpm, never npm.", said)
    row = Row(id=first["doc_id"], kind="summary", time="2026-03-10T10:00:00Z", priority="high",
              summary=first["summary"], project="/work/shop", session_id="s1", turn_id="t1", knowledge="rule",
              evidence=said, subject="package manager")  # fmt: skip
    memory = _OneMemory(row)
    actions.edit(memory, memory, tmp_path, row.id, text="Use pnpm 9 for every package; never npm.")  # type: ignore[arg-type]
    # Written in place, under its id; the change is in the trail, with who made it.
    assert memory.updates == [(SUMMARY_INDEX, row.id, "Use pnpm 9 for every package; never npm.", None)]
    [change] = read_corrections(tmp_path, row.id)
    assert change.action == "edit" and change.who == "person" and change.index == SUMMARY_INDEX
    # The summarise stage runs again: a new model words the rule anew (another hash, another id), and says the
    # old wording again beside it. The edited memory keeps its id and the person's text, once.
    reworded = _summary_row("Always use pnpm rather than npm.", said)
    assert reworded["doc_id"] != row.id
    for run in ([first], [reworded], [first, reworded], [reworded, first]):
        frame = correct_frame(pl.DataFrame(run), read_corrections(tmp_path), SUMMARY_INDEX)
        assert frame["doc_id"].to_list() == [row.id], run
        assert frame["summary"].to_list() == ["Use pnpm 9 for every package; never npm."]
