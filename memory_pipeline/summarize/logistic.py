"""A logistic regression learned from labelled turns and kept as JSON beside the code that reads it: what the two
learned gates (`gate`, a memory; `turn_gate`, a turn before the model) share. Fitting, the weights file (its
features, weights, threshold and provenance) and scoring live here once; each gate owns only its features."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path


def fit(rows: Sequence[Sequence[float]], targets: Sequence[int], l2: float = 0.1, steps: int = 3000) -> list[float]:
    """Logistic regression by gradient descent (a few hundred rows, a dozen features: no library needed)."""
    import numpy as np

    x, y = np.asarray(rows, dtype=float), np.asarray(targets, dtype=float)
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w)))
        gradient = x.T @ (p - y) / len(y) + l2 * np.r_[0.0, w[1:]] / len(y)
        w -= 0.5 * gradient
    return [float(v) for v in w]


def probability(weights: Sequence[float], row: Sequence[float]) -> float:
    return 1 / (1 + math.exp(-sum(w * x for w, x in zip(weights, row, strict=True))))


class LearnedWeights:
    """The weights file of one gate. Without it, or trained on other features than `features`, there is no model:
    every row passes (a gate never misreads weights it was not trained with)."""

    def __init__(self, path: Path, features: Sequence[str]) -> None:
        self.path, self.features = path, tuple(features)

    @cached_property
    def model(self) -> tuple[tuple[float, ...], float] | None:
        if not self.path.exists():
            return None
        data = json.loads(self.path.read_text())
        if tuple(data["features"]) != self.features:
            return None
        return tuple(data["weights"]), float(data["threshold"])

    def probability(self, row: Sequence[float]) -> float:
        """The learned probability of the row (1.0 without a model)."""
        return 1.0 if self.model is None else probability(self.model[0], row)

    def threshold(self) -> float:
        """The trained threshold; 0.0 without a model (every row passes)."""
        return 0.0 if self.model is None else self.model[1]

    def passes(self, row: Sequence[float]) -> bool:
        return self.model is None or self.probability(row) >= self.model[1]

    def save(self, weights: Sequence[float], threshold: float, provenance: dict) -> None:
        record = {"features": list(self.features), "weights": list(weights), "threshold": threshold, **provenance}
        self.path.write_text(json.dumps(record, indent=1) + "\n")
        self.__dict__.pop("model", None)
