"""Embeddings as pictures: feature adapters, a PCA preview, and t-SNE / UMAP layouts.

Pure numpy and scikit-learn; ``sklearn.manifold`` and ``umap`` are imported inside the
functions that fit them (a cold ``import umap`` costs 12-14 s here). The PCA itself is
:mod:`.pca`. Every fit is guarded (:func:`refined_layout`): the library sees conditioned
features and a checked start, and collapsed features are not fitted at all, because
scikit-learn's t-SNE kills the process on them. Quality figures and
findings from the geometry live in :mod:`vizdebug.analysis.embeddings.quality`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._env import is_tensor
from ...errors import VizdebugError, VizdebugTypeError, describe
from .pca import conditioned, pca_layout
from .rowstats import duplicate_count_hashed, spread_exceeds

METHODS = ("auto", "pca", "tsne", "umap")
TSNE_MAX_AUTO = 5000  # above this, auto picks UMAP (sklearn t-SNE: 4 s at 2k, 29 s at 10k)
REFINE_MIN_POINTS = 8  # fewer points than this: the PCA picture is the picture


@dataclass(frozen=True)
class FeatureSet:
    """Features ready for a layout: finite rows only, and where each came from.

    ``values`` is ``(len(rows), d)`` float (float32 input stays float32); ``rows`` the input index of each row;
    ``n_input`` how many rows were passed; ``notes`` what was done to them.
    """

    values: np.ndarray
    rows: np.ndarray
    n_input: int
    columns: list[str] | None = None
    notes: list[str] = field(default_factory=list)


def as_features(features: Any) -> FeatureSet:
    """Read an array, tensor, DataFrame or nested list as an ``n x d`` float matrix.

    1-D input is ``n`` points of one dimension; more than two dimensions (feature maps)
    are flattened per sample; rows holding NaN or inf are set aside and named.

    Examples
    --------
    >>> fs = as_features(np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]]))
    >>> fs.values.shape, fs.rows.tolist(), fs.notes
    ((2, 2), [0, 2], ['1 of 3 rows hold NaN or inf and are left out: rows [1]'])
    """
    arr, columns, notes = _raw_matrix(features)
    if arr.ndim == 0 or len(arr) == 0:
        raise VizdebugError(f"features ({describe(features)}) hold no points: pass an n x d array")
    if arr.ndim == 1:
        arr = arr[:, None]
        notes.append(f"1-D features read as {len(arr)} points of one dimension")
    elif arr.ndim > 2:
        notes.append(f"features of shape {arr.shape} flattened to {len(arr)} x "
                     f"{int(np.prod(arr.shape[1:]))}")
        arr = arr.reshape(len(arr), -1)
    if arr.shape[1] == 0:
        raise VizdebugError(f"features have shape {arr.shape}: each point needs at least one value")
    wide = np.float32 if arr.dtype in (np.float16, np.float32) else np.float64  # no copy of float32
    return _finite_rows(arr.astype(wide, copy=False), columns, notes)


def _raw_matrix(features: Any) -> tuple[np.ndarray, list[str] | None, list[str]]:
    if features is None or isinstance(features, (str, bytes, dict)):
        raise VizdebugTypeError(
            f"features is {describe(features)}; pass an n x d numpy array, torch tensor, "
            "pandas DataFrame or list of rows")
    if type(features).__module__.startswith("pandas"):
        return _frame_matrix(features)
    if is_tensor(features):
        from ...data.arrays import tensor_to_numpy

        return tensor_to_numpy(features), None, []
    try:
        arr = np.asarray(features)
    except (ValueError, TypeError) as exc:
        raise VizdebugTypeError(f"cannot read features ({describe(features)}) as one array: "
                                f"{exc}; rows must all have the same length") from None
    if arr.dtype.kind not in "biuf":
        raise VizdebugTypeError(f"features ({describe(features)}) are not numbers (dtype "
                                f"{arr.dtype}); pass numeric features")
    return arr, None, []


def _frame_matrix(frame: Any) -> tuple[np.ndarray, list[str] | None, list[str]]:
    import pandas as pd

    if isinstance(frame, pd.Series):
        return frame.to_numpy(dtype=np.float64, na_value=np.nan), [str(frame.name)], []
    numeric = frame.select_dtypes(include=["number", "bool"])
    dropped = [str(c) for c in frame.columns if c not in numeric.columns]
    if numeric.shape[1] == 0:
        raise VizdebugTypeError(f"the DataFrame ({describe(frame)}) has no numeric columns "
                                f"(columns: {dropped[:8]}); embeddings need numbers")
    notes = [f"non-numeric columns left out: {dropped[:8]}"] if dropped else []
    values = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
    return values, [str(c) for c in numeric.columns], notes


def _finite_rows(arr: np.ndarray, columns: list[str] | None, notes: list[str]) -> FeatureSet:
    finite = finite_rows(arr)
    rows = np.flatnonzero(finite)
    if len(rows) == 0:
        raise VizdebugError(f"every one of the {len(arr)} rows of the features holds NaN or "
                            "inf: there is nothing to place")
    if len(rows) < len(arr):
        bad = np.flatnonzero(~finite)
        notes.append(f"{len(bad)} of {len(arr)} rows hold NaN or inf and are left out: "
                     f"rows {bad[:10].tolist()}{' ...' if len(bad) > 10 else ''}")
    values = arr[rows] if len(rows) < len(arr) else arr
    return FeatureSet(values, rows, len(arr), columns, notes)


def finite_rows(arr: np.ndarray) -> np.ndarray:
    """Which rows of a 2-D float array hold only finite values: rows whose sum is finite,
    and of the others (NaN, inf, or a sum that overflowed) those that pass the exact test.
    One pass and no n x d temporary (1M x 64: a 64 MB mask before).

    >>> finite_rows(np.array([[1.0, np.nan], [3e38, 3e38], [1.0, 2.0]], np.float32)).tolist()
    [False, True, True]
    """
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(arr.sum(axis=1))
    doubt = np.flatnonzero(~finite)
    if len(doubt):
        finite[doubt] = np.isfinite(arr[doubt]).all(axis=1)
    return finite


def per_point(values: Any, n: int, what: str) -> np.ndarray | None:
    """One value per input row (labels, predictions, losses) as a 1-D array, or ``None``.

    Examples
    --------
    >>> per_point([0, 1, 1], 3, "labels").tolist()
    [0, 1, 1]
    """
    if values is None:
        return None
    if is_tensor(values):
        from ...data.arrays import tensor_to_numpy

        values = tensor_to_numpy(values)
    elif type(values).__module__.startswith("pandas"):
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.ndim == 2 and arr.shape[1] > 1 and arr.dtype.kind in "fc":
        arr = arr.argmax(axis=1)  # scores or probabilities per class: the predicted class
    arr = arr.reshape(-1) if arr.ndim == 2 and 1 in arr.shape else arr
    if arr.ndim != 1 or len(arr) != n:
        raise VizdebugError(f"{what} ({describe(values)}) must hold one value per point: the "
                            f"features have {n} rows")
    return arr


def duplicate_count(x: np.ndarray) -> int:
    """How many rows repeat an earlier row exactly.

    >>> duplicate_count(np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]]))
    1
    """
    if len(x) > FAST_ROWS:
        return duplicate_count_hashed(x)
    rows = np.ascontiguousarray(x).view(np.dtype((np.void, x.dtype.itemsize * x.shape[1])))
    return int(len(x) - len(np.unique(rows)))


FAST_ROWS = 20_000  # past this, the one-pass versions in .rowstats (same answers)


def choose_method(method: str, n: int) -> str:
    """The layout a ``method`` asks for at ``n`` points (``auto``: t-SNE up to 5,000
    points, UMAP above; tiny sets stay PCA).

    >>> choose_method("auto", 1000), choose_method("auto", 20000), choose_method("umap", 3)
    ('tsne', 'umap', 'pca')
    """
    if not isinstance(method, str) or method.lower() not in METHODS:
        raise VizdebugError(f"method must be one of {list(METHODS)}, got {method!r}")
    method = method.lower()
    if n < REFINE_MIN_POINTS:
        return "pca"
    if method == "auto":
        return "tsne" if n <= TSNE_MAX_AUTO else "umap"
    return method


def layout_plan(method: str, x: np.ndarray) -> tuple[str, str | None]:
    """The layout to fit to the features ``x`` and, where it is not the one asked for, why.

    Collapsed features (:func:`is_collapsed`) keep their PCA picture: a t-SNE or UMAP of
    one repeated vector draws rounding noise, and scikit-learn's t-SNE kills the process
    on them (its PCA start divides by a zero spread, then its Barnes-Hut tree recurses
    on NaN).

    Examples
    --------
    >>> layout_plan("auto", np.ones((50, 4)))
    ('pca', 'all 50 points are the same vector: t-SNE skipped, PCA shown')
    >>> layout_plan("tsne", np.zeros((3, 2)))
    ('pca', '3 points are too few for tsne: PCA shown')
    """
    chosen = choose_method(method, len(x))
    if chosen == "pca":
        asked = method.lower()
        return chosen, (None if asked in ("pca", "auto") else
                        f"{len(x)} points are too few for {method}: PCA shown")
    if is_collapsed(x):
        return "pca", (f"all {len(x):,} points are the same vector: "
                       f"{_NAMES[chosen]} skipped, PCA shown")
    return chosen, None


_NAMES = {"tsne": "t-SNE", "umap": "UMAP"}


def is_collapsed(x: np.ndarray) -> bool:
    """At least two points, and no dimension varies by more than 1e-6 of the values' size
    (or by more than 1e-36 where the values themselves are below 1e-30).

    >>> is_collapsed(np.ones((4, 3))), is_collapsed(np.eye(3))
    (True, False)
    """
    if len(x) < 2:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        size = float(max(abs(x.max()), abs(x.min())))  # no copy of a big set
        threshold = 1e-6 * max(1.0, 1e-30 / size if size > 0 else 1.0)
        if len(x) > FAST_ROWS:
            return not spread_exceeds(x, size if 0 < size < np.inf else 1.0, threshold)
        unit = np.asarray(x, dtype=np.float64) / size if 0 < size < np.inf else x
        spread = float(unit.std(axis=0).max())  # in units of the size: no overflow
    return spread <= threshold


def refined_layout(x: np.ndarray, method: str, params: dict[str, Any] | None = None,
                   stage: Callable[[str], None] | None = None) -> np.ndarray:
    """Fit ``method`` ("tsne" or "umap") to ``x`` and return ``n x 2`` coordinates.

    ``params`` go to the library as given, over defaults that fit small sets (perplexity
    and ``n_neighbors`` below the number of points). ``stage`` hears what is happening.
    The library sees ``x`` :func:`conditioned`, t-SNE starts from a checked PCA layout,
    and collapsed features are not fitted (their PCA layout comes back, and ``stage``
    says so), so that no input can crash the process.

    Examples
    --------
    >>> refined_layout(np.zeros((20, 3)), "tsne").tolist() == np.zeros((20, 2)).tolist()
    True
    """
    stage = stage or (lambda _msg: None)
    params = dict(params or {})
    if method not in ("tsne", "umap", "pca"):
        raise VizdebugError(f"cannot refine with method {method!r}; use 'tsne' or 'umap'")
    if method == "pca" or is_collapsed(x):
        if method != "pca":
            stage(f"all {len(x):,} points are the same vector: {_NAMES[method]} skipped")
        return pca_layout(x)
    if method == "tsne":
        return _tsne(conditioned(x), params, stage)
    return _umap(conditioned(x), params, stage)


def _tsne(x: np.ndarray, params: dict[str, Any], stage: Callable[[str], None]) -> np.ndarray:
    from sklearn.manifold import TSNE

    settings = tsne_settings(x, params)
    settings["init"] = checked_start(settings.get("init", pca_start(x)), len(x))
    stage(f"fitting t-SNE on {len(x):,} points (perplexity {settings['perplexity']:g})")
    return np.asarray(TSNE(**settings).fit_transform(x), dtype=np.float64)


def tsne_settings(x: np.ndarray, params: dict[str, Any]) -> dict[str, Any]:
    """sklearn ``TSNE`` arguments for ``x``: a perplexity below the number of points,
    seeded, over which ``params`` are laid (``init`` only where given)."""
    settings = {"n_components": 2, "random_state": 0,
                "perplexity": float(min(30.0, max(1.0, (len(x) - 1) / 3)))}
    settings.update(params)
    return settings


def pca_start(x: np.ndarray) -> np.ndarray | str:
    """sklearn's ``init="pca"`` made safe: the PCA layout scaled so that its first axis
    has standard deviation 1e-4 (as sklearn does), or ``"random"`` where it has none.

    >>> pca_start(np.zeros((5, 3)))
    'random'
    """
    layout = pca_layout(x)
    sd = float(np.std(layout[:, 0]))
    if not 0 < sd < np.inf:
        return "random"
    return (layout / sd * 1e-4).astype(np.float32)


def checked_start(init: Any, n: int) -> Any:
    """A t-SNE / UMAP ``init`` that is a name, or an ``n x 2`` array of finite values
    (a NaN start crashes sklearn's t-SNE; a start with no spread gives NaN gradients).

    >>> checked_start("random", 3)
    'random'
    """
    if isinstance(init, str):
        return init
    arr = np.asarray(init, dtype=np.float64)
    if arr.shape != (n, 2) or not np.isfinite(arr).all():
        raise VizdebugError(f"init must be a method name or an {n} x 2 array of finite "
                            f"numbers, got {describe(init)}")
    if not float(np.abs(arr - arr.mean(axis=0)).max()) > 0:
        return "random"
    return arr.astype(np.float32)


def _umap(x: np.ndarray, params: dict[str, Any], stage: Callable[[str], None]) -> np.ndarray:
    return np.asarray(umap_model(x, params, stage).embedding_, dtype=np.float64)


def umap_model(x: np.ndarray, params: dict[str, Any], stage: Callable[[str], None]) -> Any:
    """A ``umap.UMAP`` fitted to ``x`` (seeded, ``n_neighbors`` below the number of points);
    its ``transform`` places new points."""
    stage("importing umap (the first import compiles numba code and can take a minute)")
    try:
        import umap
    except ImportError as exc:
        raise ImportError("the UMAP layout needs umap-learn: pip install umap-learn "
                          f"(or use method='tsne'); import failed with: {exc}") from exc
    settings = {"n_components": 2, "n_neighbors": int(min(15, len(x) - 1)), "random_state": 0}
    settings.update(params)
    if "init" in settings:
        settings["init"] = checked_start(settings["init"], len(x))
    if settings["random_state"] is not None:  # seeded UMAP runs on one thread anyway
        settings.setdefault("n_jobs", 1)
    stage(f"fitting UMAP on {len(x):,} points (n_neighbors {settings['n_neighbors']})")
    return umap.UMAP(**settings).fit(x)


def unit_box(layout: np.ndarray, margin: float = 0.05) -> np.ndarray:
    """Coordinates scaled into [-1, 1] (aspect kept, centred), as float32 for drawing.

    >>> unit_box(np.array([[0.0, 0.0], [4.0, 2.0]])).tolist()
    [[-0.949999988079071, -0.4749999940395355], [0.949999988079071, 0.4749999940395355]]
    """
    if not layout.size:
        return layout.astype(np.float32)
    lo = np.array([layout[:, k].min() for k in range(layout.shape[1])])  # column by column:
    hi = np.array([layout[:, k].max() for k in range(layout.shape[1])])  # no n x 2 temporaries
    size = float(max(np.abs(lo).max(), np.abs(hi).max()))
    size = size if 0 < size < np.inf else 1.0  # spans near 1e308 overflow: in units of size
    lo, hi = lo / size, hi / size
    span = float((hi - lo).max())
    centre = (lo + hi) / 2
    scale = (1 - margin) * 2 / span if span > 0 else 1.0
    out = layout * (scale / size)
    out -= centre * scale
    return out.astype(np.float32)
