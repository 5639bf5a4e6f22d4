"""Bounded scalar series that keep their extremes."""

from __future__ import annotations

import numpy as np

# -- scalar series ------------------------------------------------------------------------


def extreme_indices(arr: np.ndarray, max_points: int) -> np.ndarray:
    """Sorted indices of about ``max_points`` points of the 1-d float ``arr`` that keep,
    from each of ``max_points // 4`` equal buckets, the first point, the minimum, the
    maximum and the first non-finite point (so one spike or one NaN in a million survives).
    Unchecked: :func:`vizdebug.analysis.curves.minmax_indices` validates and calls it.

    >>> extreme_indices(np.array([0.0, 0.0, 9.0, 0.0, 0.0, 0.0]), 4).tolist()
    [0, 2, 5]
    """
    n = arr.size
    if n <= max_points:
        return np.arange(n)
    n_buckets = max(1, max_points // 4)
    width = -(-n // n_buckets)  # ceil
    pad = n_buckets * width - n
    finite = np.isfinite(arr)
    hi = np.concatenate([np.where(finite, arr, -np.inf), np.full(pad, -np.inf)])
    lo = np.concatenate([np.where(finite, arr, np.inf), np.full(pad, np.inf)])
    bad = np.concatenate([~finite, np.zeros(pad, dtype=bool)]).reshape(n_buckets, width)
    offsets = np.arange(n_buckets) * width
    picks = [
        offsets,
        offsets + np.argmax(hi.reshape(n_buckets, width), axis=1),
        offsets + np.argmin(lo.reshape(n_buckets, width), axis=1),
        (offsets + np.argmax(bad, axis=1))[bad.any(axis=1)],
        np.array([0, n - 1]),
    ]
    idx = np.unique(np.concatenate(picks))
    return idx[idx < n]


class Series:
    """One metric's points, at most ``capacity`` of them (older ones thinned by min/max).

    A live session's scalar log and a stored run's reader keep their points in these.

    >>> s = Series(8)
    >>> s.extend(np.arange(20), np.arange(20.0), np.zeros(20))
    >>> s.total, s.size <= 8
    (20, True)
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.step = np.empty(capacity, dtype=np.int64)
        self.value = np.empty(capacity, dtype=float)
        self.time = np.empty(capacity, dtype=float)
        self.size = 0
        self.total = 0

    def extend(self, step: np.ndarray, value: np.ndarray, when: np.ndarray) -> None:
        """Append points, compacting whenever the buffer is full."""
        start = 0
        while start < step.size:
            if self.size == self.capacity:
                self._compact()
            n = min(self.capacity - self.size, step.size - start)
            sl = slice(self.size, self.size + n)
            self.step[sl] = step[start:start + n]
            self.value[sl] = value[start:start + n]
            self.time[sl] = when[start:start + n]
            self.size += n
            start += n
        self.total += step.size

    def _compact(self) -> None:
        keep = extreme_indices(self.value[: self.size], self.capacity // 2)
        n = keep.size
        for arr in (self.step, self.value, self.time):
            arr[:n] = arr[keep]
        self.size = n

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of ``(step, value, time)``."""
        n = self.size
        return self.step[:n].copy(), self.value[:n].copy(), self.time[:n].copy()


