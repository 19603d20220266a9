"""Turn observations: one compact, searchable record per turn, built without the LLM.

What was asked, which tools ran, which files were touched, what failed, how it
ended. They make search useful before any summary exists, and let a memory be
cited back to the turn it came from.

The text is budgeted in tokens, not characters (a Chinese sentence costs about
as many tokens as it has characters, English a quarter): the request gets the
largest share, after its chat-bot envelope is peeled off, so it holds the
user's words. The embedding client still cuts whatever is left over to the
model's context, measured by the server.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

import polars as pl

from memory_pipeline.recall.disclosures import DISCLOSURE_TAG, discloses
from memory_pipeline.sessions.envelope import automation_of, automation_task, strip_envelope
from memory_pipeline.sessions.tool_text import readable_tool_calls

OBSERVATION_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "doc_id": pl.String,
    "kind": pl.String,
    "summary": pl.String,
    "tags": pl.List(pl.String),
    "priority": pl.String,
    "project": pl.String,
    "agent": pl.String,
    "partition": pl.String,
    "session_id": pl.String,
    "turn_id": pl.String,
    "established_at": pl.String,
    "context": pl.String,
}


def observation_id(session_id: str, turn_id: str) -> str:
    """A turn's observation id: the citation for anything learned from that turn."""
    return f"obs_{session_id}_{turn_id}"


_PATH_KEYS = ("path", "file", "file_path", "filePath", "filename")


def _files(tool_calls: list[dict]) -> list[str]:
    files = []
    for call in tool_calls:
        try:
            arguments = json.loads(call.get("arguments") or "null")
        except json.JSONDecodeError:
            continue
        if isinstance(arguments, dict):
            files += [str(arguments[k]) for k in _PATH_KEYS if isinstance(arguments.get(k), str)]
    return files


# Shares of an observation, in estimated tokens: the whole stays well inside a 512-token embedding model.
ASKED_TOKENS = 160
OUTCOME_TOKENS = 120
FILES_SHOWN = 8
# A failed command's message: what a later "why did X fail" asks about, and what an outcome ("Running bash.")
# often leaves out.
FAILED_TOKENS = 60
# The turn before's request, searchable beside a turn's own words (not embedded, not shown): an answer is
# often a reply to it ("yes, set it to 1", "do that for the footer too").
CONTEXT_TOKENS = 60
# What a turn's first message is, when it is not the user asking (then it is not repeated as the outcome).
_OPENERS = {"user": "Asked", "bashExecution": "Ran", "custom": "Context", "branchSummary": "Branch summary"}


def estimate_tokens(text: str) -> float:
    """An upper estimate for common tokenizers: 2 per CJK/kana/hangul character (1-2 in BPE and WordPiece),
    1 per other non-ASCII character, 1 per 3 ASCII characters (about 4 in English prose, less in code)."""
    total = 0.0
    for ch in text:
        code = ord(ch)
        if code < 128:
            total += 1 / 3
        elif 0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF:
            total += 2
        else:
            total += 1
    return total


def clip_tokens(text: str, budget: float) -> str:
    """`text` with whitespace folded, cut to about `budget` tokens, with "…" when cut."""
    text = " ".join(text.split())
    if estimate_tokens(text) <= budget:
        return text
    used, end = 0.0, 0
    for end, ch in enumerate(text):  # noqa: B007 - `end` is the cut
        used += estimate_tokens(ch)
        if used > budget - 1:
            break
    return text[:end].rstrip() + "…"


def observe_turns(turns: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """One observation per active-path turn."""
    conversation = messages.filter(pl.col("on_active_path") & ~pl.col("is_metadata") & pl.col("turn_id").is_not_null())
    by_turn: dict[tuple[str, str], list[dict]] = {}
    for row in conversation.sort("session_id", "turn_index", "message_index").iter_rows(named=True):
        by_turn.setdefault((row["session_id"], row["turn_id"]), []).append(row)
    rows = []
    before: dict[str, str] = {}  # the request of each session's turn before the one at hand
    for turn in turns.sort("session_id", "turn_index").iter_rows(named=True):
        context = before.get(turn["session_id"], "")
        if turn["prompt"]:
            before[turn["session_id"]] = clip_tokens(strip_envelope(turn["prompt"]), CONTEXT_TOKENS)
        messages_of = by_turn.get((turn["session_id"], turn["turn_id"]), [])
        calls = [c for m in messages_of for c in (m["tool_calls"] or [])]
        files = list(dict.fromkeys(_files(calls)))
        opener = _OPENERS.get(turn["start_role"])
        asked = strip_envelope(turn["prompt"] or "")
        origin = automation_of(turn["prompt"] or "") if turn["start_role"] == "user" else None
        if origin:  # a scheduler's or a sub-agent's prompt: named as such, never as what the person asked
            opener, asked = origin.capitalize(), automation_task(turn["prompt"] or "")
        # A turn that opens with the assistant (after a compaction, say) has no request: its first message is
        # part of the outcome, and is not shown twice.
        replies = [
            m
            for m in messages_of[1 if opener else 0 :]
            if m["role"] == "assistant" and (m["content"] or m["error_message"])
        ]
        last = replies[-1] if replies else None
        outcome = (
            f"error: {clip_tokens(last['error_message'], OUTCOME_TOKENS)}"
            if last and last["error_message"]
            else clip_tokens(readable_tool_calls(last["content"]), OUTCOME_TOKENS)
            if last
            else "no reply"
        )
        parts = [f"{opener}: {clip_tokens(asked, ASKED_TOKENS)}"] if opener else []
        if turn["tool_names"]:
            parts.append(f"Tools: {', '.join(turn['tool_names'])}.")
        if files:
            parts.append(f"Files: {clip_tokens(', '.join(files[:FILES_SHOWN]), 60)}.")
        failures = (failure_text(m["content"] or "", FAILED_TOKENS) for m in messages_of if failed(m))
        failure = next((text for text in failures if text), "")  # the first that says more than its exit code
        if failure:
            parts.append(f"Failed: {failure}")
        parts.append(f"Outcome: {outcome}")
        started = turn["started_at"] or turn["session_started_at"]
        tags = ["turn", *turn["tool_names"]]
        if opener == "Asked" and discloses(asked):
            tags.append(DISCLOSURE_TAG)  # the person said something of themselves that lasts (disclosures.py)
        rows.append(
            {
                "doc_id": observation_id(turn["session_id"], turn["turn_id"]),
                "kind": "observation",
                "summary": " ".join(parts),
                "tags": list(dict.fromkeys(tags)),
                "priority": "low",
                "project": turn["project"],
                "agent": turn.get("agent") or "pi",
                "partition": turn["partition"],
                "session_id": turn["session_id"],
                "turn_id": turn["turn_id"],
                "established_at": _iso(started),
                "context": context,
            }
        )
    return pl.DataFrame(rows, schema=OBSERVATION_SCHEMA) if rows else pl.DataFrame(schema=OBSERVATION_SCHEMA)


def failed(message: dict) -> bool:
    """A tool that reported an error, or a command the user ran that exited non-zero."""
    return bool(message.get("is_error")) or (message.get("exit_code") or 0) != 0


# pi's bash tool closes a failed command's output with this line: it says nothing the flag does not.
_EXIT_LINE = re.compile(r"^\(?command exited with code -?\d+\)?$", re.IGNORECASE)


def failure_text(text: str, budget: float) -> str:
    """A failure's message in about `budget` tokens: all of it when it fits, else its first and last lines
    (an error's summary is at the top of most tools' output, at the bottom of a traceback)."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _EXIT_LINE.match(line.strip())]
    whole = " ".join(lines)
    if len(lines) < 2 or estimate_tokens(whole) <= budget:
        return clip_tokens(whole, budget)
    return f"{clip_tokens(lines[0], budget / 2)} … {clip_tokens(lines[-1], budget / 2)}"


def _iso(value: datetime | None) -> str:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z") if value else ""
