"""`install` then `uninstall` on a scratch HOME leaves every file byte for byte as before (control/)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_pipeline.cli import main
from memory_pipeline.control.agents import AGENTS, Place, SetupError, plan
from memory_pipeline.control.setup import install, uninstall


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under `root`."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _place(home: Path) -> Place:
    return Place(home, Path("/opt/memory pipeline"), Path("/opt/state/service-token"), "http://127.0.0.1:8765")


def _lived_in_home(home: Path) -> None:
    """A home where each agent is configured already, oddly formatted, with entries of its own."""
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(
        '{"model": "opus",\n   "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}'
    )
    (home / ".claude.json").write_text('{"numStartups": 7, "mcpServers": {"other": {"command": "x"}}}\n')
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "o4"\n\n[mcp_servers.other]\ncommand = "y"')


@pytest.mark.parametrize("lived_in", [False, True])
def test_install_then_uninstall_restores_every_byte(tmp_path: Path, lived_in: bool) -> None:
    home, state = tmp_path / "home", tmp_path / "state"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    if lived_in:
        _lived_in_home(home)
    before = _tree(home)
    place = _place(home)
    for agent in AGENTS:
        assert install(agent, place, state)
        assert install(agent, place, state) == []  # twice is once
    assert _tree(home) != before
    for agent in AGENTS:
        assert uninstall(agent, place, state)
    assert _tree(home) == before
    assert list(state.iterdir()) == []


def test_what_install_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _lived_in_home(home)
    place = _place(home)
    for agent in AGENTS:
        install(agent, place, tmp_path / "state")
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus"
    command = "uv run --project '/opt/memory pipeline' memory-pipeline hook claude-code"
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        assert {"hooks": [{"type": "command", "command": command}]} in settings["hooks"][event]
    # After a tool: a file read or written, a command that failed (Claude Code's matchers: regexes of tool names).
    assert settings["hooks"]["PostToolUse"] == [
        {"matcher": "Read|Write", "hooks": [{"type": "command", "command": command}]}
    ]
    assert settings["hooks"]["PostToolUseFailure"] == [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}
    ]
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"
    claude = json.loads((home / ".claude.json").read_text())
    assert claude["numStartups"] == 7 and claude["mcpServers"]["other"] == {"command": "x"}
    assert claude["mcpServers"]["memory"]["args"] == [
        "run",
        "--project",
        "/opt/memory pipeline",
        "memory-pipeline",
        "mcp",
    ]
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert codex["model"] == "o4" and codex["mcp_servers"]["memory"]["command"] == "uv"
    pi = json.loads((home / ".pi" / "agent" / "settings.json").read_text())
    assert pi["packages"] == ["/opt/memory pipeline/pi-extension"]
    config = json.loads((home / ".pi" / "agent" / "memory-pipeline.json").read_text())
    assert config == {"serviceUrl": "http://127.0.0.1:8765", "tokenFile": "/opt/state/service-token"}
    backup = home / ".claude.json.memory-pipeline-backup"
    assert backup.read_text().startswith('{"numStartups": 7') and oct(backup.stat().st_mode & 0o777) == "0o600"


def test_a_file_changed_since_install_keeps_the_change(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _lived_in_home(home)
    place = _place(home)
    install("claude-code", place, tmp_path / "state")
    claude = json.loads((home / ".claude.json").read_text())
    claude["numStartups"] = 8  # the agent rewrote its file meanwhile
    (home / ".claude.json").write_text(json.dumps(claude))
    lines = uninstall("claude-code", place, tmp_path / "state")
    assert any("changed since install" in line for line in lines)
    assert json.loads((home / ".claude.json").read_text()) == {
        "numStartups": 8,
        "mcpServers": {"other": {"command": "x"}},
    }
    assert not (home / ".claude.json.memory-pipeline-backup").exists()
    assert plan("claude-code", place, remove=True) == []


def test_a_broken_file_is_named_with_its_line_and_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{\n  "hooks": {,\n}')
    with pytest.raises(SetupError, match=r"settings.json:2: not JSON"):
        install("claude-code", _place(home), tmp_path / "state")
    assert (home / ".claude" / "settings.json").read_text() == '{\n  "hooks": {,\n}'
    assert not (home / ".claude.json").exists()


def test_the_commands_print_what_they_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "memory"))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    runner = CliRunner()
    done = runner.invoke(main, ["install", "pi"])
    assert done.exit_code == 0, done.output
    assert f"{home}/.pi/agent/settings.json: added the extension" in done.output
    assert "service-token" in (home / ".pi" / "agent" / "memory-pipeline.json").read_text()
    assert "set up already" in runner.invoke(main, ["install", "pi"]).output
    undone = runner.invoke(main, ["uninstall", "pi"])
    assert undone.exit_code == 0 and "restored as it was before install" in undone.output
    assert _tree(home) == {}
    assert os.listdir(tmp_path / "memory" / ".state") == []


def test_an_earlier_install_gains_the_tool_hooks_and_uninstall_restores_it(tmp_path: Path) -> None:
    """A settings file set up before the tool hooks (the three events only): install adds the two tool events,
    keeps the rest, and uninstall gives back that file byte for byte; an entry the person changed is theirs."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    command = "uv run --project '/opt/memory pipeline' memory-pipeline hook claude-code"
    ours = [{"hooks": [{"type": "command", "command": command}]}]
    earlier = {"hooks": {e: ours for e in ("SessionStart", "UserPromptSubmit", "Stop")}}
    earlier["hooks"]["PostToolUse"] = [{"matcher": "Edit", "hooks": [{"type": "command", "command": "fmt"}]}]
    path = home / ".claude" / "settings.json"
    path.write_text(json.dumps(earlier, indent=4))
    before = path.read_bytes()
    place = _place(home)
    [line, _mcp] = install("claude-code", place, tmp_path / "state")
    assert "added hooks PostToolUse, PostToolUseFailure:" in line
    settings = json.loads(path.read_text())
    assert settings["hooks"]["SessionStart"] == ours  # not added twice
    assert [g.get("matcher") for g in settings["hooks"]["PostToolUse"]] == ["Edit", "Read|Write"]
    uninstall("claude-code", place, tmp_path / "state")
    assert path.read_bytes() == before
    # Without the copy (the file changed since): only what install adds goes, the person's own hook stays.
    install("claude-code", place, tmp_path / "state")
    path.write_text(path.read_text() + "\n")
    uninstall("claude-code", place, tmp_path / "state")
    assert json.loads(path.read_text()) == {"hooks": {"PostToolUse": earlier["hooks"]["PostToolUse"]}}
