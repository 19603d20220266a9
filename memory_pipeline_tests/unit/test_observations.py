"""Turn observations keep the user's words: chat-bot envelopes peeled off, budgets in tokens, no echo."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from memory_pipeline.recall.observations import (
    ASKED_TOKENS,
    CONTEXT_TOKENS,
    FAILED_TOKENS,
    estimate_tokens,
    failure_text,
    observe_turns,
)
from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.envelope import strip_envelope
from memory_pipeline.sessions.load import catalog, load_messages
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.sessions.turns import group_turns

ROUGH = Path(__file__).resolve().parents[2] / "bench" / "corpus" / "rough" / "sessions"

OPENCLAW = (
    'Conversation info (untrusted metadata):\n```json\n{\n  "message_id": "1234",\n  "sender_id": "99"\n}\n```\n\n'
    'Sender (untrusted metadata):\n```json\n{"label": "Alice (99)", "name": "Alice"}\n```\n\n'
    "Please switch the cache to redis."
)


@pytest.mark.parametrize(
    ("wrapped", "words"),
    [
        (OPENCLAW, "Please switch the cache to redis."),
        ("[Telegram Alice (@alice) id:12345 +5m 2026-01-31 10:00 UTC] fix the login bug", "fix the login bug"),
        ("System: [2026-01-31 10:00:00 UTC] Exec finished\n\n[Slack #dev Bob] deploy it", "deploy it"),
        ('{"chat_id": 5}\nSender: bob\nTimestamp: 10:00\n\nhello there', "hello there"),
        ("ship it\n[message_id: 777]", "ship it"),
    ],
)
def test_envelopes_are_peeled_to_the_users_words(wrapped: str, words: str) -> None:
    assert strip_envelope(wrapped).strip() == words


@pytest.mark.parametrize(
    "plain",
    [
        "[User sent a photo] the price label overlaps the chart",
        "Error: cannot find module x\nwhy does this happen?",
        '```json\n{"a": 1}\n```',  # nothing but a block: kept as it is
        "Sender: this is how our email template starts, please fix its greeting",
    ],
)
def test_ordinary_messages_are_left_alone(plain: str) -> None:
    kept = strip_envelope(plain)
    assert kept == plain or plain.endswith(kept) and len(kept) > 20


@pytest.fixture(scope="module")
def observations(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    files = catalog(scan_sessions(ROUGH)[0], {})
    messages, _ = load_messages(files, tmp_path_factory.mktemp("cache"), Redactor())
    return observe_turns(group_turns(messages), messages)


def _of(frame: pl.DataFrame, session: str) -> list[str]:
    return frame.filter(pl.col("session_id") == session).sort("established_at")["summary"].to_list()


def test_a_chat_bot_turn_reads_as_what_the_user_asked(observations: pl.DataFrame) -> None:
    first, second = _of(observations, "rough-bot")
    assert first.startswith("Asked: The nightly backup cron is failing") and "message_id" not in first
    assert second.startswith("Asked: keep 14 days of backups, not 30") and "88240" not in second


def test_a_turn_opened_by_the_assistant_is_not_echoed(observations: pl.DataFrame) -> None:
    resumed = _of(observations, "rough-assistant-first")[0]
    assert not resumed.startswith("Asked:") and resumed.count("migration to Postgres 16") == 1


def test_cjk_observations_fit_a_512_token_model(observations: pl.DataFrame) -> None:
    texts = _of(observations, "rough-cjk")
    assert len(texts) == 5 and all(estimate_tokens(t) < 450 for t in texts)
    assert texts[0].startswith("Asked: 请把缓存从 memcached 换成 redis")  # the request survives the cut
    asked = texts[0].split(" Outcome: ")[0]
    assert ASKED_TOKENS - 10 < estimate_tokens(asked) < ASKED_TOKENS + 10


def test_an_injected_briefing_is_kept_as_metadata_and_never_observed() -> None:
    from memory_pipeline.sessions.messages import session_messages, to_frame
    from memory_pipeline.sessions.parse import parse_session
    from testkit.paths import SESSION_FIXTURES

    session = parse_session(SESSION_FIXTURES / "real-pi-1.6.0-memory-briefing-and-tool.v3.jsonl")
    frame = to_frame(session_messages(session, Redactor(), "p")[0])
    brief = frame.filter(pl.col("custom_type") == "memory-briefing").row(0, named=True)
    assert brief["is_metadata"] and brief["turn_id"] is None  # metadata: in no turn, so never indexed or read
    turns = group_turns(frame)
    assert turns.height == 1 and turns.row(0, named=True)["start_role"] == "user"
    [observation] = observe_turns(turns, frame)["summary"].to_list()
    assert "Memory from earlier sessions" not in observation and "Always use pnpm" not in observation
    assert observation.startswith("Asked: Which package manager should I use here?")


def test_each_turn_carries_the_request_before_it_as_context(observations: pl.DataFrame) -> None:
    bot = observations.filter(pl.col("session_id") == "rough-bot").sort("established_at")
    first, second = bot.rows(named=True)
    assert first["context"] == ""  # the first turn of a session has none
    # The reply "keep 14 days" is searchable with what it answers, peeled of its envelope like the request.
    assert second["context"].startswith("The nightly backup cron is failing") and "message_id" not in second["context"]
    assert estimate_tokens(second["context"]) <= CONTEXT_TOKENS + 1
    assert second["context"] not in second["summary"]  # searched beside the turn, never shown as its words


def test_a_failure_is_told_by_its_message_not_its_exit_code() -> None:
    error = "Error response from daemon: Bind for 0.0.0.0:5432 failed: port is already allocated"
    assert failure_text(f"{error}\n\nCommand exited with code 1", FAILED_TOKENS) == error
    assert failure_text("Command exited with code 1", FAILED_TOKENS) == ""  # nothing the flag does not say
    frames = "\n".join(f'  File "/srv/app/m{i}.py", line {i}, in handler' for i in range(40))
    traceback = f"Traceback (most recent call last):\n{frames}\nModuleNotFoundError: No module named 'shop_api'"
    told = failure_text(traceback, FAILED_TOKENS)
    # A traceback's cause is its last line: kept, with the first, where the middle is cut.
    assert told.startswith("Traceback") and told.endswith("No module named 'shop_api'") and "m20.py" not in told
    assert estimate_tokens(told) <= FAILED_TOKENS + 2


def test_a_turn_that_failed_says_what_failed() -> None:
    from memory_pipeline.sessions.messages import session_messages, to_frame
    from memory_pipeline.sessions.parse import parse_session
    from testkit.paths import SESSION_FIXTURES

    session = parse_session(SESSION_FIXTURES / "pi-mono-large-session.v1.jsonl")
    frame = to_frame(session_messages(session, Redactor(), "p")[0])
    observations = observe_turns(group_turns(frame), frame)
    failing = frame.filter(pl.col("is_error").fill_null(False) | (pl.col("exit_code").fill_null(0) != 0))
    told = observations.filter(pl.col("summary").str.contains(" Failed: "))
    # Only turns where a tool failed say so, and never by a bare exit code.
    assert 3 <= told.height < observations.height
    assert set(told["turn_id"]) <= set(failing["turn_id"])
    assert not observations["summary"].str.contains("Failed: Command exited").any()
    [sleep] = observations.filter(pl.col("summary").str.starts_with("Asked: dude sleep 5 seconds"))["summary"]
    assert "Failed: Command aborted Outcome:" in sleep
