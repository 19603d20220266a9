"""Grouping by vector similarity (unit vectors, so cosine = dot product). Pure numpy, no server."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cosine_matrix(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    if not len(vectors):
        return np.zeros((0, 0), dtype=np.float32)
    matrix = np.asarray(vectors, dtype=np.float32)
    return matrix @ matrix.T


def clusters(vectors: Sequence[Sequence[float]], threshold: float, linkage: str = "complete") -> list[list[int]]:
    """Groups of indices whose similarity reaches `threshold`, in input order.

    `complete`: every pair inside a group is that similar (near-duplicates: no chaining from A to C through B).
    `single`: connected through any chain of similar pairs (paraphrases of one rule drift further apart).
    """
    similarity = cosine_matrix(vectors)
    count = len(similarity)
    if linkage == "single":
        parent = list(range(count))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for i, j in zip(*np.nonzero(np.triu(similarity >= threshold, k=1)), strict=True):
            parent[root(int(j))] = root(int(i))
        groups: dict[int, list[int]] = {}
        for i in range(count):
            groups.setdefault(root(i), []).append(i)
        return list(groups.values())
    result: list[list[int]] = []
    for i in range(count):
        home = next((g for g in result if all(similarity[i, j] >= threshold for j in g)), None)
        if home is None:
            result.append([i])
        else:
            home.append(i)
    return result


def centroid(vectors: Sequence[Sequence[float]]) -> list[float]:
    """The normalised mean: the direction a group of memories shares."""
    mean = np.asarray(vectors, dtype=np.float64).mean(axis=0)
    return (mean / (np.linalg.norm(mean) or 1.0)).tolist()


def medoid(vectors: Sequence[Sequence[float]]) -> int:
    """Index of the member closest to all others: the most representative wording of a group."""
    return int(cosine_matrix(vectors).sum(axis=1).argmax())
