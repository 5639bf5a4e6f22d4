"""Test rows made from training rows: ``split-near-duplicates``.

Oversampling before the split (SMOTE, or copies with a little noise) puts rows derived
from training rows into the test split. Two relations between a test row and its nearest
training rows give them away, each read against the training split's relation to itself,
in features standardised by the training split:

- *interpolated*: the test row lies exactly (to float32 rounding) on the segment between
  two training rows, moving in three coordinates or more, at a new value, as SMOTE's
  ``x_i + lambda * (x_nn - x_i)`` does. Honest rows of continuous data never do; rows of
  whole-number or rounded data may fall between two others, but only on values the
  training columns already hold, so a test row must hold a value no training row has.
  The share of training rows lying between two other training rows is reported beside
  it: with SMOTE before the split both sides hold interpolations;
- *one-sided near copies*: many test rows sit closer to a training row than half the
  distance that 99% of training rows keep from their nearest other training row (the
  leave-one-out 1st percentile). A random split of honest data puts well under 1% there,
  however dense the data, because test and train rows are drawn alike. Copies with noise
  made *before* a random split land on both sides alike and are not told apart this way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...findings import Finding, fmt_indices

if TYPE_CHECKING:
    from .splits import SplitRows

MAX_TRAIN = 3000        # reference training rows (a random subsample beyond this)
MAX_TEST = 1000         # test rows examined
NEIGHBOURS = 16         # nearest training rows whose pairs may bracket a test row ...
PAIR_VALUES = 8_000     # ... fewer in wide tables: pairs x features examined per test row
CLOSE_QUANTILE = 0.01   # the training rows' own nearest-neighbour distance ...
CLOSE_FACTOR = 0.5      # ... and the fraction of it that is "close": half of what 99% of
                        # training rows exceed, so a split in time order of dependent rows
                        # (not drawn alike: denser or sparser than train) stays below it
CLOSE_WARN_SHARE = 0.10  # test rows that close (well under 1% expected) that make a warning
ON_SEGMENT_WARN_SHARE = 0.02  # interpolated test rows (none expected) that make a warning
MIN_ROWS = 5
LAMBDA_EDGE = 1e-3      # a test row this near a segment's end is a copy, not an interpolation
# rounding allowed on a value, in float32 units of its last place whatever the dtype: rows
# made in float32 and scaled in float64 keep float32's error, and honest rows in three or
# more varying coordinates line up by chance far less often than that even so
PRECISION_ULPS = 16
FLOAT32_EPS = float(np.finfo(np.float32).eps)
MIN_VARYING = 3         # coordinates a segment must move in: in two, rows of float32 data
                        # line up by chance within the rounding (one constraint is weak)


def oversampling_findings(a: SplitRows, b: SplitRows) -> list[Finding]:
    """Test rows interpolated between, or copied close to, training rows."""
    if (not a.tabular or a.x.shape[1] < MIN_VARYING or a.x.shape[0] < 20
            or b.x.shape[0] < MIN_ROWS):
        return []
    rng = np.random.default_rng(0)
    ia = _subsample(a.x.shape[0], MAX_TRAIN, rng)
    ib = _subsample(b.x.shape[0], MAX_TEST, rng)
    xa, xb = a.x[ia], b.x[ib]
    keep_a, keep_b = np.isfinite(xa).all(axis=1), np.isfinite(xb).all(axis=1)
    xa, ia, xb, ib = xa[keep_a], ia[keep_a], xb[keep_b], ib[keep_b]
    if xa.shape[0] < 20 or xb.shape[0] < MIN_ROWS or not _spans_a_plane(xa):
        return []
    za, zb = _standardise(xa, xb)
    dist, nbr = _neighbours(za, zb)
    return _interpolated(a, xa, za, xb, nbr, ib) or _close_copies(za, dist, ib)


def _subsample(n: int, limit: int, rng: np.random.Generator) -> np.ndarray:
    return np.arange(n) if n <= limit else np.sort(rng.choice(n, limit, replace=False))


def _sample_rows(n: int, limit: int) -> np.ndarray:
    """Up to ``limit`` training rows drawn at random (the split may be sorted by class)."""
    return np.random.default_rng(1).permutation(n)[:limit]


def _spans_a_plane(x: np.ndarray) -> bool:
    """Whether the rows spread over two directions or more (on one line every row lies
    between two others, and that says nothing): what is left of the rows once their
    component along the farthest row's direction is taken away."""
    z, _ = _standardise(x, x[:0])
    z = z - z.mean(axis=0)
    norms = np.linalg.norm(z, axis=1)
    if norms.max() == 0:
        return False
    u = z[norms.argmax()] / norms.max()
    rest = z - np.outer(z @ u, u)
    return bool(np.linalg.norm(rest, axis=1).max() > 1e-6 * norms.max())


def _standardise(xa: np.ndarray, xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, std = xa.mean(axis=0), xa.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (xa - mean) / std, (xb - mean) / std


def _index(za: np.ndarray, k: int) -> Any:
    """A neighbour index over the training rows (``k`` neighbours, fewer in a tiny split)."""
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=min(k, za.shape[0] - 1)).fit(za)


def _exact(za: np.ndarray, rows: np.ndarray, nbr: np.ndarray) -> np.ndarray:
    """Distances from ``rows`` to their neighbours ``nbr`` measured as differences: the
    index's |a|^2 - 2ab + |b|^2 rounds a copy's 0 to ~1e-8, and a copy must read 0."""
    return np.linalg.norm(za[nbr] - rows[:, None, :], axis=-1)


def _others(za: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` nearest training rows to training rows ``rows``, each leaving itself out."""
    k = min(k, za.shape[0] - 1)
    nbr = _index(za, k + 1).kneighbors(za[rows], n_neighbors=k + 1, return_distance=False)
    own = nbr == rows[:, None]
    own[~own.any(axis=1), -1] = True  # a row tied with copies of itself may come later
    return nbr[~own].reshape(rows.size, k)


def _neighbours(za: np.ndarray, zb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    nbr = _index(za, _pair_count(za.shape[1])).kneighbors(zb, return_distance=False)
    return _exact(za, zb, nbr), nbr


def _pair_count(features: int) -> int:
    """How many nearest training rows to pair up: ``NEIGHBOURS``, fewer in wide tables."""
    k = int((1 + np.sqrt(1 + 8 * PAIR_VALUES / features)) / 2)
    return max(3, min(NEIGHBOURS, k))


# -- interpolations ----------------------------------------------------------------------
def _interpolated(a: SplitRows, xa: np.ndarray, za: np.ndarray, xb: np.ndarray,
                  nbr: np.ndarray, ib: np.ndarray) -> list[Finding]:
    """Test rows on a segment between two of their nearest training rows, at a new value."""
    eps = FLOAT32_EPS
    new = _new_values(a.x, xb)
    hits = np.flatnonzero(_on_segments(xa, xb, nbr, new, eps))
    if hits.size < 3:
        return []
    share = hits.size / xb.shape[0]
    rows = ib[hits].tolist()
    inner = _train_share(xa, za, eps)
    severity = "warning" if share >= ON_SEGMENT_WARN_SHARE else "info"
    return [Finding(
        "split-near-duplicates", severity,
        f"{hits.size} of {xb.shape[0]} test rows ({share:.1%}) lie exactly on the segment "
        "between two training rows, at values no training row holds: interpolations such "
        f"as SMOTE makes (rows of real data never line up so; {inner:.0%} of training rows "
        "lie between two other training rows likewise)",
        where=f"test rows {fmt_indices(rows)}",
        evidence={"test_indices": rows[:256], "share": share, "train_share": inner,
                  "relation": "interpolated"},
        hint="an oversampler (SMOTE, ADASYN) ran before the split, so test rows are blends "
             "of training rows: split first, then resample the training split only "
             "(imblearn.pipeline.Pipeline inside cross-validation), and score on untouched rows",
    )]


def _new_values(train: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(n, d)``: whether each value of ``rows`` is one its training column never holds."""
    out = np.ones(rows.shape, dtype=bool)
    for j in range(rows.shape[1]):
        grid = np.unique(train[:, j])
        pos = np.clip(np.searchsorted(grid, rows[:, j]), 0, grid.size - 1)
        out[:, j] = grid[pos] != rows[:, j]
    return out


def _on_segments(xa: np.ndarray, xb: np.ndarray, nbr: np.ndarray, new: np.ndarray,
                 eps: float) -> np.ndarray:
    """``(m,)``: whether each row of ``xb`` lies between some pair of its neighbours
    ``nbr`` (rows of ``xa``) to within the rounding of stored values, at a new value."""
    k = nbr.shape[1]
    p, q = np.triu_indices(k, 1)
    out = np.zeros(xb.shape[0], dtype=bool)
    chunk = max(1, int(2e6 // max(p.size * xb.shape[1], 1)))
    for s in range(0, xb.shape[0], chunk):
        t = xb[s:s + chunk, None, :]
        lo, hi = xa[nbr[s:s + chunk, p]], xa[nbr[s:s + chunk, q]]
        out[s:s + chunk] = _collinear(t, lo, hi, new[s:s + chunk, None, :], eps).any(axis=1)
    return out


def _collinear(t: np.ndarray, a: np.ndarray, b: np.ndarray, new: np.ndarray,
               eps: float) -> np.ndarray:
    """Whether ``t = a + lambda (b - a)`` for one lambda inside (0, 1) in every coordinate,
    each coordinate known to ``PRECISION_ULPS`` of its value's last place."""
    tol = PRECISION_ULPS * eps * (np.abs(a) + np.abs(b) + np.abs(t)) + 1e-300
    diff = b - a
    varying = np.abs(diff) > tol
    fixed_ok = np.all(varying | (np.abs(t - a) <= tol), axis=-1)
    safe = np.where(varying, diff, 1.0)
    lam = (t - a) / safe
    slack = 2 * tol / np.abs(safe)
    lo = np.max(np.where(varying, lam - slack, -np.inf), axis=-1)
    hi = np.min(np.where(varying, lam + slack, np.inf), axis=-1)
    inside = np.maximum(lo, LAMBDA_EDGE) <= np.minimum(hi, 1 - LAMBDA_EDGE)
    enough = varying.sum(axis=-1) >= MIN_VARYING
    return fixed_ok & inside & enough & np.any(varying & new, axis=-1)


def _train_share(xa: np.ndarray, za: np.ndarray, eps: float) -> float:
    """The share of (up to 500) training rows between two other training rows, at a value
    the rest of the training split does not hold: the training split's own relation."""
    rows = _sample_rows(xa.shape[0], 500)
    nbr = _others(za, rows, _pair_count(za.shape[1]))
    new = np.ones((rows.size, xa.shape[1]), dtype=bool)
    for j in range(xa.shape[1]):  # a value held once in its column is new to the others
        _, inverse, counts = np.unique(xa[:, j], return_inverse=True, return_counts=True)
        new[:, j] = counts[inverse[rows]] == 1
    return float(_on_segments(xa, xa[rows], nbr, new, eps).mean())


# -- near copies -------------------------------------------------------------------------
def _close_copies(za: np.ndarray, dist: np.ndarray, ib: np.ndarray) -> list[Finding]:
    """Test rows closer to train than (almost) any training row is to another training row."""
    rows = _sample_rows(za.shape[0], 1000)
    own = _first_positive(_exact(za, za[rows], _others(za, rows, 6)))  # leave-one-out
    own = own[np.isfinite(own)]
    test = _first_positive(dist)
    if own.size < 20:
        return []
    close = CLOSE_FACTOR * float(np.quantile(own, CLOSE_QUANTILE))
    hits = np.flatnonzero(test < close)
    share = hits.size / test.size
    if hits.size < MIN_ROWS or share < CLOSE_WARN_SHARE:
        return []
    rows = ib[hits].tolist()
    return [Finding(
        "split-near-duplicates", "warning",
        f"{hits.size} of {test.size} test rows ({share:.1%}) lie closer to a training row "
        f"(distance < {close:.3g} in standardised units) than half the distance that 99% of "
        "training rows keep from their nearest other training row; a random split of the "
        "same data puts well under 1% there: the test rows are near copies of training rows",
        where=f"test rows {fmt_indices(rows)}",
        evidence={"test_indices": rows[:256], "share": share, "close_distance": close,
                  "relation": "near copies"},
        hint="rows were copied with small changes (oversampling with noise, augmentation, "
             "re-recorded samples) before the split: split first, then oversample or augment "
             "the training split only, and group near copies (GroupShuffleSplit)",
    )]


def _first_positive(dist: np.ndarray) -> np.ndarray:
    """Each row's smallest nonzero distance (exact copies are split-duplicates' to name)."""
    masked = np.where(dist > 0, dist, np.inf)
    return masked.min(axis=1)
