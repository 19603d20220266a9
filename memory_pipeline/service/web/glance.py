"""At a glance: memories per day and per priority, LLM failures and skipped turns per day, as small SVG bar
charts drawn on the server (no chart library, nothing to build)."""

from __future__ import annotations

from dataclasses import dataclass

from elasticsearch import Elasticsearch
from markupsafe import Markup, escape

from memory_pipeline.stores.indices import LEDGER_INDEX, SEARCH_INDICES

DAYS_SHOWN = 60


@dataclass(frozen=True)
class Series:
    title: str
    points: list[tuple[str, int]]  # (label, count), in order


def bar_chart(series: Series, width: int = 640, height: int = 120) -> Markup:
    """An SVG bar chart; every label and value is escaped text (no markup from the data reaches the page)."""
    if not series.points:
        return Markup('<p class="empty">{}: nothing yet.</p>').format(series.title)
    top = max(count for _, count in series.points) or 1
    step = width / len(series.points)
    bars = []
    for i, (label, count) in enumerate(series.points):
        bar = (height - 20) * count / top
        x, y = i * step + 1, height - 20 - bar
        bars.append(
            Markup('<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}: {}</title></rect>').format(
                x, y, max(step - 2, 1), bar, label, count
            )
        )
    first, last = escape(series.points[0][0]), escape(series.points[-1][0])
    return Markup(
        '<figure><figcaption>{title} (max {top})</figcaption><svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-label="{title}">{bars}<text x="0" y="{ty}">{first}</text>'
        '<text x="{w}" y="{ty}" text-anchor="end">{last}</text></svg></figure>'
    ).format(
        title=series.title,
        top=top,
        w=width,
        h=height,
        bars=Markup("").join(bars),
        ty=height - 4,
        first=first,
        last=last,
    )


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
    return [
        Series("Memories per day", per_day[-DAYS_SHOWN:]),
        Series(
            "Memories per priority",
            sorted(
                per_priority,
                key=lambda p: ["high", "medium", "low"].index(p[0]) if p[0] in ("high", "medium", "low") else 9,
            ),
        ),
        Series("LLM failures per day (turns to read again)", failed[-DAYS_SHOWN:]),
        Series("Turns the LLM skipped per day (nothing worth keeping)", skipped[-DAYS_SHOWN:]),
    ]
