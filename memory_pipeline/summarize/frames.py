"""Between the turn frames, the LLM and the summary index: which turns to read, and the result rows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

import polars as pl

from memory_pipeline.stores.summary_store import OWN_WORDS, LedgerDoc, SummaryDoc, TurnRecord, summary_doc_id
from memory_pipeline.summarize.extract import SMALLER_AFTER_TIMEOUT, TurnJob, read_without_model, timed_out
from memory_pipeline.summarize.ideas import PROMPT_VERSION
from memory_pipeline.summarize.journal import JournalEntry
from memory_pipeline.summarize.prompt import TurnMessage

_IDEA = pl.Struct(
    {
        "summary": pl.String,
        "tags": pl.List(pl.String),
        "priority": pl.String,
        "kind": pl.String,
        "subject": pl.String,
        "files": pl.List(pl.String),
        "evidence": pl.String,
        "evidence_role": pl.String,
    }
)
IDEA_FIELDS = tuple(_IDEA.to_schema())
OUTCOME_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "partition": pl.String,
    "session_id": pl.String,
    "turn_id": pl.String,
    "project": pl.String,
    "agent": pl.String,
    "established_at": pl.String,
    "content_hash": pl.String,
    "prompt_version": pl.String,
    "model": pl.String,
    "status": pl.String,
    "reason": pl.String,
    "ideas": pl.List(_IDEA),
    "summarized_at": pl.String,
    "llm_calls": pl.Int32,
    "seconds": pl.Float64,
    "prompt_tokens": pl.Int64,
    "completion_tokens": pl.Int64,
    "generation_seconds": pl.Float64,
}
DONE = frozenset({"summarised", "empty"})


def turn_jobs(turns: pl.DataFrame, messages: pl.DataFrame) -> dict[tuple[str, str], TurnJob]:
    """What the LLM reads for each active-path turn: its messages in order (system prompts excluded)."""
    conversation = messages.filter(pl.col("on_active_path") & ~pl.col("is_metadata") & pl.col("turn_id").is_not_null())
    grouped: dict[tuple[str, str], list[TurnMessage]] = {}
    for row in conversation.sort("session_id", "turn_index", "message_index").iter_rows(named=True):
        grouped.setdefault((row["session_id"], row["turn_id"]), []).append(
            TurnMessage(
                role=row["role"],
                content=row["content"] or "",
                tool_name=row["tool_name"],
                tool_calls=row["tool_calls"] or [],
                custom_type=row["custom_type"],
                error_message=row["error_message"],
            )
        )
    projects = dict(zip(zip(turns["session_id"], turns["turn_id"], strict=True), turns["project"], strict=True))
    return {
        key: TurnJob(key[0], key[1], projects.get(key, ""), msgs) for key, msgs in grouped.items() if key in projects
    }


def after_timeout(job: TurnJob, earlier: TurnRecord | None) -> TurnJob:
    """The job as it is read this time: with a smaller prompt when the server timed out on it last time."""
    if earlier is not None and earlier.status == "failed" and timed_out(earlier.reason):
        return replace(job, prompt_share=SMALLER_AFTER_TIMEOUT)
    return job


def _fresh(entry: TurnRecord | None, content_hash: str, model: str) -> bool:
    return entry is not None and reread_reason(entry, content_hash, model) is None


def reread_reason(entry: TurnRecord | None, content_hash: str, model: str) -> str | None:
    """Why a turn must be read again given what was recorded for it, or None when the record stands."""
    if entry is None:
        return "new turn"
    if entry.status not in DONE:
        return "failed before"
    if entry.content_hash != content_hash:
        return "content changed"
    if entry.prompt_version != PROMPT_VERSION:
        return f"prompt changed ({entry.prompt_version} -> {PROMPT_VERSION})"
    if entry.model != model:
        return f"model changed ({entry.model} -> {model})"
    return None


def reread_reasons(
    turns: pl.DataFrame,
    ledger: dict[tuple[str, str], LedgerDoc],
    journal: dict[tuple[str, str], JournalEntry],
    model: str,
    rebuild: bool,
) -> dict[tuple[str, str], str]:
    """Turns to (re)read, each with why: new, changed content, another prompt version or model, failed
    before, or all on rebuild. A turn finished by a run that then crashed is in the journal, and is not read
    again."""
    wanted: dict[tuple[str, str], str] = {}
    for session_id, turn_id, content_hash in turns.select("session_id", "turn_id", "content_hash").iter_rows():
        key = (session_id, turn_id)
        if rebuild:
            wanted[key] = "rebuild"
        elif not _fresh(journal.get(key), content_hash, model):
            reason = reread_reason(ledger.get(key), content_hash, model)
            if reason:
                wanted[key] = reason
    return wanted


def reusable(
    turns: pl.DataFrame, journal: dict[tuple[str, str], JournalEntry], wanted: list[tuple[str, str]], model: str
) -> dict[tuple[str, str], JournalEntry]:
    """The journal's outcomes that stand for turns not read now: they cost no LLM call in this run."""
    skip = set(wanted)
    free = {"llm_calls": 0, "seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "generation_seconds": 0.0}
    return {
        key: journal[key].model_copy(update=free)
        for key, content_hash in zip(
            zip(turns["session_id"], turns["turn_id"], strict=True), turns["content_hash"], strict=True
        )
        if key not in skip and _fresh(journal.get(key), content_hash, model)
    }


def outcome_rows(
    turns: pl.DataFrame,
    done: dict[tuple[str, str], JournalEntry],
    ledger: dict[tuple[str, str], LedgerDoc],
    stored: Iterable[SummaryDoc],
    model: str,
) -> pl.DataFrame:
    """One row per turn of `turns`: what the LLM said in this run or a crashed one (`done`), what it said
    before for unchanged turns (the ledger), or, for a turn with nothing to read, a failure saying so."""
    previous: dict[tuple[str, str], list[dict]] = {}
    for doc in stored:
        previous.setdefault((doc.session_id, doc.turn_id), []).append(doc.model_dump(include=set(IDEA_FIELDS)))
    nothing = {"llm_calls": 0, "seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "generation_seconds": 0.0}
    rows = []
    for turn in turns.iter_rows(named=True):
        key = (turn["session_id"], turn["turn_id"])
        base = {
            "partition": turn["partition"],
            "session_id": key[0],
            "turn_id": key[1],
            "project": turn["project"],
            "agent": turn.get("agent") or "pi",
            "established_at": _iso(turn["started_at"] or turn["session_started_at"]),
            "content_hash": turn["content_hash"],
        }
        if key in done:
            entry = done[key].model_dump(include=set(OUTCOME_SCHEMA) - set(base))
            rows.append(base | entry | {"ideas": sorted(entry["ideas"], key=lambda i: i["summary"])})
        elif key in ledger:
            entry = ledger[key]
            rows.append(
                base
                | nothing
                | {
                    "prompt_version": entry.prompt_version,
                    "model": entry.model,
                    "status": entry.status,
                    "reason": entry.reason,
                    "ideas": sorted(previous.get(key, []), key=lambda i: i["summary"]),
                    "summarized_at": entry.summarized_at,
                }
            )
        else:
            rows.append(
                base
                | nothing
                | {
                    "prompt_version": PROMPT_VERSION,
                    "model": model,
                    "status": "failed",
                    "reason": "no conversation messages to read in this turn",
                    "ideas": [],
                    "summarized_at": "",
                }
            )
    return pl.DataFrame(rows, schema=OUTCOME_SCHEMA) if rows else pl.DataFrame(schema=OUTCOME_SCHEMA)


def turn_places(turns: pl.DataFrame) -> dict[tuple[str, str], tuple[str, str]]:
    """(partition, content hash) of each turn of `turns`, by (session, turn): what a journal entry records."""
    return {
        (s, t): (p, h) for s, t, p, h in turns.select("session_id", "turn_id", "partition", "content_hash").iter_rows()
    }


def own_word_outcomes(
    turns: pl.DataFrame, messages: pl.DataFrame, ledger: dict[tuple[str, str], LedgerDoc]
) -> pl.DataFrame:
    """One row per turn that no chat model has read as it is now (none in `ledger`, or its content changed
    since) and that has words to read: what its own words compose to (`extract.read_without_model`), shaped as
    `outcome_rows` shapes a turn, its model `OWN_WORDS`. A turn whose reading failed is not among them: the
    model's run stored its own words already."""
    places = turn_places(turns)
    done = {
        key: JournalEntry.of(read_without_model(job), *places[key], PROMPT_VERSION, OWN_WORDS)
        for key, job in turn_jobs(turns, messages).items()
        if key not in ledger or ledger[key].content_hash != places[key][1]
    }
    read = [key in done for key in zip(turns["session_id"].to_list(), turns["turn_id"].to_list(), strict=True)]
    outcomes = outcome_rows(turns.filter(pl.Series(read, dtype=pl.Boolean)), done, {}, [], OWN_WORDS)
    # Dated by their turn, not by the run: a run that composes the same memories again writes nothing.
    return outcomes.with_columns(pl.col("established_at").alias("summarized_at"))


def _iso(value: datetime | None) -> str:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z") if value else ""


def summary_documents(outcomes: pl.DataFrame) -> pl.DataFrame:
    """One row per idea, shaped as a `SummaryDoc`."""
    rows = []
    # A failed turn's memories are its own words only (`extract._own_words_only`), replaced when it is read again.
    for turn in outcomes.filter(pl.col("status") != "empty").iter_rows(named=True):
        for idea in turn["ideas"]:
            rows.append(
                SummaryDoc(
                    doc_id=summary_doc_id(turn["session_id"], turn["turn_id"], idea["summary"]),
                    **{name: idea[name] for name in IDEA_FIELDS if idea.get(name) is not None},
                    source_refs=[{"session_id": turn["session_id"], "turn_id": turn["turn_id"]}],
                    session_id=turn["session_id"],
                    turn_id=turn["turn_id"],
                    project=turn["project"],
                    agent=turn.get("agent") or "pi",
                    partition=turn["partition"],
                    established_at=turn["established_at"],
                    summarized_at=turn["summarized_at"],
                    model=turn["model"],
                    prompt_version=turn["prompt_version"],
                    turn_content_hash=turn["content_hash"],
                ).model_dump()
            )
    columns = list(SummaryDoc.model_fields)
    return pl.DataFrame(rows) if rows else pl.DataFrame(schema={c: pl.String for c in columns})


def ledger_rows(outcomes: pl.DataFrame) -> pl.DataFrame:
    """One ledger row per turn outcome (failed turns are recorded too, and retried next run)."""
    return outcomes.select(
        "session_id",
        "turn_id",
        "partition",
        "content_hash",
        "prompt_version",
        "model",
        "status",
        "reason",
        pl.col("ideas").list.len().cast(pl.Int32).alias("ideas"),
        "summarized_at",
    )
