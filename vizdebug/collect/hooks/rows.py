"""Activation rows from the samples of sealed steps: the read side of
:mod:`~.stats`, run when sealed steps are read (:class:`~.pending.PendingSteps`).

:func:`group_rows` turns the samples of many steps into
:data:`~vizdebug.records.ACTIVATION_STATS` rows in numpy: the subsamples of equal width
and dtype are reduced together, block by block, so a read costs a few numpy calls per
block of rows, not a set per step or per module. The definition is
:func:`vizdebug.analysis.training.activations.activation_stats`; these rows are tested against it.
"""

from __future__ import annotations

import numpy as np

from ...analysis.training.activations import (
    DEAD_EPS,
    UNIT_HIGH,
    UNIT_LOW,
    UNIT_RANGE,
    saturated,
    saturation_limit,
)
from .stats import GroupSample

__all__ = ["group_rows", "sample_rows"]


def sample_rows(sample: GroupSample) -> GroupSample:
    """The sample as numpy arrays (a device sample is copied to the host: a sync)."""
    if isinstance(sample.values, np.ndarray):
        return sample
    return GroupSample(sample.values.cpu().numpy(), sample.unit_max.cpu().numpy(),
                       sample.numel, sample.has_units)


def group_rows(samples: list[GroupSample], classes: list[str]) -> np.ndarray:
    """:data:`~vizdebug.records.ACTIVATION_STATS` rows, ``(outputs, 8)``, for samples
    whose outputs (all of them, in order) belong to modules of these classes.

    Samples whose arrays have the same widths and dtype are reduced together, in blocks of
    rows copied into one buffer that stays in the cache: a few numpy calls per block for
    every step of a read with ``every=1``, not one set per step or per module, and no
    fresh megabytes (a read of 16 steps of a deep model holds thousands of subsamples).
    """
    samples = [sample_rows(s) for s in samples]
    out = np.empty((len(classes), 8))
    starts = np.cumsum([0] + [len(s.values) for s in samples])
    by_width: dict[tuple, list[int]] = {}
    for j, s in enumerate(samples):
        key = (s.values.shape[1], s.unit_max.shape[1], s.values.dtype)
        by_width.setdefault(key, []).append(j)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for (width, _, dtype), members in by_width.items():
            block = max(1, _BLOCK_BYTES // max(width * dtype.itemsize, 1))
            total = int(sum(starts[j + 1] - starts[j] for j in members))
            buf = np.empty((min(block, total), width), dtype)
            for pieces in _blocks([(j, samples[j]) for j in members], block, total):
                rows = _row_numbers([(starts[j] + lo, hi - lo) for j, _, lo, hi in pieces])
                v = buf[:len(rows)]
                np.concatenate([s.values[lo:hi] for _, s, lo, hi in pieces], out=v)
                out[rows] = _rows(v, [(s, lo, hi) for _, s, lo, hi in pieces],
                                  [classes[i] for i in rows])
    return out


_BLOCK_BYTES = 1 << 22


def _row_numbers(runs: list[tuple[int, int]]) -> np.ndarray:
    """The row numbers of runs of ``(first, count)`` rows, in order (one numpy call for
    the single-row samples of a large model's outputs, not one per sample)."""
    first, count = np.array(runs, dtype=np.int64).reshape(-1, 2).T
    if (count == 1).all():
        return first
    within = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(first, count) + within


def _blocks(members: list[tuple[int, GroupSample]], block: int,
            total: int) -> list[list[tuple]]:
    """The ``total`` rows of these samples cut into blocks of at most ``block`` rows:
    lists of ``(index, sample, first row, end row)``."""
    if total <= block:
        return [[(j, s, 0, len(s.values)) for j, s in members]]
    blocks: list[list[tuple]] = [[]]
    room = block
    for j, s in members:
        lo = 0
        while lo < len(s.values):
            if not room:
                blocks.append([])
                room = block
            hi = min(len(s.values), lo + room)
            blocks[-1].append((j, s, lo, hi))
            room -= hi - lo
            lo = hi
    return [b for b in blocks if b]


def _rows(v: np.ndarray, pieces: list[tuple[GroupSample, int, int]],
          classes: list[str]) -> np.ndarray:
    """Rows of subsamples ``v`` (a buffer of this call's: centred in place below) taken
    from these pieces of samples, in one vectorised pass in the values' own dtype (float32
    sums over a subsample of at most 1024 values stay accurate to ~1e-7)."""
    cat = np.concatenate
    units = cat([s.unit_max[lo:hi] for s, lo, hi in pieces])
    counts = [hi - lo for _, lo, hi in pieces]
    numel = np.repeat(np.array([s.numel for s, _, _ in pieces], dtype=np.float64), counts)
    has_units = np.repeat(np.array([s.has_units for s, _, _ in pieces], dtype=bool), counts)
    width, n = v.shape[1], max(v.shape[1], 1)
    # row sums by einsum (no BLAS: no thread pool), shares as bit counts: few passes
    mean = np.einsum("ij->i", v) / width if width else np.full(len(v), np.nan)
    zero = _count(v == 0) / n
    limit = np.array([_LIMITS.get(c) or _limit(c) for c in classes], dtype=v.dtype)
    absmax = units.max(1).astype(np.float64) + 0.0  # never -0.0
    # No value of a row is beyond its output's max |a|: only rows whose max is beyond the
    # limit (or NaN) can hold saturated values, and only they are compared.
    sat, over = np.zeros(len(v)), np.flatnonzero(~(absmax <= limit))
    if over.size:
        part, bound = v[over], limit[over, None]
        sat[over] = (_count(part > bound) + _count(part < -bound)) / n
    for j in [j for j, c in enumerate(classes) if c in UNIT_RANGE]:
        sat[j] = np.count_nonzero((v[j] < UNIT_LOW) | (v[j] > UNIT_HIGH)) / n
    special = {j: _value_stats(v[j], classes[j]) for j in np.flatnonzero(~np.isfinite(mean))}
    np.subtract(v, mean[:, None].astype(v.dtype), out=v)
    std = (np.sqrt(np.einsum("ij,ij->i", v, v) / max(width - 1, 1)) if width > 1
           else 0.0 * mean)
    dead = np.where(has_units, (units <= DEAD_EPS).mean(1), 0.0)
    rows = np.stack([mean, std, zero, dead, sat, ~np.isfinite(absmax), absmax, numel], 1)
    for j, stats in special.items():  # rare: NaN/inf in the subsample
        rows[j, [0, 1, 2, 4]] = stats
    return rows


_LIMITS: dict[str, float] = {}


def _limit(module_class: str) -> float:
    """:func:`saturation_limit`, remembered per class (looked up once per row)."""
    _LIMITS[module_class] = limit = saturation_limit(module_class)
    return limit


def _count(mask: np.ndarray) -> np.ndarray:
    """``True`` per row of a 2-d mask, eight bytes at a time where the rows allow it: the
    mask's bytes (0 or 1) summed as uint64 words, each byte of a row's sum counting one
    of eight interleaved columns (at most 255 each: no carry), then those eight bytes
    added (several times faster than ``count_nonzero(axis=1)``)."""
    if mask.shape[1] % 8 or mask.shape[1] > 8 * 255 or not mask.flags.c_contiguous:
        return np.count_nonzero(mask, axis=1)
    lanes = np.einsum("ij->i", mask.view(np.uint64))
    return lanes.view(np.uint8).reshape(-1, 8).sum(1, dtype=np.int64)


def _value_stats(v: np.ndarray, module_class: str) -> list[float]:
    """Mean, std, zero and saturated shares of one subsample holding NaN or inf (NaNs
    left out, as the definition says)."""
    v = v[~np.isnan(v)].astype(np.float64)
    if not v.size:
        return [np.nan, 0.0, 0.0, 0.0]
    std = v.std(ddof=1) if v.size > 1 else 0.0
    return [v.mean(), std, np.mean(v == 0), np.mean(saturated(v, module_class))]
