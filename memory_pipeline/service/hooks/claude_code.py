"""Claude Code's hooks (`memory-pipeline hook claude-code`): its payload on stdin, context back on stdout.

- `SessionStart`: the start's briefing (MEMORY.md's rules, the important and the most recent knowledge of the
  project, the payload's `cwd`), never a search for a prompt there is not;
- `UserPromptSubmit`: what matches the prompt and the session was not given yet (the injection ledger, by the
  payload's `session_id`), in a small budget: the important block is not repeated on every prompt;
- `Stop` and `SessionEnd`: the memory service (when it runs) is told the transcript changed.
Claude Code takes context as `{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}`. Recall goes
through the running service (which records it), else runs in-process with the same ledger. Whatever happens
the hook exits 0 so the session goes on; what went wrong is said on stderr.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from memory_pipeline.search.moment import Moment, Recalled
from memory_pipeline.settings import Settings

AGENT = "claude-code"
RECALL_EVENTS = {"SessionStart": "start", "UserPromptSubmit": "prompt"}
CHANGED_EVENTS = ("Stop", "SessionEnd")

Echo = Callable[..., None]  # click.echo: (message, err=False)


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


def recalled(settings: Settings, moment: Moment, base: str | None) -> Recalled:
    """The moment's recall from the running service at `base`, else in-process over the same ledger."""
    if base:
        from memory_pipeline.service.client import tell

        answer = tell(base, "/api/v1/recall", moment.model_dump(), settings.service_token())
        return Recalled.model_validate(answer)
    from memory_pipeline.search.moment import recall
    from memory_pipeline.search.open import briefing_note, open_search
    from memory_pipeline.stores.injections import open_ledger

    with open_search(settings) as search:
        answer, made = recall(search, open_ledger(settings), moment, settings.memory_workspace)
    return answer.model_copy(update={"degraded": briefing_note(made, settings)})


def run_hook(
    raw: str,
    settings: Settings,
    base: str | None,
    echo: Echo,
    notify: Callable[[str], None],
    tokens: int | None = None,
) -> None:
    """Answers one hook call: `raw` is stdin, `base` the running service (None: none), `notify` tells it a
    transcript changed. Never raises for what a session should not stop on."""
    from memory_pipeline.service.client import ServiceRefused

    try:
        payload = parse(raw)
    except ValueError as exc:
        echo(f"memory hook: {exc}; no briefing", err=True)
        return
    event = payload.hook_event_name
    if event in CHANGED_EVENTS:
        if payload.transcript_path:
            notify(payload.transcript_path)
        return
    moment = moment_of(payload, tokens)
    if moment is None:
        echo(f"memory hook: {AGENT} event {event!r} takes no briefing", err=True)
        return
    try:
        answer = recalled(settings, moment, base)
    except (ServiceRefused, OSError, ValueError) as exc:
        echo(f"memory hook: {exc}", err=True)
        return
    if answer.degraded:
        echo(f"memory briefing: {answer.degraded}", err=True)
    if answer.markdown:
        echo(context_output(event, answer.markdown))
