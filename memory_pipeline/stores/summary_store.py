"""`memory-summary` (one document per idea) and its ledger `memory-summary-turns` (one per turn).

The ledger is what makes summarising incremental: a turn whose content hash,
prompt version and model are recorded as summarised (or as empty) is not sent
to the LLM again. Like `memory-raw`, each partition's documents are kept equal
to what the run produced: new or changed ideas written, vanished ones deleted.

Two writers share the index. A run with the chat model owns a day's documents (`sync_summaries`). A run without
it (the fast path, `backfill --no-llm`) writes, for the turns no model has read yet, what their own words
compose to, marked `model: "own words"` (`sync_own_words`): a rule the person stated is recalled within seconds,
not after the model's hours. The model's reading of a turn replaces them; its run leaves those of turns it did
not see (they arrived after it started) as they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl
from elasticsearch import Elasticsearch
from pydantic import BaseModel
from typing_extensions import TypedDict

from memory_pipeline.stores.elasticsearch import (
    SyncCounts,
    bulk_apply,
    days_except,
    ensure_index,
    stored_sources,
    sync_documents,
)
from memory_pipeline.stores.indices import LEDGER_INDEX, LEDGER_MAPPINGS, SUMMARY_INDEX, SUMMARY_MAPPINGS

# The `model` of a memory composed from its turn's own words by a run without the chat model (see above).
OWN_WORDS = "own words"
_OWN = {"term": {"model": OWN_WORDS}}


class SourceRef(TypedDict):
    session_id: str
    turn_id: str


class SummaryDoc(BaseModel):
    """A `memory-summary` document: one piece of knowledge (its statement in `summary`), citing the turn it
    came from, with the exact words it rests on (`evidence`, said by `evidence_role`)."""

    doc_id: str
    summary: str
    tags: list[str]
    priority: str
    kind: str = "fact"  # rule | decision | gotcha | fact | task
    subject: str = ""
    files: list[str] = []
    evidence: str = ""
    evidence_role: str = ""
    source_refs: list[SourceRef]
    session_id: str
    turn_id: str
    project: str
    agent: str = "pi"  # the coding agent whose session it came from
    partition: str
    established_at: str
    summarized_at: str
    model: str
    prompt_version: str
    turn_content_hash: str


class TurnRecord(BaseModel):
    """A turn's outcome the last time it was read: which turn, of which content, read by which prompt and model,
    with what status. The ledger keeps it in Elasticsearch (`LedgerDoc`), the journal on disk (`JournalEntry`)."""

    session_id: str
    turn_id: str
    partition: str
    content_hash: str
    prompt_version: str
    model: str
    status: str  # summarised | empty | failed
    reason: str | None = None
    summarized_at: str


class LedgerDoc(TurnRecord):
    """What happened to one turn the last time it was read, and how many ideas it gave."""

    ideas: int = 0


def summary_doc_id(session_id: str, turn_id: str, summary: str) -> str:
    return hashlib.sha1(f"{session_id}_{turn_id}_{summary}".encode()).hexdigest()


def ensure_summary_indices(client: Elasticsearch) -> None:
    ensure_index(client, SUMMARY_INDEX, SUMMARY_MAPPINGS)
    ensure_index(client, LEDGER_INDEX, LEDGER_MAPPINGS)


def read_ledger(client: Elasticsearch, partitions: list[str]) -> dict[tuple[str, str], LedgerDoc]:
    if not client.indices.exists(index=LEDGER_INDEX):
        return {}
    docs = stored_sources(client, LEDGER_INDEX, {"terms": {"partition": partitions}})
    ledger = {}
    for source in docs.values():
        source.pop("doc_hash", None)
        entry = LedgerDoc.model_validate(source)
        ledger[(entry.session_id, entry.turn_id)] = entry
    return ledger


def failed_turns_by_day(client: Elasticsearch, partitions: list[str]) -> dict[str, int]:
    """Turns of these days whose last reading failed (listed in the ledger, to be read again), per day."""
    if not partitions or not client.indices.exists(index=LEDGER_INDEX):
        return {}
    answer = client.search(
        index=LEDGER_INDEX,
        size=0,
        query={"bool": {"filter": [{"terms": {"partition": partitions}}, {"term": {"status": "failed"}}]}},
        aggs={"days": {"terms": {"field": "partition", "size": len(partitions)}}},
    )
    return {b["key"]: b["doc_count"] for b in answer["aggregations"]["days"]["buckets"]}


def read_summaries(client: Elasticsearch, partitions: list[str], kept: Sequence[str] = ()) -> list[SummaryDoc]:
    if not client.indices.exists(index=SUMMARY_INDEX):
        return []
    docs = stored_sources(client, SUMMARY_INDEX, days_except(partitions, kept))
    return [
        SummaryDoc.model_validate({k: v for k, v in d.items() if k in SummaryDoc.model_fields}) for d in docs.values()
    ]


@dataclass
class SummarySyncReport:
    written: int
    deleted: int
    unchanged: int
    ledger_writes: int


def sync_summaries(
    client: Elasticsearch,
    ideas: pl.DataFrame,
    turns: pl.DataFrame,
    partitions: list[str],
    kept: Sequence[str] = (),
) -> SummarySyncReport:
    """Make the partitions' summary documents and ledger equal to `ideas` (one row per idea) and `turns`
    (one row per turn outcome); only what differs is written. The sessions `kept` (of a folder no longer
    configured) are left as they are, and so are the own-words memories of turns not in `turns` (a fast run
    indexed them while this run's model read)."""
    ensure_summary_indices(client)
    days = days_except(partitions, kept)
    seen = set(zip(turns["session_id"].to_list(), turns["turn_id"].to_list(), strict=True)) if turns.height else set()
    spared = [doc_id for doc_id, key in own_words_of(client, days).items() if key not in seen]
    summaries = sync_documents(
        client,
        SUMMARY_INDEX,
        {"bool": {"filter": [days], "must_not": [{"ids": {"values": spared}}]}} if spared else days,
        ((row["doc_id"], SummaryDoc.model_validate(row).model_dump()) for row in ideas.iter_rows(named=True)),
        # Partial: the recall stage's vector fields on these documents must survive a metadata change.
        partial=True,
    )
    ledger = sync_documents(
        client,
        LEDGER_INDEX,
        days,
        (
            (f"{row['session_id']}_{row['turn_id']}", LedgerDoc.model_validate(row).model_dump())
            for row in turns.iter_rows(named=True)
        ),
    )
    if summaries.written or summaries.deleted or ledger.written or ledger.deleted:
        client.indices.refresh(index=[SUMMARY_INDEX, LEDGER_INDEX])
    return SummarySyncReport(
        written=summaries.written,
        deleted=summaries.deleted,
        unchanged=summaries.unchanged,
        ledger_writes=ledger.written + ledger.deleted,
    )


TurnKey = tuple[str, str]  # (session_id, turn_id): a turn id alone repeats across sessions (Codex: `L000004`)


def own_words_of(client: Elasticsearch, owned: dict[str, Any]) -> dict[str, TurnKey]:
    """The own-words memories matching `owned`: doc id -> the turn it cites."""
    if not client.indices.exists(index=SUMMARY_INDEX):
        return {}
    query = {"bool": {"filter": [owned, _OWN]}}
    found = stored_sources(client, SUMMARY_INDEX, query, fields=["session_id", "turn_id"])
    return {doc_id: (source.get("session_id", ""), source.get("turn_id", "")) for doc_id, source in found.items()}


def sync_own_words(
    client: Elasticsearch,
    ideas: pl.DataFrame,
    partitions: list[str],
    kept: Sequence[str] = (),
    turns: set[TurnKey] | None = None,
) -> SyncCounts:
    """Make the own-words memories of the partitions equal to `ideas` (one row per idea, `model` OWN_WORDS),
    touching no memory the chat model wrote. A run without the model holds the day's ingest lock from its first
    step to its last and reads the whole day, so it owns every own-words memory of its days (`turns` None: those
    of a turn gone from the sessions go too); a run with the model let the lock go while the model read, so it
    owns only those of its own `turns` (a fast run may have indexed newer ones meanwhile)."""
    ensure_summary_indices(client)
    days = days_except(partitions, kept)
    if turns is None:
        owned = {"bool": {"filter": [days, _OWN]}}
    else:
        mine = [doc_id for doc_id, key in own_words_of(client, days).items() if key in turns]
        owned = {"bool": {"filter": [days, _OWN, {"ids": {"values": mine}}]}}
    counts = sync_documents(
        client,
        SUMMARY_INDEX,
        owned,
        ((row["doc_id"], SummaryDoc.model_validate(row).model_dump()) for row in ideas.iter_rows(named=True)),
        partial=True,
    )
    if counts.written or counts.deleted:
        client.indices.refresh(index=SUMMARY_INDEX)
    return counts


# What replacement by words reads of a memory (`reflect.replacing`).
_CHOICE_FIELDS = ["project", "kind", "summary", "established_at", "superseded_by"]


def choices_of(client: Elasticsearch, projects: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The decisions and rules of the projects, any reader's: doc id -> project, kind, summary, established_at
    and superseded_by."""
    if not projects or not client.indices.exists(index=SUMMARY_INDEX):
        return {}
    query = {"bool": {"filter": [{"terms": {"project": list(projects)}}, {"terms": {"kind": ["decision", "rule"]}}]}}
    return stored_sources(client, SUMMARY_INDEX, query, fields=_CHOICE_FIELDS)


def set_superseded(client: Elasticsearch, marks: dict[str, str | None], index: str = SUMMARY_INDEX) -> int:
    """Write each document's `superseded_by` (None clears it), as partial updates; the count written. Only
    documents still stored: a partial update of one another run deleted meanwhile (a model run's day, a forget)
    would bring a husk of it back."""
    if not marks:
        return 0
    existing = stored_sources(client, index, {"ids": {"values": sorted(marks)}}, fields=[])
    bulk_apply(client, index, [(i, {"superseded_by": marks[i]}) for i in existing], partial=True)
    client.indices.refresh(index=index)
    return len(existing)
