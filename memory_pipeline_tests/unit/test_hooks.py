"""The Claude Code hook protocol (service/hooks/claude_code.py), pure: the recall and the notice to the service
passed in, as `MemoryAccess` passes them in the CLI."""

from __future__ import annotations

import json

from memory_pipeline.service.client import ServiceRefused
from memory_pipeline.service.hooks.claude_code import claude_code
from memory_pipeline.stores.moments import Moment, Recalled


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


def _tool(event: str, tool: str, tool_input: dict, **more: object) -> dict:
    """A tool's payload as Claude Code sends it (https://code.claude.com/docs/en/hooks#posttooluse)."""
    return {"hook_event_name": event, "session_id": "s1", "cwd": "/w/shop", "transcript_path": "/t.jsonl",
            "tool_name": tool, "tool_input": tool_input, "tool_use_id": "toolu_01"} | more  # fmt: skip


def test_a_file_read_or_written_is_recalled_by_its_path_against_cwd_as_pi_names_it() -> None:
    calls = _Calls(markdown="[memory about src/theme.ts] colours are rgb triples (id `f9`)")
    response = {"type": "text", "file": {"filePath": "/w/shop/src/theme.ts", "content": "export const x = 1"}}
    out = calls.answer(_tool("PostToolUse", "Read", {"file_path": "/w/shop/src/theme.ts"}, tool_response=response))
    assert json.loads(out) == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": "[memory about src/theme.ts] colours are rgb triples (id `f9`)",
        }
    }
    calls.answer(_tool("PostToolUse", "Write", {"file_path": "lib/../src/new.ts", "content": "x"}))
    read, written = calls.moments
    assert (read.event, read.text, read.project, read.agent) == (
        "file",
        "/w/shop/src/theme.ts",
        "/w/shop",
        "claude-code",
    )
    assert (written.event, written.text) == ("file", "/w/shop/src/new.ts")  # relative: against cwd, `..` folded
    assert calls.said == []


def test_a_failed_command_recalls_its_gotchas_and_a_successful_one_nothing() -> None:
    calls = _Calls(markdown="## Known about this command\n- run make migrate first (id `g1`)")
    failed = _tool("PostToolUseFailure", "Bash", {"command": "  make test ", "description": "Run the tests"},
                   error="Command exited with non-zero status code 2", is_interrupt=False)  # fmt: skip
    out = calls.answer(failed)
    [moment] = calls.moments
    assert (moment.event, moment.text, moment.session_id) == ("error", "make test", "s1")
    assert json.loads(out)["hookSpecificOutput"] == {
        "hookEventName": "PostToolUseFailure",
        "additionalContext": "## Known about this command\n- run make migrate first (id `g1`)",
    }
    succeeded = _tool("PostToolUse", "Bash", {"command": "make test"},
                      tool_response={"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False})  # fmt: skip
    assert calls.answer(succeeded) == ""
    assert calls.answer(failed | {"is_interrupt": True}) == ""  # the person stopped it: not the command's failure
    assert calls.answer(_tool("PostToolUseFailure", "Bash", {"command": "  "})) == ""
    assert len(calls.moments) == 1 and calls.said == []


def test_other_tools_and_odd_inputs_take_nothing_and_say_nothing() -> None:
    calls = _Calls()
    for payload in (
        _tool("PostToolUse", "Grep", {"pattern": "x"}),
        _tool("PostToolUse", "mcp__memory__search", {"query": "x"}),
        _tool("PostToolUse", "Edit", {"file_path": "/w/shop/a.py"}),  # read first, by Claude Code's own rule
        _tool("PostToolUseFailure", "Read", {"file_path": "/w/shop/gone.py"}, error="File does not exist."),
        _tool("PostToolUse", "Read", {}),
        _tool("PostToolUse", "Read", {"file_path": 7}),
    ):
        assert calls.answer(payload) == ""
    assert calls.moments == [] and calls.said == []
    assert calls.answer(_tool("PostToolUse", "Read", "not an object")) == ""  # type: ignore[arg-type]
    assert "not Claude Code's JSON" in calls.said[-1]


def test_a_tools_recall_asks_only_a_running_service_and_is_quiet_without_one() -> None:
    calls = _Calls()
    read = _tool("PostToolUse", "Read", {"file_path": "/w/shop/a.py"})
    assert (
        claude_code(json.dumps(read), calls.recall, calls.notified.append, calls.said.append, served=lambda: False)
        == ""
    )
    assert calls.moments == [] and calls.said == []
    start = {"hook_event_name": "SessionStart", "cwd": "/w"}  # a start still runs in-process without one
    assert claude_code(json.dumps(start), calls.recall, calls.notified.append, calls.said.append, served=lambda: False)
    assert _Calls(markdown="").answer(read) == ""  # nothing known about the file: no output at all
    calls.refuse = ServiceRefused("memory service: 503")
    assert calls.answer(read) == "" and calls.said == ["memory hook: memory service: 503"]
