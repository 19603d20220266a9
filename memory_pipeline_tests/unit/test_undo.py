"""An undone forget no longer holds (curation/corrections.in_force, trail.read_corrections)."""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.curation.corrections import Correction, apply_corrections, in_force
from memory_pipeline.curation.trail import read_corrections, record


def _c(memory_id: str, action: str, at: str, **more: object) -> Correction:
    return Correction(memory_id=memory_id, action=action, at=at, **more)  # type: ignore[arg-type]


def test_an_undo_cancels_the_forgets_before_it_only() -> None:
    trail = [
        _c("m1", "forget", "2026-01-01T00:00:00"),
        _c("m1", "undo", "2026-01-02T00:00:00"),
        _c("m2", "forget", "2026-01-01T00:00:00"),
        _c("m1", "edit", "2026-01-03T00:00:00", priority="low"),
    ]
    assert [(c.memory_id, c.action) for c in in_force(trail)] == [("m2", "forget"), ("m1", "edit")]
    again = [*trail, _c("m1", "forget", "2026-01-04T00:00:00")]  # forgotten again after the undo: holds
    assert ("m1", "forget") in [(c.memory_id, c.action) for c in in_force(again)]


def test_the_pipeline_keeps_an_undone_memory_and_the_history_shows_both(tmp_path: Path) -> None:
    record(tmp_path, _c("m1", "forget", "2026-01-01T00:00:00"))
    memory = {"doc_id": "m1", "summary": "Use pnpm", "session_id": "s", "turn_id": "t"}
    assert apply_corrections([memory], read_corrections(tmp_path)) == []
    record(tmp_path, _c("m1", "undo", "2026-01-02T00:00:00"))
    assert apply_corrections([memory], read_corrections(tmp_path)) == [memory]
    assert [c.action for c in read_corrections(tmp_path, "m1")] == ["forget", "undo"]
