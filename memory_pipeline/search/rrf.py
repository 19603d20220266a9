"""Reciprocal rank fusion, computed in the client (Elasticsearch's RRF retriever needs a paid licence)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 60  # the constant of Cormack et al.; large enough that one list cannot dominate


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], recency: Mapping[str, str] | None = None, k: int = RRF_K
) -> list[tuple[str, float]]:
    """Ids by the sum of 1/(k + rank) over the rankings they appear in; equal scores go to the newer one."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
    when = recency or {}
    # Sort by recency first (stable), then by score: ties keep the newest first.
    by_recency = sorted(scores, key=lambda d: when.get(d, ""), reverse=True)
    return sorted(((d, scores[d]) for d in by_recency), key=lambda item: -round(item[1], 12))
