"""Labelled-set turns from a real Claude Code transcript (`~/.claude/projects/*/<id>.jsonl`), in the shape of
bench/labels/knowledge_turns_b.json: one message the person typed per turn, with the assistant's text, its tool
calls and their results up to the next one. Text is masked by the pipeline's own redaction before anyone reads
it (a labelled set is a place text is kept), and a tool result is cut to its head and tail.

    uv run python -m testkit.corpora.claude_code_turns <file.jsonl> <repo> <commit> <path> <licence> > turns.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

from memory_pipeline.sessions.redact import Redactor

TOOL_CHARS = 3000


def _cut(text: str) -> str:
    if len(text) <= TOOL_CHARS:
        return text
    half = TOOL_CHARS // 2
    return f"{text[:half]}\n[… {len(text) - TOOL_CHARS} characters left out …]\n{text[-half:]}"


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content or "")


def turns_of(lines: list[str], source: dict[str, str], prefix: str) -> list[dict[str, Any]]:
    """The transcript's turns: a person's message (not a tool result, not a meta or command-output entry) opens
    one; everything after it until the next belongs to it. `lines` are 1-based in `source["lines"]`."""
    redactor = Redactor()
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    names: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") or {}
        content = message.get("content")
        role = message.get("role")
        if entry.get("type") == "user" and role == "user" and not entry.get("isMeta"):
            texts = [content] if isinstance(content, str) else [
                b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
            ]  # fmt: skip
            said = "\n".join(t for t in texts if t).strip()
            if said and not said.startswith(("<command-", "<local-command")):
                current = {"first": number, "last": number, "messages": [{"role": "user", "text": said}]}
                turns.append(current)
                continue
        if current is None:
            continue
        current["last"] = number
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and role == "assistant" and block.get("text", "").strip():
                current["messages"].append({"role": "assistant", "text": block["text"]})
            elif kind == "tool_use":
                names[block.get("id", "")] = block.get("name", "")
                arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
                current["messages"].append(
                    {"role": "tool_call", "name": block.get("name", ""), "text": _cut(arguments)}
                )
            elif kind == "tool_result":
                name = names.get(block.get("tool_use_id", ""), "")
                current["messages"].append({"role": "tool", "name": name, "text": _cut(_result_text(block))})
    found = []
    for n, turn in enumerate(turns, 1):
        for m in turn["messages"]:
            m["text"] = redactor.redact(m["text"])
        found.append(
            {
                "id": f"{prefix}-{n:03d}",
                "history": "claude-code",
                "source": source | {"lines": f"{turn['first']}-{turn['last']}"},
                "messages": turn["messages"],
            }
        )
    return found


def main(argv: list[str]) -> None:
    path, repo, commit, file_path, licence = argv[:5]
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    prefix = file_path.rsplit("/", 1)[-1].split("-")[0].split(".")[0][:8]
    source = {"repo": repo, "commit": commit, "path": file_path, "licence": licence}
    json.dump(turns_of(lines, source, prefix), sys.stdout, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
