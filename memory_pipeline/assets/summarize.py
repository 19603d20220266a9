"""Summarize: active-path turns -> the local LLM's ideas -> the `memory-summary` index.

Thin wrappers again: prompt building and validation live in
`memory_pipeline.summarize`, the index in `memory_pipeline.stores.summary_store`.
"""

from collections import Counter
from pathlib import Path

import polars as pl
from dagster import (
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
)
from dagster_elasticsearch import ElasticsearchResource
from elasticsearch import Elasticsearch
from pydantic import Field

from memory_pipeline.assets.metadata import preview
from memory_pipeline.assets.when import DAILY, DAILY_WITH_LLM, runs
from memory_pipeline.checks import (
    attempts_add_up,
    ideas_grounded,
    llm_answers_usable,
    no_duplicate_summaries,
    own_words_in_step,
    source_refs_exist,
    specs,
    summaries_well_formed,
)
from memory_pipeline.curation.corrections import corrected_summaries, edited_ids
from memory_pipeline.curation.trail import read_corrections
from memory_pipeline.partitions import daily_assets, uses_llm
from memory_pipeline.reflect.replacing import OBSERVATION, Stated, mark_changes, replaced_names
from memory_pipeline.resources import DayLocksResource, LlamaResource, MemoryWorkspaceResource, SessionsResource
from memory_pipeline.stores.indices import OBSERVATION_INDEX
from memory_pipeline.stores.raw_store import elsewhere_sessions
from memory_pipeline.stores.recall_store import observations_marked_or_naming
from memory_pipeline.stores.reflect_store import clear_dangling_marks
from memory_pipeline.stores.summary_store import (
    choices_of,
    read_ledger,
    set_superseded,
    sync_own_words,
    sync_summaries,
)
from memory_pipeline.summarize.extract import UNREAD, timed_out
from memory_pipeline.summarize.frames import ledger_rows, own_word_outcomes
from memory_pipeline.summarize.journal import TurnJournal
from memory_pipeline.summarize.reading import read_day

SUMMARIZE = "summarize"
_common = daily_assets(SUMMARIZE)


class LlmIdeasConfig(Config):
    rebuild: bool = Field(False, description="Summarise every turn again, ignoring what was recorded.")
    concurrency: int = Field(1, ge=1, le=16, description="Turns in flight at once (the server's slots).")
    max_output_tokens: int = Field(512, ge=64, le=4096, description="Token limit of one answer.")
    context_tokens: int | None = Field(None, description="Prompt budget; default: what the server reports.")


@asset(**_common, kinds={"polars", "llm"})
@runs(DAILY_WITH_LLM)
def llm_ideas(
    context: AssetExecutionContext,
    config: LlmIdeasConfig,
    turns: pl.DataFrame,
    raw_messages: pl.DataFrame,
    llm: LlamaResource,
    es: ElasticsearchResource,
    day_locks: DayLocksResource,  # the LLM-free lock let go while the model reads: a fast run goes ahead
) -> Output[pl.DataFrame]:
    """For each active-path turn, the ideas the LLM says a future session should know (summary, tags,
    priority), or none. A turn is read once per (content, prompt version, model): unchanged turns keep
    what was recorded and cost no call, and each outcome is journaled as it completes, so a crash loses
    at most the turns in flight. A turn the server refuses or answers badly is listed as failed (and
    retried next run); only an unreachable server fails the run. While it reads, a fast run of the same days
    may index their newest turns (the later steps of this run wait for it, then index what it left)."""
    with day_locks.calling_the_llm(), llm.get_client() as client, es.get_client() as es_client:
        read = read_day(
            client,
            es_client,
            TurnJournal(Path(llm.journal_dir)),
            turns,
            raw_messages,
            context.partition_keys,
            context.log,
            rebuild=config.rebuild,
            concurrency=config.concurrency,
            max_output_tokens=config.max_output_tokens,
            context_tokens=config.context_tokens,
        )
    frame, outcomes, todo, why, seconds = read.frame, read.outcomes, read.todo, read.why, read.seconds
    statuses = Counter(o.status for o in outcomes)
    failed = frame.filter(pl.col("status") == "failed")
    failures = [f"{r['session_id']}/{r['turn_id']}: {r['reason']}" for r in failed.iter_rows(named=True)]
    if failures:
        context.log.warning(f"{len(failures)} turns failed and are listed; they are read again next run")
    generation = sum(o.generation_seconds for o in outcomes)
    return Output(
        frame,
        metadata={
            "turns": turns.height,
            "attempted": len(todo),
            "summarised": statuses["summarised"],
            "skipped_empty": statuses["empty"],
            # Turns the gate before the model found no knowledge in: read from their own words, no request.
            "not_read_by_model": sum(o.reason == UNREAD for o in outcomes),
            "failed": len(failures),
            # Turns the server did not answer in time: read again next run with half the prompt.
            "timed_out": sum(timed_out(o.reason) for o in outcomes if o.status == "failed"),
            "failures": MetadataValue.json(failures[:100]),
            "from_journal": read.from_journal,
            "reused": turns.height - len(todo),
            # Why each read turn was read: new, changed, failed before, another prompt or model, rebuild.
            "read_because": MetadataValue.json(dict(Counter(why[(j.session_id, j.turn_id)] for j in todo))),
            "llm_calls": sum(o.attempts for o in outcomes),
            "ideas": int(frame["ideas"].list.len().sum()),
            "ideas_dropped": MetadataValue.json(dict(Counter(why for o in outcomes for why, _ in o.dropped))),
            # Where, not what: a dropped memory's text is the session's words, which metadata never holds.
            "ideas_dropped_at": MetadataValue.json(
                [f"{o.session_id}/{o.turn_id}: {why}" for o in outcomes for why, _ in o.dropped][:30]
            ),
            "ideas_demoted": sum(o.demoted for o in outcomes),
            # Memories that said what their evidence does not, composed again from the evidence, by reason.
            "ideas_recomposed": MetadataValue.json(dict(Counter(why for o in outcomes for why, _ in o.recomposed))),
            "memories_added": sum(o.added for o in outcomes),
            "model": read.model,
            "llm_url": llm.url,
            "context_tokens": read.context_tokens,
            "prompt_tokens": sum(o.prompt_tokens for o in outcomes),
            "completion_tokens": sum(o.completion_tokens for o in outcomes),
            "seconds": round(seconds, 2),
            "turns_per_second": round(len(todo) / seconds, 3) if todo and seconds else 0,
            "server_generation_seconds": round(generation, 2),
            "preview": preview(
                frame.with_columns(pl.col("ideas").list.len().alias("n_ideas")),
                ["session_id", "turn_id", "status", "n_ideas", "llm_calls"],
            ),
        },
    )


@asset(**_common, kinds={"elasticsearch"}, check_specs=specs("memory_summary_index"), deps=["memory_raw_index"])
@runs(DAILY_WITH_LLM)
def memory_summary_index(
    context: AssetExecutionContext,
    llm_ideas: pl.DataFrame,
    es: ElasticsearchResource,
    workspace: MemoryWorkspaceResource,
    sessions: SessionsResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """`memory-summary`: one document per idea (id: a hash of session, turn and summary) with its priority,
    tags and `source_refs` back to the turn in `memory-raw`; plus the ledger of what each turn gave.
    Re-running with the same ideas writes nothing; a turn's changed ideas replace its old ones."""
    keys = context.partition_keys
    with es.get_client() as client:
        # What people edited stays edited, and what they forgot stays forgotten, however often the day runs.
        corrections = read_corrections(workspace.root)
        documents = corrected_summaries(llm_ideas, corrections)
        # The memories of a folder no longer configured stay as they are (`folders --forget` removes them).
        kept = elsewhere_sessions(client, keys, {str(root.path) for root in sessions.roots})
        report = sync_summaries(client, documents, ledger_rows(llm_ideas), keys, kept)
        checks = [
            source_refs_exist(client, keys),
            no_duplicate_summaries(
                client, documents, keys, kept, set(zip(llm_ideas["session_id"], llm_ideas["turn_id"], strict=True))
            ),
            summaries_well_formed(client, keys),
            attempts_add_up(llm_ideas),
            llm_answers_usable(llm_ideas),
            # Human edits are the person's words: the check judges what the model wrote.
            ideas_grounded(client, keys, edited=edited_ids(documents, corrections)),
        ]
    return MaterializeResult(
        metadata={
            "summaries": documents.height,
            "written": report.written,
            "deleted": report.deleted,
            "unchanged": report.unchanged,
            "ledger_writes": report.ledger_writes,
            "by_priority": MetadataValue.json(
                dict(Counter(documents["priority"].to_list())) if documents.height else {}
            ),
            "preview": preview(documents, ["priority", "summary", "tags"]) if documents.height else "none",
        },
        check_results=checks,
    )


def replaced_by_words(client: Elasticsearch, projects: list[str]) -> dict[str, str | None]:
    """Mark the projects' decisions, rules and observations a later decision replaces by its words
    (`reflect.replacing`), and clear such marks no longer made (their replacing memory gone, or reworded):
    document id -> the mark written. Reflection's marks are left to reflection."""
    clear_dangling_marks(client, projects)
    memories = [Stated(id=doc_id, **source) for doc_id, source in choices_of(client, projects).items()]
    observations = [
        Stated(id=doc_id, **source, kind=OBSERVATION)
        for doc_id, source in observations_marked_or_naming(client, projects, replaced_names(memories)).items()
    ]
    changes = mark_changes([*memories, *observations])
    on_observations = {o.id for o in observations}
    set_superseded(client, {k: v for k, v in changes.items() if k not in on_observations})
    set_superseded(client, {k: v for k, v in changes.items() if k in on_observations}, index=OBSERVATION_INDEX)
    return changes


@asset(
    **_common,
    kinds={"elasticsearch"},
    check_specs=specs("own_word_memories"),
    # After the model's memories of a full run: the turns it read are then in the ledger, and left to it; after
    # the day's observations, which a later decision may mark replaced.
    deps=["memory_raw_index", "memory_summary_index", "memory_observations_index"],
)
@runs(DAILY)
def own_word_memories(
    context: AssetExecutionContext,
    turns: pl.DataFrame,
    raw_messages: pl.DataFrame,
    es: ElasticsearchResource,
    workspace: MemoryWorkspaceResource,
    sessions: SessionsResource,
    day_locks: DayLocksResource,  # held for the whole run: the model's run writes the day's memories in between
) -> MaterializeResult:
    """`memory-summary` documents (model "own words") for the turns no chat model has read yet: what their own
    words compose to (the person's rules and decisions, the findings and facts the turn states), through the same
    faithfulness checks and learned gate as the model's memories. A run without the chat model (the fast path at
    a turn's end, `backfill --no-llm`) makes a stated rule recallable within seconds instead of after the model's
    hours on a long history; the model's reading of a turn replaces them. A decision that names what it replaced
    marks the earlier choice of that subject replaced at once (`replaced_by_words`), so it is not briefed as
    current."""
    keys = context.partition_keys
    with es.get_client() as client:
        outcomes = own_word_outcomes(turns, raw_messages, read_ledger(client, keys))
        corrections = read_corrections(workspace.root)
        documents = corrected_summaries(outcomes, corrections)
        kept = elsewhere_sessions(client, keys, {str(root.path) for root in sessions.roots})
        # Without the model the run held the day's lock throughout and read the whole day: every own-words memory
        # of it is its own. With the model, only its turns' (a fast run may have indexed newer ones meanwhile).
        mine = (
            set(zip(turns["session_id"], turns["turn_id"], strict=True))
            if uses_llm(context.job_def.asset_layer.selected_asset_keys)
            else None
        )
        counts = sync_own_words(client, documents, keys, kept, mine)
        check = own_words_in_step(client, documents, keys, kept, mine)
        marks = replaced_by_words(client, sorted(set(turns["project"].to_list())))
    return MaterializeResult(
        metadata={
            "turns_not_read_by_a_model": outcomes.height,
            "memories": documents.height,
            "written": counts.written,
            "deleted": counts.deleted,
            "unchanged": counts.unchanged,
            "by_kind": MetadataValue.json(dict(Counter(documents["kind"].to_list())) if documents.height else {}),
            "replaced_marked": sum(1 for target in marks.values() if target),
            "replaced_unmarked": sum(1 for target in marks.values() if not target),
        },
        check_results=[check],
    )
