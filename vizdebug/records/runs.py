"""What a comparison of runs holds: each run's curves at chart resolution and its settings
(read by :mod:`vizdebug.store.many`, grouped and ranked by :mod:`vizdebug.analysis.runs`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HIGHER_IS_BETTER = ("acc", "f1", "auc", "precision", "recall", "iou", "dice", "map", "bleu",
                    "score", "r2", "ap")


def higher_is_better(metric: str) -> bool:
    """Whether a metric improves upwards, from its name (accuracy, F1, AUC ...); losses,
    errors and perplexities improve downwards.

    >>> higher_is_better("val_acc"), higher_is_better("val_loss")
    (True, False)
    """
    words = metric.lower().replace("-", "_").replace("/", "_").split("_")
    return any(w.startswith(HIGHER_IS_BETTER) for w in words) and "loss" not in words


@dataclass(frozen=True)
class Curve:
    """One metric of one run at chart resolution.

    ``step`` is each bucket's last step; ``low``/``high`` its min and max, ``mean`` its
    mean (NaN where every value was non-finite); ``nonfinite`` how many values were NaN
    or missing. A series of at most :data:`BUCKETS` points has one bucket per point.
    """

    name: str
    step: np.ndarray
    low: np.ndarray
    high: np.ndarray
    mean: np.ndarray
    nonfinite: np.ndarray
    count: int

    @property
    def final(self) -> float:
        """The last finite value (NaN when none)."""
        finite = np.flatnonzero(np.isfinite(self.mean))
        return float(self.mean[finite[-1]]) if finite.size else math.nan

    def best(self) -> tuple[float, int | None]:
        """The best value and its step (min, or max for accuracy-like names)."""
        values = self.high if higher_is_better(self.name) else self.low
        finite = np.flatnonzero(np.isfinite(values))
        if not finite.size:
            return math.nan, None
        pick = values[finite]
        i = finite[int(np.argmax(pick) if higher_is_better(self.name) else np.argmin(pick))]
        return float(values[i]), int(self.step[i])


@dataclass
class RunEntry:
    """One run of a comparison: where it is, what it was, how it went."""

    path: Path
    name: str
    state: str
    config: dict[str, Any]
    last_step: int | None
    created: float | None
    metrics: list[str]
    curves: dict[str, Curve] = field(default_factory=dict)
    note: str | None = None

    def summary(self, metric: str) -> dict[str, Any]:
        """Final and best value of ``metric`` (NaN when this run did not log it)."""
        curve = self.curves.get(metric)
        if curve is None:
            return {"final": math.nan, "best": math.nan, "best_step": None}
        best, at = curve.best()
        return {"final": curve.final, "best": best, "best_step": at}
