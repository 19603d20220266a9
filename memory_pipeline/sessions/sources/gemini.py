"""Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`) read into pi's model.

Since 2026 a chat is JSONL: a first line of metadata (`sessionId`, `projectHash`, `startTime`, `kind` main or
subagent), then message records (`id`, `timestamp`, `type` user/gemini/info/warning/error, `content` as Gemini
API parts, and for `gemini` replies `toolCalls` with their results, `thoughts`, `tokens`, `model`), a record
written again under its id when it changes (the last one wins, in the first one's place), `{"$rewindTo": id}`
when the person rewinds (that message and the ones after it leave the conversation) and `{"$set": {…}}`
metadata updates. Before, a chat was one JSON document `session-….json` with the same records in `messages`.
Neither names the project's folder: it is the `.project_root` file of the chat's project folder. Rewound
messages are kept as a branch off the active path, as pi keeps an abandoned one. The format is in
docs/gemini-session-format.md.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memory_pipeline.sessions.models import CustomMessageEntry, Entry, MessageEntry, SessionHeader
from memory_pipeline.sessions.parse import (
    BOM,
    HEADER_PROBE_BYTES,
    ParsedSession,
    Problem,
    assemble_session,
    json_lines,
)

AGENT = "gemini-cli"
PROJECT_ROOT_FILE = ".project_root"
FAILED = frozenset({"error", "cancelled"})
SUBAGENT_PROMPT = "subagent-prompt"


def looks_like(first: dict[str, Any]) -> bool:
    return "sessionId" in first and "projectHash" in first


def read_header(path: Path) -> SessionHeader:
    with path.open("rb") as handle:
        head = handle.read(HEADER_PROBE_BYTES).removeprefix(BOM)
    try:
        first = json.loads(head.split(b"\n", 1)[0]) if path.suffix == ".jsonl" else _document(path)
    except ValueError:
        raise ValueError("first line is not Gemini CLI chat metadata") from None
    if not isinstance(first, dict) or not looks_like(first):
        raise ValueError("first line is not Gemini CLI chat metadata")
    return _header(path, first)


def _document(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_bytes().removeprefix(BOM))
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def project_root(path: Path) -> str | None:
    """The folder a chat was worked in: the `.project_root` file of the first folder above it that has one
    (`tmp/<project>/chats/<file>`, a sub-agent's one level deeper)."""
    for folder in list(path.parents)[:4]:
        marker = folder / PROJECT_ROOT_FILE
        if marker.is_file():
            return marker.read_text(errors="replace").strip() or None
    return None


def _header(path: Path, meta: dict[str, Any]) -> SessionHeader:
    parent = path.parent.name if meta.get("kind") == "subagent" else None
    cwd = project_root(path) or f"gemini-project:{meta.get('projectHash')}"
    return SessionHeader.of(str(meta["sessionId"]), str(meta.get("startTime") or ""), cwd, parent)


def parse(path: Path, display_path: str | None = None) -> ParsedSession:
    """Every message of a Gemini CLI chat, rewound ones as a branch; problems name the file and line."""
    name = display_path or str(path)
    problems: list[Problem] = []
    skipped: Counter[str] = Counter()
    if path.suffix == ".json":
        try:
            document = _document(path)
        except ValueError as exc:
            raise ValueError(f"{name}: not a Gemini CLI chat ({exc})") from None
        records = [(1, {k: v for k, v in document.items() if k != "messages"})]
        records += [(1, m) for m in document.get("messages") or [] if isinstance(m, dict)]
    else:
        records = list(json_lines(path, name, problems))
    if not records or not looks_like(records[0][1]):
        raise ValueError(f"{name}:1: first line is not Gemini CLI chat metadata")
    header = _header(path, records[0][1])
    messages: dict[str, tuple[int, dict[str, Any]]] = {}  # id -> (line, record), in first-seen order
    parent_of: dict[str, str | None] = {}
    last: str | None = None  # the conversation's newest message: what the next one follows
    for number, record in records[1:]:
        if "$rewindTo" in record:
            target = str(record["$rewindTo"])
            last = parent_of.get(target) if target in parent_of else None
            continue
        if "$set" in record:
            update = record["$set"] if isinstance(record["$set"], dict) else {}
            for message in update.get("messages") or []:  # a checkpoint: the conversation as it now is
                if isinstance(message, dict) and message.get("id"):
                    last = _add(messages, parent_of, number, message, last)
            skipped["gemini-cli metadata update"] += 1
            continue
        if not record.get("id") or not record.get("type"):
            problems.append(Problem(name, number, "unknown record", ", ".join(sorted(record))[:80]))
            continue
        last = _add(messages, parent_of, number, record, last)
    entries: list[tuple[int, Entry]] = []
    tail: dict[str, str] = {}  # a message's last entry (its reply's last tool result): what follows it
    for message_id, (number, record) in messages.items():
        parent = parent_of[message_id]
        try:
            above = tail.get(parent, parent) if parent else None
            made = _entries(message_id, above, record, skipped, subagent=header.parentSession is not None)
        except ValidationError as exc:
            problems.append(Problem(name, number, "malformed message", str(exc.errors()[0]["msg"])))
            continue
        entries.extend((number, e) for e in made)
        tail[message_id] = made[-1].id or message_id
    leaf = tail.get(last) if last else None
    return assemble_session(path, header, entries, problems, skipped, name, agent=AGENT, leaf=leaf)


def _add(
    messages: dict[str, tuple[int, dict[str, Any]]],
    parent_of: dict[str, str | None],
    number: int,
    record: dict[str, Any],
    last: str | None,
) -> str:
    """Record a message (an update keeps the first one's place and parent); the id the next one follows."""
    message_id = str(record["id"])
    if message_id in messages:
        messages[message_id] = (messages[message_id][0], record)
    else:
        messages[message_id] = (number, record)
        parent_of[message_id] = last
    return message_id


def _entries(
    message_id: str, parent: str | None, record: dict[str, Any], skipped: Counter[str], subagent: bool = False
) -> list[Entry]:
    """A message's pi entries: a reply and then one result per tool call (ids `<id>#r<n>`), chained."""
    kind = record.get("type")
    texts, images = _parts(record.get("content"))
    content: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    content += [{"type": "image", "mimeType": m} for m in images]
    base = {"type": "message", "timestamp": record.get("timestamp")}
    if kind == "user" and subagent:  # its instructions come from the agent that spawned it, never the person
        prompt = {"type": "custom_message", "customType": SUBAGENT_PROMPT, "content": content, "display": False}
        return [CustomMessageEntry.model_validate({**prompt, "id": message_id, "parentId": parent,
                                                   "timestamp": record.get("timestamp")})]  # fmt: skip
    if kind == "user":
        return [MessageEntry.model_validate({**base, "id": message_id, "parentId": parent,
                                             "message": {"role": "user", "content": content}})]  # fmt: skip
    if kind != "gemini":
        skipped[f"gemini-cli {kind} message"] += 1
        return [MessageEntry.model_validate({**base, "id": message_id, "parentId": parent,
                                             "message": {"role": "system", "content": content}})]  # fmt: skip
    thoughts = [
        {"type": "thinking", "thinking": ": ".join(str(t.get(k)) for k in ("subject", "description") if t.get(k))}
        for t in record.get("thoughts") or []
        if isinstance(t, dict)
    ]
    calls = [c for c in record.get("toolCalls") or [] if isinstance(c, dict)]
    blocks = thoughts + content
    blocks += [{"type": "toolCall", "id": str(c.get("id") or ""), "name": str(c.get("name") or ""),
                "arguments": c.get("args")} for c in calls]  # fmt: skip
    tokens = record.get("tokens") if isinstance(record.get("tokens"), dict) else None
    reply = {
        "role": "assistant",
        "content": blocks,
        "model": record.get("model"),
        "provider": "google",
        "api": "gemini",
        "usage": {
            "input": tokens.get("input") or 0,
            "output": tokens.get("output") or 0,
            "cacheRead": tokens.get("cached") or 0,
            "totalTokens": tokens.get("total"),
        }
        if tokens
        else None,
    }
    results = [c for c in calls if c.get("result") is not None or c.get("resultDisplay") is not None]
    ids = [message_id] + [f"{message_id}#r{i}" for i in range(1, len(results) + 1)]
    entries: list[Entry] = [MessageEntry.model_validate({**base, "id": ids[0], "parentId": parent, "message": reply})]
    for index, call in enumerate(results, start=1):
        result_texts, result_images = _parts(call.get("result"))
        if not result_texts and isinstance(call.get("resultDisplay"), str):
            result_texts = [call["resultDisplay"]]
        result = {
            "role": "toolResult",
            "content": [{"type": "text", "text": t} for t in result_texts]
            + [{"type": "image", "mimeType": m} for m in result_images],
            "toolCallId": str(call.get("id") or ""),
            "toolName": str(call.get("name") or ""),
            "isError": call.get("status") in FAILED,
        }
        data = {**base, "id": ids[index], "parentId": ids[index - 1], "message": result}
        data["timestamp"] = call.get("timestamp") or record.get("timestamp")
        entries.append(MessageEntry.model_validate(data))
    return entries


def _parts(content: object) -> tuple[list[str], list[str]]:
    """(texts, image types) of Gemini API parts: a string, a part, or a list of them; a function response's
    output is text too."""
    if content is None:
        return [], []
    if isinstance(content, str):
        return [content], []
    parts = content if isinstance(content, list) else [content]
    texts: list[str] = []
    images: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
            elif isinstance(part.get("functionResponse"), dict):
                response = part["functionResponse"].get("response")
                output = response.get("output", response.get("error")) if isinstance(response, dict) else response
                texts.append(output if isinstance(output, str) else json.dumps(output, ensure_ascii=False))
            elif isinstance(part.get("inlineData"), dict):
                images.append(str(part["inlineData"].get("mimeType") or "application/octet-stream"))
    return texts, images
