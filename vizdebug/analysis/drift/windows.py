"""The current data's time axis for drift: a time window and equal-width time buckets.

``time=`` names a column of the current data (or, in memory, gives one value per current
row). Its values become numbers (datetimes as UTC epoch milliseconds, naive ones read as
UTC); ``window=(start, end)`` keeps the current rows with ``start <= time < end``; the kept
rows are cut into equal-width buckets whose per-bucket counts let the view recompute drift
for any window of buckets in the browser. The in-memory and the streamed (Parquet) paths
share these rules: :func:`window_bounds`, :func:`time_values` and the bucket edges of
:mod:`.sketches`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.tables import as_table, canonical, is_datetime_like
from ...errors import VizdebugError
from . import sketches


@dataclass(frozen=True)
class TimeAxis:
    """The buckets the view's time slider moves over: their edges and the time column's name."""

    name: str | None
    edges: np.ndarray  # epoch milliseconds (or plain numbers), one more than the buckets
    is_datetime: bool


def window_bounds(window: tuple[Any, Any] | None, is_datetime: bool) -> tuple[float, float]:
    """``(start, end)`` as numbers on the time axis; a missing bound is unbounded.

    Examples
    --------
    >>> window_bounds((None, 5), is_datetime=False)
    (-inf, 5.0)
    >>> window_bounds(("1970-01-02", None), is_datetime=True)
    (86400000.0, inf)
    """
    window = window or (None, None)
    return (_bound(window[0], -np.inf, is_datetime, "start"),
            _bound(window[1], np.inf, is_datetime, "end"))


def _bound(b: Any, default: float, is_datetime: bool, which: str) -> float:
    """One window bound as a number on the time axis, or a VizdebugError saying what the
    time column holds and what would work."""
    if b is None:
        return default
    if not is_datetime:
        if isinstance(b, bool) or not isinstance(b, (int, float, np.integer, np.floating)):
            raise VizdebugError(
                f"window {which} {b!r} is a {type(b).__name__}, but the time column holds "
                f"numbers: pass numbers, e.g. window=(0, 100), or a datetime time column")
        return float(b)
    return _datetime_bound(b, which)


def _datetime_bound(b: Any, which: str) -> float:
    import pandas as pd

    if isinstance(b, (bool, float, np.floating)) or (isinstance(b, str) and not b.strip()):
        ts = None  # a float is no date; pandas would read 1.5 as nanoseconds
    else:
        try:
            ts = pd.Timestamp(b)
        except (ValueError, TypeError, OverflowError):  # OutOfBoundsDatetime is a ValueError
            ts = None
    if ts is None or ts is pd.NaT:
        raise VizdebugError(
            f"window {which} {b!r} is not a date or time, but the time column holds "
            f"datetimes: pass e.g. window=('2024-01-01', '2024-02-01') or pd.Timestamp values")
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return float(ts.value // 1_000_000)


def time_values(raw: Any, is_datetime: bool, name: str | None) -> np.ndarray:
    """Time values as float64 numbers (epoch milliseconds for datetimes, NaN for missing)."""
    values = canonical(raw, "datetime" if is_datetime else "numeric", name or "time", "current")
    return np.asarray(values, dtype=np.float64)


def no_rows_error(window: Any, lo: float, hi: float, is_datetime: bool) -> VizdebugError:
    """The error for a window that keeps nothing, with the span the time column has."""
    if is_datetime and np.isfinite(lo) and np.isfinite(hi):
        import pandas as pd

        lo, hi = (pd.Timestamp(float(x), unit="ms") for x in (lo, hi))
    return VizdebugError(f"window {window} keeps no current rows (time spans {lo} to {hi})")


def check_window(window: Any) -> None:
    """``window`` must be a ``(start, end)`` pair."""
    if window is not None and (not isinstance(window, (tuple, list)) or len(window) != 2):
        raise VizdebugError(f"window must be a (start, end) pair (either may be None), got {window!r}")


def window_current(current: Any, time: Any, window: tuple[Any, Any] | None, n_buckets: int,
                   ) -> tuple[Any, sketches.Buckets | None, TimeAxis | None]:
    """The current rows inside ``window``, their time buckets, and the axis for the view.

    Examples
    --------
    >>> cur = {"t": np.arange(10.0), "x": np.arange(10.0)}
    >>> kept, buckets, axis = window_current(cur, "t", (2, 6), 2)
    >>> kept["x"].tolist(), buckets.ids.tolist(), axis.edges.tolist()
    ([2.0, 3.0, 4.0, 5.0], [0, 0, 1, 1], [2.0, 3.5, 5.0])
    """
    if time is None:
        return current, None, None
    table = as_table(current, "current")
    raw, name = _time_column(table, time)
    is_dt = is_datetime_like(raw)
    values = time_values(raw, is_dt, name)
    if window is not None:
        lo, hi = window_bounds(window, is_dt)
        keep = (values >= lo) & (values < hi)
        if not keep.any():
            raise no_rows_error(window, np.nanmin(values), np.nanmax(values), is_dt)
        current = {k: np.asarray(v)[keep] for k, v in table.items()}
        values = values[keep]
    buckets = sketches.make_buckets(values, n_buckets, is_dt)
    return current, buckets, TimeAxis(name, buckets.edges, is_dt)


def _time_column(table: dict[str, Any], time: Any) -> tuple[Any, str | None]:
    if isinstance(time, str):
        if time not in table:
            raise VizdebugError(f"time={time!r} is not a column of the current data; its columns are {list(table)[:20]}")
        return table[time], time
    n_rows = len(next(iter(table.values()))) if table else 0
    if len(time) != n_rows:
        raise VizdebugError(f"time has {len(time)} values but the current data has {n_rows} rows")
    return time, None


@dataclass(frozen=True)
class StreamTime:
    """The time column of a streamed current side: the window it keeps and its bucket edges."""

    name: str
    is_datetime: bool
    bounds: tuple[float, float] | None  # None: no window, every row is kept
    edges: np.ndarray

    @property
    def axis(self) -> TimeAxis:
        return TimeAxis(self.name, self.edges, self.is_datetime)

    def values(self, batch: Any) -> np.ndarray:
        return time_values(batch.column(self.name).to_pandas(), self.is_datetime, self.name)

    def inside(self, t: np.ndarray) -> np.ndarray | None:
        """Which time values the window keeps (None: all of them)."""
        return None if self.bounds is None else (t >= self.bounds[0]) & (t < self.bounds[1])

    def select(self, batch: Any) -> tuple[Any, np.ndarray, np.ndarray | None]:
        """The rows of a record batch inside the window, their time buckets, and which of
        the batch's rows were kept (None: all of them)."""
        import pyarrow as pa

        t = self.values(batch)
        keep = self.inside(t)
        if keep is not None and not keep.all():
            batch, t = batch.filter(pa.array(keep)), t[keep]
        return batch, sketches.bucket_ids(t, self.edges), keep


def stream_time(source: Any, time: Any, window: tuple[Any, Any] | None, n_buckets: int) -> StreamTime | None:
    """Read only the time column of a streamed current side (a source of :mod:`.engines`):
    the window's span, cut into buckets."""
    if time is None:
        return None
    names = list(source.schema.names)
    if not isinstance(time, str):
        raise VizdebugError(
            f"time= must name a column when the current data is streamed from Parquet; got a "
            f"{type(time).__name__} of values: add them as a column, or load the data in memory")
    if time not in names:
        raise VizdebugError(f"time={time!r} is not a column of the current data; its columns are {names[:20]}")
    is_dt = _arrow_time_is_datetime(source.schema.field(time).type, time)
    probe = StreamTime(time, is_dt, None if window is None else window_bounds(window, is_dt), np.zeros(2))
    kept, seen = source.time_spans(probe)
    if kept[0] > kept[1] and window is not None:
        raise no_rows_error(window, *seen, is_dt)
    span = kept if kept[0] <= kept[1] else (0.0, 1.0)
    return StreamTime(time, is_dt, probe.bounds, sketches.bucket_edges(*span, n_buckets))


def time_spans(dataset: Any, probe: StreamTime) -> tuple[tuple[float, float], tuple[float, float]]:
    """The finite time span of the rows of an arrow dataset the window keeps, and of all rows."""
    kept, seen = (np.inf, -np.inf), (np.inf, -np.inf)
    for batch in dataset.to_batches(columns=[probe.name]):
        t = probe.values(batch)
        keep = probe.inside(t)
        t, inside = t[np.isfinite(t)], t[np.isfinite(t) & (True if keep is None else keep)]
        if len(t):
            seen = (min(seen[0], float(t.min())), max(seen[1], float(t.max())))
        if len(inside):
            kept = (min(kept[0], float(inside.min())), max(kept[1], float(inside.max())))
    return kept, seen


def _arrow_time_is_datetime(arrow_type: Any, name: str) -> bool:
    import pyarrow.types as pt

    if pt.is_timestamp(arrow_type) or pt.is_date(arrow_type) or pt.is_string(arrow_type) or pt.is_large_string(arrow_type):
        return True
    if pt.is_integer(arrow_type) or pt.is_floating(arrow_type) or pt.is_decimal(arrow_type):
        return False
    raise VizdebugError(f"time column {name!r} has type {arrow_type}; it must hold timestamps, dates or numbers")
