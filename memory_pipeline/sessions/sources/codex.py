"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`) read into pi's model.

Each line is `{timestamp, type, payload}`: `session_meta` first (id, start, cwd, CLI version, and for a
sub-agent or a fork the thread it came from), then `response_item`s (what the model saw and said:
messages, reasoning, `function_call`/`custom_tool_call` and their outputs, web searches), `event_msg`s
(what the UI showed: the person's message as typed, the agent's messages, token counts), `turn_context`
(model, cwd, policies per turn) and `compacted` (a compaction's summary). A rollout is linear: each
message's parent is the one before it.

The person's words are taken from `event_msg` `user_message` (as typed, without the environment and
AGENTS.md blocks Codex sends the model as user messages); a file without them (old versions, trimmed
files) falls back to user `response_item`s minus those injected blocks. Files from before `session_meta`
(2025: a first line of `{id, timestamp, instructions}`) are read too. The format is in
docs/codex-session-format.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memory_pipeline.sessions.models import CompactionEntry, CustomMessageEntry, Entry, MessageEntry, SessionHeader
from memory_pipeline.sessions.parse import BOM, HEADER_PROBE_BYTES, ParsedSession, Problem, assemble_session, json_lines

AGENT = "codex"
# What Codex sends the model as a user message but no person typed: its context blocks and instructions.
INJECTED = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<permissions",
)
SUBAGENT_PROMPT = "subagent-prompt"


def looks_like(first: dict[str, Any]) -> bool:
    return first.get("type") == "session_meta" or (
        "type" not in first and "id" in first and "timestamp" in first and ("instructions" in first or "git" in first)
    )


def read_header(path: Path) -> SessionHeader:
    with path.open("rb") as handle:
        head = handle.read(HEADER_PROBE_BYTES).removeprefix(BOM).split(b"\n")
    try:
        value = json.loads(head[0])
    except ValueError:
        raise ValueError("first line is not JSON") from None
    if not isinstance(value, dict) or not looks_like(value):
        raise ValueError("first line is not a Codex session_meta")
    return _header(value, [v for v in map(_loads, head[1:LEGACY_CWD_LINES]) if isinstance(v, dict)])


def _loads(raw: bytes) -> object:
    try:
        return json.loads(raw)
    except ValueError:
        return None


# Files from before `session_meta` name their folder only in the environment block of an early message.
LEGACY_CWD_LINES = 20
_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>")


def _header(first: dict[str, Any], following: list[dict[str, Any]] = ()) -> SessionHeader:  # type: ignore[assignment]
    meta = first.get("payload") if first.get("type") == "session_meta" else first
    if not isinstance(meta, dict) or not meta.get("id"):
        raise ValueError("session_meta without an id")
    source = meta.get("source")
    spawn = source.get("subagent", {}) if isinstance(source, dict) else {}
    spawn = spawn.get("thread_spawn", spawn) if isinstance(spawn, dict) else {}
    parent = meta.get("forked_from_id") or (spawn.get("parent_thread_id") if isinstance(spawn, dict) else None)
    cwd = meta.get("cwd") or next(
        (m.group(1).strip() for v in following[:LEGACY_CWD_LINES] if (m := _CWD.search(json.dumps(v)))), ""
    )
    timestamp = str(meta.get("timestamp") or first.get("timestamp") or "")
    return SessionHeader.of(str(meta["id"]), timestamp, str(cwd), str(parent) if parent else None)


def _is_subagent(first: dict[str, Any]) -> bool:
    meta = first.get("payload") if isinstance(first.get("payload"), dict) else first
    source = meta.get("source")
    return isinstance(source, dict) and "subagent" in source


def parse(path: Path, display_path: str | None = None) -> ParsedSession:
    """Every conversation item of a rollout as pi entries, in a chain; problems name the file and line."""
    name = display_path or str(path)
    problems: list[Problem] = []
    skipped: Counter[str] = Counter()
    lines = list(json_lines(path, name, problems))
    if not lines or not looks_like(lines[0][1]):
        raise ValueError(f"{name}:1: first line is not a Codex session_meta")
    header = _header(lines[0][1], [v for _, v in lines[1:LEGACY_CWD_LINES]])
    subagent = _is_subagent(lines[0][1])
    meta = lines[0][1].get("payload") if isinstance(lines[0][1].get("payload"), dict) else lines[0][1]
    provider = meta.get("model_provider")
    typed = any(_item(v)[0] == "event_msg" and _item(v)[1].get("type") == "user_message" for _, v in lines)
    tool_names: dict[str, str] = {}
    entries: list[tuple[int, Entry]] = []
    model: str | None = None
    parent: str | None = None
    for number, value in lines[1:]:
        kind, payload = _item(value)
        if kind == "turn_context":
            model = payload.get("model") or model
            continue
        try:
            fields = _fields(kind, payload, typed, subagent, tool_names, model, provider)
        except (ValidationError, TypeError, ValueError) as exc:
            problems.append(Problem(name, number, "malformed item", str(exc)[:200]))
            continue
        if fields is None:
            skipped[f"codex {kind} {payload.get('type') or ''}".strip()] += 1
            continue
        entry_id = f"L{number:06d}"
        data = {**fields, "id": entry_id, "parentId": parent, "timestamp": value.get("timestamp")}
        model_of = {"message": MessageEntry, "compaction": CompactionEntry, "custom_message": CustomMessageEntry}
        entries.append((number, model_of[data["type"]].model_validate(data)))
        parent = entry_id
    return assemble_session(path, header, entries, problems, skipped, name, agent=AGENT)


def _item(value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(line type, payload); lines of the files before `session_meta` are bare response items."""
    if "payload" in value and isinstance(value["payload"], dict):
        return str(value.get("type")), value["payload"]
    if value.get("record_type"):
        return "state", value
    return "response_item", value


def _fields(
    kind: str,
    payload: dict[str, Any],
    typed: bool,
    subagent: bool,
    tool_names: dict[str, str],
    model: str | None,
    provider: str | None,
) -> dict[str, Any] | None:
    """The pi entry (as data) of one rollout item, or None for the items that are not conversation."""
    item = payload.get("type")
    if kind == "compacted":
        return {"type": "compaction", "summary": str(payload.get("message") or "")}
    if kind == "event_msg":
        if item != "user_message" or not typed:
            return None
        content: list[dict[str, Any]] = [{"type": "text", "text": str(payload.get("message") or "")}]
        content += [{"type": "image", "mimeType": _mime(i)} for i in payload.get("images") or []]
        return _person(content, subagent)
    if kind != "response_item":
        return None
    if item == "message":
        role = payload.get("role")
        blocks = [b for b in (_block(b) for b in payload.get("content") or [] if isinstance(b, dict)) if b]
        if role == "assistant":
            return _assistant(blocks, model, provider)
        text = "\n".join(b.get("text", "") for b in blocks if b["type"] == "text")
        if role != "user" or typed or text.lstrip().startswith(INJECTED):
            return None  # developer/system instructions, or the person's words already read from the events
        return _person(blocks, subagent)
    if item == "reasoning":
        parts = [
            p.get("text", "")
            for p in (payload.get("summary") or []) + (payload.get("content") or [])
            if isinstance(p, dict)
        ]
        thinking = "\n".join(p for p in parts if p)
        return _assistant([{"type": "thinking", "thinking": thinking}], model, provider) if thinking else None
    if item in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        call_id = str(payload.get("call_id") or payload.get("id") or "")
        name = str(
            payload.get("name") or {"local_shell_call": "local_shell", "web_search_call": "web_search"}.get(item, "")
        )
        tool_names[call_id] = name
        if item == "function_call":
            arguments: Any = _json_or_text(payload.get("arguments"))
        elif item == "custom_tool_call":
            arguments = {"input": payload.get("input")}
        else:
            arguments = payload.get("action")
        return _assistant([{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}], model, provider)
    if item in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        call_id = str(payload.get("call_id") or "")
        text, failed = _output(payload.get("output"))
        return {
            "type": "message",
            "message": {
                "role": "toolResult",
                "content": [{"type": "text", "text": text}],
                "toolCallId": call_id,
                "toolName": tool_names.get(call_id),
                "isError": failed,
            },
        }
    return None


def _person(content: list[dict[str, Any]], subagent: bool) -> dict[str, Any]:
    if subagent:  # a sub-agent's instructions come from the agent that spawned it, never from the person
        return {"type": "custom_message", "customType": SUBAGENT_PROMPT, "content": content, "display": False}
    return {"type": "message", "message": {"role": "user", "content": content}}


def _assistant(content: list[dict[str, Any]], model: str | None, provider: str | None) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {
            "role": "assistant",
            "content": content,
            "model": model,
            "provider": provider,
            "api": "openai-responses",
        },
    }


def _block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind in ("input_text", "output_text", "text"):
        return {"type": "text", "text": str(block.get("text") or "")}
    if kind == "input_image":
        return {"type": "image", "mimeType": _mime(block.get("image_url"))}
    return None


def _mime(url: object) -> str:
    """The type of a `data:` URL image; images are never kept, only that there was one."""
    if isinstance(url, str) and url.startswith("data:") and ";" in url:
        return url[5 : url.index(";")]
    return "application/octet-stream"


def _json_or_text(value: object) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _output(output: object) -> tuple[str, bool]:
    """A tool output's text and whether it failed: a plain string, `{content, success}`, a list of content
    items, or (before 0.40) a JSON string of `{output, metadata: {exit_code}}`."""
    if isinstance(output, str) and output.startswith("{"):
        parsed = _json_or_text(output)
        if isinstance(parsed, dict) and "output" in parsed:
            code = (parsed.get("metadata") or {}).get("exit_code") if isinstance(parsed.get("metadata"), dict) else None
            return str(parsed.get("output") or ""), code not in (None, 0)
    if isinstance(output, dict):
        text, _ = _output(output.get("content"))
        return text, output.get("success") is False
    if isinstance(output, list):
        return "\n".join(str(b.get("text") or "") for b in output if isinstance(b, dict)), False
    return ("" if output is None else str(output)), False
