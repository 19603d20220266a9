"""Replacement by words: a later decision that names what it replaced marks the earlier choice of that subject
(`reflect/replacing.py`), never another subject's, never a cause or a fact."""

from __future__ import annotations

import pytest

from memory_pipeline.reflect.replacing import (
    Stated,
    mark_changes,
    named_replacement,
    replaced_memories,
    replaced_names,
    replaces,
)

_MOVED = "We're moving the HTTP client in invoices from urllib3 to aiohttp, urllib3 got in the way."
_DEV_DB = "Local development uses Postgres instead of SQLite."


def test_a_move_names_what_it_replaced_and_its_subject() -> None:
    assert named_replacement(_MOVED) == ("aiohttp", "urllib3", frozenset({"http", "client", "invoic"}))
    assert named_replacement("We moved local dev from SQLite to Postgres because we need JSON columns.") == (
        "Postgres",
        "SQLite",
        frozenset({"local", "dev"}),
    )
    assert named_replacement("Use urllib3 for the HTTP client.") is None


@pytest.mark.parametrize(
    ("newer", "older", "expected"),
    [
        (_MOVED, "For the HTTP client in invoices, use urllib3, not httpx, we need async calls.", True),
        # another module's choice of the same library
        (_MOVED, "For the HTTP client in reminders, use urllib3, not aiohttp, it has proper timeouts.", False),
        # the older one rejects what was replaced: nothing of it is undone
        (_MOVED, "For the HTTP client in invoices, use requests, not urllib3.", False),
        # it already wants what was chosen
        (_MOVED, "For the HTTP client in invoices, use aiohttp.", False),
        (_DEV_DB, "Local dev uses SQLite.", True),
        (_DEV_DB, "pytest-xdist workers share one SQLite file, so the suite fails with database is locked.", False),
        ("For local development, use Postgres.", "Local dev uses SQLite.", False),  # names no replacement
        # names no subject: nothing an older memory can be checked on
        ("Use pnpm instead of npm.", "Use npm for installs.", False),
        ("Decided to run the tests over SSH because the VPN is flaky.", "Asked: fix SSH key permissions.", False),
        # the older one rejects the replaced file, however stance spells it
        (
            "We are moving the settings from config.py to settings.toml.",
            "Secrets in settings come from env vars, never from config.py.",
            False,
        ),
        ("We are moving the settings from config.py to settings.toml.", "The settings live in config.py.", True),
    ],
)
def test_replaces_only_the_same_subject(newer: str, older: str, expected: bool) -> None:
    assert replaces(newer, older) is expected


def _memory(id_: str, kind: str, summary: str, day: str, project: str = "p", by: str | None = None) -> Stated:
    return Stated(
        id=id_, project=project, kind=kind, summary=summary, established_at=f"2026-0{day}T10:00:00Z", superseded_by=by
    )


def test_only_a_later_decision_replaces_and_only_a_decision_or_a_rule_is_replaced() -> None:
    memories = [
        _memory("old", "decision", "For the HTTP client in invoices, use urllib3, not httpx.", "1-01"),
        _memory("rule", "rule", "In invoices the HTTP client is always urllib3.", "1-02"),
        _memory("cause", "gotcha", "The invoices HTTP client urllib3 leaked connections.", "1-03"),
        _memory("other", "decision", "For the HTTP client in invoices, use urllib3.", "1-04", project="q"),
        _memory("new", "decision", _MOVED, "2-01"),
        _memory("later", "decision", "For the HTTP client in invoices, use urllib3 again.", "3-01"),
    ]
    assert replaced_memories(memories) == {"old": "new", "rule": "new"}
    # a rule naming a replacement replaces nothing: only a person's decision does
    as_rule = [m.model_copy(update={"kind": "rule"}) if m.id == "new" else m for m in memories]
    assert replaced_memories(as_rule) == {}


def test_mark_changes_writes_new_marks_clears_stale_ones_and_leaves_reflections_alone() -> None:
    memories = [
        _memory("old", "decision", "For the HTTP client in invoices, use urllib3, not httpx.", "1-01"),
        _memory("new", "decision", _MOVED, "2-01"),
        # marked by a memory that no longer replaces it (reworded since): cleared
        _memory("kept", "decision", "For charts in docks, use echarts.", "1-02", by="new"),
        # reflection's mark: not ours to touch
        _memory("reflected", "decision", "For logging in certs, use zap.", "1-03", by="reflection-7"),
    ]
    assert mark_changes(memories) == {"old": "new", "kept": None}
    done = [m.model_copy(update={"superseded_by": "new"}) if m.id == "old" else m for m in memories[:2]]
    assert mark_changes(done) == {}


def test_an_observation_of_the_old_choice_is_replaced_and_its_stale_mark_cleared() -> None:
    memories = [
        _memory("obs", "observation", "Asked: add a chart of invoices. Outcome: Set up echarts for charts.", "1-01"),
        _memory("docks", "observation", "Asked: add a chart of docks. Outcome: Set up echarts for charts.", "1-02"),
        _memory("new", "decision", "We're moving charts in invoices from echarts to recharts.", "2-01"),
        # an observation's mark naming a memory gone: replacement's own, so cleared
        _memory("gone", "observation", "Asked: tidy the imports in crews. Outcome: Done.", "1-03", by="vanished"),
    ]
    assert replaced_names(memories) == ["echarts"]
    assert mark_changes(memories) == {"obs": "new", "gone": None}
