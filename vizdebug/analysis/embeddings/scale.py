"""Refined layouts of big sets in bounded time: fit on a fixed sample, place the rest.

t-SNE and UMAP grow faster than the number of points (UMAP had not finished 1M points after
8 minutes here). Past :data:`FIT_LIMIT` points the library is fitted on a fixed random
sample and every other point is placed into that picture, in chunks, so the time is the
fit's (bounded) plus a cost linear in the number of points:

- UMAP: ``umap.UMAP.transform`` (the fitted model embeds new points);
- t-SNE with openTSNE installed: openTSNE's ``TSNEEmbedding.transform`` (``prepare_partial``
  then an optimisation of the new points against the fixed ones);
- t-SNE without it: each point at the median of its nearest fitted neighbours in the
  features (openTSNE's own start for new points), and the status says so.

:class:`Refined` carries one line that says which was done; the view shows it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import VizdebugError
from .pca import pca_layout
from .project import is_collapsed, refined_layout, tsne_settings, umap_model
from .quality import sample_positions

FIT_LIMIT = {"tsne": 5_000, "umap": 10_000}  # a fit of this many: seconds to a minute here
PLACE_CHUNK = 50_000  # points placed at a time: the stage line moves, memory stays bounded
PLACE_NEIGHBOURS = 5
NAMES = {"tsne": "t-SNE", "umap": "UMAP", "pca": "PCA"}
_OPEN_TSNE_PARAMS = {"perplexity", "random_state"}  # what openTSNE shares with sklearn


@dataclass(frozen=True)
class Refined:
    """A refined layout (``n x 2``), how it was made in one line, and how many points the
    library itself fitted."""

    layout: np.ndarray
    how: str
    fitted: int


def fit_limit(method: str, params: dict[str, Any]) -> int:
    """The most points ``method`` is fitted on; ``params["fit_points"]`` overrides (and is
    taken out of ``params``, which then go to the library).

    >>> fit_limit("umap", {}), fit_limit("tsne", {"fit_points": 100})
    (10000, 100)
    """
    asked = params.pop("fit_points", None)
    if asked is None:
        return FIT_LIMIT.get(method, 0)
    if isinstance(asked, bool) or not isinstance(asked, (int, np.integer)) or asked < 10:
        raise VizdebugError(f"fit_points must be a whole number of at least 10, got {asked!r}")
    return int(asked)


def first_use_note(method: str) -> str:
    """What the first UMAP fit of a process costs on top of the fit, or ``""``."""
    if method != "umap" or _umap_warm():
        return ""
    return " (first use in this kernel: numba compiles UMAP's code first, 30-60 s here)"


def _umap_warm() -> bool:  # numba compiles per process: a fit in this one has paid it
    return _STATE["umap_fitted"]


_STATE = {"umap_fitted": False}


def refine(x: np.ndarray, method: str, params: dict[str, Any] | None = None,
           stage: Callable[[str], None] | None = None) -> Refined:
    """``method`` ("tsne" or "umap") on ``x``: on all points up to the fit limit, else on
    a fixed sample with the rest placed into its picture.

    Examples
    --------
    >>> r = refine(np.ones((40, 3)), "tsne", {"fit_points": 20})  # collapsed: PCA, no fit
    >>> r.layout.shape, r.fitted, r.how
    ((40, 2), 40, 't-SNE of all 40 points')
    """
    stage = stage or (lambda _msg: None)
    params = dict(params or {})
    limit = fit_limit(method, params)
    n = len(x)
    if method == "pca" or n <= limit or is_collapsed(x):
        layout = refined_layout(x, method, params, _noted(stage, method))
        _STATE["umap_fitted"] |= method == "umap"
        return Refined(layout, f"{NAMES[method]} of all {n:,} points", n)
    pick = sample_positions(n, limit, seed=0)
    shift, reach = _affine(x[pick])
    fitted, place, how = _fit_sample(_apply(x[pick], shift, reach), method, params,
                                     _noted(stage, method))
    layout = np.empty((n, 2))
    layout[pick] = fitted
    rest = np.setdiff1d(np.arange(n), pick, assume_unique=True)
    for start in range(0, len(rest), PLACE_CHUNK):
        stage(f"placing the other {len(rest):,} points ({how}): {start:,} done")
        part = rest[start:start + PLACE_CHUNK]
        layout[part] = place(_apply(x[part], shift, reach))
    if not np.isfinite(layout).all():  # a library's bad placement: say so, keep the picture
        raise VizdebugError(f"{NAMES[method]} placed some points at NaN or inf ({how})")
    return Refined(layout, f"{NAMES[method]} fitted on {limit:,} of {n:,} points; the rest "
                           f"placed {how}", limit)


def _noted(stage: Callable[[str], None], method: str) -> Callable[[str], None]:
    note = first_use_note(method)
    return lambda text: stage(text + note if text.startswith("fitting UMAP") else text)


def _affine(sample: np.ndarray) -> tuple[np.ndarray, float]:
    """The centre and reach of the fitted sample: every point is brought to its scale by
    the same map (:func:`~.pca.conditioned` does this for one set)."""
    s = np.asarray(sample, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        size = float(np.abs(s).max())
        size = size if 0 < size < np.inf else 1.0
        centre = (s / size).mean(axis=0)
        reach = float(np.abs(s / size - centre).max())
    return centre * size, size * (reach if reach > 0 else 1.0)


def _apply(x: np.ndarray, shift: np.ndarray, reach: float) -> np.ndarray:
    dtype = np.float32 if x.dtype == np.float32 else np.float64
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        out = (np.asarray(x, dtype=np.float64) - shift) / reach
    return np.clip(np.nan_to_num(out), -1e6, 1e6).astype(dtype)


def _fit_sample(xs: np.ndarray, method: str, params: dict[str, Any],
                stage: Callable[[str], None]) -> tuple[np.ndarray, Callable, str]:
    """The sample's layout, a function placing new (conditioned) points, and its name."""
    if method == "umap":
        model = umap_model(xs, params, stage)
        _STATE["umap_fitted"] = True
        return (np.asarray(model.embedding_, dtype=np.float64),
                lambda part: np.asarray(model.transform(part), dtype=np.float64),
                "with UMAP.transform")
    if method != "tsne":
        raise VizdebugError(f"cannot refine with method {method!r}; use 'tsne' or 'umap'")
    if _has_opentsne() and set(params) <= _OPEN_TSNE_PARAMS:
        return _opentsne(xs, params, stage)
    layout = refined_layout(xs, "tsne", params, stage)
    return layout, _median_of_neighbours(xs, layout), (
        f"at the median of their {PLACE_NEIGHBOURS} nearest fitted neighbours in the features "
        "(openTSNE's start for new points; pip install openTSNE to optimise them too)")


def _has_opentsne() -> bool:
    try:
        import openTSNE  # noqa: F401
    except ImportError:
        return False
    return True


def _opentsne(xs: np.ndarray, params: dict[str, Any],
              stage: Callable[[str], None]) -> tuple[np.ndarray, Callable, str]:
    from openTSNE import TSNE

    settings = tsne_settings(xs, params)
    stage(f"fitting t-SNE (openTSNE) on {len(xs):,} points (perplexity {settings['perplexity']:g})")
    embedding = TSNE(perplexity=settings["perplexity"], random_state=settings["random_state"],
                     initialization=pca_layout(xs) / 1e4, n_jobs=1).fit(xs)
    return (np.asarray(embedding, dtype=np.float64),
            lambda part: np.asarray(embedding.transform(part), dtype=np.float64),
            "with openTSNE's transform (prepare_partial, then optimised)")


def _median_of_neighbours(xs: np.ndarray, layout: np.ndarray) -> Callable:
    from sklearn.neighbors import NearestNeighbors

    index = NearestNeighbors(n_neighbors=min(PLACE_NEIGHBOURS, len(xs))).fit(xs)

    def place(part: np.ndarray) -> np.ndarray:
        near = index.kneighbors(part, return_distance=False)
        return np.median(layout[near], axis=1)

    return place
