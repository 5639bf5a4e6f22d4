"""The PCA of features: the preview picture of an embedding, exact or randomized.

Pure numpy (threadpoolctl, which comes with scikit-learn, keeps small products on one
BLAS thread); :mod:`.project` draws it at once and starts t-SNE from it. Also
:func:`conditioned`: features brought to unit scale before any distance is computed.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np


def pca_layout(x: np.ndarray) -> np.ndarray:
    """The first two principal components of ``x`` (``n x 2``; zeros where there is no
    spread), with signs fixed so the same data always gives the same picture. Exact up
    to 2 million values; above, a seeded randomized SVD (Halko et al.), so that a preview
    of 10k x 512 takes a tenth of a second. Past 50,000 rows the axes are those of a fixed
    sample of 50,000 rows (:data:`PCA_FIT_ROWS`) and every row is projected on them: one
    pass over the features, so that 1M x 64 takes a fraction of a second, not several.

    Examples
    --------
    >>> xy = pca_layout(np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 3.0]]))
    >>> xy.shape, xy[:, 1].tolist()
    ((3, 2), [0.0, 0.0, 0.0])
    """
    n, d = x.shape
    out = np.zeros((n, 2))
    if n < 2:
        return out
    if n > PCA_FIT_ROWS:
        proj, scale = _sampled_projection(x)
        if proj is None:
            return out
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            centred = x - x.mean(axis=0)
            scale = float(np.abs(centred).max())
        if not 0 < scale < np.inf:  # no spread, or values past the float range
            return out
        proj = _top2(centred / scale)  # products of values near 1e308 would overflow
    with np.errstate(over="ignore"):
        full = proj * scale
    out[:, : proj.shape[1]] = full if np.isfinite(full).all() else proj
    biggest = np.abs(out).max()
    out[:, np.abs(out).max(axis=0) <= 1e-12 * max(biggest, 1e-300)] = 0.0
    signs = np.sign(out[np.abs(out).argmax(axis=0), [0, 1]])
    return out * np.where(signs == 0, 1.0, signs)


EXACT_PCA_VALUES = 2_000_000
PCA_FIT_ROWS = 50_000  # past this many rows, the axes of a fixed sample of this many
PROJECT_CHUNK = 65_536  # rows projected at a time: no n x d float64 copy of a big set


def _top2(centred: np.ndarray) -> np.ndarray:
    """The top-2 projection of centred features of scale about 1 (exact or randomized)."""
    n, d = centred.shape
    if n * d <= EXACT_PCA_VALUES:
        with _one_thread():
            return _top2_exact(centred.astype(np.float64))
    return _top2_randomized(centred)


def _sampled_projection(x: np.ndarray) -> tuple[np.ndarray | None, float]:
    """Every row of ``x`` projected on the top-2 axes of a fixed sample of its rows, and
    the scale the projection is in (``None`` where the sample has no spread)."""
    pick = np.sort(np.random.default_rng(0).choice(len(x), PCA_FIT_ROWS, replace=False))
    sample = np.asarray(x[pick], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = sample.mean(axis=0)
        centred = sample - mean
        scale = float(np.abs(centred).max())
    if not 0 < scale < np.inf:
        return None, 0.0
    centred /= scale
    axes = _top2_axes(centred)
    dtype = np.float32 if x.dtype == np.float32 else np.float64
    shift, axes = (mean / scale).astype(dtype), axes.astype(dtype)
    if scale < 1e30 and float(np.abs(mean).max()) < 1e30:  # (x/s - m) @ a = x @ a / s - m @ a
        # as a.T @ x.T: OpenBLAS blocks a product with two columns poorly (0.65 s for 1M x 64
        # here, against 0.15 s the other way round)
        product = (axes.T @ x.T).T
        return product.astype(np.float64) / scale - (shift @ axes).astype(np.float64), scale
    proj = np.empty((len(x), axes.shape[1]))  # values near the float range: scale them first
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, len(x), PROJECT_CHUNK):
            part = x[start:start + PROJECT_CHUNK]
            proj[start:start + len(part)] = (part / dtype(scale) - shift) @ axes
    return proj, scale


def _one_thread() -> Any:
    """BLAS on one thread for small products: on a busy 2-core machine OpenBLAS's threads
    waiting on each other made a 64 x 64 eigh of a 10k x 64 preview take 0.35-0.4 s
    instead of 0.04 s; threads gain nothing at this size."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # comes with scikit-learn; without it, BLAS as configured
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _top2_exact(centred: np.ndarray) -> np.ndarray:
    n, d = centred.shape
    if d <= n:  # d x d eigenproblem
        _, vecs = np.linalg.eigh(centred.T @ centred)
        return centred @ vecs[:, ::-1][:, :2]
    vals, vecs = np.linalg.eigh(centred @ centred.T)  # more dimensions than points
    return vecs[:, ::-1][:, :2] * np.sqrt(np.clip(vals[::-1][:2], 0, None))


def _top2_randomized(centred: np.ndarray) -> np.ndarray:
    return centred.astype(np.float32, copy=False) @ _randomized_axes(centred).astype(np.float32)


def _top2_axes(centred: np.ndarray) -> np.ndarray:
    """The top-2 principal axes (``d x 2``) of centred rows of scale about 1 (``n >= d``)."""
    n, d = centred.shape
    if n * d <= EXACT_PCA_VALUES or d <= EXACT_AXES_DIMENSIONS:  # the d x d product is cheap
        with _one_thread():
            return np.linalg.eigh(centred.T @ centred)[1][:, ::-1][:, :2]
    return _randomized_axes(centred)


EXACT_AXES_DIMENSIONS = 128  # up to here the exact axes of 50k rows cost less than randomized


def _randomized_axes(centred: np.ndarray, oversample: int = 8, power: int = 6) -> np.ndarray:
    # subspace iteration on the d side: only d x k matrices are orthonormalised (a QR of
    # the tall n x k one cost more than all the products on a loaded 2-core machine)
    a = centred.astype(np.float32, copy=False)
    q = np.random.default_rng(0).normal(size=(a.shape[1], 2 + oversample)).astype(np.float32)
    for _ in range(power):
        q = np.linalg.qr(a.T @ (a @ q))[0]
    b = a @ q
    _, vecs = np.linalg.eigh((b.T @ b).astype(np.float64))
    return q.astype(np.float64) @ vecs[:, ::-1][:, :2]


def conditioned(x: np.ndarray) -> np.ndarray:
    """``x`` centred and scaled so its largest deviation is 1 (float32 stays float32).

    t-SNE and UMAP depend on distances only up to scale (perplexity and neighbour radii
    adapt), but their arithmetic does not: squared distances of features of scale 1e-160
    underflow to 0, and sklearn's float32 PCA start turns 1e-40 into 0 and divides by it.

    >>> conditioned(np.array([[1e-200, 0.0], [3e-200, 0.0]])).round(12).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        size = float(np.abs(x).max())
        unit = np.asarray(x, dtype=np.float64) / (size if 0 < size < np.inf else 1.0)
        centred = unit - unit.mean(axis=0)
        reach = float(np.abs(centred).max())
        out = centred / reach if reach > 0 else centred
    return out.astype(x.dtype if x.dtype == np.float32 else np.float64, copy=False)
