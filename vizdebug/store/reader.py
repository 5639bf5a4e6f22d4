"""Incremental, bounded reading of a run file (what :class:`~vizdebug.store.run.Run` holds).

The first read takes everything, bounded: a metric with more than ``MAX_POINTS`` points
is read as the min and the max row of each step bucket plus its first NaNs (SQLite
returns the row that holds a bucket's min/max), sampled statistics are thinned evenly to
``MAX_SAMPLES`` rows (non-finite rows kept), the system panel keeps its last
``MAX_SYSTEM`` samples. Later reads only fetch rows added since (by ``rowid``), so a
dashboard that follows a long run from another kernel refreshes in milliseconds, and the
in-memory series stay bounded by the same min/max compaction a live session uses.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from ..errors import VizdebugError
from ..records import ACTIVATION_FIELDS, GRAD_FIELDS, Series
from .schema import from_npy

MAX_POINTS = 20_000  # points per metric for the rules and the dashboard (as a live session)
MAX_SAMPLES = 4000   # sampled rows per kind (evenly thinned, non-finite kept)
MAX_SYSTEM = 3600    # system samples (an hour at 1 Hz, as a live session)
FETCH = 100_000      # rows per fetch while reading increments
FIELDS = {"activations": len(ACTIVATION_FIELDS), "grads": len(GRAD_FIELDS)}


def thin_rows(steps: np.ndarray, rows: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ``limit`` rows, evenly spaced, always keeping rows with non-finite values.

    >>> s, r = thin_rows(np.arange(10), np.arange(10.0)[:, None], 4)
    >>> s.size <= 4
    True
    """
    if steps.size <= limit:
        return steps, rows
    keep = np.zeros(steps.size, dtype=bool)
    keep[np.linspace(0, steps.size - 1, limit // 2).astype(np.int64)] = True
    keep |= ~np.isfinite(rows.reshape(rows.shape[0], -1)).all(axis=1)
    idx = np.flatnonzero(keep)
    if idx.size > limit:  # mostly non-finite: the first and the newest
        idx = np.concatenate([idx[:1], idx[-(limit - 1):]])
    return steps[idx], rows[idx]


def _columns(rows: list[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(step, value, time)`` arrays of ``(step, value, time)`` rows (NULL value -> NaN)."""
    n = len(rows)
    steps = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
    values = np.fromiter((np.nan if r[1] is None else r[1] for r in rows), dtype=float, count=n)
    times = np.fromiter((r[2] for r in rows), dtype=float, count=n)
    return steps, values, times


class RunReader:
    """What has been read of one run file so far; :meth:`update` reads what is new."""

    def __init__(self) -> None:
        self.series: dict[str, Series] = {}
        self.scalar_rowid = 0
        self.samples: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.sample_rowid = 0
        self.system = np.empty((0, 4))
        self.system_rowid = 0

    def update(self, conn: sqlite3.Connection, widths: dict[str, int]) -> None:
        """Read the rows added since the last update, in one read transaction (a
        consistent snapshot even while the writer commits)."""
        conn.execute("BEGIN")
        try:
            self._scalars(conn)
            self._samples(conn, widths)
            self._system(conn)
        finally:
            conn.execute("COMMIT")

    # -- scalars ----------------------------------------------------------------------------
    def _series_for(self, name: str) -> Series:
        series = self.series.get(name)
        if series is None:
            series = self.series[name] = Series(MAX_POINTS)
        return series

    def _scalars(self, conn: sqlite3.Connection) -> None:
        top = conn.execute("SELECT max(rowid) FROM scalars").fetchone()[0] or 0
        if top <= self.scalar_rowid:
            return
        if self.scalar_rowid == 0:
            self._first_scalars(conn, top)
        else:
            cursor = conn.execute("SELECT name, step, value, time FROM scalars WHERE rowid > ? "
                                  "AND rowid <= ? ORDER BY rowid", (self.scalar_rowid, top))
            while rows := cursor.fetchmany(FETCH):
                by_name: dict[str, list[tuple]] = {}
                for name, *rest in rows:
                    by_name.setdefault(name, []).append(rest)
                for name, part in by_name.items():
                    self._series_for(name).extend(*_columns(part))
        self.scalar_rowid = top

    def _first_scalars(self, conn: sqlite3.Connection, top: int) -> None:
        names = conn.execute(
            "SELECT name, count(*), min(step), max(step) FROM scalars WHERE rowid <= ? "
            "GROUP BY name ORDER BY min(rowid)", (top,)).fetchall()
        for name, n, lo, hi in names:
            if n <= MAX_POINTS:
                rows = conn.execute("SELECT step, value, time FROM scalars WHERE name=? AND "
                                    "rowid <= ? ORDER BY step, rowid", (name, top)).fetchall()
            else:
                width = max(1, -(-(hi - lo + 1) // (MAX_POINTS // 2)))
                rows = []
                for agg in ("min", "max"):
                    rows += conn.execute(
                        f"SELECT step, {agg}(value), time FROM scalars WHERE name=? AND rowid "
                        "<= ? AND value IS NOT NULL GROUP BY (step - ?) / ?",
                        (name, top, lo, width)).fetchall()
                rows += conn.execute(
                    "SELECT step, value, time FROM scalars WHERE name=? AND rowid <= ? AND "
                    "value IS NULL ORDER BY step LIMIT ?", (name, top, MAX_POINTS // 10)).fetchall()
                rows = sorted(set(rows), key=lambda r: r[0])
            self._series_for(name).extend(*_columns(rows))

    def scalars(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Each metric's ``(step, value, time)``, sorted by step."""
        out = {}
        for name, series in self.series.items():
            step, value, when = series.arrays()
            order = np.argsort(step, kind="stable")
            out[name] = (step[order], value[order], when[order])
        return out

    # -- sampled statistics -------------------------------------------------------------------
    def _samples(self, conn: sqlite3.Connection, widths: dict[str, int]) -> None:
        rows = conn.execute("SELECT rowid, kind, steps, rows FROM samples WHERE rowid > ? "
                            "ORDER BY rowid", (self.sample_rowid,)).fetchall()
        new: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for rowid, kind, steps_blob, rows_blob in rows:
            if kind not in FIELDS:
                continue
            steps = from_npy(steps_blob, f"{kind} steps").astype(np.int64)
            block = from_npy(rows_blob, f"{kind} rows")
            if block.ndim != 3 or block.shape[0] != steps.shape[0]:
                raise VizdebugError(f"the stored {kind} rows have shape {block.shape} for "
                                    f"{steps.shape[0]} steps; the run file is damaged")
            new.setdefault(kind, []).append((steps, block))
            self.sample_rowid = max(self.sample_rowid, rowid)
        for kind, fields in FIELDS.items():
            old_steps, old_rows = self.samples.get(
                kind, (np.empty(0, np.int64), np.empty((0, 0, fields))))
            parts = new.get(kind, [])
            if not parts and kind in self.samples:
                continue
            blocks = [old_rows] + [b for _, b in parts]
            width = max([widths.get(kind, 0)] + [b.shape[1] for b in blocks])
            padded = np.concatenate([_pad(b, width, fields) for b in blocks])
            steps = np.concatenate([old_steps] + [s for s, _ in parts])
            self.samples[kind] = thin_rows(steps, padded, MAX_SAMPLES)

    # -- system -------------------------------------------------------------------------------
    def _system(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT rowid, time, cpu_percent, rss_mb, gpu_mb FROM system WHERE rowid > ? "
            "ORDER BY rowid DESC LIMIT ?", (self.system_rowid, MAX_SYSTEM)).fetchall()
        if not rows:
            return
        self.system_rowid = rows[0][0]
        new = np.asarray([r[1:] for r in reversed(rows)], dtype=float).reshape(-1, 4)
        self.system = np.concatenate([self.system, new])[-MAX_SYSTEM:]


def _pad(block: np.ndarray, width: int, fields: int) -> np.ndarray:
    if block.size == 0:
        return np.empty((0, width, fields))
    if block.shape[1] < width:
        pad = np.full((block.shape[0], width - block.shape[1], block.shape[2]), np.nan)
        block = np.concatenate([block, pad], axis=1)
    return block


def loader_record(blobs: dict[str, Any], arrays: list[tuple[str, bytes]]) -> dict[str, Any]:
    """The loader record: the JSON part plus its ``loader.<key>`` arrays."""
    record = dict(blobs.get("loader") or {})
    if record:
        for name, data in arrays:
            record[name.split(".", 1)[1]] = from_npy(data, name)
    return record
