"""Learning-curve helpers: smoothing and downsampling that keeps spikes and NaNs visible.

Pure numpy: every function takes arrays, validates them up front and returns new arrays;
nothing here mutates its input.
"""

from __future__ import annotations

import numpy as np

from ..errors import VizdebugError
from ..records import extreme_indices


def _as_1d(values: object, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise VizdebugError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def ema_smooth(values: object, weight: float = 0.6) -> np.ndarray:
    """Debiased exponential moving average, as TensorBoard's smoothing slider does.

    Non-finite values are passed through unchanged (so they stay visible) and do not
    poison the average that follows them.

    Parameters
    ----------
    values : array-like, 1-d
        The raw curve.
    weight : float
        Smoothing in ``[0, 1)``; 0 returns the raw values.

    Examples
    --------
    >>> ema_smooth([1.0, 1.0, float("nan"), 1.0], 0.9).tolist()
    [1.0, 1.0, nan, 1.0]
    """
    y = _as_1d(values, "values")
    if not 0.0 <= weight < 1.0:
        raise VizdebugError(f"weight must be in [0, 1), got {weight!r}")
    out = y.copy()
    if weight == 0.0:
        return out
    acc, debias = 0.0, 0.0
    for i, v in enumerate(y):
        if not np.isfinite(v):
            continue
        acc = weight * acc + (1.0 - weight) * v
        debias = weight * debias + (1.0 - weight)
        out[i] = acc / debias
    return out


def minmax_indices(y: object, max_points: int) -> np.ndarray:
    """Indices of at most ~``max_points`` points that keep each bucket's extremes.

    The curve is cut into equal buckets; from each one the first point, the minimum, the
    maximum and the first non-finite point (NaN or inf) are kept, so a single spike or a
    single NaN in a million steps survives downsampling. Indices come back sorted.

    Parameters
    ----------
    y : array-like, 1-d
        The values.
    max_points : int
        Budget; each bucket gives up to four points, so about ``max_points / 4`` buckets.

    Examples
    --------
    >>> y = [0.0] * 1000
    >>> y[500] = 9.0
    >>> 500 in minmax_indices(y, 40)
    True
    """
    arr = _as_1d(y, "y")
    if max_points < 4:
        raise VizdebugError(f"max_points must be at least 4, got {max_points!r}")
    return extreme_indices(arr, max_points)


def downsample(x: object, y: object, max_points: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` reduced to about ``max_points`` points with :func:`minmax_indices`.

    Examples
    --------
    >>> x, y = downsample(range(10_000), [1.0] * 10_000, max_points=100)
    >>> len(x) <= 100
    True
    """
    xs, ys = _as_1d(x, "x"), _as_1d(y, "y")
    if xs.shape != ys.shape:
        raise VizdebugError(f"x and y must have the same length, got {xs.size} and {ys.size}")
    idx = minmax_indices(ys, max_points)
    return xs[idx], ys[idx]


def bucket_max(matrix: object, max_columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Reduce the columns of a 2-d array to at most ``max_columns`` by taking the max.

    Used for the per-layer gradient heatmap: a column that spiked stays visible. Returns
    ``(column_index_of_each_bucket_start, reduced)``; NaN wins over numbers so a
    non-finite gradient is never hidden.

    Examples
    --------
    >>> starts, m = bucket_max(np.arange(12.0).reshape(2, 6), 3)
    >>> m.tolist()
    [[1.0, 3.0, 5.0], [7.0, 9.0, 11.0]]
    """
    arr = np.asarray(matrix, dtype=float)
    if arr.ndim != 2:
        raise VizdebugError(f"matrix must be 2-d, got shape {arr.shape}")
    n = arr.shape[1]
    if n <= max_columns:
        return np.arange(n), arr.copy()
    width = -(-n // max_columns)
    n_buckets = -(-n // width)
    padded = np.full((arr.shape[0], n_buckets * width), -np.inf)
    padded[:, :n] = np.where(np.isnan(arr), -np.inf, arr)
    reduced = padded.reshape(arr.shape[0], n_buckets, width).max(axis=2)
    nan = np.zeros((arr.shape[0], n_buckets * width), dtype=bool)
    nan[:, :n] = np.isnan(arr)
    reduced[nan.reshape(arr.shape[0], n_buckets, width).any(axis=2)] = np.nan
    return np.arange(n_buckets) * width, reduced


def rolling_median(values: object, window: int) -> np.ndarray:
    """Trailing median over ``window`` points, NaN-aware (NaN where the window is empty).

    Examples
    --------
    >>> rolling_median([1.0, 2.0, 3.0, 100.0], 3).tolist()
    [1.0, 1.5, 2.0, 3.0]
    """
    y = _as_1d(values, "values")
    if window < 1:
        raise VizdebugError(f"window must be at least 1, got {window!r}")
    y = np.where(np.isfinite(y), y, np.nan)
    out = np.full(y.size, np.nan)
    if y.size == 0:
        return out
    pad = np.concatenate([np.full(window - 1, np.nan), y])
    windows = np.lib.stride_tricks.sliding_window_view(pad, window)
    with np.errstate(all="ignore"):
        valid = ~np.isnan(windows).all(axis=1)
        out[valid] = np.nanmedian(windows[valid], axis=1)
    return out
