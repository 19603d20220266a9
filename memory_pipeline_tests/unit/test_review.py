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
