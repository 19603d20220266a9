"""Reading a day's turns with the LLM: which turns to read (new, changed, failed before, another prompt or
model), what the journal of an earlier run already holds, the reading itself (journaled turn by turn, so a crash
loses at most the turns in flight), and the frame of every turn's outcome. The `llm_ideas` asset is a thin layer
over `read_day`."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass

import polars as pl
from elasticsearch import Elasticsearch

from memory_pipeline.stores.llm import ChatClient
from memory_pipeline.stores.summary_store import OWN_WORDS, read_ledger, read_summaries
from memory_pipeline.summarize.extract import TurnJob, TurnOutcome, summarise_turns
from memory_pipeline.summarize.frames import (
    after_timeout,
    outcome_rows,
    reread_reasons,
    reusable,
    turn_jobs,
    turn_places,
)
from memory_pipeline.summarize.ideas import PROMPT_VERSION
from memory_pipeline.summarize.journal import JournalEntry, TurnJournal
from memory_pipeline.summarize.progress import TurnProgress


@dataclass
class ReadDay:
    """What reading a day's turns did: every turn's outcome (`frame`), the calls made, and why each was made."""

    frame: pl.DataFrame
    outcomes: list[TurnOutcome]
    todo: list[TurnJob]
    why: dict[tuple[str, str], str]
    from_journal: int
    model: str
    context_tokens: int
    seconds: float


def read_day(
    client: ChatClient,
    es: Elasticsearch,
    journal: TurnJournal,
    turns: pl.DataFrame,
    raw_messages: pl.DataFrame,
    partitions: list[str],
    log: logging.Logger | logging.LoggerAdapter,
    *,
    rebuild: bool = False,
    concurrency: int = 1,
    max_output_tokens: int = 512,
    context_tokens: int | None = None,
) -> ReadDay:
    """Read the turns of `partitions` that need it (all with `rebuild`); take the rest from the journal of an
    earlier run or the ledger. Each outcome is journaled as it completes and logged on `log` (a failure as a
    warning, with a progress line for `backfill`); the journal is compacted to the day's outcomes after."""
    model = client.model_id()
    context_tokens = context_tokens or client.context_size() or 4096
    ledger = read_ledger(es, partitions)
    journaled = journal.read(partitions)
    why = reread_reasons(turns, ledger, journaled, model, rebuild)
    wanted = list(why)
    done = reusable(turns, journaled, wanted, model)
    from_journal = len(done)
    jobs = turn_jobs(turns, raw_messages)
    todo = [after_timeout(jobs[key], journaled.get(key) or ledger.get(key)) for key in wanted if key in jobs]
    where = turn_places(turns)
    log.info(
        f"{len(todo)} of {turns.height} turns to read with {model} at {client.base_url} (context {context_tokens} "
        f"tokens, concurrency {concurrency}); {from_journal} taken from the journal of an earlier run"
        + (f"; read because: {dict(Counter(why.values()))}" if why else "")
    )
    begin = time.perf_counter()
    progress = TurnProgress(len(todo))

    def record(outcome: TurnOutcome) -> None:
        key = (outcome.session_id, outcome.turn_id)
        entry = JournalEntry.of(outcome, *where[key], PROMPT_VERSION, model)
        journal.record(entry)
        done[key] = entry
        level = log.warning if outcome.status == "failed" else log.debug
        level(
            f"{outcome.session_id}/{outcome.turn_id}: {outcome.status} ({len(outcome.ideas)} ideas, "
            f"{outcome.seconds:.1f}s){': ' + outcome.reason if outcome.reason else ''}"
        )
        if progress.finished_one():  # turns done, left, time to go: `backfill` shows it beside its bar
            log.info(progress.line())

    outcomes = summarise_turns(
        client,
        todo,
        context_tokens=context_tokens,
        max_output_tokens=max_output_tokens,
        concurrency=concurrency,
        on_done=record,
    )
    seconds = time.perf_counter() - begin
    # What the model said before, for the turns not read again (never the own words a fast run stored).
    stored = [d for d in read_summaries(es, partitions) if d.model != OWN_WORDS] if len(outcomes) < turns.height else []
    frame = outcome_rows(turns, done, ledger, stored, model)
    for partition in partitions:
        journal.compact(partition, [e for e in done.values() if e.partition == partition])
    return ReadDay(frame, outcomes, todo, why, from_journal, model, context_tokens, seconds)
