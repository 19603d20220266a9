"""The command line talks to people: one line naming the server and the fix, and the sample sessions
whenever pi's own folder does not exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_pipeline.cli import SAMPLE_SESSIONS, main


def _run(*args: str, **env: str):  # noqa: ANN202
    return CliRunner().invoke(main, list(args), env=env)


def test_elasticsearch_down_is_one_line_naming_it_and_the_fix(tmp_path: Path) -> None:
    result = _run("search", "pnpm", ES_URL="http://127.0.0.1:9", HOME=str(tmp_path))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: Elasticsearch at http://127.0.0.1:9 is unreachable (ConnectionError): start it with "
        "`memory-pipeline local up`, or set ES_URL to your cluster"
    ]


def test_a_sessions_dir_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    result = _run("backfill", SESSIONS_DIR=str(tmp_path / "nope"))
    assert result.exit_code == 1 and f"SESSIONS_DIR={tmp_path / 'nope'} does not exist" in result.output


def test_without_pis_folder_every_command_uses_the_sample_sessions(tmp_path: Path) -> None:
    result = _run("config", HOME=str(tmp_path))  # no ~/.pi/agent/sessions there
    assert result.exit_code == 0 and json.loads(result.output)["sessions_dir"] == str(SAMPLE_SESSIONS)
    (tmp_path / ".pi" / "agent" / "sessions").mkdir(parents=True)
    own = _run("config", HOME=str(tmp_path))
    assert json.loads(own.output)["sessions_dir"] == str(tmp_path / ".pi" / "agent" / "sessions")


def test_a_bad_secret_pattern_is_one_line_naming_the_variable() -> None:
    result = _run("config", REDACT_EXTRA_PATTERNS='["("]')
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "REDACT_EXTRA_PATTERNS" in result.output and "not a valid regex" in result.output


def test_help_and_the_command_line_load_nothing_heavy() -> None:
    # --help, and a search the running service answers, must not pay for Dagster, Elasticsearch's client,
    # polars or pydantic (seconds on a small machine): the commands import what they need.
    import subprocess
    import sys

    heavy = ("dagster", "elasticsearch", "polars", "pydantic", "httpx", "psutil")
    probe = f"import sys, memory_pipeline.cli; print([m for m in {heavy!r} if m in sys.modules])"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
    shown = subprocess.run([sys.executable, "-m", "memory_pipeline", "--help"], capture_output=True, text=True)
    assert shown.returncode == 0 and "search" in shown.stdout and "backfill" in shown.stdout


def test_an_error_of_a_json_command_is_json_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONS_DIR", str(tmp_path / "missing"))
    plain = CliRunner().invoke(main, ["config"])
    assert plain.exit_code == 1 and "SESSIONS_DIR=" in plain.output and not plain.output.startswith("{")
    scripted = CliRunner().invoke(main, ["config", "--json"])
    assert scripted.exit_code == 1
    error = json.loads(scripted.stdout.splitlines()[0])["error"]
    assert "SESSIONS_DIR=" in error and "does not exist" in error
