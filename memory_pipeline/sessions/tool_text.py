"""A tool call a model wrote as text, made readable: small local models often answer with the call itself
(```json {"name": "bash", "arguments": {"command": "pnpm i"}}```, or Qwen's `<tool_call>…</tool_call>`) instead
of words, and an observation or a page that shows it raw reads as noise. The call becomes one line: the tool's
name and its main argument ("→ bash: pnpm i").

Pure text in, text out: it runs on new observations and again on what older ones show (their outcome was clipped
to a token budget, so the JSON may be cut short; what is left of it still gives the name and the argument)."""

from __future__ import annotations

import json
import re
from typing import Any

# The argument a person would name a call by, in order of preference; else the first short string value.
MAIN_ARGUMENTS = ("command", "cmd", "path", "file_path", "filePath", "file", "query", "pattern", "url", "name")
MAIN_CHARS = 80
_CALL = re.compile(
    r"(?P<open>```(?:json|tool_call)?\s*|<tool_call>\s*)?"
    r"\{\s*\"name\"\s*:\s*\"(?P<name>[^\"\\]{1,80})\"\s*,\s*\"(?:arguments|parameters)\"\s*:\s*",
    re.S,
)
_CLOSE = re.compile(r"\s*\}\s*(?:```|</tool_call>)?")
# A call cut short: its first `"key": "value` pair still says what it did.
_FIRST_PAIR = re.compile(r"\{\s*\"(?P<key>[\w-]{1,40})\"\s*:\s*\"(?P<value>(?:[^\"\\]|\\.){0,400})")


def parsed(arguments: Any) -> Any:
    """A call's arguments as the model wrote them: a JSON string decoded (a dict, mostly), any other value as is."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except json.JSONDecodeError:
            return arguments
    return arguments


def _main(arguments: Any) -> str:
    arguments = parsed(arguments)
    if isinstance(arguments, str):
        return arguments
    if not isinstance(arguments, dict):
        return "" if arguments is None else json.dumps(arguments, ensure_ascii=False)
    strings = {k: v for k, v in arguments.items() if isinstance(v, str) and v.strip()}
    key = next((k for k in MAIN_ARGUMENTS if k in strings), next(iter(strings), None))
    return strings[key] if key else ""


def call_line(name: str, arguments: Any) -> str:
    """One call as a person reads it: `→ name: main argument` (clipped, on one line)."""
    main = " ".join(_main(arguments).split())
    if len(main) > MAIN_CHARS:
        main = main[: MAIN_CHARS - 1].rstrip() + "…"
    return f"→ {name}: {main}" if main else f"→ {name}"


def readable_tool_calls(text: str) -> str:
    """`text` with every tool call written as JSON replaced by its `call_line`; other text untouched."""
    out, at = [], 0
    while (found := _CALL.search(text, at)) is not None:
        out.append(text[at : found.start()])
        try:
            arguments, end = json.JSONDecoder().raw_decode(text, found.end())
        except json.JSONDecodeError:
            # Cut short (a clipped outcome): the rest of the text is the call's remains.
            pair = _FIRST_PAIR.match(text, found.end())
            value = pair["value"].rstrip("…") if pair else ""
            out.append(call_line(found["name"], {pair["key"]: value} if pair else None))
            at = len(text)
            break
        closed = _CLOSE.match(text, end)
        out.append(call_line(found["name"], arguments))
        at = closed.end() if closed else end
    out.append(text[at:])
    return "".join(out)
