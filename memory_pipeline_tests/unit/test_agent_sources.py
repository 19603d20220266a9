"""Claude Code and Codex histories read into the same messages and turns as pi's: every real fixture parses
exactly (counts from a small reference reader written here, independent of the parser), sub-agent threads
are sessions of their own under their parent, a rewind leaves a branch, and bad lines are problems naming
the file and line."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from memory_pipeline.sessions.discovery import SessionRoot, agent_roots, scan_sessions
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.sources import parse_any, read_header
from memory_pipeline.sessions.turns import group_turns
from testkit.paths import ROOT

FIXTURES = ROOT / "memory_pipeline_tests" / "fixtures"
CLAUDE = FIXTURES / "claude-code"
CODEX = FIXTURES / "codex"
CLAUDE_FILES = sorted(CLAUDE.rglob("*.jsonl"))
CODEX_FILES = sorted(CODEX.rglob("*.jsonl"))
GEMINI = FIXTURES / "gemini-cli"
GEMINI_FILES = sorted(p for p in GEMINI.rglob("*.json*") if p.suffix in (".json", ".jsonl"))
INJECTED = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>", "<permis")


def _lines(path: Path) -> list[dict]:
    out = []
    for raw in path.read_text(errors="replace").splitlines():
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


# Claude Code's own lines in the person's place (the reference's own list, from the real files): a local
# command's output, an interruption, a slash command without arguments.
NOT_SAID = ("<local-command-", "<bash-stdout>", "<bash-stderr>", "[Request interrupted by user")


def _person_text(blocks: list[dict]) -> str:
    return "".join(b.get("text", "") for b in blocks if b.get("type") == "text").lstrip()


def _said(text: str) -> bool:
    if text.startswith(NOT_SAID):
        return False
    if text.startswith("<command-"):
        args = text.split("<command-args>", 1)[1].split("</command-args>", 1)[0] if "<command-args>" in text else ""
        return bool(args.strip())
    return True


def claude_reference(path: Path) -> Counter[str]:
    """What a Claude Code file holds, counted straight from its JSON: conversation lines, the tool calls and
    results in them, and the person's prompts (each starts a turn; a sub-agent's prompts come from its agent;
    Claude Code's own threads, warm-up and compaction, hold none: one metadata row a line)."""
    count: Counter[str] = Counter()
    lines = [v for v in _lines(path) if v.get("type") in ("user", "assistant", "system") and v.get("uuid")]
    first = next((v for v in lines if v["type"] == "user"), {})
    content = (first.get("message") or {}).get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    warmup = first.get("isSidechain") and (_person_text(blocks) == "Warmup" or "acompact" in path.name)
    for line in lines:
        kind, content = line.get("type"), (line.get("message") or {}).get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if warmup:
            count["messages"] += 1
        elif kind == "assistant":
            count["messages"] += 1
            count["tool_calls"] += sum(1 for b in blocks if b.get("type") in ("tool_use", "server_tool_use"))
        elif kind == "system":
            count["messages"] += 1
        else:
            results = sum(1 for b in blocks if b.get("type") == "tool_result")
            said = any(b.get("type") in ("text", "image") for b in blocks)
            count["messages"] += results + int(said)
            count["tool_results"] += results
            person = not line.get("isMeta") and not line.get("isCompactSummary") and _said(_person_text(blocks))
            if said and not results and person:
                count["prompts"] += 1
    return count


def codex_reference(path: Path) -> Counter[str]:
    """What a rollout holds, counted straight from its JSON (the person's words from `user_message` events
    when the file has them, else from user messages that are not Codex's injected context)."""
    count: Counter[str] = Counter()
    items = [
        (v.get("type"), v.get("payload")) if isinstance(v.get("payload"), dict) else ("item", v) for v in _lines(path)
    ]
    events = sum(1 for kind, p in items if kind == "event_msg" and p.get("type") == "user_message")
    for kind, p in items[1:]:
        item = p.get("type")
        if kind == "event_msg" and item == "user_message":
            count["prompts"] += 1
        elif kind == "compacted":
            count["compactions"] += 1
        elif kind not in ("response_item", "item"):
            continue
        elif item == "message" and p.get("role") == "assistant":
            count["texts"] += 1
        elif item == "message" and p.get("role") == "user" and not events:
            text = "".join(b.get("text", "") for b in p.get("content") or [])
            count["prompts"] += not text.lstrip().startswith(INJECTED)
        elif item == "reasoning":
            texts = [s.get("text") for s in (p.get("summary") or []) + (p.get("content") or []) if isinstance(s, dict)]
            count["thinking"] += any(texts)
        elif item in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            count["tool_calls"] += 1
        elif item in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            count["tool_results"] += 1
    return count


def gemini_reference(path: Path) -> Counter[str]:
    """What a Gemini CLI chat holds, from its JSON: each message id once (its last copy), a reply's tool calls
    and the results they came back with; rewound messages included (they are kept as a branch)."""
    if path.suffix == ".json":
        records = json.loads(path.read_text())["messages"]
    else:
        records = [r for r in _lines(path)[1:] if r.get("id") and r.get("type")]
    last = {r["id"]: r for r in records}
    count: Counter[str] = Counter()
    for record in last.values():
        calls = record.get("toolCalls") or []
        results = sum(1 for c in calls if c.get("result") is not None or c.get("resultDisplay") is not None)
        count["messages"] += 1 + results
        count["tool_calls"] += len(calls)
        count["tool_results"] += results
        count["prompts"] += record["type"] == "user"
        count["system"] += record["type"] in ("info", "warning", "error")
    return count


def _frame(path: Path) -> pl.DataFrame:
    rows, _ = session_messages(parse_any(path, path.name), Redactor(), "p")
    return to_frame(rows)


def test_every_fixture_folder_is_documented() -> None:
    for folder in (CLAUDE, CODEX):
        sources = (folder / "SOURCES.md").read_text()
        for path in folder.rglob("*.jsonl"):
            assert f"`{path.relative_to(folder).parts[0]}/" in sources, path


@pytest.mark.parametrize("path", CLAUDE_FILES, ids=lambda p: str(p.relative_to(CLAUDE)))
def test_claude_code_fixture_parses_exactly(path: Path) -> None:
    expected = claude_reference(path)
    frame = _frame(path)
    conversation = frame.filter(~pl.col("role").is_in(["system"]))
    calls = frame["tool_calls"].list.len().sum()
    assert frame.height == expected["messages"]
    assert calls == expected["tool_calls"]
    assert frame.filter(pl.col("role") == "toolResult").height == expected["tool_results"]
    assert (frame["agent"] == "claude-code").all()
    # Every tool result names its tool, taken from the call it answers.
    results = frame.filter(pl.col("role") == "toolResult")
    assert results["tool_name"].null_count() == 0
    docs = conversation.filter(~pl.col("is_metadata"))
    assert docs["doc_id"].null_count() == 0 and docs["doc_id"].n_unique() == docs.height
    thread = parse_any(path).header.parentSession is not None
    starts = frame.filter(pl.col("role") == ("custom" if thread else "user"))
    assert starts.height == expected["prompts"]
    if path.parent.name != "synthetic":  # real files: no branch, every message on the active path
        assert frame["on_active_path"].all()
        assert group_turns(frame).height == expected["prompts"]


@pytest.mark.parametrize("path", CODEX_FILES, ids=lambda p: str(p.relative_to(CODEX)))
def test_codex_fixture_parses_exactly(path: Path) -> None:
    expected = codex_reference(path)
    frame = _frame(path)
    assistant = frame.filter(pl.col("role") == "assistant")
    assert frame.filter(pl.col("role").is_in(["user", "custom"])).height == expected["prompts"]
    assert assistant.filter(pl.col("content") != "").height == expected["texts"]
    assert assistant.filter(pl.col("thinking").is_not_null()).height == expected["thinking"]
    assert frame["tool_calls"].list.len().sum() == expected["tool_calls"]
    assert frame.filter(pl.col("role") == "toolResult").height == expected["tool_results"]
    assert frame.filter(pl.col("role") == "compactionSummary").height == expected["compactions"]
    assert frame["on_active_path"].all() and (frame["agent"] == "codex").all()  # a rollout is one line
    assert group_turns(frame).height == expected["prompts"]
    assert frame.filter(pl.col("role") == "toolResult")["tool_name"].null_count() == 0


def test_claude_code_sub_agents_are_threads_under_their_session() -> None:
    main = CLAUDE / "spotter-2.1.38" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    sub = main.with_suffix("") / "subagents" / "agent-aac57f5.jsonl"
    agent, header = read_header(sub)
    assert agent == "claude-code"
    assert header.parentSession == main.stem and header.id == f"{main.stem}-agent-aac57f5"
    frame = _frame(sub)
    # Its instructions come from the main agent: a turn start, never the person's words.
    assert frame.filter(pl.col("role") == "user").height == 0
    assert frame.sort("line")["custom_type"][0] == "subagent-prompt"
    # The main session keeps one path across its compaction: the summary sits on it, after the boundary.
    session = _frame(main)
    assert session["on_active_path"].all()
    assert session.filter(pl.col("role") == "compactionSummary").height == 1


def test_claude_code_rewind_sidechain_and_bad_lines() -> None:
    path = next((CLAUDE / "synthetic").glob("*.jsonl"))
    session = parse_any(path, "synthetic.jsonl")
    frame = _frame(path)
    by_entry = {row["entry_id"]: row for row in frame.iter_rows(named=True)}
    # The screenshot prompt was abandoned by a rewind: its branch is kept, off the active path.
    assert not by_entry["u2"]["on_active_path"] and by_entry["u3"]["on_active_path"]
    assert by_entry["u3"]["parent_id"] == "a4"
    # Parallel calls' results, each parented to its own call by Claude Code, follow in file order.
    assert [by_entry[e]["message_index"] for e in ("a2", "a3", "r1", "r2", "a4")] == [2, 3, 4, 5, 6]
    assert by_entry["r2"]["is_error"] and by_entry["r1"]["tool_name"] == "Read"
    assert by_entry["s1"]["custom_type"] == "subagent-prompt" and not by_entry["s1"]["on_active_path"]
    assert by_entry["m1"]["is_metadata"] and by_entry["u2"]["has_image"]
    assert by_entry["a5"]["stop_reason"] == "error"
    assert by_entry["c1"]["role"] == "compactionSummary" and by_entry["a9"]["on_active_path"]
    assert by_entry["a1"]["cache_read_tokens"] == 100 and by_entry["a1"]["total_tokens"] == 122
    # The title is this session's (the other summary's leaf is not in the file).
    assert set(frame["session_name"]) == {"pnpm rule and the checkout bug"}
    problems = {(p.line, p.kind) for p in session.problems}
    assert (10, "malformed line") in problems and (24, "unknown entry type") in problems
    assert all(p.file == "synthetic.jsonl" for p in session.problems)


def test_codex_legacy_subagent_and_torn_files() -> None:
    legacy = next((CODEX / "synthetic").glob("rollout-2025-*.jsonl"))
    agent, header = read_header(legacy)
    assert (agent, header.cwd) == ("codex", "/home/dev/shop")  # from the environment block
    frame = _frame(legacy)
    [result] = frame.filter(pl.col("role") == "toolResult").iter_rows(named=True)
    assert result["is_error"] and result["content"] == "error: tsc --noEmit took 84s"  # exit code 1
    assert frame.filter(pl.col("role") == "user")["content"].to_list() == [
        "Why is the build slow? We use pnpm here, never npm."
    ]
    thread = next((CODEX / "synthetic").glob("rollout-2026-*.jsonl"))
    session = parse_any(thread, "thread.jsonl")
    assert session.header.parentSession == "019affff-0000-7000-8000-000000000001"
    rows = _frame(thread)
    assert rows.filter(pl.col("role") == "user").height == 0  # the prompt is the parent agent's
    assert rows["model"].drop_nulls().unique().to_list() == ["gpt-5.1-codex-mini"]
    assert rows.filter(pl.col("tool_name") == "apply_patch")["is_error"].to_list() == [True]
    assert [(p.file, p.line, p.kind) for p in session.problems] == [("thread.jsonl", 15, "torn last line")]


def test_agents_are_told_apart_by_content_wherever_their_files_are(tmp_path: Path) -> None:
    pi_dir, claude_dir, codex_dir = tmp_path / "pi", tmp_path / "claude", tmp_path / "codex"
    shutil.copytree(ROOT / "memory_pipeline_tests" / "fixtures" / "pi-sessions", pi_dir)
    shutil.copytree(CLAUDE / "codemie-2.0.64", claude_dir / "-tmp-private")
    shutil.copytree(CODEX / "synthetic", codex_dir / "2026" / "03")
    # A Codex file dropped into pi's folder is still read as Codex.
    shutil.copy(CODEX / "localpush-0.104" / next((CODEX / "localpush-0.104").glob("*.jsonl")).name, pi_dir)
    found, problems = scan_sessions(agent_roots(pi_dir, claude_dir, codex_dir))
    agents = Counter(f.agent for f in found)
    assert agents == {"pi": len(list(pi_dir.glob("*.jsonl"))) - 1, "claude-code": 3, "codex": 3}
    assert all(f.relative_path.startswith("claude-code/") for f in found if f.path.is_relative_to(claude_dir))
    assert all(f.relative_path.startswith("codex/") for f in found if f.path.is_relative_to(codex_dir))
    assert not [p for p in problems if "claude" in p.file or "codex" in p.file]
    # Another agent's folder that does not exist is no problem; pi's is.
    _, missing = scan_sessions([SessionRoot(tmp_path / "nope"), SessionRoot(tmp_path / "none", "x/", required=False)])
    assert [p.kind for p in missing] == ["missing directory"]


@pytest.mark.parametrize("path", GEMINI_FILES, ids=lambda p: p.name)
def test_gemini_cli_fixture_parses_exactly(path: Path) -> None:
    expected = gemini_reference(path)
    frame = _frame(path)
    thread = parse_any(path).header.parentSession is not None
    assert frame.height == expected["messages"]
    assert frame["tool_calls"].list.len().sum() == expected["tool_calls"]
    assert frame.filter(pl.col("role") == "toolResult").height == expected["tool_results"]
    assert frame.filter(pl.col("role") == ("custom" if thread else "user")).height == expected["prompts"]
    assert frame.filter(pl.col("role") == "system").height == expected["system"]
    assert (frame["agent"] == "gemini-cli").all() and set(frame["project"]) == {"/home/dev/overseer"}


def test_gemini_cli_rewinds_updates_and_bad_lines() -> None:
    path = next(GEMINI.rglob("session-2026-*.jsonl"))
    session = parse_any(path, "chat.jsonl")
    rows = {r["entry_id"]: r for r in _frame(path).iter_rows(named=True)}
    # Written twice, read once: the last copy (with its tool calls) in the first one's place.
    assert [c["name"] for c in rows["g1"]["tool_calls"]] == ["read_file", "run_shell_command"]
    assert rows["g1#r2"]["is_error"] and rows["g1#r1"]["content"].startswith("const TIMEOUT_MS")
    assert rows["g2"]["parent_id"] == "g1#r2"  # the next reply follows the tool results
    # The person rewound to before "50 ms": that exchange is a branch, the new prompt follows the root cause.
    assert not rows["u2"]["on_active_path"] and not rows["g3"]["on_active_path"]
    assert rows["u3"]["parent_id"] == "g2" and rows["u3"]["on_active_path"] and rows["u3"]["has_image"]
    assert rows["g5"]["on_active_path"] and rows["i1"]["is_metadata"]
    assert rows["g1"]["thinking"] == "Checking the poller: Read src/poll.ts for the timeout."
    assert rows["g1"]["cache_read_tokens"] == 300 and rows["g1"]["total_tokens"] == 1620
    assert [(p.line, p.kind) for p in session.problems] == [(12, "malformed line"), (14, "unknown record")]
    sub = next(GEMINI.rglob("sub-*.jsonl"))
    header = parse_any(sub).header
    assert header.parentSession == session.header.id == sub.parent.name  # nested under its parent's id
    assert _frame(sub).filter(pl.col("role") == "user").height == 0


def test_gemini_cli_chats_are_found_by_their_project_folder(tmp_path: Path) -> None:
    shutil.copytree(GEMINI / "synthetic", tmp_path / "tmp")
    found, problems = scan_sessions(agent_roots(tmp_path / "pi", None, None, tmp_path / "tmp"))
    assert {(f.agent, f.project) for f in found} == {("gemini-cli", "/home/dev/overseer")}
    assert len(found) == 3 and all(f.relative_path.startswith("gemini-cli/overseer/chats/") for f in found)
    assert [p.kind for p in problems] == ["missing directory"]  # pi's folder, which must exist
    # Without its project folder's marker a chat is still read, under its project hash.
    (tmp_path / "tmp" / "overseer" / ".project_root").unlink()
    found, _ = scan_sessions(agent_roots(tmp_path / "pi", None, None, tmp_path / "tmp"))
    assert {f.project for f in found} == {
        "gemini-project:414e7f6f",
        "gemini-project:414e7f6f8996be8df658a05abdee1847e1072eb2b72d2e421a0e101a8a06b752",
    }


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("mix phx.server doesnt seem to start", "mix phx.server doesnt seem to start"),
        ("<local-command-stdout>Reconnected to tidewave.</local-command-stdout>", None),
        ("[Request interrupted by user for tool use]", None),
        (
            "<command-name>/mcp</command-name>\n<command-message>mcp</command-message>\n<command-args></command-args>",
            None,
        ),
        (
            "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n"
            "<command-args>and continue with the remaining tasks</command-args>",
            "/compact and continue with the remaining tasks",
        ),
        ("<bash-input>git status</bash-input>", "$ git status"),
        ("<bash-stdout>On branch main</bash-stdout><bash-stderr></bash-stderr>", None),
    ],
)
def test_what_the_person_said_in_claude_codes_user_lines(text: str, said: str | None) -> None:
    from memory_pipeline.sessions.sources.claude_code import said_by_person

    assert said_by_person(text) == said


def test_claude_codes_reminders_to_its_model_are_not_the_sessions_words() -> None:
    path = CLAUDE / "spotter-2.1.38" / "subagent.jsonl"
    assert "<system-reminder>" in path.read_text()  # Claude Code appends them to what a Read returned
    frame = _frame(path)
    assert not frame.filter(pl.col("content").str.contains("<system-reminder>")).height
    assert frame.filter(pl.col("content").str.contains("elixirc_paths")).height  # the file's text stays


def _reply_tokens(path: Path) -> tuple[int, int]:
    """(tokens counted once per API reply, tokens counted once per line), straight from the JSON: a reply
    split over several lines repeats its `message.id`; its last line holds its whole output count."""
    last: dict[str, dict] = {}
    per_line = 0
    for line in _lines(path):
        message = line.get("message") or {}
        usage = message.get("usage") if line.get("type") == "assistant" and line.get("uuid") else None
        if not usage:
            continue
        fields = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        total = sum(usage.get(f) or 0 for f in fields)
        per_line += total
        last[message.get("id") or line["uuid"]] = total
    return sum(last.values()), per_line


@pytest.mark.parametrize(
    "name", ["ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", "tool_heavy.jsonl", "subagent.jsonl", "short.jsonl"]
)
def test_claude_code_tokens_are_counted_once_per_api_reply(name: str) -> None:
    path = CLAUDE / "spotter-2.1.38" / name
    once, per_line = _reply_tokens(path)
    assert per_line > once  # these files do split replies: the test could fail
    assert _frame(path)["total_tokens"].sum() == once
