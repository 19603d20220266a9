"""Claude Code transcripts (`~/.claude/projects/<slug>/<session>.jsonl`) read into the model pi's files give.

One line per entry: `user` (the person's words, or tool results as `tool_result` blocks), `assistant` (one
line per content block: text, thinking, `tool_use`), `system` (hook and command notes, compaction
boundaries), `progress`, and UI state without a place in the conversation (`file-history-snapshot`,
`queue-operation`, `summary`). `uuid`/`parentUuid` make the tree; a compaction boundary starts a new root
and names the old leaf in `logicalParentUuid`, which is followed here so the session stays one path.
Sub-agents write their own files (`<session>/subagents/agent-<id>.jsonl`, or `agent-<id>.jsonl` beside the
session before 2.1) whose every entry has `isSidechain`: each is a thread of its own, a session whose
parent is the main one, and its prompts come from the main agent, never from the person. The format is in
docs/claude-code-session-format.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memory_pipeline.sessions.models import (
    CompactionEntry,
    CustomMessageEntry,
    Entry,
    MessageEntry,
    MetadataEntry,
    SessionHeader,
    SessionInfoEntry,
)
from memory_pipeline.sessions.parse import (
    HEADER_PROBE_BYTES,
    ParsedSession,
    Problem,
    assemble_session,
    json_lines,
)

AGENT = "claude-code"
# Entry types of Claude Code that are conversation; every other type with a uuid is a node of the tree only.
CONVERSATION = frozenset({"user", "assistant", "system"})
# Line types Claude Code writes (any version seen): a first line of one of them marks a Claude Code file.
KNOWN_TYPES = frozenset(
    {
        *CONVERSATION,
        "summary",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
        "last-prompt",
        "pr-link",
        "attachment",
        "agent-name",
    }
)
SUBAGENT_PROMPT = "subagent-prompt"  # custom type of a sub-agent's instructions (from the main agent)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
HEADER_PROBE_LINES = 400


def looks_like(first: dict[str, Any]) -> bool:
    return "sessionId" in first or first.get("type") in KNOWN_TYPES and "payload" not in first


def read_header(path: Path) -> SessionHeader:
    """The session's id, start and folder from its first conversation entry (summaries and snapshots come
    first in many files); a ValueError says why the file is not a Claude Code session. Read line by line, so
    a scan costs the top of each file, not megabytes of it."""
    budget = HEADER_PROBE_BYTES * 4
    with path.open("rb") as handle:
        for _ in range(HEADER_PROBE_LINES):
            raw = handle.readline(min(HEADER_PROBE_BYTES, budget))
            if not raw:
                break
            value = _loads(raw)
            if isinstance(value, dict) and _starts(value):
                return _header(path, value)
            budget -= len(raw)
            if budget <= 0:
                break
    raise ValueError("no conversation entry near the top (a Claude Code file of summaries or UI state only)")


def _starts(value: dict[str, Any]) -> bool:
    """Whether a line is a conversation entry, the first of which gives the session's id, time and folder."""
    return bool(value.get("sessionId") and value.get("timestamp") and value.get("type") in CONVERSATION)


def _loads(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _header(path: Path, first: dict[str, Any]) -> SessionHeader:
    session_id = str(first["sessionId"])
    parent = None
    if first.get("isSidechain"):
        agent_id = str(first.get("agentId") or path.stem.removeprefix("agent-"))
        parent, session_id = session_id, f"{session_id}-agent-{agent_id}"
    elif _UUID.match(path.stem):
        session_id = path.stem  # a resumed session's file can carry entries of the one it resumed
    return SessionHeader.of(session_id, str(first["timestamp"]), str(first.get("cwd") or ""), parent)


def parse(path: Path, display_path: str | None = None) -> ParsedSession:
    """Every entry of a Claude Code transcript as pi entries; problems name the file and line."""
    name = display_path or str(path)
    problems: list[Problem] = []
    skipped: Counter[str] = Counter()
    lines = list(json_lines(path, name, problems))
    first = next((v for _, v in lines if _starts(v)), None)
    if first is None:
        raise ValueError(f"{name}: no conversation entry (a Claude Code file of summaries or UI state only)")
    header = _header(path, first)
    thread = bool(first.get("isSidechain"))
    # Threads of Claude Code's own: sub-agents that only warm a cache ("Warmup", 2.0) and the compaction worker
    # (`agent-acompact-*`, whose summary the session holds already). Nothing in them was asked or learned.
    agent_id = str(first.get("agentId") or path.stem.removeprefix("agent-"))
    own = thread and (_first_text(first) == "Warmup" or agent_id.startswith("acompact"))
    parent_of = {str(v["uuid"]): v.get("parentUuid") or v.get("logicalParentUuid") for _, v in lines if v.get("uuid")}
    conversation = {str(v["uuid"]) for _, v in lines if v.get("uuid") and v.get("type") in CONVERSATION}
    tool_names: dict[str, str] = {}
    reply_ends = last_line_of_each_reply(lines)
    entries: list[tuple[int, Entry]] = []
    titles: list[tuple[str | None, str]] = []
    previous: dict[bool, str | None] = {False: None, True: None}  # the last entry of the main chain, of sidechains
    for number, value in lines:
        kind = value.get("type")
        uuid = value.get("uuid")
        if kind == "summary":
            titles.append((value.get("leafUuid"), str(value.get("summary") or "")))
            continue
        if kind == "custom-title" and value.get("customTitle"):
            titles.append((None, str(value["customTitle"])))
            continue
        if not uuid or kind not in CONVERSATION:
            skipped[f"claude-code {kind}"] += 1
            if kind not in KNOWN_TYPES:
                problems.append(Problem(name, number, "unknown entry type", str(kind)))
            continue
        side = bool(value.get("isSidechain")) and not thread
        # Claude Code chains parallel tool calls and their results as siblings, and hooks' progress lines in
        # between: in file order is how the model saw them. Only a prompt keeps its own parent, so a prompt
        # sent again from an earlier point (a rewind) still leaves the old continuation as a branch.
        parent = previous[side]
        if _is_prompt(value):
            above = _conversation_ancestor(parent_of.get(str(uuid)), parent_of, conversation)
            parent = above if above is not None else parent
        base = {"id": str(uuid), "parentId": parent, "timestamp": value.get("timestamp")}
        if kind == "assistant" and not _ends_reply(value, number, reply_ends):
            value = _without_usage(value)
        try:
            made = (
                _own_thread(value, base, skipped) if own else _entries(value, base, tool_names, thread or side, skipped)
            )
        except ValidationError as exc:
            problems.append(Problem(name, number, "malformed entry", str(exc.errors()[0]["msg"])))
            made = [MetadataEntry(type="custom", **base)]
        entries.extend((number, entry) for entry in made)
        previous[side] = str(uuid)
    leaf = previous[False]
    known = {str(v.get("uuid")) for _, v in lines if v.get("uuid")}
    title = next((t for target, t in reversed(titles) if t and (target is None or target in known)), None)
    if title:
        entries.append((0, SessionInfoEntry(type="session_info", id="title", name=title)))
    return assemble_session(path, header, entries, problems, skipped, name, agent=AGENT, leaf=leaf)


def last_line_of_each_reply(lines: list[tuple[int, dict[str, Any]]]) -> dict[str, int]:
    """The line number of the last line with usage of each API reply (`message.id`). Claude Code writes one
    reply as several lines, one per content block (thinking, text, each tool call), each repeating the reply's
    id and its usage; the last holds the reply's whole output count (the earlier ones the count so far).
    Counting usage on every line counted a real session's tokens 44% too high."""
    ends: dict[str, int] = {}
    for number, value in lines:
        message = value.get("message")
        if (
            value.get("type") == "assistant"
            and isinstance(message, dict)
            and message.get("id")
            and message.get("usage")
        ):
            ends[str(message["id"])] = number
    return ends


def _ends_reply(value: dict[str, Any], number: int, reply_ends: dict[str, int]) -> bool:
    """Whether this assistant line carries its reply's usage: the reply's last line (or a line with no id)."""
    message = value.get("message")
    reply = message.get("id") if isinstance(message, dict) else None
    return not reply or reply_ends.get(str(reply), number) == number


def _without_usage(value: dict[str, Any]) -> dict[str, Any]:
    """An earlier line of a reply: its blocks, without the usage its last line counts."""
    message = {k: v for k, v in value["message"].items() if k != "usage"}
    return {**value, "message": message}


def _first_text(value: dict[str, Any]) -> str:
    content = (value.get("message") or {}).get("content") if isinstance(value.get("message"), dict) else None
    if isinstance(content, list):
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content.strip() if isinstance(content, str) else ""


def _own_thread(value: dict[str, Any], base: dict[str, Any], skipped: Counter[str]) -> list[Entry]:
    """A line of one of Claude Code's own threads, kept as metadata: a record, never a turn."""
    skipped["claude-code own thread line"] += 1
    text = _first_text(value) or str(value.get("type"))
    return [MessageEntry.model_validate({"type": "message", **base, "message": {"role": "system", "content": text}})]


def _is_prompt(value: dict[str, Any]) -> bool:
    """A line of the person's words (not tool results, a compaction summary or Claude Code's own notes)."""
    if value.get("type") != "user" or value.get("isMeta") or value.get("isCompactSummary"):
        return False
    content = (value.get("message") or {}).get("content") if isinstance(value.get("message"), dict) else None
    return isinstance(content, str) or (
        isinstance(content, list) and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _conversation_ancestor(node: str | None, parent_of: dict[str, str | None], conversation: set[str]) -> str | None:
    """The nearest conversation entry at or above `node`, through progress and other UI lines."""
    seen: set[str] = set()
    while node is not None and node not in conversation and node not in seen:
        seen.add(node)
        node = parent_of.get(node)
    return node if node in conversation else None


def _entries(
    value: dict[str, Any], base: dict[str, Any], tool_names: dict[str, str], sidechain: bool, skipped: Counter[str]
) -> list[Entry]:
    """The pi entries of one Claude Code line: a user line of tool results and text becomes one entry per
    result and one for the text, chained, the last keeping the line's uuid so its children still find it."""
    kind = value.get("type")
    message = value.get("message") if isinstance(value.get("message"), dict) else {}
    if kind == "assistant":
        return [
            MessageEntry.model_validate({"type": "message", **base, "message": _assistant(message, value, tool_names)})
        ]
    if kind == "system":
        text = value.get("content") if isinstance(value.get("content"), str) else str(value.get("subtype") or "")
        return [
            MessageEntry.model_validate({"type": "message", **base, "message": {"role": "system", "content": text}})
        ]
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        content = []
    results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    others = [_block(b) for b in content if isinstance(b, dict) and b.get("type") != "tool_result"]
    others = [b for b in others if b is not None]
    made: list[dict[str, Any]] = [_tool_result(b, tool_names) for b in results]
    if others:
        text = "\n".join(b.get("text", "") for b in others if b["type"] == "text")
        said = said_by_person(text)
        if value.get("isCompactSummary"):
            made.append({"type": "compaction", "summary": text})
        elif value.get("isMeta") or said is None:
            made.append({"type": "message", "message": {"role": "system", "content": others}})
            skipped["claude-code own note"] += not value.get("isMeta")
        elif sidechain:
            made.append({"type": "custom_message", "customType": SUBAGENT_PROMPT, "content": others, "display": False})
        else:
            if said != text:  # a slash command: its name and arguments, without Claude Code's tags
                others = [{"type": "text", "text": said}, *(b for b in others if b["type"] != "text")]
            made.append({"type": "message", "message": {"role": "user", "content": others}})
    if not made:
        return [MetadataEntry(type="custom", **base)]
    entries: list[Entry] = []
    parent = base["parentId"]
    for index, fields in enumerate(made):
        last = index == len(made) - 1
        entry_id = base["id"] if last else f"{base['id']}#{index + 1}"
        data = {**fields, "id": entry_id, "parentId": parent, "timestamp": base["timestamp"]}
        kind_of = data["type"]
        model = {"message": MessageEntry, "compaction": CompactionEntry, "custom_message": CustomMessageEntry}[kind_of]
        entries.append(model.model_validate(data))
        parent = entry_id
    return entries


# What Claude Code writes as the person's message but no person said: a local command's output, an
# interruption's marker, the output of a `!` shell command. Metadata: never a turn of its own.
OWN_NOTES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
    "<task-notification>",  # a background command finished: Claude Code's note, sent in the user role
)
# Claude Code's reminders to its model, appended to tool results and prompts: its boilerplate, not the session's.
_REMINDER = re.compile(r"\s*<system-reminder>.*?</system-reminder>", re.DOTALL)
_COMMAND = re.compile(r"<command-name>\s*(?P<name>[^<]*?)\s*</command-name>")
_ARGS = re.compile(r"<command-args>(?P<args>.*?)</command-args>", re.DOTALL)
_BASH = re.compile(r"<bash-input>(?P<command>.*?)</bash-input>", re.DOTALL)


def said_by_person(text: str) -> str | None:
    """What the person said in a user line's text: the text; for a slash command with arguments, the command
    and its arguments (`/compact keep the API notes`); for a `!` shell command, `$ command`; None when it is
    Claude Code's own note (a command without arguments, its output, an interruption)."""
    stripped = text.lstrip()
    if stripped.startswith(OWN_NOTES):
        return None
    if bash := _BASH.search(stripped):
        return f"$ {bash.group('command').strip()}" if stripped.startswith("<bash-input>") else text
    command = _COMMAND.search(stripped)
    if command is None or not (stripped.startswith("<command-") or stripped.startswith("<command-name>")):
        return text
    arguments = _ARGS.search(stripped)
    said = arguments.group("args").strip() if arguments else ""
    return f"{command.group('name')} {said}" if said else None


def _assistant(message: dict[str, Any], value: dict[str, Any], tool_names: dict[str, str]) -> dict[str, Any]:
    content = message.get("content")
    blocks: list[dict[str, Any]] = []
    for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") in ("tool_use", "server_tool_use"):
            tool_names[str(block.get("id"))] = str(block.get("name") or "")
            blocks.append(
                {
                    "type": "toolCall",
                    "id": block.get("id") or "",
                    "name": block.get("name") or "",
                    "arguments": block.get("input"),
                }
            )
        elif (converted := _block(block)) is not None:
            blocks.append(converted)
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else None
    error = value.get("isApiErrorMessage") or value.get("error")
    return {
        "role": "assistant",
        "content": blocks,
        "provider": "anthropic",
        "api": "anthropic-messages",
        "model": message.get("model"),
        "stopReason": "error" if error else message.get("stop_reason"),
        "errorMessage": "\n".join(b.get("text", "") for b in blocks if b["type"] == "text") if error else None,
        "usage": {
            "input": usage.get("input_tokens") or 0,
            "output": usage.get("output_tokens") or 0,
            "cacheRead": usage.get("cache_read_input_tokens") or 0,
            "cacheWrite": usage.get("cache_creation_input_tokens") or 0,
        }
        if usage
        else None,
    }


def _block(block: dict[str, Any]) -> dict[str, Any] | None:
    """A text, thinking or image block of Claude's API as pi's; other kinds carry nothing to read."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": _REMINDER.sub("", str(block.get("text") or ""))}
    if kind == "thinking":
        return {"type": "thinking", "thinking": str(block.get("thinking") or "")}
    if kind == "redacted_thinking":
        return {"type": "thinking", "thinking": "", "redacted": True}
    if kind == "image":
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        return {"type": "image", "mimeType": source.get("media_type") or "application/octet-stream"}
    return None


def _tool_result(block: dict[str, Any], tool_names: dict[str, str]) -> dict[str, Any]:
    content = block.get("content")
    if isinstance(content, str):
        blocks = [{"type": "text", "text": _REMINDER.sub("", content)}]
    else:
        blocks = [b for b in (_block(b) for b in content or [] if isinstance(b, dict)) if b is not None]
    call_id = str(block.get("tool_use_id") or "")
    return {
        "type": "message",
        "message": {
            "role": "toolResult",
            "content": blocks,
            "toolCallId": call_id,
            "toolName": tool_names.get(call_id),
            "isError": bool(block.get("is_error")),
        },
    }
