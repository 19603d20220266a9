"""Recall at every prompt, and the record of what each session was given: real Elasticsearch, `memory-pipeline
serve`, the real pi (its model the local chat server) and Claude Code's hook command as Claude Code runs it.

The memories are written as the summary stage writes them (`sync_summaries`, no vectors: the words decide
what matches), in a project of their own; the LLM's part is tested elsewhere."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest

from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.settings import Settings, isolated_settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import SUMMARY_INDEX
from memory_pipeline.stores.summary_store import sync_summaries
from memory_pipeline.summarize.frames import OUTCOME_SCHEMA, ledger_rows, summary_documents
from testkit.ingest_helpers import cli_env, reset_days
from testkit.pi_agent import PiAgent, entries, finished, session_of
from testkit.servers import free_port, memory_service

DAY = "2024-04-02"
RULE = "Answer in British English."
IMPORTANT = "Store every timestamp in UTC: the mailer compares them across time zones."
THEMES = [
    "The theme colours are rgb triples in src/theme.ts, never palette indices.",
    "The dark theme colours come from the design tokens file tokens.json.",
    "Theme fonts are Inter for text and JetBrains Mono for code.",
    "The theme icons are Lucide, imported one by one.",
]
# Newer than the theme lines: a start's "recent" section holds these, so a prompt about the theme has new lines.
OTHERS = [
    "Meal plans are emailed every Monday at seven.",
    "The mailer retries a bounced address three times.",
    "Recipients unsubscribe through a signed link.",
    "Logs go to journald, one line per send.",
    "Templates live in templates/mail as MJML.",
    "Sending is throttled to 20 messages per second.",
    "Staging sends only to addresses at example.org.",
]
MIGRATE = "Run make migrate after changing the database schema: the app refuses an old schema at start."
# What a Claude Code session meets through its tools: a file's trap (the memory names the file) and a command's.
SEND = "src/mail/send.ts"
FILE_GOTCHA = "Batch the recipients in send.ts: the provider refuses more than 50 addresses in one call."
COMMAND_GOTCHA = "pnpm lint fails on generated code until pnpm codegen has run."


def _idea(kind: str, summary: str, priority: str, files: tuple[str, ...] = ()) -> dict:
    return {"summary": summary, "tags": [kind], "priority": priority, "kind": kind, "subject": summary[:30],
            "files": list(files), "evidence": summary, "evidence_role": "user"}  # fmt: skip


def _memories(settings: Settings, project: str) -> None:
    base = {
        "partition": DAY, "session_id": "earlier", "project": project, "prompt_version": "1", "model": "m",
        "reason": None, "summarized_at": f"{DAY}T12:00:00+00:00", "llm_calls": 1, "seconds": 1.0,
        "prompt_tokens": 1, "completion_tokens": 1, "generation_seconds": 0.5, "status": "summarised",
    }  # fmt: skip
    # The tools' gotchas oldest: a start's recent section and the prompts' tests see the others as before.
    tools = [("gotcha", FILE_GOTCHA, "medium", (SEND,)), ("gotcha", COMMAND_GOTCHA, "medium")]
    ideas = [*tools, ("rule", IMPORTANT, "high"), *(("fact", t, "medium") for t in [*THEMES, *OTHERS, MIGRATE])]
    frame = pl.DataFrame(
        [
            base
            | {
                "turn_id": f"t{i}",
                "content_hash": f"t{i}",
                "ideas": [_idea(*idea)],
                "established_at": f"{DAY}T10:{i:02d}:00.000Z",
            }  # fmt: skip
            for i, idea in enumerate(ideas)
        ],
        schema=OUTCOME_SCHEMA,
    )
    with make_client(settings) as client:
        sync_summaries(client, summary_documents(frame), ledger_rows(frame), [DAY])
        client.indices.refresh(index=SUMMARY_INDEX)


@pytest.fixture(scope="module")
def project(local_runtime: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, Path]]:
    tmp = tmp_path_factory.mktemp("recall-every-prompt")
    # A project no earlier run used: the fast path indexes the pi sessions of a run under today's day, which the
    # teardown does not own (other tests' days), so a fixed --basetemp would meet its own earlier turns.
    folder = tmp / f"mailer-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    reset_days(local_runtime, [DAY])
    settings = isolated_settings(local_runtime, tmp, sessions_dir=tmp / "agent" / "sessions")
    settings.sessions_dir.mkdir(parents=True)
    (ensure_project_dir(settings.memory_workspace, str(folder)) / "MEMORY.md").write_text(f"- {RULE}\n")
    _memories(settings, str(folder))
    yield settings, folder
    reset_days(local_runtime, [DAY])


def _ids(settings: Settings) -> dict[str, str]:
    with make_client(settings) as es:
        hits = es.search(index=SUMMARY_INDEX, query={"term": {"partition": DAY}}, size=20)["hits"]["hits"]
    return {h["_source"]["summary"]: h["_id"] for h in hits}


def test_the_second_prompt_of_a_pi_session_gets_a_line_the_first_did_not(project: tuple[Settings, Path]) -> None:
    settings, folder = project
    ids = _ids(settings)
    with memory_service(settings) as base:
        pi = PiAgent(settings.sessions_dir.parent, settings, base)
        # A loaded 2-core machine answers a search in seconds to tens of seconds: this is about what is given.
        slow = {"MEMORY_SERVICE_TIMEOUT_MS": "120000"}
        first = pi.run(folder, "Which colours and fonts does the theme use?", tools="read", env=slow)
        assert finished(first), first.stderr
        second = pi.run(folder, "How do I change the database schema?", tools="read", continue_session=True, env=slow)
        assert finished(second), second.stderr
        [session] = pi.session_files(folder)  # one session, two prompts
        briefings = [e for e in entries(session) if e.get("customType") == "memory-briefing"]
        assert len(briefings) == 2, [b["content"] for b in briefings]
        one, two = briefings[0]["content"], briefings[1]["content"]
        # The first: the whole briefing for its prompt (the rule, the important memory, the theme lines).
        assert RULE in one and IMPORTANT in one and THEMES[0] in one and MIGRATE not in one
        # The second: only what is new and matches its prompt, never the rule or the important block again.
        assert MIGRATE in two and ids[MIGRATE] in briefings[1]["details"]["ids"]
        assert RULE not in two and IMPORTANT not in two and not any(t in two for t in THEMES)

        session_id = session_of(session)["id"]
        ledger = httpx.get(f"{base}/api/v1/injected", params={"session_id": session_id}).json()
        prompts = [i for i in ledger["injections"] if i["event"] == "prompt"]
        assert [i["text"] for i in prompts] == ["Which colours and fonts does the theme use?",
                                                "How do I change the database schema?"]  # fmt: skip
        assert (
            prompts[0]["ids"] == briefings[0]["details"]["ids"] and prompts[1]["ids"] == briefings[1]["details"]["ids"]
        )
        assert all(i["agent"] == "pi" and i["tokens"] > 0 for i in prompts)
        page = httpx.get(f"{base}/injected", params={"session_id": session_id}).text
        assert ids[MIGRATE] in page and "How do I change the database schema?" in page
    # The CLI reads the same ledger without the service.
    shown = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "injected", "--session", session_id],
        env=cli_env(settings), capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert f"session {session_id}: 2 deliveries" in shown and ids[MIGRATE] in shown


def _hook(settings: Settings, payload: dict, cwd: Path, service: str | None = None) -> subprocess.CompletedProcess[str]:
    # Without `service`: a port nobody serves, so the start and prompts run in-process.
    env = cli_env(settings, MEMORY_SERVICE_URL=service or f"http://127.0.0.1:{free_port()}")
    return subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "hook", "claude-code"],
        input=json.dumps(payload), env=env, cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_claude_codes_session_start_prints_the_projects_memories_and_prompts_get_only_new_lines(
    project: tuple[Settings, Path], tmp_path: Path
) -> None:
    settings, folder = project
    ids = _ids(settings)
    payload = {"session_id": "cc-recall-1", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(folder),
               "hook_event_name": "SessionStart", "source": "startup"}  # fmt: skip
    start = _hook(settings, payload, tmp_path)
    assert start.returncode == 0, start.stderr[-2000:]
    assert not any(tmp_path.iterdir())  # nothing written where it ran
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    # The rules, the important memory and the most recent knowledge: no search for a prompt there is not.
    assert RULE in context and IMPORTANT in context and ids[IMPORTANT] in context
    assert "### Recent in this project" in context and MIGRATE in context  # the newest memory
    assert not any(t in context for t in THEMES)  # older than the recent ones

    asked = payload | {"hook_event_name": "UserPromptSubmit", "prompt": "Which colours and fonts does the theme use?"}
    prompt = _hook(settings, asked, tmp_path)
    assert prompt.returncode == 0, prompt.stderr[-2000:]
    added = json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"] if prompt.stdout.strip() else ""
    assert IMPORTANT not in added and RULE not in added and MIGRATE not in added  # nothing given twice
    assert any(t in added for t in THEMES), added

    shown = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "injected", "--session", "cc-recall-1", "--json"],
        env=cli_env(settings), capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    ledger = json.loads(shown)
    assert [(i["event"], i["agent"]) for i in ledger["injections"]] == [("start", "claude-code"),
                                                                        ("prompt", "claude-code")]  # fmt: skip
    keys = [line["key"] for i in ledger["injections"] for line in i["lines"]]
    assert len(keys) == len(set(keys)) and ids[IMPORTANT] in keys


def test_claude_codes_file_reads_and_failing_commands_recall_through_the_service(
    project: tuple[Settings, Path], tmp_path: Path
) -> None:
    """PostToolUse after a Read and PostToolUseFailure after a failing Bash, the payloads as Claude Code sends them
    (https://code.claude.com/docs/en/hooks#posttooluse), through `memory-pipeline serve`."""
    settings, folder = project
    ids = _ids(settings)
    session = f"cc-tools-{uuid.uuid4().hex[:8]}"
    tool = {"session_id": session, "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(folder),
            "permission_mode": "default", "tool_use_id": "toolu_01"}  # fmt: skip
    path = str(folder / SEND)
    read = tool | {"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": path},
                   "tool_response": {"type": "text", "file": {"filePath": path, "content": "x"}}}  # fmt: skip
    lint = {"command": "pnpm lint", "description": "Lint the project"}
    failed = tool | {"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": lint,
                     "error": "Command exited with non-zero status code 1", "is_interrupt": False}  # fmt: skip
    bash_output = {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}
    succeeded = tool | {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": lint,
                        "tool_response": bash_output}  # fmt: skip
    with memory_service(settings) as base:
        first = _hook(settings, read, tmp_path, base)
        assert first.returncode == 0, first.stderr[-2000:]
        output = json.loads(first.stdout)["hookSpecificOutput"]
        assert output["hookEventName"] == "PostToolUse"
        assert output["additionalContext"].startswith(f"[memory about {SEND}]")
        assert FILE_GOTCHA in output["additionalContext"] and ids[FILE_GOTCHA] in output["additionalContext"]
        again = _hook(settings, read, tmp_path, base)  # the same file read again: given once
        unknown = _hook(settings, read | {"tool_input": {"file_path": "src/theme.ts"}}, tmp_path, base)
        assert (again.returncode, again.stdout, unknown.returncode, unknown.stdout) == (0, "", 0, "")
        ok = _hook(settings, succeeded, tmp_path, base)  # a command that worked: nothing to recall
        assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")

        error = _hook(settings, failed, tmp_path, base)
        assert error.returncode == 0, error.stderr[-2000:]
        output = json.loads(error.stdout)["hookSpecificOutput"]
        assert output["hookEventName"] == "PostToolUseFailure"
        assert COMMAND_GOTCHA in output["additionalContext"] and ids[COMMAND_GOTCHA] in output["additionalContext"]

        ledger = httpx.get(f"{base}/api/v1/injected", params={"session_id": session}).json()
        assert [(i["event"], i["agent"], i["text"]) for i in ledger["injections"]] == [
            ("file", "claude-code", path),
            ("error", "claude-code", "pnpm lint"),
        ]
        assert (
            ids[FILE_GOTCHA] in ledger["injections"][0]["ids"] and ids[COMMAND_GOTCHA] in ledger["injections"][1]["ids"]
        )
    assert not any(tmp_path.iterdir())  # nothing written where it ran

    # No service: a read says nothing and searches nothing in-process (nothing given, nothing recorded).
    alone = read | {"session_id": f"{session}-alone"}
    down = _hook(settings, alone, tmp_path)
    assert (down.returncode, down.stdout, down.stderr) == (0, "", "")
    shown = subprocess.run(
        [sys.executable, "-m", "memory_pipeline", "injected", "--session", alone["session_id"], "--json"],
        env=cli_env(settings), capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert json.loads(shown)["injections"] == []


def test_with_the_service_down_pi_still_gets_memory_md_s_rules_and_one_notice(
    project: tuple[Settings, Path], tmp_path: Path
) -> None:
    settings, _ = project
    offline = tmp_path / "offline-shop"
    offline.mkdir()
    (ensure_project_dir(settings.memory_workspace, str(offline)) / "MEMORY.md").write_text(
        "- Deploy only from the main branch <!-- p-20240402-001 -->\n"
    )
    settings.service_token()  # the extension finds the workspace beside the token's state folder
    pi = PiAgent(settings.sessions_dir.parent, settings, "")
    done = pi.run(offline, "Say hello.", service_url=f"http://127.0.0.1:{free_port()}", tools="read")
    assert finished(done), done.stderr
    notices = [line for line in done.stderr.splitlines() if line.startswith("memory:")]
    assert len(notices) == 1 and "partial" in notices[0] and "MEMORY.md's rules only" in notices[0], notices
    [brief] = [e for e in entries(pi.last_session(offline)) if e.get("customType") == "memory-briefing"]
    assert "Deploy only from the main branch _(id `p-20240402-001`)_" in brief["content"]
