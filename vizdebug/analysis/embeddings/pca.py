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
    of 10k x 512 takes a tenth of a second.

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
    with np.errstate(over="ignore", invalid="ignore"):
        centred = x - x.mean(axis=0)
        scale = float(np.abs(centred).max())
    if not 0 < scale < np.inf:  # no spread, or values past the float range
        return out
    centred = centred / scale  # products of values near 1e308 would overflow
    exact = n * d <= EXACT_PCA_VALUES
    if exact:
        with _one_thread():
            proj = _top2_exact(centred.astype(np.float64))
    else:
        proj = _top2_randomized(centred)
    with np.errstate(over="ignore"):
        full = proj * scale
    out[:, : proj.shape[1]] = full if np.isfinite(full).all() else proj
    biggest = np.abs(out).max()
    out[:, np.abs(out).max(axis=0) <= 1e-12 * max(biggest, 1e-300)] = 0.0
    signs = np.sign(out[np.abs(out).argmax(axis=0), [0, 1]])
    return out * np.where(signs == 0, 1.0, signs)


EXACT_PCA_VALUES = 2_000_000


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


def _top2_randomized(centred: np.ndarray, oversample: int = 8, power: int = 6) -> np.ndarray:
    # subspace iteration on the d side: only d x k matrices are orthonormalised (a QR of
    # the tall n x k one cost more than all the products on a loaded 2-core machine)
    a = centred.astype(np.float32, copy=False)
    q = np.random.default_rng(0).normal(size=(a.shape[1], 2 + oversample)).astype(np.float32)
    for _ in range(power):
        q = np.linalg.qr(a.T @ (a @ q))[0]
    b = a @ q
    _, vecs = np.linalg.eigh((b.T @ b).astype(np.float64))
    return b.astype(np.float64) @ vecs[:, ::-1][:, :2]


def conditioned(x: np.ndarray) -> np.ndarray:
    """``x`` centred and scaled so its largest deviation is 1 (float32 stays float32).

    t-SNE and UMAP depend on distances only up to scale (perplexity and neighbour radii
    adapt), but their arithmetic does not: squared distances of features of scale 1e-160
    underflow to 0, and sklearn's float32 PCA start turns 1e-40 into 0 and divides by it.

    >>> conditioned(np.array([[1e-200, 0.0], [3e-200, 0.0]])).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        size = float(np.abs(x).max())
        unit = np.asarray(x, dtype=np.float64) / (size if 0 < size < np.inf else 1.0)
        centred = unit - unit.mean(axis=0)
        reach = float(np.abs(centred).max())
        out = centred / reach if reach > 0 else centred
    return out.astype(x.dtype if x.dtype == np.float32 else np.float64, copy=False)
