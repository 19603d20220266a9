"""What the memory browser's glance page draws: memories per day and per priority, LLM failures and skipped
turns per day, counted by Elasticsearch aggregations."""

from __future__ import annotations

from dataclasses import dataclass

from elasticsearch import Elasticsearch

from memory_pipeline.stores.indices import LEDGER_INDEX, SEARCH_INDICES

DAYS_SHOWN = 60


@dataclass(frozen=True)
class Series:
    title: str
    points: list[tuple[str, int]]  # (label, count), in order


def _existing(es: Elasticsearch, indices: list[str]) -> list[str]:
    return [i for i in indices if es.indices.exists(index=i)]


def glance(es: Elasticsearch, project: str | None = None) -> list[Series]:
    """The four series, over every memory (of `project`, when given)."""
    scope = [{"term": {"project": project}}] if project else []
    memories = _existing(es, list(SEARCH_INDICES))
    per_day: list[tuple[str, int]] = []
    per_priority: list[tuple[str, int]] = []
    if memories:
        answer = es.search(
            index=memories,
            size=0,
            query={"bool": {"filter": scope}},
            aggs={
                "days": {"date_histogram": {"field": "established_at", "calendar_interval": "day", "min_doc_count": 1}},
                "priority": {"terms": {"field": "priority", "size": 5}},
            },
        )
        per_day = [(b["key_as_string"][:10], b["doc_count"]) for b in answer["aggregations"]["days"]["buckets"]]
        per_priority = [(b["key"], b["doc_count"]) for b in answer["aggregations"]["priority"]["buckets"]]
    failed: list[tuple[str, int]] = []
    skipped: list[tuple[str, int]] = []
    if _existing(es, [LEDGER_INDEX]):
        answer = es.search(
            index=LEDGER_INDEX,
            size=0,
            aggs={
                "days": {
                    "terms": {"field": "partition", "size": 10_000, "order": {"_key": "asc"}},
                    "aggs": {"status": {"terms": {"field": "status", "size": 5}}},
                }
            },
        )
        for day in answer["aggregations"]["days"]["buckets"]:
            counts = {s["key"]: s["doc_count"] for s in day["status"]["buckets"]}
            failed.append((day["key"], counts.get("failed", 0)))
            skipped.append((day["key"], counts.get("empty", 0)))
    # The run ledger is kept per day, not per project: with a project chosen, its two charts still count every
    # project's runs, and say so.
    every = ", every project" if project else ""
    return [
        Series("Memories per day", per_day[-DAYS_SHOWN:]),
        Series(
            "Memories per priority",
            sorted(
                per_priority,
                key=lambda p: ["high", "medium", "low"].index(p[0]) if p[0] in ("high", "medium", "low") else 9,
            ),
        ),
        Series(f"LLM failures per day{every} (turns to read again)", failed[-DAYS_SHOWN:]),
        Series(f"Turns the LLM skipped per day{every} (nothing worth keeping)", skipped[-DAYS_SHOWN:]),
    ]
