"""Reflect: the slower, judging half. The daily log first (plain files, no Elasticsearch), then condensed
reflections, proposals staged in REVIEW.md for a human, the maturity of promoted rules, and the weekly
friction report."""

import time
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock_time

import polars as pl
from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster_elasticsearch import ElasticsearchResource
from elasticsearch import Elasticsearch
from pydantic import Field

from memory_pipeline.assets.metadata import preview
from memory_pipeline.assets.when import DAILY_WITH_LLM, WEEKLY, runs
from memory_pipeline.checks import every_memory_reflected_once, specs, supersession_marks_consistent
from memory_pipeline.curation.corrections import corrected_summaries
from memory_pipeline.curation.trail import read_corrections
from memory_pipeline.partitions import daily_assets, session_weeks
from memory_pipeline.reflect.condense import Condenser, WindowResult, group_windows, reflect_windows
from memory_pipeline.reflect.friction import find_friction, render_report
from memory_pipeline.reflect.maturity import maturity, promoted_ids, proposal_day, rule_support, write_levels
from memory_pipeline.reflect.proposals import Candidate, auto_promote, from_reflections, load_registry, stage
from memory_pipeline.reflect.review import apply_review
from memory_pipeline.reflect.workspace import ensure_project_dir, write_daily_log
from memory_pipeline.resources import (
    DayLocksResource,
    EmbeddingsResource,
    LlamaResource,
    MemoryWorkspaceResource,
    ReflectPolicyResource,
)
from memory_pipeline.stores.reflect_store import (
    Memory,
    Reflection,
    active_reflections_before,
    read_memories,
    read_messages,
    read_reflections,
    read_summary_sources,
    rule_evidence,
    superseded_memories,
    sync_reflections,
)

REFLECT = "reflect"
FRICTION = "friction"
FRICTION_SECTIONS = {"repeated-rule": "Hard rules", "recurring-failure": "Gotchas", "tool-misuse": "Patterns"}


def _as_of(configured: str | None, keys: list[str]) -> date:
    """The day ages are counted from: configured, else today (UTC), never before the last partition."""
    day = date.fromisoformat(configured) if configured else datetime.now(UTC).date()
    return max(day, date.fromisoformat(max(keys)))


@asset(**daily_assets(REFLECT), kinds={"markdown"})
@runs(DAILY_WITH_LLM)
def daily_log(
    context: AssetExecutionContext,
    llm_ideas: pl.DataFrame,
    workspace: MemoryWorkspaceResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """`<workspace>/<project>/daily/<day>.md`: the day's ideas by priority, with their ids and source
    sessions, as people corrected them (forgotten ones left out); what the review loop rejects is archived at
    its end. Written from the LLM's ideas directly,
    before anything else of the day's reflection, so a reader has it even when Elasticsearch is down."""
    ideas = corrected_summaries(llm_ideas, read_corrections(workspace.root))
    written, unchanged = [], 0
    for project, day in llm_ideas.select("project", "partition").unique().sort("project", "partition").iter_rows():
        rows = ideas.filter((pl.col("project") == project) & (pl.col("partition") == day)) if ideas.height else ideas
        path, changed = write_daily_log(workspace.root, project, day, rows.to_dicts())
        if changed:
            written.append(str(path))
        else:
            unchanged += 1
    context.log.info(f"daily logs: {len(written)} written, {unchanged} unchanged under {workspace.root}")
    return MaterializeResult(
        metadata={
            "written": len(written),
            "unchanged": unchanged,
            "files": MetadataValue.json(written[:50]),
            "workspace": str(workspace.root),
        }
    )


def _reflections_around(
    client: Elasticsearch, windows: dict[tuple[str, str], list[Memory]], starts: list[str], dims: int, rebuild: bool
) -> tuple[dict[tuple[str, str], list[Reflection]], dict[str, list[Reflection]]]:
    """The reflections stored for the windows (each of their windows added to `windows`; none kept with
    `rebuild`), and each project's active reflections from before them."""
    stored: dict[tuple[str, str], list[Reflection]] = defaultdict(list)
    for reflection in read_reflections(client, {"terms": {"partition": starts}}, dims):
        stored[(reflection.project, reflection.partition)].append(reflection)
        windows.setdefault((reflection.project, reflection.partition), [])
    in_windows = [r.reflection_id for found in stored.values() for r in found]
    if rebuild:
        stored.clear()
    earlier: dict[str, list[Reflection]] = defaultdict(list)
    for reflection in active_reflections_before(
        client, sorted({p for p, _ in windows}), starts[0], dims, recomputing=in_windows
    ):
        earlier[reflection.project].append(reflection)
    return stored, earlier


def _by_tier(computed: list[WindowResult]) -> dict[str, dict[str, float]]:
    """Memories in and reflections out per age tier, and their ratio."""
    tiers: dict[str, dict[str, float]] = defaultdict(lambda: {"memories": 0, "reflections": 0})
    for result in computed:
        tiers[result.tier]["memories"] += result.memories
        tiers[result.tier]["reflections"] += len(result.reflections)
    for tier in tiers.values():
        tier["ratio"] = round(tier["memories"] / tier["reflections"], 2) if tier["reflections"] else 0.0
    return dict(tiers)


class ReflectionsConfig(Config):
    as_of: str | None = Field(None, description="YYYY-MM-DD ages are counted from; default today (UTC).")
    rebuild: bool = Field(False, description="Condense every window again, even unchanged ones.")


@asset(
    **daily_assets(REFLECT),
    deps=[daily_log, "es_dense_vector"],
    kinds={"elasticsearch"},
    check_specs=specs("reflections"),
)
@runs(DAILY_WITH_LLM)
def reflections(
    context: AssetExecutionContext,
    config: ReflectionsConfig,
    es: ElasticsearchResource,
    llm: LlamaResource,
    embedder: EmbeddingsResource,
    reflect_policy: ReflectPolicyResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """`memory-reflections`: per project and window (a day by default), the memories condensed — near-duplicates
    merged with all their sources, older windows compressed harder, and decisions replaced by later ones marked
    superseded (both kept). Every reflection keeps the ids of the memories it came from."""
    keys = context.partition_keys
    policy = reflect_policy.reflect_policy()
    # A window longer than a day is reflected whole, from every day of it, whichever of its days ran.
    starts, days = policy.window_days_of(keys)
    as_of = _as_of(config.as_of, keys)
    begin = time.perf_counter()
    with embedder.get_client() as embed_client, es.get_client() as client, llm.get_client() as chat:
        dims = embed_client.dimensions()
        memories, missing = read_memories(client, days, dims)
        if missing:
            raise Failure(
                f"{missing} memories of {days[0]}..{days[-1]} have no vector_{dims}: materialise es_dense_vector first"
            )
        windows = group_windows(memories, policy)
        stored, earlier = _reflections_around(client, windows, starts, dims, config.rebuild)
        condenser = Condenser(chat)
        results = reflect_windows(windows, earlier, stored, as_of, policy, condenser, chat.model_id())
        fresh = [r for result in results for r in result.reflections]
        recomputed = [(r.project, r.partition) for r in results if not r.reused]
        supersessions = [s for result in results for s in result.supersessions]
        unmarked = [rid for result in results for rid in result.unmarked]
        counts = sync_reflections(client, fresh, recomputed, supersessions, dims, unmarked)
        stored_now = read_reflections(client, {"terms": {"partition": starts}}, dims)
        check_results = [
            every_memory_reflected_once(stored_now, memories),
            supersession_marks_consistent(client, stored_now, dims),
        ]
    seconds = time.perf_counter() - begin
    computed = [r for r in results if not r.reused]
    memories_in = sum(r.memories for r in computed)
    reflections_out = sum(len(r.reflections) for r in computed)
    context.log.info(
        f"{memories_in} memories -> {reflections_out} reflections in {len(computed)} windows "
        f"({len(results) - len(computed)} unchanged), {len(supersessions)} superseded, {condenser.calls} LLM calls"
    )
    frame = pl.DataFrame(
        [{"reflection_id": r.reflection_id, "kind": r.kind, "sources": len(r.source_ids), "summary": r.summary}
         for r in fresh],
        schema={"reflection_id": pl.String, "kind": pl.String, "sources": pl.Int64, "summary": pl.String},
    )  # fmt: skip
    return MaterializeResult(
        metadata={
            "memories_in": memories_in,
            "reflections_out": reflections_out,
            "compression_ratio": round(memories_in / reflections_out, 2) if reflections_out else 0.0,
            "merged": sum(1 for r in fresh if r.kind == "merged"),
            "digests": sum(1 for r in fresh if r.kind == "digest"),
            "by_tier": MetadataValue.json(_by_tier(computed)),
            "superseded": MetadataValue.json([s.model_dump() for s in supersessions]),
            "windows_unchanged": len(results) - len(computed),
            "llm_calls": condenser.calls,
            "llm_fallbacks": MetadataValue.json(dict(condenser.fallbacks)),
            "as_of": as_of.isoformat(),
            "seconds": round(seconds, 2),
            **{f"es_{k}": v for k, v in counts.items()},
            "preview": preview(frame, ["kind", "sources", "summary"]),
        },
        check_results=check_results,
    )


@asset(**daily_assets(REFLECT), deps=[reflections], kinds={"markdown"})
@runs(DAILY_WITH_LLM)
def review_proposals(
    context: AssetExecutionContext,
    es: ElasticsearchResource,
    embedder: EmbeddingsResource,
    workspace: MemoryWorkspaceResource,
    reflect_policy: ReflectPolicyResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """`<workspace>/<project>/REVIEW.md`: what the days' high-priority reflections propose for the curated
    memory, by section (hard rules, patterns, gotchas, decisions), each a checkbox with a stable
    `p-YYYYMMDD-NNN` id and its evidence; never written into MEMORY.md without a human (or auto-promotion,
    off by default)."""
    keys = context.partition_keys
    starts, _ = reflect_policy.reflect_policy().window_days_of(keys)
    with embedder.get_client() as embed_client, es.get_client() as client:
        dims = embed_client.dimensions()
        stored = read_reflections(client, {"terms": {"partition": starts}}, dims)
        by_project: dict[str, list[Reflection]] = defaultdict(list)
        for reflection in stored:
            by_project[reflection.project].append(reflection)
        replaced = {project: superseded_memories(client, project) for project in by_project}
    new, updated, flagged, decided, promoted = [], [], [], 0, []
    for project, items in sorted(by_project.items()):
        folder = ensure_project_dir(workspace.root, project)
        for day in sorted({r.partition for r in items}):
            report = stage(
                folder,
                project,
                from_reflections([r for r in items if r.partition == day]),
                day,
                reflect_policy.proposal_same_threshold,
                replaced[project],
            )
            new += report.new
            updated += report.updated
            flagged += report.flagged
            decided += report.already_decided
        ticked = auto_promote(folder, project, reflect_policy.auto_promote_min_sessions)
        if ticked:
            promoted += apply_review(folder, project, max(keys)).promoted
    context.log.info(f"{len(new)} new proposals, {len(updated)} with more evidence, {len(promoted)} auto-promoted")
    return MaterializeResult(
        metadata={
            "new": len(new),
            "more_evidence": len(updated),
            "already_decided": decided,
            "flagged_superseded": MetadataValue.json(flagged),
            "auto_promoted": len(promoted),
            "new_ids": MetadataValue.json(new[:50]),
            "projects": len(by_project),
        }
    )


@asset(**daily_assets(REFLECT), deps=[review_proposals], kinds={"markdown"})
@runs(DAILY_WITH_LLM)
def rule_maturity(
    context: AssetExecutionContext,
    es: ElasticsearchResource,
    embedder: EmbeddingsResource,
    workspace: MemoryWorkspaceResource,
    reflect_policy: ReflectPolicyResource,
    day_locks: DayLocksResource,  # held for the whole run, however it was started
) -> MaterializeResult:
    """The level of every rule promoted into a MEMORY.md (candidate, established, proven), from independent
    session evidence that decays with a half-life; a rule whose evidence a later decision superseded is
    demoted and flagged. Written on the rule's line; nothing else of MEMORY.md changes."""
    # Evidence counted to the end of the run's latest day, never past now (a session clock set to year 9999
    # would decay every rule to nothing, and overflow the date besides).
    latest = date.fromisoformat(max(context.partition_keys))
    as_of = min(datetime.combine(latest, clock_time.max, UTC), datetime.now(UTC))
    policy = reflect_policy.maturity_policy()
    levels_by_name: dict[str, int] = defaultdict(int)
    changed = []
    with embedder.get_client() as embed_client, es.get_client() as client:
        dims = embed_client.dimensions()
        for memory_path in sorted(workspace.root.glob("*/MEMORY.md")):
            registry = load_registry(memory_path.parent)
            text = memory_path.read_text()
            levels = {}
            for pid in promoted_ids(text):
                entry = registry.get(pid)
                if entry is None or not entry.vector or len(entry.vector) != dims:
                    continue
                evidence = rule_evidence(
                    client, entry.project, entry.vector, dims, reflect_policy.support_threshold, as_of.isoformat(),
                    entry.evidence_ids,
                )  # fmt: skip
                support = rule_support(evidence.memories, entry.sessions, proposal_day(pid), evidence.against)
                levels[pid] = maturity(
                    support, as_of, policy, evidence.contradicted_by, evidence.current, evidence.replaced_on
                )
                levels_by_name[levels[pid].level] += 1
            updated = write_levels(text, levels)
            if updated != text:
                memory_path.write_text(updated)
                changed.append(str(memory_path))
    context.log.info(f"maturity of {sum(levels_by_name.values())} rules, {len(changed)} MEMORY.md files updated")
    return MaterializeResult(
        metadata={
            "rules": sum(levels_by_name.values()),
            "levels": MetadataValue.json(dict(levels_by_name)),
            "files_updated": MetadataValue.json(changed),
            "half_life_days": policy.half_life_days,
        }
    )


# A week reads whatever days are indexed (session days are dynamic: no day-to-week mapping exists).
@asset(
    partitions_def=session_weeks,
    group_name=FRICTION,
    deps=[AssetDep("es_dense_vector", partition_mapping=AllPartitionMapping())],
    kinds={"markdown"},
)
@runs(WEEKLY)
def friction_report(
    context: AssetExecutionContext,
    es: ElasticsearchResource,
    embedder: EmbeddingsResource,
    workspace: MemoryWorkspaceResource,
    reflect_policy: ReflectPolicyResource,
) -> MaterializeResult:
    """`<workspace>/<project>/friction/<week>.md`: where the agent kept struggling during the week — rules
    the user had to repeat, failures that recur, tools used the wrong way — each a concrete line to add to
    AGENTS.md, staged in REVIEW.md with the sessions and ids as evidence."""
    week = context.partition_key
    days = [(date.fromisoformat(week) + timedelta(days=d)).isoformat() for d in range(7)]
    findings_total, rows, files = 0, [], []
    with embedder.get_client() as embed_client, es.get_client() as client:
        messages = read_messages(client, days)
        memories = read_summary_sources(client, {"terms": {"partition": days}})
        projects = sorted({m["project"] for m in messages} | {m["project"] for m in memories})
        for project in projects:
            findings = find_friction(
                [m for m in messages if m["project"] == project],
                [m for m in memories if m["project"] == project],
                embed_client.embed,
                min_sessions=reflect_policy.friction_min_sessions,
            )
            vectors = embed_client.embed([f.rule for f in findings]) if findings else []
            candidates = [
                Candidate(FRICTION_SECTIONS[f.kind], f.proposal, f.sessions, f.evidence_ids, v, origin="friction")
                for f, v in zip(findings, vectors, strict=True)
            ]
            folder = ensure_project_dir(workspace.root, project)
            replaced = superseded_memories(client, project)
            report = stage(folder, project, candidates, week, reflect_policy.proposal_same_threshold, replaced)
            path = folder / "friction" / f"{week}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render_report(project, week, findings, {c.rule: report.ids[c.rule] for c in candidates}))
            files.append(str(path))
            findings_total += len(findings)
            rows += [{"kind": f.kind, "sessions": len(f.sessions), "proposal": f.proposal} for f in findings]
    frame = pl.DataFrame(rows, schema={"kind": pl.String, "sessions": pl.Int64, "proposal": pl.String})
    context.log.info(f"week of {week}: {len(messages)} messages, {findings_total} findings in {len(projects)} projects")
    return MaterializeResult(
        metadata={
            "messages": len(messages),
            "memories": len(memories),
            "findings": findings_total,
            "by_kind": MetadataValue.json(frame.group_by("kind").len().to_dicts() if frame.height else []),
            "files": MetadataValue.json(files),
            "preview": preview(frame, ["kind", "sessions", "proposal"]),
        }
    )
