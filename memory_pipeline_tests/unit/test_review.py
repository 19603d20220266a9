"""The review loop on files: promote, reject, untouched, a hand-edited MEMORY.md, applying twice."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.reflect.review import apply_review, parse_review, pending
from memory_pipeline.reflect.workspace import project_dir, render_daily_log, write_daily_log

REVIEW = """# Review — /home/alice/shop

## Hard rules

- [x] p-20261129-001 Always run `pytest -x` before saying something is fixed. (evidence: 3 sessions; ids: a1, b2)
- [-] p-20261129-002 Never use tabs. (evidence: 1 session; ids: c3)
- [ ] p-20261129-003 Never edit src/gen/. (evidence: 2 sessions; ids: d4, e5)

## Gotchas

- [X] p-20261129-004 CI runs with TZ=UTC: compare aware datetimes. (evidence: 2 sessions; ids: f6)
"""

HAND_EDITED = """# Memory — shop

My own notes, written by hand. Keep them.

## Hard rules

- Deploy only on Tuesdays.

## Links
- https://wiki.example/shop
"""


def _project(tmp_path: Path) -> Path:
    folder = project_dir(tmp_path, "/home/alice/shop")
    folder.mkdir(parents=True)
    (folder / "REVIEW.md").write_text(REVIEW)
    return folder


def test_promote_reject_and_untouched(tmp_path: Path) -> None:
    folder = _project(tmp_path)
    report = apply_review(folder, "/home/alice/shop", "2026-11-30")
    assert report.promoted == ["p-20261129-001", "p-20261129-004"]
    assert report.rejected == ["p-20261129-002"] and report.untouched == ["p-20261129-003"]
    memory = (folder / "MEMORY.md").read_text()
    assert "- Always run `pytest -x` before saying something is fixed. <!-- p-20261129-001 -->" in memory
    assert memory.index("## Hard rules") < memory.index("p-20261129-001") < memory.index("## Gotchas")
    assert "(evidence" not in memory and "Never use tabs" not in memory
    left = parse_review((folder / "REVIEW.md").read_text())
    assert [p.id for p in left] == ["p-20261129-003"] and pending(folder / "REVIEW.md") == 1
    log = (folder / "daily" / "2026-11-30.md").read_text()
    assert "## Archived by review" in log and "rejected p-20261129-002" in log


def test_hand_edits_survive_and_applying_twice_changes_nothing(tmp_path: Path) -> None:
    folder = _project(tmp_path)
    (folder / "MEMORY.md").write_text(HAND_EDITED)
    apply_review(folder, "/home/alice/shop", "2026-11-30")
    memory = (folder / "MEMORY.md").read_text()
    for kept in (
        "My own notes, written by hand. Keep them.",
        "- Deploy only on Tuesdays.",
        "## Links",
        "- https://wiki.example/shop",
    ):
        assert kept in memory
    hard = memory[memory.index("## Hard rules") : memory.index("## Links")]
    assert "Deploy only on Tuesdays" in hard and "p-20261129-001" in hard
    snapshot = {p.name: p.read_text() for p in folder.rglob("*.md")}
    again = apply_review(folder, "/home/alice/shop", "2026-11-30")
    assert again.promoted == [] and again.rejected == []
    assert {p.name: p.read_text() for p in folder.rglob("*.md")} == snapshot


def test_a_proposal_already_in_memory_is_not_added_twice(tmp_path: Path) -> None:
    folder = _project(tmp_path)
    apply_review(folder, "/home/alice/shop", "2026-11-30")
    (folder / "REVIEW.md").write_text(REVIEW)  # the same proposals staged again
    report = apply_review(folder, "/home/alice/shop", "2026-11-30")
    assert report.promoted == []
    assert (folder / "MEMORY.md").read_text().count("p-20261129-001") == 1


def test_daily_log_lists_ideas_by_priority_and_keeps_review_archive(tmp_path: Path) -> None:
    ideas = [
        {
            "doc_id": "aaaaaaaaaaaa1",
            "summary": "Use pnpm, not npm.",
            "priority": "high",
            "tags": ["pnpm"],
            "session_id": "s1",
            "turn_id": "t1",
            "established_at": "2026-11-30T10:00:00Z",
        },
        {
            "doc_id": "bbbbbbbbbbbb2",
            "summary": "Asked about lifetimes.",
            "priority": "low",
            "tags": ["rust"],
            "session_id": "s2",
            "turn_id": "t9",
            "established_at": "2026-11-30T09:00:00Z",
        },
    ]
    text = render_daily_log("/p", "2026-11-30", ideas)
    assert text.index("## High") < text.index("Use pnpm") < text.index("## Low") < text.index("Asked about")
    assert "`aaaaaaaaaaaa`" in text and "session `s1`" in text
    path, changed = write_daily_log(tmp_path, "/p", "2026-11-30", ideas)
    assert changed and path.read_text() == text
    path.write_text(text + "\n## Archived by review\n- rejected p-20261130-001 (Hard rules): x\n")
    _, changed = write_daily_log(tmp_path, "/p", "2026-11-30", ideas)
    assert changed is False and "rejected p-20261130-001" in path.read_text()


def test_review_apply_command(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from click.testing import CliRunner

    from memory_pipeline.cli import main

    folder = _project(tmp_path)
    monkeypatch.setenv("MEMORY_WORKSPACE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["review", "apply"])
    assert result.exit_code == 0, result.output
    assert f"{folder.name}: 2 promoted, 1 rejected, 1 waiting" in result.output
    assert "p-20261129-004" in (folder / "MEMORY.md").read_text()


def test_review_apply_job_in_dagster(tmp_path: Path) -> None:
    from memory_pipeline.definitions import defs
    from memory_pipeline.resources import MemoryWorkspaceResource

    folder = _project(tmp_path)
    job = defs.resolve_job_def("review_apply_job")
    result = job.execute_in_process(resources={"workspace": MemoryWorkspaceResource(path=str(tmp_path))})
    assert result.success
    assert "p-20261129-001" in (folder / "MEMORY.md").read_text()
    [event] = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    assert event.event_specific_data.metadata["promoted"].value == 2


# --- proposals follow a person's edit or forget of their memory -------------------------------------------

SHOP = "/work/shop"
PNPM, MIXED, OTHER = "p-20261130-001", "p-20261130-002", "p-20261130-003"


class _Memories:
    """Search and store of the memories m1 (the pnpm rule) and m9, as the curation actions use them."""

    def __init__(self) -> None:
        from memory_pipeline.search.models import Row

        self.rows = {
            i: Row(id=i, kind="summary", time="2026-11-30T10:00:00Z", priority="high", summary=text, project=SHOP,
                   session_id=f"s-{i}", turn_id="t1", knowledge="rule")
            for i, text in (("m1", "Use pnpm for every package, never npm."), ("m9", "Run pytest -x first."))
        }  # fmt: skip

    def get(self, ids: list[str]) -> list:
        return [self.rows[i] for i in ids if i in self.rows]

    def update(self, index: str, memory_id: str, text: str | None, priority: str | None) -> None:
        self.rows[memory_id] = self.rows[memory_id].model_copy(update={"summary": text or ""})

    def delete(self, index: str, memory_id: str) -> None:
        del self.rows[memory_id]

    def hold(self, index: str, memory_id: str, at: object) -> None:
        """A forget keeps the memory for its undo (the real store: stores/memory_store.py)."""

    def purge_held(self, before: object) -> int:
        return 0


def _staged(tmp_path: Path) -> tuple[Path, _Memories]:
    """The shop's REVIEW.md as the reflect stage staged it: the pnpm rule (from m1 alone) ticked, a rule from
    m1 and m9, and one from m9 alone."""
    from memory_pipeline.reflect.proposals import Candidate, stage
    from memory_pipeline.reflect.workspace import ensure_project_dir

    folder = ensure_project_dir(tmp_path, SHOP)
    candidates = [
        Candidate("Hard rules", "Use pnpm for every package, never npm.", ["s-m1"], ["m1"]),
        Candidate("Hard rules", "Check the lockfile in.", ["s-m1", "s-m9"], ["m1", "m9"]),
        Candidate("Hard rules", "Run pytest -x first.", ["s-m9"], ["m9"]),
    ]
    report = stage(folder, SHOP, candidates, "2026-11-30")
    assert report.new == [PNPM, MIXED, OTHER]
    review = folder / "REVIEW.md"
    review.write_text(review.read_text().replace(f"- [ ] {PNPM}", f"- [x] {PNPM}"))  # ticked, not applied yet
    return folder, _Memories()


def test_forgetting_a_memory_withdraws_its_proposal_and_review_apply_never_promotes_it(tmp_path: Path) -> None:
    from memory_pipeline.curation import actions
    from memory_pipeline.reflect.proposals import Candidate, load_registry, stage

    folder, memories = _staged(tmp_path)
    ticked = (folder / "REVIEW.md").read_text()
    actions.forget(memories, memories, tmp_path, "m1")  # type: ignore[arg-type]
    waiting = {p.id: p for p in parse_review((folder / "REVIEW.md").read_text())}
    assert set(waiting) == {MIXED, OTHER}  # withdrawn: it rested on m1 alone
    assert "m1" not in waiting[MIXED].text and "m9" in waiting[MIXED].text  # the other keeps its other evidence
    registry = load_registry(folder)
    assert registry[PNPM].withdrawn == "m1" and registry[MIXED].evidence_ids == ["m9"]
    # A REVIEW.md still open in an editor, saved back with the box ticked: apply promotes nothing of it.
    (folder / "REVIEW.md").write_text(ticked)
    report = apply_review(folder, SHOP, "2026-12-01")
    assert PNPM not in report.promoted and report.promoted == []
    assert "pnpm" not in ((folder / "MEMORY.md").read_text() if (folder / "MEMORY.md").exists() else "")
    assert PNPM not in (folder / "REVIEW.md").read_text()
    # The next reflect run sees the rule again (an older reflection of m1): it stays withdrawn.
    again = stage(folder, SHOP, [Candidate("Hard rules", "Use pnpm for every package, never npm.", ["s-m1"], ["m1"])],
                  "2026-12-01")  # fmt: skip
    assert again.new == [] and PNPM not in (folder / "REVIEW.md").read_text()


def test_forgetting_a_promoted_rules_only_memory_takes_its_line_out_of_memory_md(tmp_path: Path) -> None:
    from memory_pipeline.curation import actions

    folder, memories = _staged(tmp_path)
    assert apply_review(folder, SHOP, "2026-11-30").promoted == [PNPM]
    (folder / "MEMORY.md").write_text((folder / "MEMORY.md").read_text() + "\nMy own note on pnpm stays.\n")
    assert "- Use pnpm for every package, never npm. <!-- p-20261130-001 -->" in (folder / "MEMORY.md").read_text()
    actions.forget(memories, memories, tmp_path, "m1")  # type: ignore[arg-type]
    memory = (folder / "MEMORY.md").read_text()
    assert PNPM not in memory and "never npm" not in memory and "My own note on pnpm stays." in memory


def test_editing_a_memory_rewrites_its_pending_proposal_and_promote_writes_the_new_text(tmp_path: Path) -> None:
    from memory_pipeline.curation import actions

    folder, memories = _staged(tmp_path)
    actions.edit(memories, memories, tmp_path, "m1", text="Use pnpm 9 for every package; never npm or yarn.")  # type: ignore[arg-type]
    waiting = {p.id: p for p in parse_review((folder / "REVIEW.md").read_text())}
    assert waiting[PNPM].rule == "Use pnpm 9 for every package; never npm or yarn." and waiting[PNPM].mark == "x"
    assert waiting[MIXED].rule == "Check the lockfile in."  # merged from two memories: not one memory's words
    assert apply_review(folder, SHOP, "2026-11-30").promoted == [PNPM]
    memory = (folder / "MEMORY.md").read_text()
    assert "- Use pnpm 9 for every package; never npm or yarn. <!-- p-20261130-001 -->" in memory
    assert "Use pnpm for every package, never npm." not in memory
    # Edited again once promoted: the line follows (the person did not change it by hand).
    actions.edit(memories, memories, tmp_path, "m1", text="Use pnpm 10; never npm.")  # type: ignore[arg-type]
    memory = (folder / "MEMORY.md").read_text()
    assert "- Use pnpm 10; never npm. <!-- p-20261130-001 -->" in memory and memory.count("pnpm") == 1
