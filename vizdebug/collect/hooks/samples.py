"""Bounded storage for sampled per-step arrays (activation and gradient statistics).

When full, the older half is thinned to every other sample, so memory stays bounded for
any run length while the recent past stays dense. Steps that carry a non-finite value are
never thinned away: they are what a user needs to see.
"""

from __future__ import annotations

import threading

import numpy as np


class SampleBuffer:
    """Rows of equal shape, one per sampled step, at most ``capacity`` of them.

    Examples
    --------
    >>> buf = SampleBuffer(capacity=4)
    >>> for step in range(10):
    ...     buf.append(step, np.full(2, float(step)))
    >>> len(buf) <= 4
    True
    >>> int(buf.steps()[-1])
    9
    """

    def __init__(self, capacity: int = 1000) -> None:
        if capacity < 2:
            raise ValueError(f"capacity must be at least 2, got {capacity}")
        self.capacity = capacity
        self._steps: list[int] = []
        self._rows: list[np.ndarray] = []
        self._lock = threading.Lock()
        self.total = 0

    def __len__(self) -> int:
        return len(self._steps)

    def append(self, step: int, row: np.ndarray) -> None:
        """Add one sampled step's row, thinning the older half when full."""
        with self._lock:
            self._steps.append(int(step))
            self._rows.append(row)
            self.total += 1
            if len(self._steps) > self.capacity:
                self._thin()

    def extend(self, steps: list[int], rows: list[np.ndarray]) -> None:
        """:meth:`append` for several steps at once (one lock).

        >>> buf = SampleBuffer(); buf.extend([3, 4], [np.zeros(2), np.ones(2)]); len(buf)
        2
        """
        with self._lock:
            self._steps += [int(step) for step in steps]
            self._rows += rows
            self.total += len(rows)
            while len(self._steps) > self.capacity:
                self._thin()

    def _thin(self) -> None:
        half = len(self._steps) // 2
        keep = [
            i for i in range(len(self._steps))
            if i >= half or i % 2 == 0 or not np.isfinite(self._rows[i]).all()
        ]
        if len(keep) > self.capacity:  # too many non-finite rows: keep the first and newest
            keep = keep[:1] + keep[-(self.capacity - 1):]
        self._steps = [self._steps[i] for i in keep]
        self._rows = [self._rows[i] for i in keep]

    def steps(self) -> np.ndarray:
        """The sampled steps, oldest first."""
        with self._lock:
            return np.asarray(self._steps, dtype=np.int64)

    def since(self, step: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """The steps after ``step`` and their rows (for a writer that appends to disk).

        >>> buf = SampleBuffer(); buf.append(1, np.zeros(2)); buf.append(5, np.ones(2))
        >>> buf.since(1)[0].tolist()
        [5]
        """
        with self._lock:
            steps = np.asarray(self._steps, dtype=np.int64)
            first = int(np.searchsorted(steps, step, side="right"))
            return steps[first:], self._rows[first:]

    def stacked(self, width: int | None = None) -> np.ndarray:
        """All rows stacked along a new first axis (padded with NaN to ``width`` columns)."""
        with self._lock:
            rows = list(self._rows)
        return stack_rows(rows, width)


def stack_rows(rows: list[np.ndarray], width: int | None = None) -> np.ndarray:
    """Rows of equal trailing shape stacked on a new first axis, NaN-padded to ``width``.

    >>> stack_rows([np.zeros(1), np.ones(2)]).tolist()
    [[0.0, nan], [1.0, 1.0]]
    """
    if not rows:
        return np.empty((0, width or 0))
    width = width if width is not None else max(r.shape[0] for r in rows)
    out = np.full((len(rows), width, *rows[0].shape[1:]), np.nan)
    for i, r in enumerate(rows):
        out[i, : r.shape[0]] = r
    return out
