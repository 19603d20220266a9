"""The coding agents' hook protocols: what a hook reads on stdin and what it prints back. Pure: the briefing
and the notice to the service are passed in (`MemoryAccess` in the CLI), so the protocol is the only thing here.

Claude Code sends one JSON payload per event. `SessionStart` (the rules and important memories) and
`UserPromptSubmit` (what matches the prompt) are answered with the briefing of the payload's project (its
`cwd`) as Claude Code takes context from a hook: `{"hookSpecificOutput": {"hookEventName": …,
"additionalContext": …}}`. `Stop` and `SessionEnd` tell the memory service that the session's transcript
changed. A hook never fails the session: every problem is a line on stderr (`say`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

BRIEFED = ("SessionStart", "UserPromptSubmit")
TRANSCRIPT_CHANGED = ("Stop", "SessionEnd")

# (prompt, project) -> the briefing's markdown ("" when there is none, or when it could not be made: said).
Brief = Callable[[str, str], str]


def claude_code(payload_text: str, brief: Brief, notify: Callable[[str], None], say: Callable[[str], None]) -> str:
    """What the hook prints on stdout for Claude Code's `payload_text` ("" for nothing)."""
    try:
        payload = json.loads(payload_text or "{}")
    except ValueError as exc:
        say(f"the hook payload is not JSON ({exc}); no briefing")
        return ""
    event = str(payload.get("hook_event_name") or "SessionStart")
    if event in TRANSCRIPT_CHANGED and payload.get("transcript_path"):
        notify(str(payload["transcript_path"]))
        return ""
    if event not in BRIEFED:
        say(f"claude-code event {event!r} takes no briefing")
        return ""
    project = str(payload.get("cwd") or Path.cwd())
    markdown = brief(str(payload.get("prompt") or "(no prompt)"), project)
    if not markdown:
        return ""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": markdown}}, ensure_ascii=False
    )
