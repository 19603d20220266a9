"""The synthetic reflect corpus against the real services: load it, run the reflect assets, score them.

Shared by `python -m bench reflect` (all four weeks) and the e2e tests (one week). The sessions are ingested
by the pipeline's own assets; the planted memories (what the summarise stage should have extracted) are
written to `memory-summary` as that stage writes them, then embedded by the pipeline's recall assets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dagster import materialize

from memory_pipeline.assets import reflect
from memory_pipeline.partitions import instance_with_days
from memory_pipeline.reflect.proposals import load_registry
from memory_pipeline.reflect.workspace import project_dir
from memory_pipeline.resources import ReflectPolicyResource, build_resources
from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import bulk_apply, delete_days, make_client, stored_sources
from memory_pipeline.stores.indices import PIPELINE_INDICES, REFLECTION_INDEX, SUMMARY_INDEX
from memory_pipeline.stores.summary_store import SummaryDoc, ensure_summary_indices
from testkit.paths import CORPUS as CORPUS_DIR

CORPUS = CORPUS_DIR / "reflect"
SECTION_KIND = {"Hard rules": "rules", "Gotchas": "failures", "Patterns": "misuse"}
REFLECT_ASSETS = [reflect.reflections, reflect.review_proposals, reflect.rule_maturity]


def truth() -> dict[str, Any]:
    return json.loads((CORPUS / "truth.json").read_text())


def planted_memories(days: list[str]) -> list[dict[str, Any]]:
    lines = (CORPUS / "memories.jsonl").read_text().splitlines()
    return [m for m in map(json.loads, lines) if m["partition"] in days]


def _range(days: list[str]) -> dict[str, str]:
    return {"dagster/asset_partition_range_start": min(days), "dagster/asset_partition_range_end": max(days)}


def prepare(settings: Settings, days: list[str]) -> None:
    """A clean slate for these days, then their sessions ingested, memories planted, everything embedded."""
    with make_client(settings, request_timeout=120) as client:
        delete_days(client, PIPELINE_INDICES, days)
        ensure_summary_indices(client)
        documents = []
        for memory in planted_memories(days):
            fields = {k: v for k, v in memory.items() if k != "planted"}
            refs = [{"session_id": memory["session_id"], "turn_id": memory["turn_id"]}]
            doc = SummaryDoc.model_validate(
                fields
                | {
                    "source_refs": refs,
                    "summarized_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "model": "planted",
                    "prompt_version": "planted",
                    "turn_content_hash": "",
                }
            )
            documents.append((doc.doc_id, doc.model_dump()))
        bulk_apply(client, SUMMARY_INDEX, documents)
        client.indices.refresh(index=SUMMARY_INDEX)
    from testkit.ingest_helpers import RECALL_ASSETS

    result = materialize(
        RECALL_ASSETS, resources=build_resources(settings), instance=instance_with_days(days), tags=_range(days)
    )
    assert result.success


@dataclass
class ReflectRun:
    metadata: dict[str, dict[str, Any]]
    checks: dict[str, bool]


def run_reflect(
    settings: Settings, days: list[str], as_of: str, assets: list | None = None, **policy: object
) -> ReflectRun:
    """The daily reflect assets (or some of them) as one run over these days, ages counted from `as_of`;
    `policy` overrides fields of the reflect_policy resource (window_days=7, ...)."""
    from testkit.ingest_helpers import run_metadata

    assets = assets or REFLECT_ASSETS
    config = {"ops": {"reflections": {"config": {"as_of": as_of}}}} if reflect.reflections in assets else None
    resources = build_resources(settings)
    if policy:
        resources["reflect_policy"] = ReflectPolicyResource(**{**resources["reflect_policy"].model_dump(), **policy})
    result = materialize(
        assets,
        resources=resources,
        instance=instance_with_days(days),
        tags=_range(days),
        run_config=config,
    )
    metadata, checks, _ = run_metadata(result)
    return ReflectRun(metadata, checks)


def run_friction(settings: Settings, week: str) -> dict[str, Any]:
    result = materialize(
        [reflect.friction_report],
        resources=build_resources(settings),
        instance=instance_with_days([week]),  # a day of the week registers the week
        partition_key=week,
    )
    event = result.get_asset_materialization_events()[0]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def _recall(caught: int, planted: int) -> float:
    return round(caught / planted, 3) if planted else 0.0


def score_friction(settings: Settings) -> dict[str, dict[str, float | int]]:
    """Precision and recall of the friction proposals in the project's registry against the planted truth.

    A proposal matches a planted item of its kind when at least two of its sessions are the item's sessions.
    Precision counts every planted item; recall is given for the items the heuristics were developed on (`dev`)
    and for the held-out ones apart.
    """
    planted = truth()
    registry = load_registry(project_dir(settings.memory_workspace, planted["project"]))
    found = [e for e in registry.values() if "friction" in e.origins]
    scores: dict[str, dict[str, float | int]] = {}
    for kind in ("rules", "failures", "misuse"):
        sets = {"dev": planted[kind], "held_out": planted["held_out"][kind]}
        mine = [e for e in found if SECTION_KIND.get(e.section) == kind]

        def matches(entry: Any, sessions: list[str]) -> bool:
            return len(set(entry.sessions) & set(sessions)) >= 2

        every = [s for items in sets.values() for s in items.values()]
        hits = sum(1 for e in mine if any(matches(e, s) for s in every))
        scores[kind] = {
            "found": len(mine),
            "correct": hits,
            "precision": round(hits / len(mine), 3) if mine else 0.0,
            **{f"planted_{name}": len(items) for name, items in sets.items()},
            **{
                f"recall_{name}": _recall(
                    sum(1 for s in items.values() if any(matches(e, s) for e in mine)), len(items)
                )
                for name, items in sets.items()
            },
        }
    rows = [scores[k] for k in ("rules", "failures", "misuse")]
    total: dict[str, float | int] = {
        k: sum(r[k] for r in rows) for k in ("found", "correct", "planted_dev", "planted_held_out")
    }
    total["precision"] = round(total["correct"] / total["found"], 3) if total["found"] else 0.0
    for name in ("dev", "held_out"):
        caught = sum(round(r[f"recall_{name}"] * r[f"planted_{name}"]) for r in rows)
        total[f"recall_{name}"] = _recall(caught, int(total[f"planted_{name}"]))
    scores["all"] = total
    return scores


def score_supersession(settings: Settings, days: list[str]) -> dict[str, float | int]:
    """Precision and recall of `superseded_by` marks against the planted replaced decisions of these days."""
    with make_client(settings) as client:
        stored = stored_sources(client, REFLECTION_INDEX, {"terms": {"partition": days}})
    sources = {rid: set(doc["source_ids"]) for rid, doc in stored.items()}
    pairs = [
        (sources[r], sources.get(doc["superseded_by"], set())) for r, doc in stored.items() if doc.get("superseded_by")
    ]
    memories = {m["doc_id"] for m in planted_memories(days)}
    planted = truth()
    sets = {"dev": planted["supersessions"], "held_out": planted["held_out"]["supersessions"]}
    sets = {name: [p for p in items if {p["old"], p["new"]} <= memories] for name, items in sets.items()}

    def found(p: dict[str, str]) -> bool:
        return any(p["old"] in old and p["new"] in new for old, new in pairs)

    every = [p for items in sets.values() for p in items]
    correct = sum(1 for old, new in pairs if any(p["old"] in old and p["new"] in new for p in every))
    return {
        "found": len(pairs),
        "correct": correct,
        "precision": round(correct / len(pairs), 3) if pairs else 0.0,
        **{f"planted_{name}": len(items) for name, items in sets.items()},
        **{f"recall_{name}": _recall(sum(1 for p in items if found(p)), len(items)) for name, items in sets.items()},
    }
