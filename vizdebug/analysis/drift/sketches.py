"""Small summaries of a feature that the drift view redraws from without the raw data.

Per numeric feature: a 120-bin histogram of each side on a shared robust range (any bin
count that divides 120 is an exact re-binning), 201 quantiles of each side (ECDF and the
what-if shift), and, when the current data has a time column, the current histogram per
time bucket (a window of buckets is a sum). Per categorical feature: counts of the top
categories (+ "other") per side and per time bucket. Everything is JSON-ready.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

DISPLAY_BINS = 120
N_QUANTILES = 201
MAX_CATEGORIES = 30
OTHER = "(other)"


@dataclass(frozen=True)
class Buckets:
    """Which time bucket each current row falls in (-1: no time), and the bucket edges."""

    ids: np.ndarray
    edges: np.ndarray  # epoch milliseconds (or plain numbers), len n + 1
    is_datetime: bool

    @property
    def n(self) -> int:
        return len(self.edges) - 1


def make_buckets(time: np.ndarray, n: int = 24, is_datetime: bool = True) -> Buckets:
    """Equal-width time buckets over the finite range of ``time``.

    Examples
    --------
    >>> make_buckets(np.arange(10.0), n=2, is_datetime=False).ids.tolist()
    [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    """
    finite = np.isfinite(time)
    span = (float(time[finite].min()), float(time[finite].max())) if finite.any() else (0.0, 1.0)
    edges = bucket_edges(*span, n)
    return Buckets(bucket_ids(time, edges), edges, is_datetime)


def bucket_edges(lo: float, hi: float, n: int) -> np.ndarray:
    """``n + 1`` equal-width edges from ``lo`` to ``hi`` (a zero span is widened to 1)."""
    return np.linspace(lo, hi if hi > lo else lo + 1.0, n + 1)


def bucket_ids(time: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bucket of each time value (-1 where it is not finite); the ends are clipped in."""
    n, lo, hi = len(edges) - 1, edges[0], edges[-1]
    finite = np.isfinite(time)
    ids = np.full(len(time), -1, dtype=np.int64)
    ids[finite] = np.clip(((time[finite] - lo) / (hi - lo) * n).astype(np.int64), 0, n - 1)
    return ids


def _round(x: np.ndarray) -> list[float]:
    return [float(f"{v:.7g}") for v in np.asarray(x, dtype=float)]


def display_range(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """A shared plotting range that ignores the outer 0.1 % of each sorted side."""
    def q(s: np.ndarray, p: float) -> float:
        return float(s[min(int(p * len(s)), len(s) - 1)])

    lo, hi = min(q(a, 0.001), q(b, 0.001)), max(q(a, 0.999), q(b, 0.999))
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def sorted_hist(s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts of a sorted sample in the bins, values outside clipped into the end bins."""
    return np.diff(np.searchsorted(s, edges[1:-1], side="left"), prepend=0, append=len(s))


def quantiles(s: np.ndarray, n: int = N_QUANTILES) -> np.ndarray:
    """``n`` evenly spaced order statistics of a sorted sample (min and max included)."""
    return s[np.round(np.linspace(0, len(s) - 1, n)).astype(np.int64)]


def numeric_sketch(a: np.ndarray, b: np.ndarray, cur_values: np.ndarray,
                   buckets: Buckets | None) -> dict[str, Any]:
    """The view's summary of one numeric feature from the sorted finite samples.

    Examples
    --------
    >>> s = numeric_sketch(np.arange(10.0), np.arange(10.0), np.arange(10.0), None)
    >>> sum(s["ref_hist"]), len(s["ref_q"])
    (10, 201)
    """
    lo, hi = display_range(a, b)
    edges = np.linspace(lo, hi, DISPLAY_BINS + 1)
    sketch: dict[str, Any] = {
        "lo": lo, "hi": hi,
        "ref_hist": sorted_hist(a, edges).tolist(), "cur_hist": sorted_hist(b, edges).tolist(),
        "ref_q": _round(quantiles(a)), "cur_q": _round(quantiles(b)),
        "ref_mean": float(np.mean(a)), "ref_std": float(np.std(a)),
    }
    if buckets is not None:
        sketch["bucket_hist"] = _bucket_hist(cur_values, buckets, lo, hi).tolist()
    return sketch


def _bucket_hist(values: np.ndarray, buckets: Buckets, lo: float, hi: float) -> np.ndarray:
    ok = np.isfinite(values) & (buckets.ids >= 0)
    bins = np.full(len(values), -1, dtype=np.int64)
    bins[ok] = np.clip(((values[ok] - lo) / (hi - lo) * DISPLAY_BINS).astype(np.int64), 0, DISPLAY_BINS - 1)
    return bucket_table(buckets.ids, bins, buckets.n, DISPLAY_BINS)


def category_counts(ref: Any, cur: Any) -> tuple[list[str], np.ndarray, np.ndarray, float, float]:
    """Categories (reference order, then ones new in current), counts per side, missing shares.

    Labels are compared as strings, so ``1`` and ``"1"`` are one category.

    Examples
    --------
    >>> cats, rc, cc, _, _ = category_counts(np.array(["a", "a", "b"], dtype=object),
    ...                                      np.array(["b", "c"], dtype=object))
    >>> cats, rc.tolist(), cc.tolist()
    (['a', 'b', 'c'], [2, 1, 0], [0, 1, 1])
    """
    r, c = _counts(ref), _counts(cur)
    cats = list(r.index) + [k for k in c.index if k not in r.index]
    rc = r.reindex(cats, fill_value=0).to_numpy(np.int64)
    cc = c.reindex(cats, fill_value=0).to_numpy(np.int64)
    miss_r = 1 - rc.sum() / len(ref) if len(ref) else 0.0
    miss_c = 1 - cc.sum() / len(cur) if len(cur) else 0.0
    return list(cats), rc, cc, float(miss_r), float(miss_c)


def _counts(values: Any) -> Any:
    import pandas as pd

    s = values if isinstance(values, pd.Series) else pd.Series(values, dtype=object)
    counts = s.value_counts(dropna=True, sort=True)
    counts.index = counts.index.map(str)
    if counts.index.has_duplicates:  # e.g. 1 and "1" in one object column
        counts = counts.groupby(level=0, sort=False).sum().sort_values(ascending=False, kind="stable")
    return counts


def categorical_sketch(cats: list[str], rc: np.ndarray, cc: np.ndarray, cur_values: Any,
                       buckets: Buckets | None) -> dict[str, Any]:
    """The view's summary of one categorical feature: top categories plus "(other)"."""
    share = np.maximum(rc / max(rc.sum(), 1), cc / max(cc.sum(), 1))
    keep = np.sort(np.argsort(-share, kind="stable")[:MAX_CATEGORIES])
    rest = np.setdiff1d(np.arange(len(cats)), keep)
    names = [cats[i] for i in keep] + ([OTHER] if len(rest) else [])
    ref_counts = rc[keep].tolist() + ([int(rc[rest].sum())] if len(rest) else [])
    cur_counts = cc[keep].tolist() + ([int(cc[rest].sum())] if len(rest) else [])
    sketch: dict[str, Any] = {
        "categories": names, "ref_counts": ref_counts, "cur_counts": cur_counts,
        "unseen": [bool(rc[i] == 0 and cc[i] > 0) for i in keep] + ([False] if len(rest) else []),
    }
    if buckets is not None:
        sketch["bucket_counts"] = _bucket_counts(cur_values, names, len(rest) > 0, buckets).tolist()
    return sketch


def _bucket_counts(values: Any, names: list[str], has_other: bool, buckets: Buckets) -> np.ndarray:
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(values) if not isinstance(values, pd.Series) else values)
    idx = category_index(list(uniques), names, has_other)[codes]  # code -1 (missing) picks the trailing -1
    return bucket_table(buckets.ids, idx, buckets.n, len(names))


def category_index(uniques: list[Any], names: list[str], has_other: bool) -> np.ndarray:
    """Position in a sketch's ``names`` of each distinct value (compared as a string), the
    last name for values folded into "(other)", and a trailing -1 for missing values."""
    index = {name: i for i, name in enumerate(names[:-1] if has_other else names)}
    other = len(names) - 1 if has_other else -1
    return np.array([index.get(str(u), other) for u in uniques] + [-1], dtype=np.int64)


def bucket_table(ids: np.ndarray, idx: np.ndarray, n_buckets: int, k: int) -> np.ndarray:
    """Counts per (time bucket, bin or category) of rows with both a bucket and an index."""
    ok = (idx >= 0) & (ids >= 0)
    return np.bincount(ids[ok] * k + idx[ok], minlength=n_buckets * k).reshape(n_buckets, k)
