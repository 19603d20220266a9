"""Turns, as pi defines them, over the session tree.

A turn starts at a user message, a `bashExecution`, a `custom_message` or a
`branch_summary`, and holds the assistant replies and tool results until the
next start (pi's `docs/compaction.md` and `findTurnStartIndex`).

Every conversation message gets a turn: `turn_id` is the entry id of its turn's
start and `message_index` counts 0..n-1 along the path. On the active path
that is all there is. Off the active path a turn can fork; each linear piece of
an abandoned branch is its own turn `"<start id>@<first id of the piece>"`, so
`{session_id}_{turn_id}_{message_index}` stays unique and gap-free everywhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import polars as pl

TURN_START_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary"})


@dataclass(frozen=True)
class TurnPlace:
    turn_id: str
    turn_index: int  # turn starts from the root to here, minus one
    message_index: int


@dataclass(frozen=True)
class Node:
    id: str
    parent_id: str | None
    role: str | None  # None: not a conversation message (metadata entry)


def assign_turns(nodes: list[Node], active_path: list[str]) -> dict[str, TurnPlace]:
    """Turn placement of every conversation message in the tree (nodes in file order)."""
    by_id = {n.id: n for n in nodes}
    children: dict[str | None, list[str]] = {}
    for n in nodes:
        children.setdefault(n.parent_id, []).append(n.id)
    on_path = set(active_path)

    start_of: dict[str, str | None] = {}
    starts_above: dict[str, int] = {}
    segment: dict[str, str] = {}
    depth: dict[str, int] = {}
    # Parents before children: walk the tree from its roots (orphans are roots already).
    stack = [(root, None) for root in reversed(children.get(None, []))]
    while stack:
        node_id, parent = stack.pop()
        node = by_id[node_id]
        inherited = start_of[parent] if parent is not None else None
        is_start = node.role is not None and (node.role in TURN_START_ROLES or inherited is None)
        start_of[node_id] = node_id if is_start else inherited
        starts_above[node_id] = (starts_above[parent] if parent is not None else 0) + int(is_start)
        depth[node_id] = depth[parent] + 1 if parent is not None else 0
        forks = parent is None or len(children.get(parent, [])) > 1
        segment[node_id] = node_id if forks else segment[parent]  # type: ignore[index]
        stack.extend((child, node_id) for child in reversed(children.get(node_id, [])))

    placed: dict[str, TurnPlace] = {}
    counters: dict[str, int] = {}
    # Off-path nodes top-down, so each piece of a branch counts from its top.
    off_path = sorted((n.id for n in nodes if n.id not in on_path and n.id in depth), key=depth.__getitem__)
    for node_id in [*active_path, *off_path]:
        node = by_id.get(node_id)
        if node is None or node.role is None or start_of.get(node_id) is None:
            continue
        start = start_of[node_id]
        assert start is not None
        if node_id in on_path or (start not in on_path and segment[start] == segment[node_id]):
            turn_id = start
        else:
            turn_id = f"{start}@{segment[node_id]}"
        index = counters.get(turn_id, 0)
        counters[turn_id] = index + 1
        placed[node_id] = TurnPlace(turn_id, starts_above[node_id] - 1, index)
    return placed


TURN_SCHEMA = {
    "partition": pl.String,
    "session_id": pl.String,
    "turn_id": pl.String,
    "turn_index": pl.Int32,
    "project": pl.String,
    "session_file": pl.String,
    "agent": pl.String,
    "session_started_at": pl.Datetime("ms", "UTC"),
    "started_at": pl.Datetime("ms", "UTC"),
    "ended_at": pl.Datetime("ms", "UTC"),
    "message_count": pl.UInt32,
    "start_role": pl.String,
    "prompt": pl.String,
    "tool_names": pl.List(pl.String),
    "models": pl.List(pl.String),
    "has_error": pl.Boolean,
    "content_hash": pl.String,
}


def group_turns(messages: pl.DataFrame) -> pl.DataFrame:
    """The active path's turns, one row each, in session and turn order."""
    conversation = messages.filter(
        pl.col("on_active_path") & pl.col("turn_id").is_not_null() & ~pl.col("is_metadata")
    ).sort("session_id", "turn_index", "message_index")
    if conversation.is_empty():
        return pl.DataFrame(schema=TURN_SCHEMA)
    when = pl.coalesce("message_timestamp", "entry_timestamp")
    called = pl.col("tool_calls").list.eval(pl.element().struct.field("name"))
    turns = conversation.group_by("session_id", "turn_id", maintain_order=True).agg(
        pl.first("partition"),
        pl.first("turn_index"),
        pl.first("project"),
        pl.first("session_file"),
        pl.first("agent"),
        pl.first("session_started_at"),
        when.min().alias("started_at"),
        when.max().alias("ended_at"),
        pl.len().alias("message_count"),
        pl.first("role").alias("start_role"),
        pl.first("content").alias("prompt"),
        pl.concat_list(called, pl.col("tool_name"))
        .list.drop_nulls()
        .list.explode(keep_nulls=False, empty_as_null=False)
        .unique(maintain_order=True)
        .alias("tool_names"),
        pl.col("model").drop_nulls().unique(maintain_order=True).alias("models"),
        (pl.col("is_error").fill_null(False) | (pl.col("stop_reason") == "error").fill_null(False))
        .any()
        .alias("has_error"),
        _message_text().str.join("\x1e").alias("_text"),
    )
    # sha1 rather than polars' hash: stable across runs and library versions, so a turn is
    # summarised again only when what it says changed.
    hashes = [hashlib.sha1(text.encode()).hexdigest() for text in turns["_text"]]
    return turns.drop("_text").with_columns(pl.Series("content_hash", hashes)).select(list(TURN_SCHEMA))


def _message_text() -> pl.Expr:
    """Everything a message says (role, text, thinking, tool calls), as one string."""
    calls = (
        pl.col("tool_calls")
        .list.eval(
            pl.concat_str(pl.element().struct.field("name"), pl.element().struct.field("arguments"), separator="(")
        )
        .list.join("\x1d")
    )
    return pl.concat_str(
        pl.col("role"),
        pl.col("content").fill_null(""),
        pl.col("thinking").fill_null(""),
        calls.fill_null(""),
        separator="\x1f",
    )
