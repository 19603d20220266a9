"""Reciprocal rank fusion, computed in the client (Elasticsearch's RRF retriever needs a paid licence)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60  # the constant of Cormack et al.; large enough that one list cannot dominate


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    recency: Mapping[str, str] | None = None,
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
    bonus: Mapping[str, float] | None = None,
    scale: Sequence[Mapping[str, float]] | None = None,
) -> list[tuple[str, float]]:
    """Ids by the sum of weight/(k + rank) over the rankings they appear in (times the id's `scale` in that
    ranking, 1 by default), plus any `bonus` (in the same units); equal scores go to the newer one."""
    scores: dict[str, float] = {}
    weights = weights or [1.0] * len(rankings)
    scales = scale or [{}] * len(rankings)
    for ranking, weight, scaled in zip(rankings, weights, scales, strict=True):
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + weight * scaled.get(doc_id, 1.0) / (k + rank)
    for doc_id, extra in (bonus or {}).items():
        if doc_id in scores:
            scores[doc_id] += extra
    when = recency or {}
    # Sort by recency first (stable), then by score: ties keep the newest first.
    by_recency = sorted(scores, key=lambda d: when.get(d, ""), reverse=True)
    return sorted(((d, scores[d]) for d in by_recency), key=lambda item: -round(item[1], 12))
