"""How well one column alone predicts the test targets, and how much better that is than
chance: the lookup every leak rule of ``check_split`` scores a column with.

The lookup is deliberately simple (the train rows' majority class, or mean target, per
quantile bin of the column), so a high score means the column itself carries the answer,
not a model that found it. Chance is measured, not assumed: the same lookup built on
shuffled training targets gives the score a column earns by luck on these very rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEAK_MIN_ROWS = 30
LEAK_BINS = 64      # quantile bins of one feature in the leak test
NULL_SHUFFLES = 20  # shuffled-target lookups that measure chance
NULL_SIGMAS = 5.0   # a lift this many null standard deviations above chance is no luck
MIN_LIFT = 0.10     # ... and at least this much balanced accuracy (or R^2) above chance


@dataclass(frozen=True)
class Lift:
    """One column's lookup score on the test rows and the chance level it is read against."""

    score: float
    chance: float
    spread: float  # the standard deviation of the shuffled-target scores
    metric: str = "balanced accuracy"  # or "R^2" for a numeric target

    @property
    def significant(self) -> bool:
        """Whether the column predicts the targets beyond what luck gives on these rows."""
        return self.score - self.chance >= max(NULL_SIGMAS * self.spread, MIN_LIFT)


def is_classes(y: np.ndarray) -> bool:
    """Whether targets are class labels (integers, strings, or a few whole numbers)."""
    if y.dtype.kind in "biuO" or y.dtype.kind == "U":
        return True
    return bool(np.all(np.isfinite(y)) and np.all(y == np.round(y)) and np.unique(y).size <= 50)


def one_feature_score(xa: np.ndarray, ya: np.ndarray, xb: np.ndarray, yb: np.ndarray,
                      classify: bool) -> float:
    """How well one feature alone predicts the test targets: the train rows' majority
    class (or mean target) per quantile bin of the feature, scored on the test rows."""
    ok_a, ok_b = np.isfinite(xa), np.isfinite(xb)
    xa, ya, xb, yb = xa[ok_a], ya[ok_a], xb[ok_b], yb[ok_b]
    if xa.size < LEAK_MIN_ROWS or xb.size < 10 or np.unique(xa).size < 2:
        return 0.0
    edges = np.unique(np.quantile(xa, np.linspace(0, 1, LEAK_BINS + 1)[1:-1]))
    bin_a, bin_b = np.searchsorted(edges, xa), np.searchsorted(edges, xb)
    if classify:
        classes, codes = np.unique(ya, return_inverse=True)
        table = np.zeros((edges.size + 1, classes.size))
        np.add.at(table, (bin_a, codes), 1)
        pred = classes[table.argmax(axis=1)][bin_b]
        return balanced_accuracy(yb, pred)
    sums = np.bincount(bin_a, weights=ya, minlength=edges.size + 1)
    counts = np.bincount(bin_a, minlength=edges.size + 1)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), ya.mean())
    var = np.var(yb)
    return float(1 - np.mean((yb - means[bin_b]) ** 2) / var) if var > 0 else 0.0


def balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    classes = np.unique(y)
    if classes.size < 2:
        return 0.0
    return float(np.mean([np.mean(pred[y == c] == c) for c in classes]))


def lift_over_chance(xa: np.ndarray, ya: np.ndarray, xb: np.ndarray, yb: np.ndarray,
                     seed: int = 0) -> Lift:
    """The column's lookup score against the scores of lookups built on shuffled training
    targets (the same bins, the same class counts: only the column's link to y is cut)."""
    classify = is_classes(ya) and is_classes(yb)
    score = one_feature_score(xa, ya, xb, yb, classify)
    rng = np.random.default_rng(seed)
    null = [one_feature_score(xa, rng.permutation(ya), xb, yb, classify)
            for _ in range(NULL_SHUFFLES)]
    return Lift(score, float(np.mean(null)), float(np.std(null)),
                "balanced accuracy" if classify else "R^2")
