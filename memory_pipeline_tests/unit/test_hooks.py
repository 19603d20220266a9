"""The Claude Code hook protocol (service/hooks/claude_code.py), pure: the recall and the notice to the service
passed in, as `MemoryAccess` passes them in the CLI."""

from __future__ import annotations

import json

from memory_pipeline.search.moment import Moment, Recalled
from memory_pipeline.service.client import ServiceRefused
from memory_pipeline.service.hooks.claude_code import claude_code


class _Calls:
    def __init__(self, markdown: str = "## Memory\n- use pnpm", degraded: str | None = None) -> None:
        self.markdown, self.degraded = markdown, degraded
        self.moments: list[Moment] = []
        self.notified: list[str] = []
        self.said: list[str] = []
        self.refuse: Exception | None = None

    def recall(self, moment: Moment) -> Recalled:
        self.moments.append(moment)
        if self.refuse is not None:
            raise self.refuse
        return Recalled(
            markdown=self.markdown, ids=["m1"], tokens=5, event=moment.event, first=True, degraded=self.degraded
        )

    def answer(self, payload: object, tokens: int | None = None) -> str:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return claude_code(text, self.recall, self.notified.append, self.said.append, tokens)


def test_a_prompt_is_recalled_for_the_payloads_session_and_project_as_claude_code_takes_context() -> None:
    calls = _Calls()
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "which package manager?"}
    out = calls.answer(payload | {"cwd": "/w/shop"}, tokens=900)
    [moment] = calls.moments
    assert (moment.session_id, moment.agent, moment.event, moment.project) == ("s1", "claude-code", "prompt", "/w/shop")
    assert moment.text == "which package manager?" and moment.tokens is None  # --tokens is the start's budget
    assert json.loads(out) == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "## Memory\n- use pnpm"}
    }


def test_a_start_is_its_briefing_without_a_placeholder_prompt() -> None:
    calls = _Calls()
    out = calls.answer({"hook_event_name": "SessionStart", "session_id": "s1", "cwd": "/w/shop"}, tokens=900)
    assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    [moment] = calls.moments
    assert (moment.event, moment.text, moment.tokens) == ("start", "", 900)


def test_a_payload_without_a_session_id_gets_one_of_its_own() -> None:
    calls = _Calls()
    calls.answer({"hook_event_name": "UserPromptSubmit", "prompt": "a"})
    calls.answer({"hook_event_name": "UserPromptSubmit", "prompt": "b"})
    first, second = (m.session_id for m in calls.moments)
    assert first.startswith("claude-code-") and first != second


def test_a_changed_transcript_is_told_and_prints_nothing() -> None:
    calls = _Calls()
    assert calls.answer({"hook_event_name": "Stop", "transcript_path": "/s/a.jsonl"}) == ""
    assert calls.answer({"hook_event_name": "SessionEnd"}) == ""  # nothing to tell: said nowhere
    assert calls.notified == ["/s/a.jsonl"] and calls.moments == [] and calls.said == []


def test_what_takes_no_briefing_or_fails_is_said_on_stderr_never_printed() -> None:
    calls = _Calls()
    assert calls.answer("not json") == "" and "not Claude Code's JSON" in calls.said[-1]
    assert calls.answer({"hook_event_name": "PreToolUse"}) == "" and "'PreToolUse'" in calls.said[-1]
    assert calls.moments == [] and calls.notified == []
    assert _Calls(markdown="").answer({"hook_event_name": "SessionStart", "cwd": "/w"}) == ""
    calls.refuse = ServiceRefused("the memory service refused: 503")
    assert calls.answer({"hook_event_name": "SessionStart", "cwd": "/w"}) == ""
    assert calls.said[-1] == "memory hook: the memory service refused: 503"


def test_a_degraded_recall_is_said_apart_and_its_markdown_still_given() -> None:
    calls = _Calls(degraded="embeddings down: BM25 only")
    out = calls.answer({"hook_event_name": "SessionStart", "cwd": "/w"})
    assert calls.said == ["memory briefing: embeddings down: BM25 only"]
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == "## Memory\n- use pnpm"
