"""``check_split``: leakage between a training and a test split.

Three ways a test score lies about a model, each checked on plain arrays:

- ``split-duplicates``: test rows that also sit in the training split (exactly, or for
  images nearly: the same picture re-encoded, resized or with a little noise), so the model
  is graded on what it memorised;
- ``split-preprocessing-leak``: columns standardised or min-max scaled with statistics of
  train and test together (the scaler was fitted before the split), so the test rows
  shaped the training inputs;
- ``split-target-leak``: one feature that alone predicts the target almost perfectly on the
  test split (an id, a post-outcome column, the label under another name).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.arrays import to_numpy
from ...data.batch import unpack
from ...errors import VizdebugError, VizdebugTypeError, describe
from ...findings import Finding, Findings, fmt_indices

DUPLICATE_WARN_SHARE = 0.01  # a test split with 1% of its rows in train: a warning
STANDARD_TOL = 1e-6          # |mean| and |std - 1| of a column fitted on these rows
LEAK_SCORE = 0.99            # one feature's test accuracy (or R^2) that counts as a leak
LEAK_MIN_ROWS = 30
LEAK_BINS = 64               # quantile bins of one feature in the leak test
NEAR_SIDE = 16               # images are compared on a 16 x 16 grey thumbnail
NEAR_MIN_SIDE = 16           # smaller images (digits' 8 x 8) are compared exactly only
NEAR_CORR = 0.98
MAX_TARGETS = 20             # target columns of a multi-output split tested for leaks


@dataclass
class SplitRows:
    """One split as rows: ``x`` (n, d) float64, the column names, targets, image shape."""

    x: np.ndarray
    columns: list[str]
    y: np.ndarray | None
    image_shape: tuple[int, ...] | None
    tabular: bool


def check_split(train: Any, test: Any, *, y_train: Any = None, y_test: Any = None,
                sample: int = 20_000) -> Findings:
    """Look for leakage between a training and a test split.

    ``train`` and ``test`` are arrays, tensors, DataFrames or Datasets of ``(x, y)``
    items (then the targets come from the items); at most ``sample`` rows of each are read.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 4))
    >>> check_split(x[:150], np.concatenate([x[150:], x[:10]])).codes
    ['split-duplicates']
    """
    if isinstance(sample, bool) or not isinstance(sample, int) or sample <= 0:
        raise VizdebugError(f"sample must be a positive number of rows, got {sample!r}")
    a = split_rows(train, y_train, "train", sample)
    b = split_rows(test, y_test, "test", sample)
    if a.x.shape[1] != b.x.shape[1]:
        raise VizdebugError(
            f"train rows have {a.x.shape[1]} values each but test rows {b.x.shape[1]}; pass "
            "the two splits of one dataset (same columns, same image size)")
    with np.errstate(all="ignore"):
        found = duplicate_findings(a, b)
        found += preprocessing_findings(a, b)
        found += target_leak_findings(a, b)
    return Findings(found)


# -- reading the splits -----------------------------------------------------------------
def split_rows(obj: Any, y: Any, what: str, sample: int) -> SplitRows:
    """Rows of one split (the first ``sample``)."""
    if obj is None:
        raise VizdebugTypeError(f"check_split got None for {what}; pass an array, a "
                                "DataFrame, a tensor or a Dataset of (x, y) items")
    if isinstance(obj, Mapping):  # a dict of columns
        obj = _frame_of(obj, what)
    if type(obj).__name__ == "DataFrame" and hasattr(obj, "columns"):
        return _frame_rows(obj.iloc[:sample], y, what)
    if _is_dataset(obj):
        return _dataset_rows(obj, y, what, sample)
    arr = to_numpy(obj, what)
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise VizdebugError(f"{what} holds no rows ({describe(obj)})")
    arr = arr[:sample]
    return _array_rows(arr, _targets(y, arr.shape[0], what, sample), what)


def _frame_of(columns: Mapping, what: str) -> Any:
    import pandas as pd

    try:
        return pd.DataFrame(dict(columns))
    except Exception as exc:
        raise VizdebugError(f"{what} is a dict that is not a table of equal-length columns "
                            f"({str(exc)[:120]}); pass arrays, a DataFrame or a Dataset") from None


def _is_dataset(obj: Any) -> bool:
    return (hasattr(obj, "__getitem__") and hasattr(obj, "__len__")
            and not hasattr(obj, "shape") and not isinstance(obj, (list, tuple)))


def _frame_rows(frame: Any, y: Any, what: str) -> SplitRows:
    numeric = frame.select_dtypes("number")
    if numeric.shape[1] == 0 or len(frame) == 0:
        raise VizdebugError(f"{what} has no numeric columns (columns {list(frame.columns)[:10]})")
    x = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
    return SplitRows(x, [str(c) for c in numeric.columns],
                     _targets(y, len(frame), what, len(frame)), None, True)


def _array_rows(arr: np.ndarray, y: np.ndarray | None, what: str) -> SplitRows:
    if arr.dtype.kind not in "biuf":
        raise VizdebugTypeError(f"{what} must hold numbers, got dtype {arr.dtype}")
    image = tuple(arr.shape[1:]) if arr.ndim >= 3 else None
    x = arr.reshape(arr.shape[0], -1).astype(np.float64)
    return SplitRows(x, [f"f{i}" for i in range(x.shape[1])], y, image, arr.ndim <= 2)


def _dataset_rows(ds: Any, y: Any, what: str, sample: int) -> SplitRows:
    xs, ys = [], []
    for i in range(min(len(ds), sample)):
        try:
            item = ds[i]
        except Exception as exc:  # the user's __getitem__: name it, do not crash in it
            raise VizdebugError(f"{what}[{i}] raised {type(exc).__name__}: {str(exc)[:200]}; "
                                "check_split reads Datasets by integer index") from None
        x_i, y_i = unpack(item, what=f"{what}[{i}]", sample=True)
        xs.append(to_numpy(x_i, f"{what}[{i}]"))
        ys.append(y_i)
    if not xs:
        raise VizdebugError(f"{what} is empty (len 0)")
    if len({x.shape for x in xs}) != 1:
        raise VizdebugError(f"the items of {what} differ in shape ({sorted({x.shape for x in xs})[:3]}); "
                            "check_split compares items of one shape")
    arr = np.stack(xs)
    labels = y if y is not None else (None if any(v is None for v in ys) else ys)
    return _array_rows(arr, _targets(labels, arr.shape[0], what, sample), what)


def _targets(y: Any, n: int, what: str, sample: int) -> np.ndarray | None:
    """One target per row: ``(n,)``, or ``(n, k)`` for ``k`` outputs (multi-output
    regression, multi-label rows; any further axes are flattened into the ``k``)."""
    if y is None:
        return None
    if isinstance(y, list):
        y = np.asarray([_target_row(v, f"y_{what}") for v in y])
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()  # a pandas Series or DataFrame
    arr = to_numpy(y, f"y_{what}")[:sample]
    if arr.ndim > 1:
        arr = arr.reshape(arr.shape[0], -1)
        arr = arr[:, 0] if arr.shape[1] == 1 else arr
    if arr.ndim == 0 or arr.shape[0] != n or arr.size == 0:
        raise VizdebugError(f"y_{what} must hold one target per row of {what} ({n}), got "
                            f"{describe(y)}")
    return arr


def _target_row(v: Any, what: str) -> Any:
    """One item's target: a scalar, or its values as one flat row."""
    if not hasattr(v, "shape"):
        return v
    flat = to_numpy(v, what).reshape(-1)
    return flat[0] if flat.size == 1 else flat


# -- duplicates -------------------------------------------------------------------------
def duplicate_findings(a: SplitRows, b: SplitRows) -> list[Finding]:
    """Test rows found in train: exactly, or (images) as the same thumbnail."""
    exact = _shared_rows(a.x, b.x)
    near: list[int] = []
    if a.image_shape is not None and min(a.image_shape[-2:]) >= NEAR_MIN_SIDE:
        near = sorted(set(_near_images(a, b)) - set(exact))
    hits = sorted(set(exact) | set(near))
    if not hits:
        return []
    share = len(hits) / b.x.shape[0]
    severity = "warning" if share >= DUPLICATE_WARN_SHARE and len(hits) >= 2 else "info"
    kind = f"{len(exact)} exact" + (f", {len(near)} near-identical images" if near else "")
    return [Finding(
        "split-duplicates", severity,
        f"{len(hits)} of {b.x.shape[0]} test rows ({share:.1%}) also appear in train ({kind})",
        where=f"test rows {fmt_indices(hits)}",
        evidence={"test_indices": hits[:256], "share": share, "exact": len(exact),
                  "near": len(near)},
        hint="the test score rewards memorising: deduplicate before splitting (drop_duplicates, "
             "or group near-identical samples with GroupShuffleSplit) and score again",
    )]


def _shared_rows(train: np.ndarray, test: np.ndarray) -> list[int]:
    """Indices of test rows whose values equal some train row's (NaN equal to NaN)."""
    def keys(x: np.ndarray) -> list[bytes]:
        clean = np.where(np.isnan(x), np.inf, x) + 0.0  # -0.0 -> 0.0, NaN one value
        return [row.tobytes() for row in np.ascontiguousarray(clean)]

    seen = set(keys(train))
    return [i for i, key in enumerate(keys(test)) if key in seen]


def _thumbnails(rows: SplitRows) -> np.ndarray:
    """Grey ``NEAR_SIDE``-square thumbnails, standardised, one row each."""
    shape = rows.image_shape
    imgs = rows.x.reshape(-1, *shape)
    if len(shape) == 3:  # channels first or last: average the small axis
        axis = 1 if shape[0] <= 4 else 3
        imgs = imgs.mean(axis=axis)
    n, h, w = imgs.shape
    ys = (np.arange(NEAR_SIDE) * h) // NEAR_SIDE
    xs = (np.arange(NEAR_SIDE) * w) // NEAR_SIDE
    thumbs = imgs[:, ys][:, :, xs].reshape(n, -1)
    thumbs = thumbs - thumbs.mean(axis=1, keepdims=True)
    norm = np.linalg.norm(thumbs, axis=1, keepdims=True)
    return np.where(norm > 0, thumbs / np.where(norm > 0, norm, 1), 0.0)


def _near_images(a: SplitRows, b: SplitRows) -> list[int]:
    """Test images whose thumbnail correlates above ``NEAR_CORR`` with a train one."""
    ta, tb = _thumbnails(a), _thumbnails(b)
    out = []
    for start in range(0, tb.shape[0], 512):
        block = tb[start:start + 512] @ ta.T
        out += (start + np.flatnonzero(block.max(axis=1) >= NEAR_CORR)).tolist()
    return out


# -- preprocessing fitted on both splits ------------------------------------------------
def preprocessing_findings(a: SplitRows, b: SplitRows) -> list[Finding]:
    """Columns whose scaling statistics are exact over train+test but not over train."""
    if not (a.tabular and a.x.shape[0] >= 20 and b.x.shape[0] >= 5):
        return []
    both = np.concatenate([a.x, b.x])
    standard = [c for c in range(both.shape[1])
                if _standardised(both[:, c]) and not _standardised(a.x[:, c])]
    minmax = [c for c in range(both.shape[1])
              if _min_max(both[:, c]) and not _min_max(a.x[:, c])]
    found = []
    for cols, how in ((standard, "standardised (mean 0, std 1)"), (minmax, "scaled to [0, 1]")):
        if cols:
            names = [a.columns[c] for c in cols]
            found.append(Finding(
                "split-preprocessing-leak", "warning",
                f"{len(cols)} of {both.shape[1]} columns are {how} exactly over train and test "
                f"together, not over train alone: {', '.join(names[:8])}",
                where=", ".join(names[:8]), evidence={"columns": names[:100], "how": how},
                hint="the scaler was fitted before the split: split first, then "
                     "scaler.fit(X_train) and transform both (or a sklearn Pipeline)",
            ))
    return found


def _standardised(col: np.ndarray) -> bool:
    col = col[np.isfinite(col)]
    if col.size < 10:
        return False
    std0, std1 = col.std(), col.std(ddof=1)
    return abs(col.mean()) < STANDARD_TOL and min(abs(std0 - 1), abs(std1 - 1)) < STANDARD_TOL


def _min_max(col: np.ndarray) -> bool:
    col = col[np.isfinite(col)]
    if col.size < 10 or np.unique(col[:1000]).size <= 2:  # binary flags are 0/1 anyway
        return False
    return abs(col.min()) < 1e-12 and abs(col.max() - 1) < 1e-12


# -- one feature that gives the answer away ------------------------------------------------
def target_leak_findings(a: SplitRows, b: SplitRows) -> list[Finding]:
    """Features that alone predict the test targets (a lookup by quantile bin); with
    ``k`` targets per row, each target column on its own (the first ``MAX_TARGETS``)."""
    if (a.y is None or b.y is None or not a.tabular or a.x.shape[0] < LEAK_MIN_ROWS
            or b.x.shape[0] < 10):
        return []
    if a.y.ndim == 1:
        return _leak_findings(a, b, a.y, b.y, "")
    if b.y.ndim != 2 or b.y.shape[1] != a.y.shape[1]:
        return []
    found = []
    for j in range(min(a.y.shape[1], MAX_TARGETS)):
        found += _leak_findings(a, b, a.y[:, j], b.y[:, j], f" (target column {j})")
    return found


def _leak_findings(a: SplitRows, b: SplitRows, ya: np.ndarray, yb: np.ndarray,
                   target: str) -> list[Finding]:
    classify = _is_classes(ya) and _is_classes(yb)
    leaks = []
    for c in range(min(a.x.shape[1], 500)):
        score = _one_feature_score(a.x[:, c], ya, b.x[:, c], yb, classify)
        if score >= LEAK_SCORE:
            leaks.append((a.columns[c], score))
    if not leaks or len(leaks) == a.x.shape[1] and a.x.shape[1] > 1:
        return []  # every feature alone solves it: an easy task, not a leak
    metric = "balanced accuracy" if classify else "R^2"
    names = ", ".join(f"{n} ({s:.3f})" for n, s in leaks[:5])
    return [Finding(
        "split-target-leak", "warning",
        f"{len(leaks)} feature(s) alone predict the test targets{target} with {metric} >= "
        f"{LEAK_SCORE}: {names}",
        where=", ".join(n for n, _ in leaks[:5]),
        evidence={"features": [n for n, _ in leaks[:50]], "scores": [s for _, s in leaks[:50]],
                  **({"target": target.strip(" ()")} if target else {})},
        hint="a column that gives the answer away (an id ordered by class, a value recorded "
             "after the outcome, the label re-encoded): drop it unless it is really known at "
             "prediction time",
    )]


def _is_classes(y: np.ndarray) -> bool:
    if y.dtype.kind in "biuO" or y.dtype.kind == "U":
        return True
    return bool(np.all(np.isfinite(y)) and np.all(y == np.round(y)) and np.unique(y).size <= 50)


def _one_feature_score(xa: np.ndarray, ya: np.ndarray, xb: np.ndarray, yb: np.ndarray,
                       classify: bool) -> float:
    """How well one feature alone predicts the test targets: the train rows' majority
    class (or mean target) per quantile bin of the feature, scored on the test rows."""
    ok_a, ok_b = np.isfinite(xa), np.isfinite(xb)
    xa, ya, xb, yb = xa[ok_a], ya[ok_a], xb[ok_b], yb[ok_b]
    if xa.size < LEAK_MIN_ROWS or xb.size < 10 or np.unique(xa).size < 2:
        return 0.0
    edges = np.unique(np.quantile(xa, np.linspace(0, 1, LEAK_BINS + 1)[1:-1]))
    bin_a, bin_b = np.searchsorted(edges, xa), np.searchsorted(edges, xb)
    if classify:
        classes, codes = np.unique(ya, return_inverse=True)
        table = np.zeros((edges.size + 1, classes.size))
        np.add.at(table, (bin_a, codes), 1)
        pred = classes[table.argmax(axis=1)][bin_b]
        return _balanced_accuracy(yb, pred)
    sums = np.bincount(bin_a, weights=ya, minlength=edges.size + 1)
    counts = np.bincount(bin_a, minlength=edges.size + 1)
    means = np.where(counts > 0, sums / np.maximum(counts, 1), ya.mean())
    var = np.var(yb)
    return float(1 - np.mean((yb - means[bin_b]) ** 2) / var) if var > 0 else 0.0


def _balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    classes = np.unique(y)
    if classes.size < 2:
        return 0.0
    return float(np.mean([np.mean(pred[y == c] == c) for c in classes]))
