"""Acceptance checks of the PRD, as Dagster asset check results.

Each takes what a run produced and asks Elasticsearch independently; each returns a failing result with the
evidence rather than raising. A check is declared once, by `@acceptance(asset, description)` on its function:
the function's name is the check's name, and `specs(asset)` gives the asset its `check_specs`.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Sequence, Set
from typing import Any, NamedTuple, ParamSpec

import polars as pl
from dagster import AssetCheckResult, AssetCheckSpec, MetadataValue
from elasticsearch import Elasticsearch
from pydantic import ValidationError

from memory_pipeline.stores.followthrough_store import FollowThrough
from memory_pipeline.stores.indices import SUMMARY_INDEX
from memory_pipeline.stores.raw_store import (
    SyncReport,
    index_shortfalls,
    indexed_counts,
    raw_turns,
    read_manifest,
    session_checksums,
    turn_texts,
)
from memory_pipeline.stores.reflect_store import Memory as ReflectedMemory
from memory_pipeline.stores.reflect_store import Reflection, dangling_marks, read_reflections
from memory_pipeline.stores.summary_store import OWN_WORDS, read_ledger, read_summaries
from memory_pipeline.summarize.ideas import Idea
from memory_pipeline.summarize.trust import GROUNDED_AT, TurnText, grounding

P = ParamSpec("P")
_SPECS: dict[str, list[AssetCheckSpec]] = defaultdict(list)


class Verdict(NamedTuple):
    passed: bool
    metadata: dict[str, Any]


def acceptance(asset: str, description: str) -> Callable[[Callable[P, Verdict]], Callable[P, AssetCheckResult]]:
    """Declares a check of `asset`, named after the function, and makes the function return its result."""

    def declare(check: Callable[P, Verdict]) -> Callable[P, AssetCheckResult]:
        _SPECS[asset].append(AssetCheckSpec(check.__name__, asset=asset, description=description))

        @functools.wraps(check)
        def run(*args: P.args, **kwargs: P.kwargs) -> AssetCheckResult:
            passed, metadata = check(*args, **kwargs)
            return AssetCheckResult(check_name=check.__name__, passed=passed, metadata=metadata)

        return run

    return declare


def specs(asset: str) -> list[AssetCheckSpec]:
    """The checks declared for `asset`, for its `check_specs`."""
    return list(_SPECS[asset])


@acceptance("memory_raw_index", "Every turn's messages share one session and have message_index 0..n-1.")
def turn_integrity(messages: pl.DataFrame) -> Verdict:
    """Every turn's messages share one session and have message_index 0..n-1 without gaps."""
    indexed = messages.filter(pl.col("doc_id").is_not_null())
    per_turn = indexed.group_by("session_id", "turn_id").agg(
        pl.len().alias("n"),
        pl.col("message_index").min().alias("lo"),
        pl.col("message_index").max().alias("hi"),
        pl.col("message_index").n_unique().alias("distinct"),
    )
    bad = per_turn.filter((pl.col("lo") != 0) | (pl.col("hi") != pl.col("n") - 1) | (pl.col("distinct") != pl.col("n")))
    # turn ids embed the session's entry ids: one turn id in two sessions would be a grouping bug.
    shared = indexed.group_by("turn_id").agg(pl.col("session_id").n_unique().alias("sessions"))
    duplicate_docs = indexed.height - indexed["doc_id"].n_unique()
    return Verdict(
        passed=bad.is_empty() and duplicate_docs == 0,
        metadata={
            "turns": per_turn.height,
            "turns_with_gaps": bad.height,
            "duplicate_doc_ids": duplicate_docs,
            "turn_ids_in_several_sessions": int((shared["sessions"] > 1).sum()),
            "examples": MetadataValue.json(bad.head(5).to_dicts()),
        },
    )


@acceptance(
    "memory_raw_index", "Every conversation message parsed has a place in a turn: none dropped without being listed."
)
def every_message_placed(messages: pl.DataFrame) -> Verdict:
    """No message is dropped without a word: every conversation message parsed has a document id (a
    place in a turn); what was skipped before that is listed in raw_messages' problems, by file and line."""
    unplaced = messages.filter(pl.col("doc_id").is_null() & ~pl.col("is_metadata"))
    return Verdict(
        passed=unplaced.is_empty(),
        metadata={
            "messages": messages.height,
            "metadata_rows": int(messages["is_metadata"].sum()),
            "unplaced": MetadataValue.json(
                [f"{r['session_file']}:{r['line']}" for r in unplaced.head(20).iter_rows(named=True)]
            ),
        },
    )


@acceptance("memory_raw_index", "Documents in memory-raw equal the messages parsed for the partition.")
def index_equals_messages(
    client: Elasticsearch, messages: pl.DataFrame, partitions: list[str], unread: Set[str] = frozenset()
) -> Verdict:
    """Per session, the documents in memory-raw for these days equal the parsed messages in number (the
    sessions not read this run keep what they had, and are listed instead)."""
    expected = dict(messages.filter(pl.col("doc_id").is_not_null()).group_by("session_id").len().iter_rows())
    actual = {s: n for s, n in indexed_counts(client, partitions).items() if s not in unread}
    differing = {
        s: {"expected": expected.get(s, 0), "indexed": actual.get(s, 0)}
        for s in set(expected) | set(actual)
        if expected.get(s, 0) != actual.get(s, 0)
    }
    return Verdict(
        passed=not differing,
        metadata={
            "expected_documents": sum(expected.values()),
            "indexed_documents": sum(actual.values()),
            "differing_sessions": MetadataValue.json(dict(list(differing.items())[:20])),
            "unread_listed": MetadataValue.json(sorted(unread)[:50]),
        },
    )


@acceptance(
    "memory_raw_index",
    "Per session of the days, memory-raw holds as many documents of its file as the manifest recorded.",
)
def index_equals_manifest(client: Elasticsearch, partitions: list[str]) -> Verdict:
    """What the index holds of each recorded session (its messages still in the file) equals what was recorded
    when the file was indexed: documents deleted from the index behind the pipeline's back fail this check
    (and `backfill` runs the day, which writes them back)."""
    short = index_shortfalls(client, partitions)
    return Verdict(
        passed=not short,
        metadata={
            "sessions_differing": len(short),
            "differing": MetadataValue.json([str(s) for s in list(short.values())[:20]]),
        },
    )


@acceptance("memory_raw_index", "Every session file found is recorded, with its messages indexed.")
def every_file_represented(
    client: Elasticsearch, files: pl.DataFrame, messages: pl.DataFrame, partitions: list[str], unread: Set[str]
) -> Verdict:
    """Every session file found is in the manifest with its fingerprint and its messages are indexed,
    or is listed as unread this time (vanished or unreadable since the scan: retried next run)."""
    manifest = read_manifest(client, partitions)
    counts = indexed_counts(client, partitions)
    with_messages = set(messages.filter(pl.col("doc_id").is_not_null())["session_id"].to_list())
    missing = []
    unread_files = []
    for row in files.iter_rows(named=True):
        if row["session_id"] in unread:
            unread_files.append(row["session_file"])
            continue
        recorded = manifest.get(row["session_id"])
        if recorded is None or recorded[1].fingerprint != row["fingerprint"]:
            missing.append(f"{row['session_file']}: not recorded with its current fingerprint")
        elif row["session_id"] in with_messages and not counts.get(row["session_id"]):
            missing.append(f"{row['session_file']}: no documents in memory-raw")
    return Verdict(
        passed=not missing,
        metadata={
            "files": files.height,
            "missing": MetadataValue.json(missing[:20]),
            "unread_listed": MetadataValue.json(unread_files[:50]),
        },
    )


@acceptance("memory_raw_index", "Running again now would write nothing.")
def rerun_changes_nothing(
    client: Elasticsearch, files: pl.DataFrame, partitions: list[str], report: SyncReport
) -> Verdict:
    """A run now would write nothing: every file is in the manifest with its current fingerprint (so it
    would be skipped), and the sessions just written hold exactly the expected documents (count and a
    checksum of their content hashes, per session, aggregated by Elasticsearch)."""
    manifest = read_manifest(client, partitions)
    stale_files = [
        row["session_file"]
        for row in files.iter_rows(named=True)
        if row["session_id"] not in report.unread_sessions
        and (row["session_id"] not in manifest or manifest[row["session_id"]][1].fingerprint != row["fingerprint"])
    ]
    expected = report.expected
    stored = session_checksums(client, {"terms": {"session_id": report.changed}}) if report.changed else {}
    differing = sorted(s for s in expected if stored.get(s, (0, 0)) != expected[s])
    return Verdict(
        passed=not stale_files and not differing,
        metadata={
            "files_not_recorded": MetadataValue.json(stale_files[:20]),
            "sessions_differing": MetadataValue.json(differing[:20]),
            "sessions_compared": len(report.changed),
        },
    )


# --- summarize ---------------------------------------------------------------------------


@acceptance("memory_summary_index", "Every source_refs pair is a turn in memory-raw.")
def source_refs_exist(client: Elasticsearch, partitions: list[str]) -> Verdict:
    """Every (session_id, turn_id) a stored summary cites is a turn with messages in memory-raw."""
    summaries = read_summaries(client, partitions)
    refs = {(r["session_id"], r["turn_id"]) for doc in summaries for r in doc.source_refs}
    missing = sorted(refs - raw_turns(client, sorted({s for s, _ in refs}))) if refs else []
    return Verdict(
        passed=not missing,
        metadata={"refs": len(refs), "missing": MetadataValue.json([list(m) for m in missing[:20]])},
    )


@acceptance("memory_summary_index", "No doc_id twice, in the run or in the index.")
def no_duplicate_summaries(
    client: Elasticsearch,
    documents: pl.DataFrame,
    partitions: list[str],
    kept: Sequence[str] = (),
    seen: Set[tuple[str, str]] | None = None,
) -> Verdict:
    """No doc_id twice, and the index holds the run's documents: besides them, only the own-words memories of
    turns the run did not see (`seen`: its (session, turn) keys; None: every turn), which a fast run indexed
    while its model read."""
    in_run = documents.height - documents["doc_id"].n_unique() if documents.height else 0
    stored = [  # the sessions of a folder no longer configured aside
        d
        for d in read_summaries(client, partitions, kept)
        if seen is None or d.model != OWN_WORDS or (d.session_id, d.turn_id) in seen
    ]
    in_index = len(stored) - len({d.doc_id for d in stored})
    return Verdict(
        passed=in_run == 0 and in_index == 0 and len(stored) == documents.height,
        metadata={
            "duplicates_in_run": in_run,
            "duplicates_in_index": in_index,
            "documents_in_run": documents.height,
            "documents_in_index": len(stored),
        },
    )


@acceptance("memory_summary_index", "Every stored summary is 1-3 sentences with 3-8 well-formed tags.")
def summaries_well_formed(client: Elasticsearch, partitions: list[str]) -> Verdict:
    """Re-validate what Elasticsearch holds with the same model the LLM's answers went through."""
    bad = []
    for doc in read_summaries(client, partitions):
        try:
            Idea.model_validate({"summary": doc.summary, "tags": doc.tags, "priority": doc.priority})
        except ValidationError as exc:
            bad.append(f"{doc.doc_id}: {exc.errors()[0]['msg']}")
        if any(tag != tag.lower() or " " in tag for tag in doc.tags):
            bad.append(f"{doc.doc_id}: tags not normalised {doc.tags}")
    return Verdict(passed=not bad, metadata={"malformed": MetadataValue.json(bad[:20])})


@acceptance(
    "own_word_memories",
    "The own-words memories are the run's, once each, of turns no model has read as they are, each citing a turn in "
    "memory-raw.",
)
def own_words_in_step(
    client: Elasticsearch,
    documents: pl.DataFrame,
    partitions: list[str],
    kept: Sequence[str] = (),
    turns: Set[tuple[str, str]] | None = None,
) -> Verdict:
    """What the index holds as own words (of `turns`, the run's, when it owned only those) is exactly this run's
    (none twice, none left over), none of them of a turn a model has read as it is now (its memories replace
    them), and each cites a turn with messages in memory-raw."""
    stored = [
        d
        for d in read_summaries(client, partitions, kept)
        if d.model == OWN_WORDS and (turns is None or (d.session_id, d.turn_id) in turns)
    ]
    ledger = read_ledger(client, partitions)
    read_by_model = sorted(
        {
            (d.session_id, d.turn_id)
            for d in stored
            if (entry := ledger.get((d.session_id, d.turn_id))) and entry.content_hash == d.turn_content_hash
        }
    )
    refs = {(d.session_id, d.turn_id) for d in stored}
    missing = sorted(refs - raw_turns(client, sorted({s for s, _ in refs}))) if refs else []
    ids = set(documents["doc_id"].to_list()) if documents.height else set()
    same = len(stored) == len({d.doc_id for d in stored}) == len(ids) and {d.doc_id for d in stored} == ids
    return Verdict(
        passed=same and not read_by_model and not missing,
        metadata={
            "in_index": len(stored),
            "in_run": len(ids),
            "of_turns_a_model_read": MetadataValue.json([list(k) for k in read_by_model[:20]]),
            "refs_missing": MetadataValue.json([list(m) for m in missing[:20]]),
        },
    )


@acceptance("memory_summary_index", "Turns attempted = summarised + skipped empty + failed.")
def attempts_add_up(outcomes: pl.DataFrame) -> Verdict:
    attempted = outcomes.filter(pl.col("llm_calls") > 0)
    counts = dict(attempted.group_by("status").len().iter_rows())
    total = sum(counts.values())
    accounted = counts.get("summarised", 0) + counts.get("empty", 0) + counts.get("failed", 0)
    failures = attempted.filter(pl.col("status") == "failed").select("session_id", "turn_id", "reason").to_dicts()
    return Verdict(
        passed=total == accounted,
        metadata={
            "attempted": total,
            "summarised": counts.get("summarised", 0),
            "skipped_empty": counts.get("empty", 0),
            "failed": counts.get("failed", 0),
            "failures": MetadataValue.json(failures[:20]),
        },
    )


@acceptance("memory_summary_index", "Not every turn of the days failed (no empty success); failed turns are listed.")
def llm_answers_usable(outcomes: pl.DataFrame) -> Verdict:
    """The LLM's work counts for something: days where every turn failed (a model that answers prose, a
    server that refuses every prompt) are not an empty success. A single turn that keeps failing beside
    turns that were read is listed, not a failed day. The rest of the job runs either way."""
    attempted = outcomes.filter(pl.col("llm_calls") > 0)
    failed = outcomes.filter(pl.col("status") == "failed")
    return Verdict(
        passed=outcomes.is_empty() or failed.height < outcomes.height,
        metadata={
            "turns": outcomes.height,
            "attempted_now": attempted.height,
            "failed": failed.height,
            "first_failures": MetadataValue.json(
                [f"{r['session_id']}/{r['turn_id']}: {r['reason']}" for r in failed.head(5).iter_rows(named=True)]
            ),
        },
    )


@acceptance("memory_summary_index", "Every stored idea is supported by its turn in memory-raw (no invented memory).")
def ideas_grounded(client: Elasticsearch, partitions: list[str], edited: set[str] = frozenset()) -> Verdict:
    """Every stored idea is supported by its turn as `memory-raw` holds it (the same test the extraction
    applies, run again on what was stored): an idea the turn does not support fails the check. Ideas a person
    edited (`edited`) are theirs, not the model's, and are not judged."""
    summaries = [doc for doc in read_summaries(client, partitions) if doc.doc_id not in edited]
    texts = turn_texts(client, sorted({doc.session_id for doc in summaries}))
    unsupported = []
    for doc in summaries:
        turn = TurnText.of_roles(texts.get((doc.session_id, doc.turn_id), {}))
        score = grounding(doc.summary, turn.everything)
        if score < GROUNDED_AT:
            unsupported.append(f"{doc.doc_id[:12]} ({score:.2f}): {doc.summary[:120]}")
    return Verdict(
        passed=not unsupported,
        metadata={
            "ideas": len(summaries),
            "edited_by_people": len(edited),
            "unsupported": MetadataValue.json(unsupported[:20]),
            "threshold": GROUNDED_AT,
        },
    )


@acceptance(
    "memory_observations_index",
    "Every observation of the days is in memory-observations with its text, and none other is.",
)
def index_equals_observations(expected: dict[str, str], stored: dict[str, str]) -> Verdict:
    """The observation documents the index holds for the days (sessions of an unconfigured folder aside) are
    the run's, by id and content hash (`recall_store.observation_hashes`): a turn whose observation is missing
    or stale, or an observation of a turn no longer there, fails it (and the next run of the day writes it)."""
    missing = sorted(set(expected) - set(stored))
    stale = sorted(i for i in set(expected) & set(stored) if expected[i] != stored[i])
    extra = sorted(set(stored) - set(expected))
    return Verdict(
        passed=not (missing or stale or extra),
        metadata={
            "expected": len(expected),
            "stored": len(stored),
            # Ids only (session and turn): an observation's text is the session's words.
            "missing": MetadataValue.json(missing[:20]),
            "stale": MetadataValue.json(stale[:20]),
            "not_in_run": MetadataValue.json(extra[:20]),
        },
    )


@acceptance("es_dense_vector", "A kNN query for a summary's own text returns that summary first.")
def knn_finds_itself(found: int, tried: int, coverage: dict[str, tuple[int, int]], sample: int) -> Verdict:
    """A kNN query for a memory's own text returns it first, for every memory tried; and the days' memories
    with vectors were tried (up to `sample` of each index): trying none of them is a failure, not a pass."""
    expected = sum(min(sample, with_vector) for _, with_vector in coverage.values())
    return Verdict(
        passed=tried == expected and found == tried,
        metadata={"found_first": found, "tried": tried, "to_try": expected},
    )


@acceptance(
    "es_dense_vector",
    "Every summary and observation has a vector of the model's dimension, or is listed as refused by the server.",
)
def every_memory_has_a_vector(coverage: dict[str, tuple[int, int]], refused: pl.DataFrame, dims: int) -> Verdict:
    """Per index, the days' memories without a vector are all listed as refused by the embedding server (and
    retried next run); anything else without one is a loss."""
    listed = dict(refused.group_by("index").len().iter_rows()) if refused.height else {}
    missing = {
        index: total - covered - listed.get(index, 0)
        for index, (total, covered) in coverage.items()
        if total - covered > listed.get(index, 0)  # a refused text may still hold its older vector
    }
    return Verdict(
        passed=not missing,
        metadata={
            "without_vector_unlisted": MetadataValue.json(missing),
            "refused_listed": MetadataValue.json(
                [f"{r['index']}/{r['doc_id']}" for r in refused.head(50).iter_rows(named=True)]
            ),
            "dims": dims,
        },
    )


# --- reflect -------------------------------------------------------------------------------


@acceptance("reflections", "Each memory of the days is the source of exactly one reflection.")
def every_memory_reflected_once(stored: list[Reflection], memories: list[ReflectedMemory]) -> Verdict:
    counted: dict[str, int] = defaultdict(int)
    for reflection in stored:
        for source in reflection.source_ids:
            counted[source] += 1
    unreflected = sorted(m.doc_id for m in memories if counted.get(m.doc_id, 0) == 0)
    repeated = sorted(doc_id for doc_id, n in counted.items() if n > 1)
    return Verdict(
        passed=not unreflected and not repeated,
        metadata={"unreflected": MetadataValue.json(unreflected[:20]), "in_two": MetadataValue.json(repeated[:20])},
    )


@acceptance(
    "reflections",
    "Every superseded reflection names a reflection that lists it in `supersedes`, and no memory of these "
    "projects is marked replaced by a reflection or memory that no longer exists.",
)
def supersession_marks_consistent(client: Elasticsearch, stored: list[Reflection], dims: int) -> Verdict:
    superseded = [r for r in stored if r.superseded_by]
    wanted = sorted({r.superseded_by for r in superseded if r.superseded_by})
    by_id = {r.reflection_id: r for r in read_reflections(client, {"ids": {"values": wanted}}, dims)} if wanted else {}
    broken = [
        r.reflection_id
        for r in superseded
        if r.superseded_by not in by_id or r.reflection_id not in by_id[r.superseded_by].supersedes
    ]
    memories = dangling_marks(client, sorted({r.project for r in stored})).get(SUMMARY_INDEX, [])
    return Verdict(
        passed=not broken and not memories,
        metadata={
            "superseded": len(superseded),
            "broken": MetadataValue.json(broken[:20]),
            "memories_marked_by_something_gone": MetadataValue.json(memories[:20]),
        },
    )


@acceptance(
    "memory_followthrough",
    "Every stored follow-through signal of these days cites a turn that has messages in memory-raw, and the "
    "index holds exactly the signals the run derived (a re-run writes nothing new).",
)
def followthrough_cites_turns(client: Elasticsearch, stored: Sequence[FollowThrough], derived: Set[str]) -> Verdict:
    outcomes = [r for r in stored if r.signal != "injected"]
    present = raw_turns(client, sorted({r.session_id for r in outcomes}))
    uncited = sorted(r.doc_id for r in outcomes if (r.session_id, r.turn_id) not in present)
    ids = {r.doc_id for r in stored}
    return Verdict(
        passed=not uncited and ids == set(derived),
        metadata={
            "signals": len(outcomes),
            "deliveries": len(stored) - len(outcomes),
            "citing_a_missing_turn": MetadataValue.json(uncited[:20]),
            "stored_not_derived": len(ids - set(derived)),
            "derived_not_stored": len(set(derived) - ids),
        },
    )
