"""The Claude Code hook protocol (pure: the briefing and the notice to the service passed in)."""

from __future__ import annotations

import json

from memory_pipeline.service.hooks import claude_code


class _Calls:
    def __init__(self, markdown: str = "## Memory\n- use pnpm") -> None:
        self.markdown, self.briefed, self.notified, self.said = markdown, [], [], []

    def brief(self, prompt: str, project: str) -> str:
        self.briefed.append((prompt, project))
        return self.markdown

    def answer(self, payload: object) -> str:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return claude_code(text, self.brief, self.notified.append, self.said.append)


def test_a_prompt_gets_the_briefing_of_the_payloads_project_as_claude_code_takes_context() -> None:
    calls = _Calls()
    out = calls.answer({"hook_event_name": "UserPromptSubmit", "prompt": "which package manager?", "cwd": "/w/shop"})
    assert calls.briefed == [("which package manager?", "/w/shop")]
    assert json.loads(out) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "## Memory\n- use pnpm"}
    }
    started = calls.answer({"hook_event_name": "SessionStart", "cwd": "/w/shop"})
    assert json.loads(started)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert calls.briefed[-1] == ("(no prompt)", "/w/shop")


def test_a_changed_transcript_is_told_and_prints_nothing() -> None:
    calls = _Calls()
    assert calls.answer({"hook_event_name": "Stop", "transcript_path": "/s/a.jsonl"}) == ""
    assert calls.notified == ["/s/a.jsonl"] and calls.briefed == []


def test_what_takes_no_briefing_is_said_on_stderr_never_printed() -> None:
    calls = _Calls()
    assert calls.answer("not json") == "" and "not JSON" in calls.said[-1]
    assert calls.answer({"hook_event_name": "PreToolUse"}) == "" and "'PreToolUse'" in calls.said[-1]
    assert _Calls(markdown="").answer({"hook_event_name": "SessionStart", "cwd": "/w"}) == ""
    assert calls.briefed == [] and calls.notified == []
