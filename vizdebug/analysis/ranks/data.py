"""What the rank rules read: each rank's records, its timed steps and its replica
fingerprints (see :mod:`vizdebug.collect.taps.ranks` for how they are taken)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ...records import TrainingRecords
from ..runs import Band

#: The clock marks of a timed step, in the order the collector stores them.
TIME_MARKS = ("previous_end", "forward_start", "inner_start", "backward_start", "end")


@dataclass(frozen=True)
class RankTimes:
    """Timed steps of one rank: ``steps`` (n,) and ``marks`` (n, 5) seconds, one column
    per :data:`TIME_MARKS` (NaN where a mark was not seen)."""

    steps: np.ndarray
    marks: np.ndarray

    def mark(self, name: str) -> np.ndarray:
        return self.marks[:, TIME_MARKS.index(name)]


@dataclass(frozen=True)
class Replicas:
    """Fingerprints of one rank's replica: ``values`` (steps, tensors, 2) holds the norm
    and the sum of each tensor named in ``paths`` at each step of ``steps``."""

    paths: list[str]
    steps: np.ndarray
    values: np.ndarray


@dataclass
class RankData:
    """One rank of a job: its number, its records, and what its rank tap stored."""

    rank: int
    records: TrainingRecords
    times: RankTimes | None = None
    replicas: Replicas | None = None
    name: str = ""  # the run file's name (for messages)


def rank_spread(curves: dict[int, tuple[np.ndarray, np.ndarray]], label: str = "ranks"
                ) -> Band | None:
    """The mean and min-max band over ranks of one metric, at the steps any rank logged.

    Examples
    --------
    >>> b = rank_spread({0: (np.arange(3), np.array([1., 2, 3])),
    ...                  1: (np.arange(3), np.array([3., 2, 1]))})
    >>> b.low.tolist(), b.high.tolist()
    ([1.0, 2.0, 1.0], [3.0, 2.0, 3.0])
    """
    curves = {r: c for r, c in curves.items() if len(c[0])}
    if not curves:
        return None
    steps = np.unique(np.concatenate([np.asarray(s, np.int64) for s, _ in curves.values()]))
    stack = np.full((len(curves), steps.size), np.nan)
    for i, (s, v) in enumerate(curves.values()):
        stack[i, np.searchsorted(steps, np.asarray(s, np.int64))] = np.asarray(v, float)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a step no rank kept finite
        finite = np.where(np.isfinite(stack), stack, np.nan)
        mean, low, high = np.nanmean(finite, 0), np.nanmin(finite, 0), np.nanmax(finite, 0)
    return Band(label, tuple(f"rank {r}" for r in curves), steps, mean, low, high)
