"""The keys beside the features that say how rows belong together: a time per row and a
group per row (patient, user, session), for ``check_split(..., time=, groups=)``.

A key is either given (a column name of both DataFrames, or a pair of per-row arrays) or,
for DataFrames, evident: a datetime column (or a DatetimeIndex) for time, a column named
like a group key (``patient``, ``user_id``, ``session``...) for groups.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...data.arrays import to_numpy
from ...errors import VizdebugError, VizdebugTypeError, describe, short_repr

if TYPE_CHECKING:
    from .splits import SplitRows

# a column named like the unit rows belong to: patient, user_id, SubjectID, session_key
# (not age_group or user_rating: there the unit word describes a feature)
GROUP_WORDS = frozenset({"patient", "user", "subject", "session", "group", "participant",
                         "speaker", "customer", "patients", "users", "subjects", "sessions",
                         "groups"})
KEY_WORDS = frozenset({"id", "ids", "key", "no", "number", "name", "code"})
GROUP_MIN_DISTINCT = 10  # an evident group key has many values (not a 3-level category)
GROUP_MIN_SIZE = 2.0     # ... and repeats: on average two rows or more per value


@dataclass(frozen=True)
class SplitKeys:
    """One key for both splits: ``train`` and ``test`` hold one value per row."""

    name: str
    train: np.ndarray
    test: np.ndarray
    given: bool  # passed by the user (True) or found in the DataFrames (False)
    datetime: bool = False  # times were datetimes (held here as nanoseconds)


def check_key_argument(value: Any, what: str) -> None:
    """Refuse, before any work, a ``time=``/``groups=`` that is neither a column name nor a
    pair of per-row arrays."""
    if value is None or isinstance(value, str):
        return
    if isinstance(value, (tuple, list)) and len(value) == 2 and not any(
            v is None or isinstance(v, (str, bool, int, float)) for v in value):
        return
    raise VizdebugTypeError(
        f"{what} must be a column name of both DataFrames or a pair ({what}_train, "
        f"{what}_test) of per-row arrays, got {describe(value)}: {short_repr(value)}")


def given_keys(value: Any, a: SplitRows, b: SplitRows, what: str) -> SplitKeys | None:
    """The key the user passed, one value per row of each split (the rows check_split read)."""
    if value is None:
        return None
    if isinstance(value, str):
        return SplitKeys(value, _column(a, value, what, "train"), _column(b, value, what, "test"),
                         True)
    train = _per_row(value[0], a, f"{what}[0] (train)")
    test = _per_row(value[1], b, f"{what}[1] (test)")
    return SplitKeys(what, train, test, True)


def _column(rows: SplitRows, name: str, what: str, side: str) -> np.ndarray:
    table = rows.table
    if table is None:
        raise VizdebugError(f"{what}={name!r} names a column, but {side} is not a DataFrame "
                            f"({rows.x.shape[0]} rows); pass ({what}_train, {what}_test) arrays")
    if name not in table.columns:
        raise VizdebugError(f"{what}={name!r} is not a column of {side} (columns "
                            f"{[str(c) for c in list(table.columns)[:10]]})")
    return table[name].to_numpy()


def _per_row(values: Any, rows: SplitRows, what: str) -> np.ndarray:
    if hasattr(values, "to_numpy"):
        arr = values.to_numpy()  # a pandas Series or Index
    elif isinstance(values, (list, tuple, np.ndarray)):
        arr = np.asarray(values, dtype=None if isinstance(values, np.ndarray) else object)
    else:  # a tensor; labels may be names, so no numeric conversion for the rest
        arr = to_numpy(values, what)
    if arr.ndim != 1 or arr.shape[0] not in (rows.x.shape[0], rows.total):
        raise VizdebugError(f"{what} must hold one value per row ({rows.total or rows.x.shape[0]}"
                            f" rows), got {describe(values)}")
    return arr[:rows.x.shape[0]]


# -- evident keys -------------------------------------------------------------------------
def evident_time(a: SplitRows, b: SplitRows) -> SplitKeys | None:
    """The first datetime column both DataFrames hold, or their DatetimeIndex."""
    if a.table is None or b.table is None:
        return None
    for column in a.table.select_dtypes(["datetime", "datetimetz"]).columns:
        if column in b.table.columns:
            return SplitKeys(str(column), a.table[column].to_numpy(),
                             b.table[column].to_numpy(), False)
    if _is_datetime(a.table.index) and _is_datetime(b.table.index):
        return SplitKeys("index", a.table.index.to_numpy(), b.table.index.to_numpy(), False)
    return None


def _is_datetime(index: Any) -> bool:
    return getattr(index.dtype, "kind", "") == "M" or str(index.dtype).startswith("datetime64")


def evident_groups(a: SplitRows, b: SplitRows) -> list[SplitKeys]:
    """Columns of both DataFrames named like a group key whose values repeat over many rows
    (a per-row id is an identifier, a few-valued column a category: neither is a group)."""
    if a.table is None or b.table is None:
        return []
    found = []
    for column in a.table.columns:
        if column not in b.table.columns or not named_like_group(str(column)):
            continue
        train = a.table[column]
        distinct = train.nunique(dropna=True)
        if distinct >= GROUP_MIN_DISTINCT and len(train) / max(distinct, 1) >= GROUP_MIN_SIZE:
            found.append(SplitKeys(str(column), train.to_numpy(), b.table[column].to_numpy(),
                                   False))
    return found


def named_like_group(name: str) -> bool:
    """``patient``, ``user_id``, ``SubjectID``, ``session key``; not ``age_group``."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    tokens = [t for t in re.split(r"[^a-z0-9]+", words) if t]
    if len(tokens) >= 2 and tokens[-1] in KEY_WORDS:
        return tokens[-2] in GROUP_WORDS or tokens[-1] in ("id", "ids")
    return len(tokens) == 1 and tokens[0] in GROUP_WORDS


def as_times(keys: SplitKeys) -> SplitKeys:
    """The key as float times (datetimes in nanoseconds; NaT and missing values as NaN)."""
    import pandas as pd

    def convert(values: np.ndarray, side: str) -> tuple[np.ndarray, bool]:
        if values.dtype.kind in "biuf":
            return values.astype(np.float64), False
        try:
            with warnings.catch_warnings():  # pandas' format-inference notice: not the user's
                warnings.simplefilter("ignore", UserWarning)
                stamps = pd.to_datetime(pd.Series(values))
        except (ValueError, TypeError, OverflowError):
            raise VizdebugError(f"{keys.name} ({side}) must hold times (datetimes or numbers), "
                                f"got values such as {short_repr(values[:3].tolist())}") from None
        if getattr(stamps.dt, "tz", None) is not None:
            stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
        ns = stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(np.float64)
        return np.where(stamps.isna().to_numpy(), np.nan, ns), True

    train, dt_a = convert(keys.train, "train")
    test, dt_b = convert(keys.test, "test")
    if dt_a != dt_b:
        raise VizdebugError(f"{keys.name} holds datetimes in one split and numbers in the other")
    return SplitKeys(keys.name, train, test, keys.given, dt_a)


def group_labels(keys: SplitKeys) -> tuple[np.ndarray, np.ndarray]:
    """Both splits' groups as integer codes over one shared vocabulary (-1: missing)."""
    import pandas as pd

    try:
        codes, _ = pd.factorize(pd.Series(np.concatenate([
            np.asarray(keys.train, dtype=object), np.asarray(keys.test, dtype=object)])))
    except TypeError:
        raise VizdebugTypeError(
            f"groups ({keys.name}) must hold hashable values (ids, names), got values such "
            f"as {short_repr(keys.train[:2].tolist())}") from None
    return codes[:keys.train.shape[0]], codes[keys.train.shape[0]:]
