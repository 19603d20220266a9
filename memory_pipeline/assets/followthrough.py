"""Follow-through: what the sessions after an injection did with each memory they were given."""

import time
from collections import Counter
from datetime import UTC, date, datetime

import polars as pl
from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset
from dagster_elasticsearch import ElasticsearchResource

from memory_pipeline.assets.when import DAILY, runs
from memory_pipeline.checks import followthrough_cites_turns, specs
from memory_pipeline.partitions import daily_assets
from memory_pipeline.reflect.followthrough import decide
from memory_pipeline.reflect.followthrough_model import ModelPass
from memory_pipeline.reflect.followthrough_proposals import candidates_by_project, repeated_correction
from memory_pipeline.reflect.followthrough_records import (
    Turn,
    correction_records,
    delivery_records,
    follow_records,
    given,
    turns_of,
)
from memory_pipeline.reflect.proposals import Candidate, stage
from memory_pipeline.reflect.workspace import ensure_project_dir
from memory_pipeline.resources import (
    DayLocksResource,
    LedgerResource,
    LlamaResource,
    MemoryWorkspaceResource,
    ReflectPolicyResource,
    SessionsResource,
)
from memory_pipeline.stores.followthrough_store import (
    contradictions,
    read_followthrough,
    repeated_corrections,
    sync_followthrough,
)
from memory_pipeline.stores.injections import Injection

FOLLOWTHROUGH = "reflect"


def _needed_injections(ledger: LedgerResource, turns: list[Turn], keys: list[str]) -> tuple[list[Injection], list[str]]:
    """Only the ledger files the days need: the turns' sessions, their projects' earlier sessions, and those that
    may hold a delivery made on the days (the `injected` counter), not every session ever given something."""
    first_day = datetime.combine(date.fromisoformat(min(keys)), datetime.min.time(), UTC)
    return ledger.ledger().every(
        sessions={t.session_id for t in turns}, projects={t.project for t in turns if t.project}, since=first_day
    )


def _propose(
    workspace: MemoryWorkspaceResource,
    proposals: dict[str, list[Candidate]],
    more: dict[str, list[Candidate]],
    day: str,
) -> tuple[list[str], list[str]]:
    """Each project's proposals staged in its REVIEW.md; the ids new and updated."""
    new, updated = [], []
    for project, candidates in more.items():
        proposals.setdefault(project, []).extend(candidates)
    for project, candidates in proposals.items():
        report = stage(ensure_project_dir(workspace.root, project), project, candidates, day)
        new += report.new
        updated += report.updated
    return new, updated


@asset(
    **daily_assets(FOLLOWTHROUGH),
    deps=["memory_raw_index"],
    kinds={"elasticsearch", "markdown"},
    check_specs=specs("memory_followthrough"),
)
@runs(DAILY)
def memory_followthrough(
    context: AssetExecutionContext,
    raw_messages: pl.DataFrame,
    es: ElasticsearchResource,
    ledger: LedgerResource,
    llm: LlamaResource,
    reflect_policy: ReflectPolicyResource,
    sessions: SessionsResource,
    workspace: MemoryWorkspaceResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """`memory-followthrough`: for each turn of the days, the memories the injection ledger says were given
    before it (in its session, or an earlier session of its project), and whether the turn followed, ignored or
    contradicted each, decided from its commands, paths and the person's corrections without the chat model
    (no signal when unsure), with the evidence turn; and one record per delivery of the days (the `injected`
    counter). A memory people contradicted in two sessions is no longer injected and is proposed for an edit or
    a forget, first in REVIEW.md, with both turns."""
    keys = context.partition_keys
    begin = time.perf_counter()
    turns = turns_of(raw_messages)
    injections, unreadable = _needed_injections(ledger, turns, keys)
    for problem in unreadable:
        context.log.warning(problem)
    memories = given(injections)
    redactor = sessions.redactor()
    # The chat model's pass only when set (FOLLOWTHROUGH_MODEL): it never demotes (bench followthrough).
    judge = ModelPass(llm.get_client()) if reflect_policy.followthrough_model and llm.enabled else None
    try:
        records = follow_records(turns, memories, redactor, judge.decide if judge else decide)
    finally:
        if judge:
            judge.chat.close()
    records += delivery_records(injections, keys)
    records += correction_records(turns, memories, redactor)
    with es.get_client() as client:
        counts = sync_followthrough(client, keys, records)
        stored = read_followthrough(client, {"terms": {"partition": keys}})
        check = followthrough_cites_turns(client, stored, {r.doc_id for r in records})
        projects = sorted({t.project for t in turns if t.project})
        demoted = {m: found for p in projects for m, found in contradictions(client, p).items()}
        repeated = {p: [repeated_correction(t) for t in repeated_corrections(client, p).values()] for p in projects}
    new, updated = _propose(workspace, candidates_by_project(demoted), repeated, max(keys))
    signals = Counter(r.signal for r in records)
    by = Counter(r.decided_by for r in records if r.signal not in ("injected", "corrected"))
    context.log.info(
        f"{len(turns)} turns against {len(memories)} given memories: {dict(signals)}; "
        f"{len(demoted)} demoted, proposals {len(new)} new, {len(updated)} updated"
    )
    return MaterializeResult(
        metadata={
            "turns": len(turns),
            "memories_given": len({m.memory_id for m in memories}),
            **{signal: signals.get(signal, 0) for signal in ("injected", "followed", "ignored", "contradicted")},
            "corrections_without_memory": signals.get("corrected", 0),
            "corrections_repeated": sum(len(c) for c in repeated.values()),
            "restated_after_ignored": sum(1 for r in records if r.restated),
            "decided_by": MetadataValue.json(dict(by)),
            "model_calls": judge.calls if judge else 0,
            "model_failures": judge.failures if judge else 0,
            "demoted": len(demoted),
            "proposals_new": MetadataValue.json(new),
            "proposals_updated": MetadataValue.json(updated),
            "unreadable_ledger_lines": len(unreadable),
            "ledger_sessions_read": len({i.session_id for i in injections}),
            "es_written": counts.written,
            "es_deleted": counts.deleted,
            "es_unchanged": counts.unchanged,
            "seconds": round(time.perf_counter() - begin, 2),
        },
        check_results=[check],
    )
