"""Reading a stored run's metrics by step range and chart width (``Run.scalars(...,
points=)``, ``Run.windows()``, the dashboard's zoom): bounded by what is asked, not by the
length of the run, through the file's envelope (:mod:`~vizdebug.store.envelope`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import VizdebugError, VizdebugTypeError, describe
from .envelope import LEVELS, Window, spans, window

MAX_STEP = (1 << 63) - 1
MIN_POINTS, MAX_CHART_POINTS = 4, 1_000_000

__all__ = ["MAX_CHART_POINTS", "Query", "check_query", "metric_spans", "query_windows"]


class Query:
    """A checked request: which metrics (None: all), the step range, the points per metric
    (None: every point)."""

    def __init__(self, names: tuple[str, ...] | None, start: int | None, stop: int | None,
                 points: int | None) -> None:
        self.names = names
        self.start = start
        self.stop = stop
        self.points = points


def _step(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise VizdebugTypeError(f"scalars({what}=...) takes a step number (an int) or None, "
                                f"got {describe(value)}")
    if not -MAX_STEP <= int(value) <= MAX_STEP:
        raise VizdebugError(f"scalars({what}={int(value)}) is beyond any step a run stores "
                            "(a 64-bit integer)")
    return int(value)


def check_query(name: object = None, start: object = None, stop: object = None,
                points: object = None) -> Query:
    """The arguments of ``Run.scalars`` checked (a clear error naming what was passed).

    >>> check_query("loss", 10, 20, 100).names
    ('loss',)
    """
    if name is None or isinstance(name, str):
        names = None if name is None else (name,)
    elif isinstance(name, Sequence) and all(isinstance(n, str) for n in name):
        names = tuple(name)
    else:
        raise VizdebugTypeError(f"scalars(name=...) takes a metric name, a list of names or "
                                f"None (every metric), got {describe(name)}")
    lo, hi = _step(start, "start"), _step(stop, "stop")
    if lo is not None and hi is not None and hi < lo:
        raise VizdebugError(f"scalars(start={lo}, stop={hi}): stop is before start; pass "
                            "start <= stop (both included)")
    if points is not None:
        if isinstance(points, bool) or not isinstance(points, (int, np.integer)):
            raise VizdebugTypeError(f"scalars(points=...) takes the number of points per "
                                    f"metric (an int, e.g. 1000) or None, got {describe(points)}")
        if not MIN_POINTS <= int(points) <= MAX_CHART_POINTS:
            raise VizdebugError(f"scalars(points={int(points)}): pass between {MIN_POINTS} and "
                                f"{MAX_CHART_POINTS:,} points per metric (or None: every point)")
        points = int(points)
    return Query(names, lo, hi, points)


def metric_spans(conn: sqlite3.Connection, enveloped: bool
                 ) -> list[tuple[str, int, int, int]]:
    """``(name, points, first step, last step)`` of each metric (an older file: one pass
    over the rows' index)."""
    if enveloped:
        return spans(conn)
    rows = conn.execute("SELECT name, count(*), min(step), max(step) FROM scalars WHERE "
                        "typeof(name) = 'text' AND typeof(step) = 'integer' GROUP BY name "
                        "ORDER BY min(rowid)").fetchall()
    return [(str(n), int(c), int(lo), int(hi)) for n, c, lo, hi in rows]


def _all_points(conn: sqlite3.Connection, name: str, lo: int, hi: int) -> Window:
    rows = conn.execute("SELECT step, value, time FROM scalars WHERE name = ? AND step "
                        "BETWEEN ? AND ? ORDER BY step, rowid", (name, lo, hi)).fetchall()
    array = np.array(rows, dtype=float).reshape(-1, 3)
    steps = array[:, 0].astype(np.int64)
    return Window(name, lo, hi, True, 1, steps, array[:, 1], None, None,
                  (steps, array[:, 1], array[:, 2]))


def query_windows(conn: sqlite3.Connection, query: Query, *, enveloped: bool,
                  hidden: Sequence[str] = ()) -> dict[str, Window]:
    """One :class:`~vizdebug.store.envelope.Window` per metric asked for (in the order
    they were logged; ``hidden``: names left out unless asked for by name)."""
    out: dict[str, Window] = {}
    for name, _, first, last in metric_spans(conn, enveloped):
        if (name not in query.names) if query.names is not None else name in hidden:
            continue
        lo = first if query.start is None else max(first, query.start)
        hi = last if query.stop is None else min(last, query.stop)
        if hi < lo:
            continue
        out[name] = (_all_points(conn, name, lo, hi) if query.points is None else
                     window(conn, name, lo, hi, query.points, enveloped=enveloped))
    return out


def windows_frame(windows: dict[str, Window], rank: int) -> Any:
    """The real points of ``windows`` in long form (``step, name, value, time, rank``)."""
    import pandas as pd

    parts = [pd.DataFrame({"step": w.rows[0], "name": name, "value": w.rows[1],
                           "time": w.rows[2]}) for name, w in windows.items()]
    df = (pd.concat(parts, ignore_index=True) if parts else
          pd.DataFrame({"step": np.empty(0, np.int64), "name": np.empty(0, object),
                        "value": np.empty(0), "time": np.empty(0)}))
    df["step"] = df["step"].astype("int64")
    df["rank"] = rank
    return df


def rows_frame(rows: list[tuple], rank: int, hidden: Sequence[str]) -> Any:
    """``(step, name, value, time)`` rows as the long-form frame (a column of the wrong
    type raises ValueError or TypeError)."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=["step", "name", "value", "time"])
    df["value"] = pd.to_numeric(df["value"], errors="coerce").astype(float)
    df["step"] = df["step"].astype("int64")
    df["time"] = df["time"].astype(float)
    df["rank"] = rank
    return df[~df["name"].isin(list(hidden))]


def last_step(conn: sqlite3.Connection, enveloped: bool, hidden: Sequence[str]) -> int:
    """The highest step with a logged scalar not in ``hidden`` (-1: none); with the
    envelope, from its coarsest level (a few rows, not a pass over every row)."""
    table, column = ("envelope", "hi_step") if enveloped else ("scalars", "step")
    level = f" AND level = {LEVELS - 1}" if enveloped else ""
    row = conn.execute(f"SELECT max({column}) FROM {table} WHERE typeof({column}) = 'integer' "
                       f"AND name NOT IN ({','.join('?' * len(hidden))}){level}",
                       tuple(hidden)).fetchone()  # (SQLite takes an empty NOT IN ())
    return int(row[0]) if row and row[0] is not None else -1
