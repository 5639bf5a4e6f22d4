"""``check_split``: leakage between a training and a test split.

Ways a test score lies about a model, each checked on plain arrays:

- ``split-duplicates``: test rows that also sit in the training split (exactly, or for
  images nearly: the same picture re-encoded, resized or with a little noise), so the model
  is graded on what it memorised;
- ``split-preprocessing-leak``: columns standardised or min-max scaled with statistics of
  train and test together (the scaler was fitted before the split), so the test rows
  shaped the training inputs;
- ``split-target-leak``: one feature that alone predicts the target almost perfectly on the
  test split (an id, a post-outcome column, the label under another name), or a row
  identifier that predicts it partly (``split_ids``);

and the relations between rows that a copy check cannot see (one module each):
``split-near-duplicates`` (test rows interpolated between or copied close to training rows:
oversampling before the split, ``split_neighbours``), ``split-overlap`` (sliding windows of
one series on both sides, ``split_windows``), ``split-group-leak`` and ``split-time-leak``
(the same patient or user on both sides; test times inside the training period,
``split_context``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.arrays import to_numpy, unnest
from ...data.batch import unpack
from ...data.parts import dataset_length
from ...data.targets import names_as_codes
from ...errors import VizdebugError, VizdebugTypeError, describe
from ...findings import Finding, Findings, fmt_indices
from .split_context import group_findings, time_findings
from .split_ids import id_leak_findings
from .split_keys import check_key_argument
from .split_neighbours import oversampling_findings
from .split_scores import LEAK_MIN_ROWS, is_classes, one_feature_score
from .split_windows import overlap_findings

DUPLICATE_WARN_SHARE = 0.01  # a test split with 1% of its rows in train: a warning
STANDARD_TOL = 1e-6          # |mean| and |std - 1| of a column fitted on these rows
LEAK_SCORE = 0.99            # one feature's test accuracy (or R^2) that counts as a leak
NEAR_SIDE = 16               # images are compared on a 16 x 16 grey thumbnail
NEAR_MIN_SIDE = 16           # smaller images (digits' 8 x 8) are compared exactly only
NEAR_CORR = 0.98
MAX_TARGETS = 20             # target columns of a multi-output split tested for leaks


@dataclass
class SplitRows:
    """One split as rows: ``x`` (n, d) float64, the column names, targets, image shape;
    ``table`` the DataFrame rows read (its non-numeric columns may hold times and groups)
    and ``total`` the split's length before sampling (0 where unknown)."""

    x: np.ndarray
    columns: list[str]
    y: np.ndarray | None
    image_shape: tuple[int, ...] | None
    tabular: bool
    table: Any = None
    total: int = 0


def check_split(train: Any, test: Any, *, y_train: Any = None, y_test: Any = None,
                sample: int = 20_000, time: Any = None, groups: Any = None) -> Findings:
    """Look for leakage between a training and a test split.

    Parameters
    ----------
    train, test
        Arrays, tensors, DataFrames or Datasets of ``(x, y)`` items (then the targets come
        from the items); at most ``sample`` rows of each are read.
    y_train, y_test
        One target per row (or a row of targets), where the splits do not carry them.
    time
        For a forecast: a column name of both DataFrames or a pair ``(time_train,
        time_test)`` of per-row times; test rows dated before the end of the training data
        are named. A datetime column of both DataFrames is used when none is given.
    groups
        A column name of both DataFrames or a pair ``(groups_train, groups_test)`` of
        per-row group labels (patient, user, session); groups with rows on both sides are
        named. Columns named like ``patient``, ``user_id`` or ``session`` whose values repeat
        are used when none is given.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 4))
    >>> check_split(x[:150], np.concatenate([x[150:], x[:10]])).codes
    ['split-duplicates']
    >>> patients = np.arange(200) % 40  # five rows per patient, split by row
    >>> check_split(x[:150], x[150:], groups=(patients[:150], patients[150:])).codes
    ['split-group-leak']
    """
    if isinstance(sample, bool) or not isinstance(sample, int) or sample <= 0:
        raise VizdebugError(f"sample must be a positive number of rows, got {sample!r}")
    check_key_argument(time, "time")
    check_key_argument(groups, "groups")
    y_train, y_test = names_as_codes(y_train, y_test)
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
        found += relation_findings(a, b, time, groups, found)
    return Findings(found)


def relation_findings(a: SplitRows, b: SplitRows, time: Any, groups: Any,
                      found: list[Finding]) -> list[Finding]:
    """The leaks that are relations between rows, not copies of them."""
    named = {f.where for f in found if f.code == "split-target-leak"}
    out = [f for f in id_leak_findings(a, b, LEAK_SCORE) if f.where not in named]
    out += group_findings(a, b, groups) + time_findings(a, b, time)
    out += overlap_findings(a, b)
    if not any(f.code == "split-duplicates" and f.severity != "info" for f in found):
        out += oversampling_findings(a, b)  # copies already named: their neighbours are too
    return out


# -- reading the splits -----------------------------------------------------------------
def split_rows(obj: Any, y: Any, what: str, sample: int) -> SplitRows:
    """Rows of one split (the first ``sample``)."""
    if obj is None:
        raise VizdebugTypeError(f"check_split got None for {what}; pass an array, a "
                                "DataFrame, a tensor or a Dataset of (x, y) items")
    obj = unnest(obj)  # a nested tensor: its rows (its ``shape`` cannot be read)
    if isinstance(obj, Mapping):  # a dict of columns
        obj = _frame_of(obj, what)
    if type(obj).__name__ == "DataFrame" and hasattr(obj, "columns"):
        rows = _frame_rows(obj.iloc[:sample], y, what)
        rows.table, rows.total = obj.iloc[:sample], len(obj)
        return rows
    if _is_dataset(obj):
        rows = _dataset_rows(obj, y, what, sample)
        rows.total = dataset_length(obj, what)
        return rows
    arr = to_numpy(obj, what)
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise VizdebugError(f"{what} holds no rows ({describe(obj)})")
    total, arr = arr.shape[0], arr[:sample]
    rows = _array_rows(arr, _targets(y, arr.shape[0], what, sample), what)
    rows.total = total
    return rows


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
    for i in range(min(dataset_length(ds, what), sample)):
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
    exact = _shared_rows(a.x, b.x, _other_columns(a, b))
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


def _shared_rows(train: np.ndarray, test: np.ndarray,
                 others: tuple[list, list] | None = None) -> list[int]:
    """Indices of test rows whose values equal some train row's (NaN equal to NaN), and
    whose ``others`` (the values of the tables' other columns) are equal too."""
    def keys(x: np.ndarray, other: list | None) -> list[Any]:
        clean = np.where(np.isnan(x), np.inf, x) + 0.0  # -0.0 -> 0.0, NaN one value
        rows = [row.tobytes() for row in np.ascontiguousarray(clean)]
        return rows if other is None else list(zip(rows, other))

    seen = set(keys(train, others and others[0]))
    return [i for i, key in enumerate(keys(test, others and others[1])) if key in seen]


def _other_columns(a: SplitRows, b: SplitRows) -> tuple[list, list] | None:
    """The rows' values in the columns of both tables that are not numbers (dates,
    strings): rows that differ there are not duplicates."""
    if a.table is None or b.table is None:
        return None
    names = [c for c in a.table.columns if str(c) not in a.columns and c in b.table.columns]
    if not names:
        return None
    return tuple(list(t[names].astype(str).itertuples(index=False, name=None))  # type: ignore[return-value]
                 for t in (a.table, b.table))


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
    classify = is_classes(ya) and is_classes(yb)
    leaks = []
    for c in range(min(a.x.shape[1], 500)):
        score = one_feature_score(a.x[:, c], ya, b.x[:, c], yb, classify)
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
