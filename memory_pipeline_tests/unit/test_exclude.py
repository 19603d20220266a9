"""Which projects MEMORY_EXCLUDE keeps out (sessions/exclude.py), and the setting read from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.sessions.exclude import excluded
from memory_pipeline.settings import load_settings


@pytest.mark.parametrize(
    ("project", "out"),
    [
        ("/work/acme", True),
        ("/work/acme/api", True),
        ("/work/acme-tools", False),  # a sibling whose name starts alike
        ("/work/secret-x", True),
        ("/work/secret-x/sub", True),
        ("/work/shop", False),
        (None, False),
        ("", False),
    ],
)
def test_folders_and_globs(project: str | None, out: bool) -> None:
    assert excluded(project, ["/work/acme/", "/work/secret-*", " "]) is out


def test_home_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert excluded(str(tmp_path / "clients" / "acme"), ["~/clients"])


def test_the_setting_is_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_EXCLUDE", '["~/clients/acme", "/work/secret-*"]')
    assert load_settings().memory_exclude == ["~/clients/acme", "/work/secret-*"]
