"""``label-imbalance`` that the loader handles: a sampler that evens out the classes.

``check_dataset(loader)`` counts the classes its dataset holds; when the loader draws them
through a ``WeightedRandomSampler`` (or a sampler that fills batches class by class), the
model sees the drawn balance, not the stored one, and the imbalance is handled.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from ...data.samplers import Draws, loader_draws
from ...findings import Finding
from .input_checks import IMBALANCE_INFO, label_key

MIN_DRAWN = 50  # drawn indices with a known label before a drawn balance is trusted


def drawn_counts(draws: Draws, labels: dict[int, Any]) -> Counter:
    """How often each class is drawn: the expected share of every class under a weighted
    sampler (the weights of its items), or the labels of the drawn indices that were read.

    >>> import numpy as np
    >>> drawn_counts(Draws("WeightedRandomSampler", weights=np.array([1., 1., 2.])),
    ...              {0: 0, 1: 0, 2: 1})
    Counter({0: 2.0, 1: 2.0})
    """
    counts: Counter = Counter()
    if draws.weights is not None:
        for i, label in labels.items():
            if 0 <= i < len(draws.weights):
                counts[label_key(label)] += float(draws.weights[i])
        return counts
    for i in draws.indices or ():
        if i in labels:
            counts[label_key(labels[i])] += 1
    return counts


def handled_imbalance(found: list[Finding], loader: Any, labels: dict[int, Any]
                      ) -> list[Finding]:
    """``found`` with its ``label-imbalance`` said at info when the loader's sampler draws
    the classes less than ``IMBALANCE_INFO`` times apart: the imbalance is handled."""
    at = next((k for k, f in enumerate(found) if f.code == "label-imbalance"
               and f.evidence.get("classes") != 1), None)
    draws = loader_draws(loader) if at is not None else None
    if draws is None:
        return found
    counts = drawn_counts(draws, labels)
    if draws.indices is not None and sum(counts.values()) < MIN_DRAWN:
        return found
    if len(counts) < 2 or max(counts.values()) <= 0:
        return found
    ratio = max(counts.values()) / max(min(counts.values()), 1e-12)
    if ratio >= IMBALANCE_INFO or len(counts) < len(found[at].evidence.get("counts", {})):
        return found
    return [*found[:at], _handled(found[at], draws, counts, ratio), *found[at + 1:]]


def _handled(f: Finding, draws: Draws, counts: Counter, ratio: float) -> Finding:
    total = sum(counts.values())
    shares = ", ".join(f"{k!r} {v / total:.0%}" for k, v in counts.most_common(6))
    how = "weights its items so that it draws" if draws.weights is not None else "draws"
    return replace(
        f, severity="info",
        message=f"{f.message}; handled: the loader's {draws.sampler} {how} the classes "
                f"{ratio:.1f}x apart at most ({shares})",
        evidence={**f.evidence, "sampler": draws.sampler, "drawn_ratio": ratio,
                  "drawn_shares": {str(k): v / total for k, v in counts.most_common(50)}},
        hint="the model sees balanced classes; the test split keeps the imbalance, so report "
             "balanced accuracy / per-class recall there (vd.check_predictions)")
