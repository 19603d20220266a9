"""Setting a coding agent up to use the memory (`memory-pipeline install`), and undoing it exactly.

Each agent's set-up is a list of `Edit`s of its own files, planned from what they hold now (pure: text in, text
out), so a second install changes nothing and an uninstall can remove exactly what was added:
- Claude Code: the hooks (SessionStart, UserPromptSubmit, Stop, and PostToolUse / PostToolUseFailure for a
  file read or written and a failing command) in `~/.claude/settings.json` and the MCP entry `memory` in
  `~/.claude.json`.
- Codex: the MCP entry `[mcp_servers.memory]` in `~/.codex/config.toml`.
- pi: the extension in `~/.pi/agent/settings.json` (`packages`, what `pi install` writes) and
  `~/.pi/agent/memory-pipeline.json`, where the extension finds the service and its token file
  (MEMORY_SERVICE_TOKEN_FILE when it is not in pi's environment).

`uv run --project <checkout>` keeps the agent's working directory (unlike `--directory`), so the MCP server's
project is the one the agent runs in.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Agent = Literal["claude-code", "codex", "pi"]
AGENTS: tuple[Agent, ...] = ("claude-code", "codex", "pi")
SERVER = "memory"
# Claude Code's hook events and, for a tool's event, the tools its hook runs after (its `matcher`, a regex of tool
# names; () for an event that takes none). https://code.claude.com/docs/en/hooks#posttooluse: PostToolUse runs
# after a tool that succeeded, PostToolUseFailure after one that failed. A file's memory comes with its first Read
# or Write: pi's extension recalls on read, edit and write, but Claude Code's Edit and MultiEdit refuse a file the
# session did not Read first, so their hook (a process per edit, about a second) could only be told "given
# already". Bash only when it failed: the gotchas known about the command.
HOOK_EVENTS: dict[str, tuple[str, ...]] = {
    "SessionStart": (),
    "UserPromptSubmit": (),
    "Stop": (),
    "PostToolUse": ("Read", "Write"),
    "PostToolUseFailure": ("Bash",),
}
PI_CONFIG = "memory-pipeline.json"
_TOML_MARK = "# memory_pipeline: added by `memory-pipeline install codex`"


class SetupError(ValueError):
    """A file the set-up must change cannot be read as what it should be (named with its line)."""


@dataclass(frozen=True)
class Edit:
    path: Path
    before: str | None  # None: the file did not exist
    after: str | None  # None: the file is removed
    what: str


@dataclass(frozen=True)
class Place:
    """Where things are: the person's home, the checkout the agents run, the service and its token."""

    home: Path
    checkout: Path
    token_file: Path
    service_url: str
    pi_dir: Path | None = None  # PI_CODING_AGENT_DIR; default ~/.pi/agent

    @property
    def pi_agent_dir(self) -> Path:
        return self.pi_dir or self.home / ".pi" / "agent"

    def command(self, *args: str) -> list[str]:
        return ["uv", "run", "--project", str(self.checkout), "memory-pipeline", *args]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _json(path: Path, text: str | None) -> dict[str, Any]:
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SetupError(f"{path}:{exc.lineno}: not JSON ({exc.msg}); fix or move it, nothing was changed") from None
    if not isinstance(data, dict):
        raise SetupError(f"{path}:1: not a JSON object; nothing was changed")
    return data


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _json_edit(path: Path, change: Callable[[dict[str, Any]], str | None]) -> Edit | None:
    """An edit of a JSON file: `change` alters the object in place and says what it did (None: nothing to do)."""
    before = _read(path)
    data = _json(path, before)
    what = change(data)
    return None if what is None else Edit(path, before, _dump(data), what)


# Claude Code -----------------------------------------------------------------------------------------------


def _hook_command(place: Place) -> str:
    return shlex.join(place.command("hook", "claude-code"))


def _claude_hooks(place: Place, remove: bool) -> Callable[[dict[str, Any]], str | None]:
    command = _hook_command(place)

    def ours(group: object) -> bool:
        return isinstance(group, dict) and any(
            isinstance(h, dict) and h.get("command") == command for h in group.get("hooks", [])
        )

    def change(settings: dict[str, Any]) -> str | None:
        hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else None
        if remove:
            if not hooks:
                return None
            removed = []
            for event in HOOK_EVENTS:
                groups = hooks.get(event)
                if isinstance(groups, list) and any(ours(g) for g in groups):
                    hooks[event] = [g for g in groups if not ours(g)]
                    removed.append(event)
                    if not hooks[event]:
                        del hooks[event]
            if not hooks:
                del settings["hooks"]
            return f"removed the memory hooks ({', '.join(removed)})" if removed else None
        hooks = settings.setdefault("hooks", {})
        added = []
        for event, tools in HOOK_EVENTS.items():
            groups = hooks.setdefault(event, [])
            if not any(ours(g) for g in groups):
                matcher = {"matcher": "|".join(tools)} if tools else {}
                groups.append(matcher | {"hooks": [{"type": "command", "command": command}]})
                added.append(event)
        return f"added hooks {', '.join(added)}: {command}" if added else None

    return change


def _mcp_entry(place: Place) -> dict[str, Any]:
    arguments = place.command("mcp")
    return {"type": "stdio", "command": arguments[0], "args": arguments[1:], "env": {}}


def _claude_mcp(place: Place, remove: bool) -> Callable[[dict[str, Any]], str | None]:
    def change(config: dict[str, Any]) -> str | None:
        servers = config.get("mcpServers") if isinstance(config.get("mcpServers"), dict) else None
        if remove:
            if not servers or servers.get(SERVER) != _mcp_entry(place):
                return None
            del servers[SERVER]
            if not servers:
                del config["mcpServers"]
            return f"removed the MCP server {SERVER!r}"
        servers = config.setdefault("mcpServers", {})
        if SERVER in servers:
            return None  # set up already (by this command or by hand): left as it is
        servers[SERVER] = _mcp_entry(place)
        return f"added the MCP server {SERVER!r}: {shlex.join(place.command('mcp'))}"

    return change


# Codex -----------------------------------------------------------------------------------------------------


def _codex_block(place: Place) -> str:
    arguments = place.command("mcp")
    quoted = ", ".join(json.dumps(a) for a in arguments[1:])
    return f'{_TOML_MARK}\n[mcp_servers.{SERVER}]\ncommand = "{arguments[0]}"\nargs = [{quoted}]\n'


def _codex_edit(place: Place, remove: bool) -> Edit | None:
    path = place.home / ".codex" / "config.toml"
    before = _read(path)
    try:
        config = tomllib.loads(before or "")
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path}: not TOML ({exc}); fix or move it, nothing was changed") from None
    block = _codex_block(place)
    if remove:
        if before is None or block not in before:
            return None
        after = before.replace("\n" + block, "").replace(block, "")
        return Edit(path, before, after or None, f"removed [mcp_servers.{SERVER}]")
    if SERVER in config.get("mcp_servers", {}):
        return None
    text = before or ""
    after = text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + block
    return Edit(path, before, after, f"added [mcp_servers.{SERVER}]: {shlex.join(place.command('mcp'))}")


# pi --------------------------------------------------------------------------------------------------------


def _pi_packages(place: Place, remove: bool) -> Callable[[dict[str, Any]], str | None]:
    extension = str(place.checkout / "pi-extension")

    def change(settings: dict[str, Any]) -> str | None:
        packages = settings.get("packages")
        if remove:
            if not isinstance(packages, list) or extension not in packages:
                return None
            packages.remove(extension)
            if not packages:
                del settings["packages"]
            return f"removed the extension {extension}"
        if packages is not None and not isinstance(packages, list):
            raise SetupError(f"{place.pi_agent_dir / 'settings.json'}: `packages` is not a list; nothing was changed")
        packages = settings.setdefault("packages", [])
        if extension in packages:
            return None
        packages.append(extension)
        return f"added the extension {extension} (as `pi install` does)"

    return change


def _pi_config(place: Place, remove: bool) -> Edit | None:
    path = place.pi_agent_dir / PI_CONFIG
    before = _read(path)
    wanted = _dump({"serviceUrl": place.service_url, "tokenFile": str(place.token_file)})
    if remove:
        return Edit(path, before, None, f"removed {PI_CONFIG}") if before is not None else None
    if before == wanted:
        return None
    return Edit(path, before, wanted, f"the service {place.service_url} and its token file {place.token_file}")


# -----------------------------------------------------------------------------------------------------------


def plan(agent: Agent, place: Place, remove: bool = False) -> list[Edit]:
    """The edits that set `agent` up (or, `remove`, take out what a set-up added), from the files as they are."""
    edits: list[Edit | None]
    if agent == "claude-code":
        edits = [
            _json_edit(place.home / ".claude" / "settings.json", _claude_hooks(place, remove)),
            _json_edit(place.home / ".claude.json", _claude_mcp(place, remove)),
        ]
    elif agent == "codex":
        edits = [_codex_edit(place, remove)]
    elif agent == "pi":
        edits = [
            _json_edit(place.pi_agent_dir / "settings.json", _pi_packages(place, remove)),
            _pi_config(place, remove),
        ]
    else:
        raise SetupError(f"unknown agent {agent!r}: one of {', '.join(AGENTS)}")
    return [e for e in edits if e is not None]
