"""Refined layouts of big sets in bounded time: fit on a fixed sample, place the rest.

t-SNE and UMAP grow faster than the number of points (UMAP had not finished 1M points after
8 minutes here). Past :data:`FIT_LIMIT` points the library is fitted on a fixed random
sample and every other point is placed into that picture, in chunks, so the time is the
fit's (bounded) plus a cost linear in the number of points. The placement
(``placement=`` among the parameters; ``"auto"``, the default, takes the faster of the two
at equal quality as measured here: :data:`AUTO_PLACEMENT`):

- ``"neighbours"`` (UMAP's): each point at the median of the layout positions of its
  :data:`PLACE_NEIGHBOURS` nearest fitted points, found in the fitted sample's top
  :data:`PLACE_DIMENSIONS` principal axes (:class:`NeighbourPlacement`). ``UMAP.transform``
  placed 90k points in several minutes here, more than fitting all 100k took; this places
  them in seconds, at the same trustworthiness (benchmarks/README.md).
- ``"library"`` (t-SNE's): ``umap.UMAP.transform``, or openTSNE's ``TSNEEmbedding.transform``
  (``prepare_partial`` then an optimisation of the new points against the fixed ones) for
  t-SNE where openTSNE is installed (t-SNE without it: the neighbours).

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
PLACE_DIMENSIONS = 16  # neighbours of a new point are found on this many principal axes
PLACEMENTS = ("auto", "neighbours", "library")
AUTO_PLACEMENT = {"umap": "neighbours", "tsne": "library"}  # the faster at equal quality
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
    placement = params.pop("placement", "auto")
    if placement not in PLACEMENTS:
        raise VizdebugError(f"placement must be one of {list(PLACEMENTS)}, got {placement!r}")
    placement = AUTO_PLACEMENT.get(method, "neighbours") if placement == "auto" else placement
    n = len(x)
    if method == "pca" or n <= limit or is_collapsed(x):
        layout = refined_layout(x, method, params, _noted(stage, method))
        _STATE["umap_fitted"] |= method == "umap"
        return Refined(layout, f"{NAMES[method]} of all {n:,} points", n)
    pick = sample_positions(n, limit, seed=0)
    shift, reach = _affine(x[pick])
    xs = _apply(x[pick], shift, reach)
    fitted, place, how = _fit_sample(xs, method, params, _noted(stage, method), placement)
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
                stage: Callable[[str], None], placement: str) -> tuple[np.ndarray, Callable, str]:
    """The sample's layout, a function placing new (conditioned) points, and its name."""
    if method == "umap":
        model = umap_model(xs, params, stage)
        _STATE["umap_fitted"] = True
        layout = np.asarray(model.embedding_, dtype=np.float64)
        if placement == "library":
            return (layout, lambda part: np.asarray(model.transform(part), dtype=np.float64),
                    "with UMAP.transform")
        return layout, *_neighbours(xs, layout, stage)
    if method != "tsne":
        raise VizdebugError(f"cannot refine with method {method!r}; use 'tsne' or 'umap'")
    if placement == "library" and _has_opentsne() and set(params) <= _OPEN_TSNE_PARAMS:
        return _opentsne(xs, params, stage)
    layout = refined_layout(xs, "tsne", params, stage)
    return layout, *_neighbours(xs, layout, stage)


def _neighbours(xs: np.ndarray, layout: np.ndarray,
                stage: Callable[[str], None]) -> tuple[Callable, str]:
    stage(f"indexing the {len(xs):,} fitted points to place the others")
    place = NeighbourPlacement(xs, layout)
    return place, (f"at the median of their {place.k} nearest fitted points (found on the "
                   f"sample's top {place.dimensions} principal axes)")


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


class NeighbourPlacement:
    """Places new points into a fitted layout: each at the per-axis median of the layout
    positions of its ``k`` nearest fitted points, found on the fitted points' top
    ``dimensions`` principal axes (a ball tree; deterministic, and every placed point lies
    inside the fitted layout's bounding box).

    Examples
    --------
    >>> fit = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> place = NeighbourPlacement(fit, np.array([[0, 0], [0, 1], [5, 5], [5, 6]]), k=2)
    >>> place(np.array([[0.0, 0.4], [9.0, 0.5]])).tolist()
    [[0.0, 0.5], [5.0, 5.5]]
    """

    def __init__(self, fitted: np.ndarray, layout: np.ndarray, k: int = PLACE_NEIGHBOURS,
                 dimensions: int = PLACE_DIMENSIONS) -> None:
        from sklearn.neighbors import NearestNeighbors

        fitted, layout = np.asarray(fitted), np.asarray(layout, dtype=np.float64)
        if fitted.ndim != 2 or layout.shape != (len(fitted), 2) or len(fitted) == 0:
            raise VizdebugError(f"NeighbourPlacement needs n x d fitted points and their n x 2 "
                                f"layout, got {fitted.shape} and {layout.shape}")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise VizdebugError(f"k must be a whole number of at least 1, got {k!r}")
        if not (np.isfinite(fitted).all() and np.isfinite(layout).all()):
            raise VizdebugError("NeighbourPlacement needs finite fitted points and layout "
                                "(NaN or inf found)")
        self.k = int(min(k, len(fitted)))
        self.layout = layout
        self._mean = fitted.mean(axis=0, dtype=np.float64)
        self._axes = _principal_axes(fitted - self._mean, dimensions)
        self.dimensions = self._axes.shape[1]
        self._index = NearestNeighbors(n_neighbors=self.k, algorithm="ball_tree").fit(
            self._reduce(fitted))

    def _reduce(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=np.float64) - self._mean) @ self._axes

    def __call__(self, part: np.ndarray) -> np.ndarray:
        part = np.asarray(part)
        if part.ndim != 2 or part.shape[1] != len(self._mean):
            raise VizdebugError(f"points to place must be m x {len(self._mean)}, got shape "
                                f"{part.shape}")
        if len(part) == 0:
            return np.zeros((0, 2))
        near = self._index.kneighbors(self._reduce(part), return_distance=False)
        return np.median(self.layout[near], axis=1)


def _principal_axes(centred: np.ndarray, dimensions: int) -> np.ndarray:
    """The top ``dimensions`` principal axes (``d x m``) of centred rows; all ``d`` axes
    where there are no more than that."""
    d = centred.shape[1]
    if d <= dimensions:
        return np.eye(d)
    c = np.asarray(centred, dtype=np.float64)
    _, vecs = np.linalg.eigh(c.T @ c)
    return vecs[:, ::-1][:, :dimensions]
