"""Turn observations: one compact, searchable record per turn, built without the LLM.

What was asked, which tools ran, which files were touched, how it ended. They
make search useful before any summary exists, and let a memory be cited back
to the turn it came from.
"""

from __future__ import annotations

import json
from datetime import datetime

import polars as pl

OBSERVATION_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "doc_id": pl.String,
    "kind": pl.String,
    "summary": pl.String,
    "tags": pl.List(pl.String),
    "priority": pl.String,
    "project": pl.String,
    "partition": pl.String,
    "session_id": pl.String,
    "turn_id": pl.String,
    "established_at": pl.String,
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


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def observe_turns(turns: pl.DataFrame, messages: pl.DataFrame) -> pl.DataFrame:
    """One observation per active-path turn."""
    conversation = messages.filter(pl.col("on_active_path") & ~pl.col("is_metadata") & pl.col("turn_id").is_not_null())
    by_turn: dict[tuple[str, str], list[dict]] = {}
    for row in conversation.sort("session_id", "turn_index", "message_index").iter_rows(named=True):
        by_turn.setdefault((row["session_id"], row["turn_id"]), []).append(row)
    rows = []
    for turn in turns.iter_rows(named=True):
        messages_of = by_turn.get((turn["session_id"], turn["turn_id"]), [])
        calls = [c for m in messages_of for c in (m["tool_calls"] or [])]
        files = list(dict.fromkeys(_files(calls)))
        replies = [m for m in messages_of if m["role"] == "assistant" and (m["content"] or m["error_message"])]
        last = replies[-1] if replies else None
        outcome = (
            f"error: {last['error_message']}"
            if last and last["error_message"]
            else _clip(last["content"], 240)
            if last
            else "no reply"
        )
        parts = [f"Asked: {_clip(turn['prompt'] or '', 300)}"]
        if turn["tool_names"]:
            parts.append(f"Tools: {', '.join(turn['tool_names'])}.")
        if files:
            parts.append(f"Files: {', '.join(files[:8])}.")
        parts.append(f"Outcome: {outcome}")
        started = turn["started_at"] or turn["session_started_at"]
        rows.append(
            {
                "doc_id": observation_id(turn["session_id"], turn["turn_id"]),
                "kind": "observation",
                "summary": " ".join(parts),
                "tags": list(dict.fromkeys(["turn", *turn["tool_names"]])),
                "priority": "low",
                "project": turn["project"],
                "partition": turn["partition"],
                "session_id": turn["session_id"],
                "turn_id": turn["turn_id"],
                "established_at": _iso(started),
            }
        )
    return pl.DataFrame(rows, schema=OBSERVATION_SCHEMA) if rows else pl.DataFrame(schema=OBSERVATION_SCHEMA)


def _iso(value: datetime | None) -> str:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z") if value else ""
