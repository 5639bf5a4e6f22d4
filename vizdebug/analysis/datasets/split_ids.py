"""An identifier that knows the answer in part: ``split-target-leak`` below the 0.99 bar.

A row id (a counter, a record number, a column named ``id``) carries no information about
the target unless the rows were numbered in an order that did: sorted by class, appended
class by class, or recorded in runs of one label. Then the id predicts the test targets
partly, and a model that takes it as a feature learns the numbering. The relation measured
is the id's lookup score on the test rows against the score the same lookup gets with the
training targets shuffled: a random id (numbered after shuffling) stays at chance.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ...findings import Finding
from .split_scores import LEAK_MIN_ROWS, Lift, lift_over_chance

if TYPE_CHECKING:
    from .splits import SplitRows

ID_NAME = re.compile(r"^(id|idx|index|row|rowid|row_id|row_number|record|record_id|key|"
                     r"unnamed: ?0|level_0|sample_id|sample)$|(^|_)(id|idx)$", re.IGNORECASE)
DENSE = 0.5        # a counter: its distinct values fill at least half of min..max
MONOTONE = 0.999   # rank correlation with the row order of a split that counts as numbering
MAX_COLUMNS = 500


def id_leak_findings(a: SplitRows, b: SplitRows, leak_score: float) -> list[Finding]:
    """Identifier-like columns that predict the test targets beyond chance (those at or over
    ``leak_score`` are the plain target-leak rule's)."""
    if (a.y is None or b.y is None or a.y.ndim != 1 or b.y.ndim != 1 or not a.tabular
            or a.x.shape[0] < LEAK_MIN_ROWS or b.x.shape[0] < 10):
        return []
    found = []
    for c in range(min(a.x.shape[1], MAX_COLUMNS)):
        why = identifier_kind(a.x[:, c], b.x[:, c], a.columns[c])
        if why is None:
            continue
        lift = lift_over_chance(a.x[:, c], a.y, b.x[:, c], b.y)
        if lift.significant and lift.score < leak_score:
            found.append(_finding(a.columns[c], why, lift))
    return found


def identifier_kind(xa: np.ndarray, xb: np.ndarray, name: str) -> str | None:
    """Why a column looks like a row identifier (None when it does not): whole numbers, one
    per row in each split, and named like an id, dense like a counter, or in row order."""
    if not (_whole_unique(xa) and _whole_unique(xb)):
        return None
    if ID_NAME.search(name.strip()):
        return "named like an id"
    both = np.unique(np.concatenate([xa, xb]))
    filled = both.size / (both[-1] - both[0] + 1)
    if filled >= DENSE:
        return f"whole numbers filling {filled:.0%} of {both[0]:g}..{both[-1]:g}, one per row"
    if _in_row_order(xa) or _in_row_order(xb):
        return "in the order of the rows"
    return None


def _whole_unique(x: np.ndarray) -> bool:
    return (x.size >= 2 and bool(np.all(np.isfinite(x))) and bool(np.all(x == np.round(x)))
            and np.unique(x).size == x.size)


def _in_row_order(x: np.ndarray) -> bool:
    ranks = np.argsort(np.argsort(x))
    return abs(float(np.corrcoef(ranks, np.arange(x.size))[0, 1])) >= MONOTONE


def _finding(name: str, why: str, lift: Lift) -> Finding:
    return Finding(
        "split-target-leak", "warning",
        f"column {name} looks like a row identifier ({why}), yet alone it predicts the test "
        f"targets with {lift.metric} {lift.score:.3f} against {lift.chance:.3f} ± "
        f"{lift.spread:.3f} when the training targets are shuffled: the numbering follows "
        "the target",
        where=name,
        evidence={"features": [name], "scores": [lift.score], "chance": lift.chance,
                  "chance_std": lift.spread, "identifier": why},
        hint="the rows were numbered in an order that follows the label (sorted by class, "
             "appended class by class, recorded in runs): drop the id from the features, and "
             "if it stands for time, split by time instead",
    )
