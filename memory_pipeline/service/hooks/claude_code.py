"""Claude Code's hooks (`memory-pipeline hook claude-code`): its payload on stdin, context back on stdout.

- `SessionStart`: the start's briefing (MEMORY.md's rules, the important and the most recent knowledge of the
  project, the payload's `cwd`), never a search for a prompt there is not;
- `UserPromptSubmit`: what matches the prompt and the session was not given yet (the injection ledger, by the
  payload's `session_id`), in a small budget: the important block is not repeated on every prompt;
- `PostToolUse` after a Read or a Write (the tools `memory-pipeline install` hooks, control/agents.py): what
  earlier sessions recorded about the file (`tool_input.file_path`, made absolute against `cwd` as the pi
  extension resolves it), once per file per session; `PostToolUseFailure` after a Bash command that failed
  (not one the person interrupted): the gotchas known about `tool_input.command`. A successful command, another
  tool: nothing. Claude Code's payloads (https://code.claude.com/docs/en/hooks#posttooluse and
  #posttoolusefailure): `tool_name`, `tool_input`, `tool_use_id`, and `tool_response` after a success, `error` and
  `is_interrupt` after a failure; the error's text is not sent, the command is what is searched, as pi does.
  Only through the running service: without one the hook says nothing (loading the search in-process costs
  seconds, at every file read);
- `Stop` and `SessionEnd`: the memory service (when it runs) is told the transcript changed.
Claude Code takes context as `{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}`, the same for
the tool events. Recall goes through the running service (which records it), else, for the start and prompts,
runs in-process with the same ledger. Whatever happens the hook exits 0 so the session goes on; what went wrong is
said on stderr, and nothing at all when there is nothing to say. Pure but for what it is given: the recall and the
notice to the service are passed in (`MemoryAccess` in the CLI), so the protocol is the only thing here.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memory_pipeline.control.agents import HOOK_EVENTS
from memory_pipeline.service.client import ServiceRefused
from memory_pipeline.stores.moments import Moment, Recalled

AGENT = "claude-code"
RECALL_EVENTS = {"SessionStart": "start", "UserPromptSubmit": "prompt"}
CHANGED_EVENTS = ("Stop", "SessionEnd")
FILE_TOOLS = HOOK_EVENTS["PostToolUse"]
ERROR_TOOLS = HOOK_EVENTS["PostToolUseFailure"]
TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")


class HookPayload(BaseModel):
    """The fields of Claude Code's hook payload read here (it sends more)."""

    model_config = ConfigDict(extra="ignore")

    hook_event_name: str = "SessionStart"
    session_id: str = ""
    cwd: str | None = None
    prompt: str | None = None
    transcript_path: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] = {}
    is_interrupt: bool = False


def parse(raw: str) -> HookPayload:
    """The payload of `raw` (stdin); ValueError naming what is wrong."""
    try:
        return HookPayload.model_validate(json.loads(raw or "{}"))
    except (ValueError, ValidationError) as exc:
        raise ValueError(f"the hook payload is not Claude Code's JSON ({exc})") from None


def _tool_moment(payload: HookPayload, folder: str) -> tuple[str, str] | None:
    """The event and text a tool's payload asks recall for: a file read or written, a command that failed."""
    field = payload.tool_input
    if payload.hook_event_name == "PostToolUse" and payload.tool_name in FILE_TOOLS:
        path = field.get("file_path")
        # Absolute, `..` folded, symlinks kept: as the pi extension's `resolve(cwd, path)` names the file.
        return ("file", os.path.normpath(os.path.join(folder, path))) if isinstance(path, str) and path else None
    failed = payload.hook_event_name == "PostToolUseFailure" and not payload.is_interrupt
    if failed and payload.tool_name in ERROR_TOOLS:
        command = field.get("command")
        return ("error", command.strip()) if isinstance(command, str) and command.strip() else None
    return None


def moment_of(payload: HookPayload, tokens: int | None = None, cwd: Path | None = None) -> Moment | None:
    """The recall a payload asks for (None for an event, or a tool, that takes none). `tokens`: the start's
    budget. A payload without a session id gets one of its own: nothing is left out for a session the ledger
    cannot tell."""
    project = payload.cwd or str(cwd or Path.cwd())
    event = RECALL_EVENTS.get(payload.hook_event_name)
    text = (payload.prompt or "") if event == "prompt" else ""
    if payload.hook_event_name in TOOL_EVENTS:
        asked = _tool_moment(payload, project)
        if asked is None:
            return None
        event, text = asked
    if event is None:
        return None
    return Moment(
        session_id=payload.session_id or f"claude-code-{uuid.uuid4()}",
        agent=AGENT,
        event=event,  # type: ignore[arg-type]
        project=project,
        text=text,
        tokens=tokens if event == "start" else None,
    )


def context_output(event: str, markdown: str) -> str:
    """What Claude Code reads from a hook's stdout as added context."""
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": markdown}}
    return json.dumps(output, ensure_ascii=False)


# A moment's recall (`MemoryAccess.recall`: the running service, else in-process over the same ledger).
Recall = Callable[[Moment], Recalled]


def claude_code(
    raw: str,
    recall: Recall,
    notify: Callable[[str], None],
    say: Callable[[str], None],
    tokens: int | None = None,
    served: Callable[[], bool] = lambda: True,
) -> str:
    """What the hook prints on stdout for Claude Code's payload `raw` ("" for nothing); `recall` answers a
    moment, `notify` tells the service a transcript changed, `say` writes a line on stderr, `served` says
    whether a memory service runs (a tool's recall asks none other). Pure but for those: never raises for what
    a session should not stop on."""
    try:
        payload = parse(raw)
    except ValueError as exc:
        say(f"memory hook: {exc}; no briefing")
        return ""
    event = payload.hook_event_name
    if event in CHANGED_EVENTS:
        if payload.transcript_path:
            notify(payload.transcript_path)
        return ""
    moment = moment_of(payload, tokens)
    if moment is None:
        if event not in TOOL_EVENTS:  # a tool the matcher let through that takes none: nothing to say
            say(f"memory hook: {AGENT} event {event!r} takes no briefing")
        return ""
    if event in TOOL_EVENTS and not served():
        return ""  # no service: the session goes on as it would without memory, without a second's wait
    try:
        answer = recall(moment)
    except (ServiceRefused, OSError, ValueError) as exc:
        say(f"memory hook: {exc}")
        return ""
    if answer.degraded:
        say(f"memory briefing: {answer.degraded}")
    return context_output(event, answer.markdown) if answer.markdown.strip() else ""
