"""Tables for drift tests: any table-like object to named columns with a kind.

Accepts DataFrames, Series, dicts of arrays, 1-d/2-d ndarrays and torch tensors (in memory),
and Parquet paths or pyarrow datasets (opened by :mod:`.parquet`, streamed by
``analysis.streaming``). Each
feature gets a kind (``numeric``, ``categorical``, ``boolean``, ``datetime``), inferred
from both sides and overridable. Values come out as float64 (NaN for missing) for numeric
and datetime features (float32 kept as is; datetimes as UTC epoch milliseconds) and as a
pandas Series otherwise (labels are compared as strings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._env import is_tensor
from ..errors import VizdebugError, VizdebugTypeError, describe

KINDS = ("numeric", "categorical", "boolean", "datetime")
CATEGORICAL_MAX_INT_LEVELS = 10


@dataclass(frozen=True)
class Column:
    """One feature on one side: its values in canonical form and its kind."""

    name: str
    kind: str
    values: Any  # np.ndarray for numeric/datetime, pandas Series for categories


def column_names(columns: Any) -> list[str]:
    """Column labels as names: ``str(label)``, with the type added to a label that is not
    a string where two labels would read the same (the int ``1`` and the string ``"1"``
    stay two columns).

    >>> column_names([1, "1", "a"])
    ['1 (int)', '1', 'a']
    """
    labels = list(columns)
    names = [str(c) for c in labels]
    clash = {n for n in names if names.count(n) > 1}
    return [f"{n} ({type(c).__name__})" if n in clash and not isinstance(c, str) else n
            for c, n in zip(labels, names)]


def as_table(data: Any, side: str) -> dict[str, Any]:
    """Split ``data`` into ``{name: 1-d array-like}`` without copying where possible.

    Examples
    --------
    >>> sorted(as_table({"a": [1, 2], "b": [3, 4]}, "reference"))
    ['a', 'b']
    """
    import pandas as pd

    if is_tensor(data):
        data = data.detach().cpu().numpy()
    if isinstance(data, pd.DataFrame):
        if not data.columns.is_unique:
            dup = data.columns[data.columns.duplicated()].tolist()
            raise VizdebugError(f"the {side} DataFrame has duplicate column names {dup}; rename them")
        return {name: data[c] for name, c in zip(column_names(data.columns), data.columns)}
    if isinstance(data, pd.Series):
        return {str(data.name if data.name is not None else "value"): data}
    if isinstance(data, Mapping):
        keys = list(data)
        return {name: _column_array(data[k], side, name)
                for name, k in zip(column_names(keys), keys)}
    if isinstance(data, (np.ndarray, list, tuple)):
        return _array_table(np.asarray(data, dtype=object if _ragged(data) else None), side)
    raise VizdebugTypeError(
        f"the {side} data is a {describe(data)}; pass a pandas DataFrame, a dict of 1-d "
        "arrays, a 2-d numpy array or tensor (rows x features), or a Parquet path"
    )


def _ragged(data: Any) -> bool:
    if isinstance(data, np.ndarray):
        return False
    lengths = {len(r) for r in data if isinstance(r, (list, tuple))}
    return len(lengths) > 1


def _array_table(arr: np.ndarray, side: str) -> dict[str, Any]:
    if arr.ndim == 1:
        return {"value": arr}
    if arr.ndim != 2:
        raise VizdebugError(
            f"the {side} array has shape {arr.shape}; pass rows x features (2-d), "
            "or flatten per-sample features first, e.g. x.reshape(len(x), -1)"
        )
    return {str(j): arr[:, j] for j in range(arr.shape[1])}


def _column_array(v: Any, side: str, name: str) -> Any:
    if is_tensor(v):
        v = v.detach().cpu().numpy()
    import pandas as pd

    if isinstance(v, (pd.Series, pd.Index, pd.Categorical)):
        return v
    arr = np.asarray(v)
    if arr.ndim != 1:
        raise VizdebugError(
            f"column {name!r} of the {side} data has shape {arr.shape}; each column must be 1-d"
        )
    return arr


def infer_kind(ref: Any, cur: Any, name: str) -> str:
    """The kind of a feature, from the values on both sides.

    Integer features with at most ``CATEGORICAL_MAX_INT_LEVELS`` distinct values are
    treated as categorical; override with ``kinds={name: "numeric"}``.

    Examples
    --------
    >>> infer_kind(np.array([1.5, 2.0]), np.array([3.0]), "x")
    'numeric'
    >>> infer_kind(np.array(["a", "b"]), np.array(["a"]), "colour")
    'categorical'
    """
    kinds = {_side_kind(ref, name, "reference"), _side_kind(cur, name, "current")}
    kinds.discard("empty")
    if not kinds:
        return "numeric"
    if kinds == {"integer"}:
        return "categorical" if _few_levels(ref, cur) else "numeric"
    kinds = {"numeric" if k == "integer" else k for k in kinds}
    if len(kinds) > 1:
        raise VizdebugTypeError(
            f"column {name!r} holds {' and '.join(sorted(kinds))} values across the reference "
            f"and current data; make both sides the same type, e.g. "
            f"df[{name!r}] = pd.to_numeric(df[{name!r}], errors='coerce')"
        )
    return kinds.pop()


def _few_levels(ref: Any, cur: Any) -> bool:
    import pandas as pd

    levels: set = set()
    for v in (ref, cur):
        arr = np.asarray(v)
        for part in (arr[:10_000], arr):  # a quick look first: most integer columns are not
            levels.update(pd.unique(part[~_isnull(part)] if part.dtype == object else part))
            if len(levels) > CATEGORICAL_MAX_INT_LEVELS:
                return False
    return True


def _isnull(arr: np.ndarray) -> np.ndarray:
    import pandas as pd

    return np.asarray(pd.isna(arr), dtype=bool)


def _side_kind(v: Any, name: str, side: str) -> str:
    import pandas as pd

    dtype = getattr(v, "dtype", None)
    if dtype is None:
        v = np.asarray(v)
        dtype = v.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return "categorical"
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "numeric"
    if pd.api.types.is_string_dtype(dtype) and getattr(dtype, "kind", "O") != "O":
        return "categorical"
    if pd.api.types.is_complex_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype):
        raise VizdebugTypeError(
            f"column {name!r} of the {side} data has dtype {dtype}; convert it to real numbers"
        )
    return _object_kind(np.asarray(v, dtype=object), name, side)


def _object_kind(arr: np.ndarray, name: str, side: str) -> str:
    import pandas as pd

    values = arr[~_isnull(arr)]
    if len(values) == 0:
        return "empty"
    types = pd.Series([type(x).__name__ for x in values[:100_000]]).value_counts()
    groups = {_type_group(t) for t in types.index}
    if groups == {"integer", "numeric"}:
        return "numeric"
    if len(groups) == 1:
        return groups.pop()
    seen = ", ".join(f"{t} ({c})" for t, c in types.items())
    raise VizdebugTypeError(
        f"column {name!r} of the {side} data mixes value types: {seen}; make it one type, "
        f"e.g. df[{name!r}].astype(str) for categories or "
        f"pd.to_numeric(df[{name!r}], errors='coerce') for numbers"
    )


def _type_group(type_name: str) -> str:
    if type_name in ("bool", "bool_"):
        return "boolean"
    if type_name in ("int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        return "integer"
    if type_name in ("float", "float16", "float32", "float64", "Decimal"):
        return "numeric"
    if type_name in ("Timestamp", "datetime", "datetime64", "date"):
        return "datetime"
    return "categorical"


def canonical(v: Any, kind: str, name: str, side: str) -> Any:
    """Values of one column in canonical form for ``kind`` (see module docstring).

    Examples
    --------
    >>> canonical([1, None, 3], "numeric", "x", "current")
    array([ 1., nan,  3.])
    """
    if kind == "numeric":
        return _as_float(v, name, side)
    if kind == "datetime":
        return _as_epoch_ms(v, name, side)
    return _as_labels(v, kind)


def _as_float(v: Any, name: str, side: str) -> np.ndarray:
    import pandas as pd

    arr = v.to_numpy() if isinstance(v, pd.Series) else np.asarray(v)
    if arr.dtype in (np.float64, np.float32):  # float32 stays: it sorts 40 % faster, exactly
        return arr
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64)
    try:
        return pd.to_numeric(pd.Series(arr, copy=False), errors="raise").to_numpy(np.float64, na_value=np.nan)
    except (ValueError, TypeError):
        bad = next((x for x in arr if not _numberlike(x)), None)
        raise VizdebugTypeError(
            f"column {name!r} was treated as numeric but the {side} data holds non-numeric "
            f"values such as {bad!r}; pass categorical=[{name!r}] to compare it as categories, "
            f"or clean it with pd.to_numeric(df[{name!r}], errors='coerce')"
        ) from None


def _numberlike(x: Any) -> bool:
    try:
        float(x)
    except (TypeError, ValueError):
        return x is None
    return True


def _as_epoch_ms(v: Any, name: str, side: str) -> np.ndarray:
    import pandas as pd

    try:
        ts = pd.to_datetime(pd.Series(np.asarray(v) if not isinstance(v, pd.Series) else v), utc=True)
    except (ValueError, TypeError) as exc:
        raise VizdebugTypeError(
            f"column {name!r} was treated as datetime but the {side} data cannot be parsed as "
            f"dates ({exc}); pass kinds={{{name!r}: 'categorical'}} or fix the values"
        ) from None
    ms = ts.dt.tz_localize(None).to_numpy("datetime64[ms]").astype(np.int64).astype(np.float64)
    ms[ts.isna().to_numpy()] = np.nan
    return ms


def _as_labels(v: Any, kind: str) -> Any:
    """A pandas Series in its own dtype: categories become strings only once counted
    (turning a million values into strings first costs ~0.1 s a column)."""
    import pandas as pd

    if isinstance(v, pd.Series):
        return v.reset_index(drop=True)
    arr = np.asarray(v)
    return pd.Series(arr if arr.dtype.kind in "biufUSb" else np.asarray(v, dtype=object))


def columns_for(
    reference: Any, current: Any, *, features: list[str] | None = None,
    categorical: list[str] | None = None, kinds: Mapping[str, str] | None = None,
) -> tuple[list[tuple[Column, Column]], list[str], list[str]]:
    """Paired canonical columns, plus the names only in the reference / only in the current.

    Examples
    --------
    >>> pairs, only_ref, only_cur = columns_for({"a": [1.0], "b": [2.0]}, {"a": [1.5]})
    >>> [p[0].name for p in pairs], only_ref
    (['a'], ['b'])
    """
    ref, cur = as_table(reference, "reference"), as_table(current, "current")
    names = _feature_names(ref, cur, features)
    overrides = dict(kinds or {})
    for name in categorical or []:
        overrides[name] = "categorical"
    _check_overrides(overrides, names)
    pairs = [_pair(name, ref[name], cur[name], overrides.get(name)) for name in names]
    only_ref = [n for n in ref if n not in cur] if features is None else []
    only_cur = [n for n in cur if n not in ref] if features is None else []
    return pairs, only_ref, only_cur


def _feature_names(ref: dict, cur: dict, features: list[str] | None) -> list[str]:
    if features is not None:
        features = [str(f) for f in features]
        for f in features:
            for side, table in (("reference", ref), ("current", cur)):
                if f not in table:
                    raise VizdebugError(
                        f"feature {f!r} is not a column of the {side} data; its columns are "
                        f"{list(table)[:20]}"
                    )
        return features
    names = [n for n in ref if n in cur]
    if not names:
        raise VizdebugError(
            f"the reference and current data share no column names (reference: "
            f"{list(ref)[:10]}, current: {list(cur)[:10]}); rename columns so they match"
        )
    return names


def _check_overrides(overrides: dict[str, str], names: list[str]) -> None:
    for name, kind in overrides.items():
        if kind not in KINDS:
            raise VizdebugError(f"kind for {name!r} must be one of {KINDS}, got {kind!r}")
        if name not in names:
            raise VizdebugError(f"kind given for {name!r}, which is not a compared feature ({names[:20]})")


def _pair(name: str, ref: Any, cur: Any, kind: str | None) -> tuple[Column, Column]:
    kind = kind or infer_kind(ref, cur, name)
    return (
        Column(name, kind, canonical(ref, kind, name, "reference")),
        Column(name, kind, canonical(cur, kind, name, "current")),
    )


def is_datetime_like(raw: Any) -> bool:
    """True for datetime64 values, or objects that are all timestamps or date strings.

    Examples
    --------
    >>> is_datetime_like(np.array(["2025-01-01"], dtype="datetime64[D]")), is_datetime_like([1.0])
    (True, False)
    """
    import pandas as pd

    dtype = getattr(raw, "dtype", None) or np.asarray(raw).dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return True
    if getattr(dtype, "kind", "") == "O":
        sample = [x for x in list(raw[:50]) if x is not None]
        return bool(sample) and all(isinstance(x, (pd.Timestamp, str)) or hasattr(x, "isoformat") for x in sample)
    return False
