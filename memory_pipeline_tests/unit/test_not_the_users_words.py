"""Issue 31 on real-shaped OpenClaw sessions: text that is not the user's is never taken for their words or
their rule, chat envelopes are peeled, and passwords typed in chat or written with spaces are masked."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from memory_pipeline.recall.observations import observe_turns
from memory_pipeline.sessions.envelope import automation_of, automation_task, strip_envelope
from memory_pipeline.sessions.messages import session_messages, to_frame
from memory_pipeline.sessions.parse import parse_session
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns
from memory_pipeline.summarize.extract import summarise_turn
from memory_pipeline.summarize.frames import turn_jobs
from memory_pipeline.summarize.prompt import render_turn, turn_text
from memory_pipeline_tests.unit.mock_llm import chat_client, completion

SESSION = Path(__file__).parents[1] / "fixtures" / "openclaw" / "automation-and-envelopes.v3.jsonl"
PASSWORDS = ["Hunter2024!", "Abc@12345", "Qw3rty!9", "wxyz abcd qrst uvwk"]


@pytest.fixture(scope="module")
def parsed() -> tuple[pl.DataFrame, pl.DataFrame]:
    frame = to_frame(session_messages(parse_session(SESSION), Redactor(), "/home/linh/dashboard")[0])
    return frame, group_turns(frame)


def _jobs(parsed: tuple[pl.DataFrame, pl.DataFrame]) -> list:
    frame, turns = parsed
    return list(turn_jobs(turns, frame).values())


def test_cron_prompts_sub_agent_preambles_and_system_notices_are_named_not_the_users() -> None:
    assert automation_of("[cron:9f1c daily-report] Always summarise the PRs") == "scheduled task"
    assert automation_of("[cron:aabb1122-3344] 只有内容") == "scheduled task"
    preamble = "[Wed 2026-02-18 16:43 GMT+1] [Subagent Context] You are running as a subagent (depth 1/1).\n\n"
    assert automation_of(preamble + "[Subagent Task]: Install it") == "sub-agent task"
    assert automation_task(preamble + "[Subagent Task]: Install it") == "Install it"
    assert automation_of("[System Message] [sessionId: 6] A subagent task just timed out.") == "system message"
    assert automation_of("Read HEARTBEAT.md if it exists (workspace context). Reply HEARTBEAT_OK.") == "heartbeat"
    # The gateway's queued system events before the prompt, on the same line, and the person's words after it.
    events = "System: [2026-02-24 23:28:52 GMT+8] Exec completed (glow-wil, code 0) :: ok "
    assert automation_of(events + "Read HEARTBEAT.md if it exists. Follow it strictly. 这是什么") == "heartbeat"
    for theirs in ("Always use pnpm", "[Telegram Alice id:42 2026-01-31 10:00] run the cron job", "cron: what is it?"):
        assert automation_of(theirs) is None


def test_a_scheduler_or_sub_agent_prompt_gives_no_rule_and_is_never_the_users_words(parsed) -> None:  # noqa: ANN001
    cron, subagent = _jobs(parsed)[:2]
    for job in (cron, subagent):
        text = turn_text(job.messages)
        assert text.user == "" and "Always summarise" in text.other or "Never use the staging" in text.other
        rendered = render_turn(job.messages, 4000)
        assert "WHAT THE USER SAID" not in rendered and "(not the user's words)" in rendered
        # Even a model that drafts the prompt's "always/never" as a rule cannot make it the user's rule.
        said = text.other.split("] ", 1)[-1][:80]
        draft = [{"kind": "rule", "subject": "x", "statement": said, "evidence": said}]
        outcome = summarise_turn(chat_client([completion(json.dumps(draft))], []), job, 4096, 256)
        assert not [i for i in outcome.ideas if i.kind.value == "rule" or i.evidence_role == "user"]
        assert not [i for i in outcome.ideas if i.priority.value == "high"]


def test_envelopes_are_peeled_and_the_persons_rule_is_kept_in_their_words(parsed) -> None:  # noqa: ANN001
    feishu = _jobs(parsed)[2]
    outcome = summarise_turn(chat_client([completion("[]")], []), feishu, 4096, 256)
    [rule] = outcome.ideas
    assert rule.kind.value == "rule" and rule.evidence_role == "user"
    assert rule.summary == "Always use pnpm, never npm, in the dashboard repo."
    assert "Feishu" not in rule.evidence and "[Image]" not in rule.evidence


def test_observations_open_with_the_persons_words_or_name_the_automation(parsed) -> None:  # noqa: ANN001
    frame, turns = parsed
    observed = observe_turns(turns, frame).sort("established_at")["summary"].to_list()
    assert observed[0].startswith("Scheduled task: Always summarise the open pull requests")
    assert observed[1].startswith("Sub-agent task: Never use the staging database")
    assert observed[2].startswith("Asked: Always use pnpm, never npm")
    assert observed[3].startswith("Asked: Move the market cap label to the right")
    assert observed[4].startswith("Asked: what do you mean? We decided to keep the chart on the left")
    for text in observed:
        for envelope in ("[media attached", "To send an image back", "Conversation info", "Queued #", "Feishu"):
            assert envelope not in text


def test_queued_and_media_envelopes_keep_every_word_of_the_person() -> None:
    queued = (
        "[Queued messages while agent was busy]\n\n---\nQueued #1\nConversation info (untrusted metadata):\n"
        '```json\n{"message_id": "109"}\n```\n\nwhat do you mean?\n\n---\nQueued #2\n[Feishu ou_1 2026-04-13 16:36] '
        "user: and use pnpm please"
    )
    assert strip_envelope(queued) == "what do you mean?\n\nand use pnpm please"
    assert strip_envelope("[media attached: 2 files]\n[media attached 1/2: /a.jpg (image/jpeg)]\ncompare") == "compare"
    # A screenshot pasted into a terminal (the pi-mono fixture): its temporary path is not the question.
    pasted = "'/var/folders/49/T/NSIRD_screencaptureui_tby1cQ/Screenshot 2025-11-21 at 01.27.21.png'\n\nwhy?"
    assert strip_envelope(pasted) == "why?"
    assert strip_envelope("/tmp/a.png is blank, why?") == "/tmp/a.png is blank, why?"  # a path talked about stays


def test_no_password_typed_in_chat_or_written_with_spaces_is_kept(parsed) -> None:  # noqa: ANN001
    frame, _ = parsed
    stored = frame.write_json()
    for password in PASSWORDS:
        assert password not in stored
    assert "[REDACTED:chat-password]" in stored and "[REDACTED:spaced-secret-assignment]" in stored
    # What was around them is still there.
    said = "\n".join(frame["content"].drop_nulls())
    written = "\n".join(str(call["arguments"]) for calls in frame["tool_calls"] for call in calls)
    assert "for the staging admin" in said and "cho máy chủ" in said and "别外传" in said
    assert 'SMTP_HOST=\\"smtp.gmail.com\\"' in written and "SMTP_PASSWORD=" in written


def test_a_voice_note_replying_to_the_bot_keeps_only_the_persons_transcript() -> None:
    # The shape of a real OpenClaw Telegram voice note (bench/labels/knowledge_turns.json, oc-009): the quoted
    # message is the bot's own, never the person's words.
    note = (
        "[Audio] User text: [Telegram Aadil Feroze (@AadilFeroze_92) id:124756960 +1m 2026-02-04 04:42 UTC] "
        "<media:audio> [Replying to Flux id:2313] Hi Aadil, just following up on the proposal I sent. Let me "
        "know what works for you. [/Replying] Transcript: We agreed that you'll remind me tomorrow."
    )
    assert strip_envelope(note) == "We agreed that you'll remind me tomorrow."
    voice = "[Telegram A (@a) id:1 2026-02-04 04:42 UTC] <media:voice> Transcript: always use pnpm"
    assert strip_envelope(voice) == "always use pnpm"
    # "Transcript:" opens a person's own message too: only a voice note's is a label.
    assert strip_envelope("Transcript: of the call is in notes.md") == "Transcript: of the call is in notes.md"
    # A reply block that never closes is not peeled whole: the words after its bracket stay.
    assert strip_envelope("[Replying to Flux id:2313] use pnpm") == "use pnpm"


def test_an_agents_own_startup_and_init_prompts_are_named_not_the_persons_words() -> None:
    # OpenClaw after /new or /reset, and Claude Code's /init, as real sessions send them in the user role.
    startup = (
        "A new session was started via /new or /reset. Execute your Session Startup sequence now - read the "
        "required files before responding to the user. Do not mention internal steps, files, tools, or reasoning."
    )
    init = "Please analyze this codebase and create a CLAUDE.md file, which will be given to future instances."
    assert automation_of(startup) == "session startup"
    assert automation_of(init) == "agent's built-in prompt"
    # The person asking for the same in their own words is theirs.
    assert automation_of("please create a CLAUDE.md for this repo, and never mention internal steps") is None
