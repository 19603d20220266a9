"""Claude Code's hooks (`memory-pipeline hook claude-code`): its payload on stdin, context back on stdout.

- `SessionStart`: the start's briefing (MEMORY.md's rules, the important and the most recent knowledge of the
  project, the payload's `cwd`), never a search for a prompt there is not;
- `UserPromptSubmit`: what matches the prompt and the session was not given yet (the injection ledger, by the
  payload's `session_id`), in a small budget: the important block is not repeated on every prompt;
- `Stop` and `SessionEnd`: the memory service (when it runs) is told the transcript changed.
Claude Code takes context as `{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}`. Recall goes
through the running service (which records it), else runs in-process with the same ledger. Whatever happens
the hook exits 0 so the session goes on; what went wrong is said on stderr. Pure but for what it is given:
the recall and the notice to the service are passed in (`MemoryAccess` in the CLI), so the protocol is the only
thing here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from memory_pipeline.search.moment import Moment, Recalled
from memory_pipeline.service.client import ServiceRefused

AGENT = "claude-code"
RECALL_EVENTS = {"SessionStart": "start", "UserPromptSubmit": "prompt"}
CHANGED_EVENTS = ("Stop", "SessionEnd")


class HookPayload(BaseModel):
    """The fields of Claude Code's hook payload read here (it sends more)."""

    model_config = ConfigDict(extra="ignore")

    hook_event_name: str = "SessionStart"
    session_id: str = ""
    cwd: str | None = None
    prompt: str | None = None
    transcript_path: str | None = None


def parse(raw: str) -> HookPayload:
    """The payload of `raw` (stdin); ValueError naming what is wrong."""
    try:
        return HookPayload.model_validate(json.loads(raw or "{}"))
    except (ValueError, ValidationError) as exc:
        raise ValueError(f"the hook payload is not Claude Code's JSON ({exc})") from None


def moment_of(payload: HookPayload, tokens: int | None = None, cwd: Path | None = None) -> Moment | None:
    """The recall a payload asks for (None for an event that takes none). `tokens`: the start's budget. A
    payload without a session id gets one of its own: nothing is left out for a session the ledger cannot tell."""
    event = RECALL_EVENTS.get(payload.hook_event_name)
    if event is None:
        return None
    return Moment(
        session_id=payload.session_id or f"claude-code-{uuid.uuid4()}",
        agent=AGENT,
        event=event,  # type: ignore[arg-type]
        project=payload.cwd or str(cwd or Path.cwd()),
        text=(payload.prompt or "") if event == "prompt" else "",
        tokens=tokens if event == "start" else None,
    )


def context_output(event: str, markdown: str) -> str:
    """What Claude Code reads from a hook's stdout as added context."""
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": markdown}}
    return json.dumps(output, ensure_ascii=False)


# A moment's recall (`MemoryAccess.recall`: the running service, else in-process over the same ledger).
Recall = Callable[[Moment], Recalled]


def claude_code(
    raw: str, recall: Recall, notify: Callable[[str], None], say: Callable[[str], None], tokens: int | None = None
) -> str:
    """What the hook prints on stdout for Claude Code's payload `raw` ("" for nothing); `recall` answers a
    moment, `notify` tells the service a transcript changed, `say` writes a line on stderr. Pure but for
    those: never raises for what a session should not stop on."""
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
        say(f"memory hook: {AGENT} event {event!r} takes no briefing")
        return ""
    try:
        answer = recall(moment)
    except (ServiceRefused, OSError, ValueError) as exc:
        say(f"memory hook: {exc}")
        return ""
    if answer.degraded:
        say(f"memory briefing: {answer.degraded}")
    return context_output(event, answer.markdown) if answer.markdown else ""
