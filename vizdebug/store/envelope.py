"""Min/max envelopes of every logged metric, kept in the run file as it is written.

A long run holds millions of points; a chart is a thousand pixels wide. So that opening,
drawing and zooming read what a chart needs and not every row, the writer keeps, beside
the rows, an aggregate of each metric's steps at :data:`LEVELS` levels: buckets of
``64 * 4**k`` steps (aligned at step 0) in the table ``envelope``, one row per
``(name, level, bucket)`` with

``n, nans, total``
    points in the bucket, how many of them are NaN, the sum of the others;
``lo_step, lo, hi_step, hi``
    the first and the last point (by step);
``min_step, vmin, min_time`` / ``max_step, vmax, max_time``
    the lowest and the highest point (NaN left out; an infinity is an extreme);
``nan_step, nan_time``
    the first NaN.

They are written in the same transaction as the rows they describe (an ``INSERT ... ON
CONFLICT`` merge, so a bucket spread over several writes, or a step logged again later,
adds up), and the file's ``envelope`` setting says that every row went through them
(:data:`SPEC`). A file without it (written by an older vizdebug) is read from its rows, as
before. Why at write time and not built on first open: the reader opens files read-only
(someone may still write them, or they are someone else's), and a first open would read
every row once, the eight seconds of a million-step run this is here to remove; writing
costs a few hundred small rows per write of twenty thousand points.

:func:`window` answers "the points of ``name`` between steps ``lo`` and ``hi`` for a chart
``points`` wide": the real points when there are at most ``points`` of them, otherwise
about ``points // 2`` buckets (merged from the finest level that fits), each with its mean,
its minimum and its maximum, and the real extreme points (min, max, first NaN).
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

BASE = 64        # steps in a bucket of level 0
FACTOR = 4       # each level's buckets hold FACTOR buckets of the level below
LEVELS = 9       # 64 steps .. 4,194,304 steps
WIDTHS = tuple(BASE * FACTOR ** k for k in range(LEVELS))
SPEC = {"version": 1, "base": BASE, "factor": FACTOR, "levels": LEVELS}
COLUMNS = ("n", "nans", "total", "lo_step", "lo", "hi_step", "hi", "min_step", "vmin",
           "min_time", "max_step", "vmax", "max_time", "nan_step", "nan_time")
N, NANS, TOTAL, LO_STEP, LO, HI_STEP, HI, MIN_STEP, VMIN, MIN_TIME, MAX_STEP, VMAX, \
    MAX_TIME, NAN_STEP, NAN_TIME = range(len(COLUMNS))
RAW_SHARE = 2  # a window reads at most this many rows per point asked for

_SET = {
    "n": "n + excluded.n", "nans": "nans + excluded.nans",
    "total": "coalesce(total, 0) + coalesce(excluded.total, 0)",
    **{c: f"CASE WHEN excluded.lo_step < lo_step THEN excluded.{c} ELSE {c} END"
       for c in ("lo_step", "lo")},
    **{c: f"CASE WHEN excluded.hi_step >= hi_step THEN excluded.{c} ELSE {c} END"
       for c in ("hi_step", "hi")},
    **{c: f"CASE WHEN vmin IS NULL OR excluded.vmin < vmin THEN excluded.{c} ELSE {c} END"
       for c in ("min_step", "vmin", "min_time")},
    **{c: f"CASE WHEN vmax IS NULL OR excluded.vmax > vmax THEN excluded.{c} ELSE {c} END"
       for c in ("max_step", "vmax", "max_time")},
    **{c: f"CASE WHEN nan_step IS NULL OR excluded.nan_step < nan_step THEN "
          f"coalesce(excluded.{c}, {c}) ELSE {c} END" for c in ("nan_step", "nan_time")},
}
UPSERT = (f"INSERT INTO envelope (name, level, bucket, {', '.join(COLUMNS)}) VALUES "
          f"({', '.join('?' * (len(COLUMNS) + 3))}) ON CONFLICT (name, level, bucket) DO "
          f"UPDATE SET {', '.join(f'{c} = {e}' for c, e in _SET.items())}")

__all__ = ["SPEC", "WIDTHS", "Window", "bucket_window", "exact_window", "has_envelope",
           "merge", "points_window", "spans", "unit_rows", "window", "write_envelope"]


# -- the aggregate (pure) ------------------------------------------------------------------
def unit_rows(steps: np.ndarray, values: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Each point as a bucket of one (a ``(n, len(COLUMNS))`` float matrix; NaN: none)."""
    s = np.asarray(steps, dtype=float)
    v = np.asarray(values, dtype=float)
    t = np.asarray(times, dtype=float)
    nan = np.isnan(v)
    none = np.full(s.shape, np.nan)
    seen_s, seen_t = np.where(nan, np.nan, s), np.where(nan, np.nan, t)
    return np.column_stack([
        np.ones_like(s), nan.astype(float), np.where(nan, 0.0, v), s, v, s, v,
        seen_s, v, seen_t, seen_s, v, seen_t,
        np.where(nan, s, none), np.where(nan, t, none)])


def _pick(values: np.ndarray, starts: np.ndarray, lowest: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per group (rows ``starts[i]:starts[i+1]``): the index of its lowest (highest)
    non-NaN value, first on ties, and whether it has one."""
    size = values.size
    missing = np.isnan(values)
    filled = np.where(missing, np.inf if lowest else -np.inf, values)
    best = (np.minimum if lowest else np.maximum).reduceat(filled, starts)
    group = np.repeat(np.arange(starts.size), np.diff(np.append(starts, size)))
    hit = (filled == best[group]) & ~missing
    index = np.minimum.reduceat(np.where(hit, np.arange(size), size), starts)
    found = index < size
    return np.where(found, index, 0), found


def merge(keys: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Buckets (or points, see :func:`unit_rows`) sorted by step, grouped by ``keys``
    (sorted; one key per row, or a row of keys, such as ``(metric, bucket)``): one row per
    key, the same columns.

    >>> k, m = merge(np.array([0, 0, 1]), unit_rows(np.arange(3), np.array([2., 1., 5.]),
    ...                                              np.zeros(3)))
    >>> k.tolist(), m[:, VMIN].tolist(), m[:, MIN_STEP].tolist(), m[:, HI].tolist()
    ([0, 1], [1.0, 5.0], [1.0, 2.0], [1.0, 5.0])
    """
    keys = np.asarray(keys, dtype=np.int64)
    if keys.shape[0] == 0:
        return keys, rows.reshape(0, len(COLUMNS))
    change = keys[1:] != keys[:-1]
    starts = np.flatnonzero(np.r_[True, change if change.ndim == 1 else change.any(axis=1)])
    ends = np.append(starts[1:], keys.shape[0]) - 1
    out = np.empty((starts.size, len(COLUMNS)))
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf: a NaN sum, no warning
        for col in (N, NANS, TOTAL):
            out[:, col] = np.add.reduceat(rows[:, col], starts)
    out[:, [LO_STEP, LO]] = rows[starts][:, [LO_STEP, LO]]
    out[:, [HI_STEP, HI]] = rows[ends][:, [HI_STEP, HI]]
    for cols, lowest in (((MIN_STEP, VMIN, MIN_TIME), True), ((MAX_STEP, VMAX, MAX_TIME), False),
                         ((NAN_STEP, NAN_TIME), True)):
        index, found = _pick(rows[:, cols[1] if len(cols) == 3 else cols[0]], starts, lowest)
        out[:, cols] = np.where(found[:, None], rows[index][:, cols], np.nan)
    return keys[starts], out


def levels_of(steps: np.ndarray, values: np.ndarray, times: np.ndarray,
              codes: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """The buckets of points at every level (finest first): keys ``bucket``, or
    ``(code, bucket)`` rows when ``codes`` tells the metric of each point."""
    steps = np.asarray(steps, dtype=np.int64)
    order = (np.argsort(steps, kind="stable") if codes is None
             else np.lexsort((steps, codes)))
    steps = steps[order]
    points = unit_rows(steps, np.asarray(values)[order], np.asarray(times)[order])
    if codes is None:
        keys, rows = merge(steps // BASE, points)
    else:
        keys, rows = merge(np.column_stack([np.asarray(codes)[order], steps // BASE]), points)
    out = [(keys, rows)]
    for _ in range(1, LEVELS):
        coarser = keys // FACTOR if keys.ndim == 1 else np.column_stack(
            [keys[:, 0], keys[:, 1] // FACTOR])
        keys, rows = merge(coarser, rows)
        out.append((keys, rows))
    return out


# -- writing ---------------------------------------------------------------------------------
def _sql(row: list[float]) -> list[Any]:
    return [None if x != x else x for x in row]  # NaN is NULL


def write_envelope(conn: sqlite3.Connection, steps: np.ndarray, names: Any,
                   values: np.ndarray, times: np.ndarray) -> None:
    """Merge the points being committed into the ``envelope`` table (in the caller's
    transaction); ``names`` in storable form, one per point. Every metric at once: one
    sort and :data:`LEVELS` merges a write, however many metrics."""
    if len(steps) == 0:
        return
    unique = sorted(set(names))
    code = {name: k for k, name in enumerate(unique)}
    codes = np.fromiter(map(code.__getitem__, names), dtype=np.int64, count=len(steps))
    rows: list[list[Any]] = []
    for level, (keys, agg) in enumerate(levels_of(steps, values, times, codes)):
        rows += [[unique[k], level, b, *_sql(r)] for (k, b), r in zip(keys.tolist(), agg.tolist())]
    conn.executemany(UPSERT, rows)


# -- reading ---------------------------------------------------------------------------------
def has_envelope(meta: dict[str, Any]) -> bool:
    """True when the file says every logged row went through the envelope (:data:`SPEC`)."""
    return meta.get("envelope") == SPEC


def spans(conn: sqlite3.Connection) -> list[tuple[str, int, int, int]]:
    """``(name, points, first step, last step)`` of every metric, in the order they were
    first logged, from the coarsest level (a few rows however long the run)."""
    rows = conn.execute("SELECT name, sum(n), min(lo_step), max(hi_step) FROM envelope "
                        "WHERE level = ? GROUP BY name", (LEVELS - 1,)).fetchall()
    out = []
    for name, n, lo, hi in rows:
        if not (isinstance(name, str) and all(isinstance(x, int) for x in (n, lo, hi))):
            raise ValueError(f"the envelope of {str(name)[:60]!r} holds values of the wrong type")
        first = conn.execute("SELECT rowid FROM scalars WHERE name = ? ORDER BY step, rowid "
                             "LIMIT 1", (name,)).fetchone()
        out.append((first[0] if first else 1 << 62, name, n, lo, hi))
    return [(name, n, lo, hi) for _, name, n, lo, hi in sorted(out)]


@dataclass(frozen=True)
class Window:
    """What a chart ``points`` wide draws of one metric between steps ``lo`` and ``hi``.

    ``exact``: ``x``/``y`` are the real points (``ymin``/``ymax`` None); otherwise one per
    bucket of ``width`` steps: ``x`` its middle step, ``y`` its mean, ``ymin``/``ymax`` its
    extremes. ``rows`` (``step, value, time``) are real points either way: every point,
    or each bucket's lowest and highest point and the first NaNs.
    """

    name: str
    lo: int
    hi: int
    exact: bool
    width: int
    x: np.ndarray
    y: np.ndarray
    ymin: np.ndarray | None
    ymax: np.ndarray | None
    rows: tuple[np.ndarray, np.ndarray, np.ndarray]


def _raw(conn: sqlite3.Connection, name: str, lo: int, hi: int, limit: int
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = conn.execute("SELECT step, value, time FROM scalars WHERE name = ? AND step "
                        "BETWEEN ? AND ? ORDER BY step, rowid LIMIT ?",
                        (name, lo, hi, limit)).fetchall()
    array = np.array(rows, dtype=float).reshape(-1, 3)  # (text or a blob: ValueError)
    return array[:, 0].astype(np.int64), array[:, 1], array[:, 2]


def _level(conn: sqlite3.Connection, name: str, level: int, lo: int, hi: int
           ) -> tuple[np.ndarray, np.ndarray]:
    width = WIDTHS[level]
    rows = conn.execute(f"SELECT bucket, {', '.join(COLUMNS)} FROM envelope WHERE name = ? AND "
                        "level = ? AND bucket BETWEEN ? AND ? ORDER BY bucket LIMIT ?",
                        (name, level, lo // width, hi // width,
                         hi // width - lo // width + 1)).fetchall()
    array = np.array(rows, dtype=float).reshape(-1, len(COLUMNS) + 1)
    return array[:, 0].astype(np.int64), array[:, 1:]


def exact_window(name: str, lo: int, hi: int, points: tuple[np.ndarray, ...]) -> Window:
    """The window of the real ``(step, value, time)`` points."""
    steps, values, _ = points
    return Window(name, lo, hi, True, 1, steps, values, None, None, points)


def bucket_window(name: str, lo: int, hi: int, width: int, rows: np.ndarray,
              limit: int) -> Window:
    """The window of merged buckets ``rows`` (one per ``width`` steps)."""
    seen = rows[:, N] - rows[:, NANS]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(seen > 0, rows[:, TOTAL] / np.maximum(seen, 1), np.nan)
    middle = np.floor((rows[:, LO_STEP] + rows[:, HI_STEP]) / 2).astype(np.int64)
    picks = []
    for step, value, when in ((MIN_STEP, VMIN, MIN_TIME), (MAX_STEP, VMAX, MAX_TIME)):
        ok = ~np.isnan(rows[:, step])
        picks.append(rows[ok][:, [step, value, when]])
    nan = rows[~np.isnan(rows[:, NAN_STEP])][: max(1, limit // 10)]
    picks.append(np.column_stack([nan[:, NAN_STEP], np.full(len(nan), np.nan), nan[:, NAN_TIME]]))
    real = np.concatenate(picks)
    real = real[(real[:, 0] >= lo) & (real[:, 0] <= hi)]
    real = real[np.lexsort((real[:, 1], real[:, 0]))]
    same = np.r_[False, (np.diff(real[:, 0]) == 0) & (np.diff(real[:, 1]) == 0)]
    real = real[~same]  # a bucket's one point is its min and its max: once
    return Window(name, lo, hi, False, width, middle, mean, rows[:, VMIN], rows[:, VMAX],
                  (real[:, 0].astype(np.int64), real[:, 1], real[:, 2]))


def _target(lo: int, hi: int, points: int) -> int:
    """The bucket width that cuts ``lo..hi`` into at most ``points // 2`` buckets."""
    return max(1, math.ceil((hi - lo + 1) / max(1, points // 2)))


def window(conn: sqlite3.Connection, name: str, lo: int, hi: int, points: int, *,
           enveloped: bool) -> Window:
    """The :class:`Window` of ``name`` over steps ``lo..hi`` for a chart ``points`` wide.

    With the envelope (``enveloped``) it reads at most about ``2 * points`` bucket rows, or
    the real rows when the buckets say there are at most ``RAW_SHARE * points`` (bucketed
    in memory when more than ``points``); a range that would need buckets narrower than
    :data:`BASE` steps over more rows gets the ``BASE``-step buckets (fewer than asked).
    Without it (an older file) it reads the rows in the range, as an older vizdebug did.
    """
    width = _target(lo, hi, points)
    if not enveloped:
        steps, values, times = _raw(conn, name, lo, hi, -1)
        if steps.size <= points:
            return exact_window(name, lo, hi, (steps, values, times))
        keys, rows = merge(steps // width, unit_rows(steps, values, times))
        return bucket_window(name, lo, hi, width, rows, points)
    level = max([k for k, w in enumerate(WIDTHS) if w <= width] or [0])
    keys, rows = _level(conn, name, level, lo, hi)
    held = int(rows[:, N].sum()) if rows.size else 0
    if held <= RAW_SHARE * points:  # (the buckets at the range's edges count in full)
        raw = _raw(conn, name, lo, hi, RAW_SHARE * points + 1)
        if raw[0].size <= points:
            return exact_window(name, lo, hi, raw)
        if raw[0].size <= RAW_SHARE * points:
            _, rows = merge(raw[0] // width, unit_rows(*raw))
            return bucket_window(name, lo, hi, width, rows, points)
    # (a width under BASE over more rows than that: the finest level, fewer buckets)
    group = -(-width // WIDTHS[level])  # (ceil: at most points // 2 buckets)
    keys, rows = merge(keys // group, rows)
    return bucket_window(name, lo, hi, group * WIDTHS[level], rows, points)


def points_window(name: str, steps: np.ndarray, values: np.ndarray, times: np.ndarray,
                  lo: int, hi: int, points: int) -> Window:
    """The :class:`Window` of points held in memory (a live session's), as :func:`window`
    gives it from a file: the points in ``lo..hi`` when at most ``points``, else buckets."""
    steps = np.asarray(steps, dtype=np.int64)
    keep = (steps >= lo) & (steps <= hi)
    order = np.argsort(steps[keep], kind="stable")
    held = (steps[keep][order], np.asarray(values, float)[keep][order],
            np.asarray(times, float)[keep][order])
    if held[0].size <= points:
        return exact_window(name, lo, hi, held)
    width = _target(lo, hi, points)
    _, rows = merge(held[0] // width, unit_rows(*held))
    return bucket_window(name, lo, hi, width, rows, points)
