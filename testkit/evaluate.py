"""Recall@k of the labelled retrieval set (bench/labels/retrieval.json), shared by tests and the benchmark."""

from __future__ import annotations

import json

from memory_pipeline.search.engine import MemorySearch, Mode
from memory_pipeline.search.models import Filters
from testkit.paths import LABELS as LABEL_DIR

LABELS = LABEL_DIR / "retrieval.json"


def load_queries() -> list[dict]:
    return json.loads(LABELS.read_text())["queries"]


def recall_at(
    search: MemorySearch, session_id: str, ks: tuple[int, ...] = (5, 10), mode: Mode = "hybrid"
) -> dict[int, float]:
    """Share of queries with at least one relevant turn of `session_id` among the top k (per k). The search is
    kept to that session: what else the shared Elasticsearch holds (other benches', tests' and the person's
    memories) must not move the figure from one run to the next."""
    queries = load_queries()
    hits = dict.fromkeys(ks, 0)
    for item in queries:
        rows = search.index(
            item["query"], k=max(ks), mode=mode, filters=Filters(kind=("observation",), session=session_id)
        )
        turns = [r.turn_id for r in rows if r.session_id == session_id]
        for k in ks:
            hits[k] += any(t in item["relevant_turns"] for t in turns[:k])
    return {k: hits[k] / len(queries) for k in ks}
