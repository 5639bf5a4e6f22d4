"""Overlapping windows of one series on both sides of a split: ``split-overlap``.

Sliding windows cut with a stride shorter than the window share most of their values with
their neighbours, shifted. Shuffle them into train and test and nearly every test window
has a training window that holds at least half of it, k steps earlier or later: the model
has seen the test window's values already. A split made in time order has such pairs only
at the boundary between the two periods: at most one window length of them.

Rows are read as windows along their first axis after the row: ``(n, t)`` tables and
``(n, t, c)`` sequences with a few channels. Matching is exact (windows cut from one array
hold the very same numbers): every block of ``ceil(t / 2)`` steps of a training window is
hashed (a polynomial rolling hash over the values' bytes), a test window's first and last
blocks are looked up, and each candidate pair is confirmed on its whole overlap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...findings import Finding, fmt_indices

if TYPE_CHECKING:
    from .splits import SplitRows

MIN_STEPS = 6         # shorter rows are a handful of features, not a window
MAX_CHANNELS = 16
MIN_DISTINCT = 3      # an overlap of a constant or two-valued run (padding, flags) is no match
WARN_SHARE = 0.25     # test windows overlapping a training window that make a warning ...
MAX_TRAIN_VALUES = 2e7  # training values hashed at most (rows beyond this are subsampled)
BASE = np.uint64(0x9E3779B97F4A7C15)
MIX = np.uint64(0xC2B2AE3D27D4EB4F)


def overlap_findings(a: SplitRows, b: SplitRows) -> list[Finding]:
    """Test windows that share a shifted half or more with a training window."""
    wa, wb = _windows(a), _windows(b)
    if wa is None or wb is None or wa.shape[1:] != wb.shape[1:]:
        return []
    steps = wa.shape[1]
    if wa.size > MAX_TRAIN_VALUES:
        keep = int(MAX_TRAIN_VALUES // (wa.size // wa.shape[0]))
        wa = wa[np.sort(np.random.default_rng(0).choice(wa.shape[0], keep, replace=False))]
    hits, shifts = _overlapping(_step_codes(wa), _step_codes(wb))
    if hits.size == 0:
        return []
    share = hits.size / wb.shape[0]
    # more than one window length of overlapping test windows: no time-ordered boundary
    severity = "warning" if share >= WARN_SHARE and hits.size > steps else "info"
    rows = hits.tolist()
    return [Finding(
        "split-overlap", severity,
        f"{hits.size} of {wb.shape[0]} test windows ({share:.1%}) share {steps - int(shifts.max())}"
        f" to {steps - int(shifts.min())} of their {steps} steps with a training window shifted "
        f"by {int(shifts.min())}-{int(shifts.max())} steps (a time-ordered split has at most "
        f"{steps - 1} such windows, at its boundary)",
        where=f"test rows {fmt_indices(rows)}",
        evidence={"test_indices": rows[:256], "share": share, "window": steps,
                  "median_shift": float(np.median(shifts))},
        hint="sliding windows that overlap were shuffled into both splits, so test windows "
             "repeat training values: split the series by time first, then cut windows in "
             "each part (or sklearn TimeSeriesSplit with gap= the window length)",
    )]


def _windows(rows: SplitRows) -> np.ndarray | None:
    """The rows as ``(n, steps, channels)`` windows, or None when they are not windows."""
    if rows.tabular:
        x = rows.x[:, :, None]
    elif rows.image_shape is not None and len(rows.image_shape) == 2:
        steps, channels = rows.image_shape
        if channels > MAX_CHANNELS or channels >= steps:
            return None
        x = rows.x.reshape(-1, steps, channels)
    else:
        return None
    return x if x.shape[1] >= MIN_STEPS else None


def _step_codes(w: np.ndarray) -> np.ndarray:
    """``(n, steps)`` uint64: one code per time step, from its channels' bytes."""
    clean = np.where(np.isnan(w), np.inf, w) + 0.0  # -0.0 as 0.0, every NaN alike
    bits = np.ascontiguousarray(clean).view(np.uint64)
    code = np.zeros(bits.shape[:2], dtype=np.uint64)
    for c in range(bits.shape[2]):  # uint64 arithmetic wraps: a hash modulo 2**64
        code = code * MIX + bits[:, :, c]
    return code ^ (code >> np.uint64(29))


def _block_hashes(codes: np.ndarray, length: int) -> np.ndarray:
    """``(n, steps - length + 1)``: the rolling hash of every block of ``length`` steps."""
    n, steps = codes.shape
    prefix = np.zeros((n, steps + 1), dtype=np.uint64)
    for j in range(steps):
        prefix[:, j + 1] = prefix[:, j] * BASE + codes[:, j]
    power = np.uint64(1)
    for _ in range(length):
        power = power * BASE
    return prefix[:, length:] - prefix[:, :steps - length + 1] * power


def _overlapping(ca: np.ndarray, cb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Test rows with a training window shifted by 1 .. steps - half, and those shifts."""
    steps = ca.shape[1]
    half = (steps + 1) // 2
    with np.errstate(over="ignore"):
        ha, hb = _block_hashes(ca, half), _block_hashes(cb, half)
    order = np.argsort(ha, axis=None, kind="stable")
    index = _BlockIndex(ha.reshape(-1)[order], order // ha.shape[1], order % ha.shape[1])
    hits, shifts = [], []
    for i in range(cb.shape[0]):
        shift = _partner(ca, cb[i], index, hb[i], half)
        if shift:
            hits.append(i)
            shifts.append(shift)
    return np.asarray(hits, dtype=int), np.asarray(shifts, dtype=int)


class _BlockIndex:
    """The training blocks' hashes, sorted, with the window and offset each came from."""

    def __init__(self, hashes: np.ndarray, rows: np.ndarray, offsets: np.ndarray) -> None:
        self.hashes = hashes
        self.rows = rows
        self.offsets = offsets

    def find(self, value: np.uint64, limit: int = 8) -> list[tuple[int, int]]:
        """Up to ``limit`` (window, offset) pairs whose block hashes to ``value`` (a block
        repeated in many windows is checked a few times, not all)."""
        lo = int(np.searchsorted(self.hashes, value, side="left"))
        hi = min(int(np.searchsorted(self.hashes, value, side="right")), lo + limit)
        return list(zip(self.rows[lo:hi].tolist(), self.offsets[lo:hi].tolist(), strict=True))


def _partner(ca: np.ndarray, test: np.ndarray, index: _BlockIndex, hashes: np.ndarray,
             half: int) -> int:
    """The shift of a confirmed training partner of one test window (0: none)."""
    steps = ca.shape[1]
    last = steps - half
    for row, k in index.find(hashes[0]):  # the test window starts k steps after this one
        if k >= 1 and _same(test[:steps - k], ca[row, k:]):
            return k
    for row, offset in index.find(hashes[last]):  # ... or k steps before it
        k = last - offset
        if k >= 1 and _same(test[k:], ca[row, :steps - k]):
            return k
    return 0


def _same(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal step codes over the whole overlap, with enough distinct steps to mean it."""
    return bool(np.array_equal(x, y)) and np.unique(x).size >= MIN_DISTINCT
