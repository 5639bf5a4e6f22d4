"""Incremental, bounded reading of a run file (what :class:`~vizdebug.store.run.Run` holds).

The first read takes everything, bounded: a metric with more than ``MAX_POINTS`` points
is read as the min and the max row of each step bucket plus its first NaNs (SQLite
returns the row that holds a bucket's min/max), sampled statistics are thinned evenly to
``MAX_SAMPLES`` rows (non-finite rows kept; of a run with more than ``MAX_CHUNKS`` stored
chunks, ``MAX_CHUNKS`` evenly spread chunks are read), the system panel keeps its last
``MAX_SYSTEM`` samples. Later reads only fetch rows added since (by ``rowid``), so a
dashboard that follows a long run from another kernel refreshes in milliseconds, and the
in-memory series stay bounded by the same min/max compaction a live session uses.

A damaged or crafted file is read as far as it can be: rows of the wrong type are skipped
(SQLite stores any type in any column), every ``.npy`` is checked against the bytes it
holds before anything is allocated, sampled rows are bounded by :data:`MAX_CELLS`, and
what was skipped is kept in :attr:`RunReader.damage` (table -> what was wrong).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np

from ..records import ACTIVATION_FIELDS, GRAD_FIELDS, Series
from .envelope import spans, window
from .guard import explain
from .schema import DamagedRun, from_npy

MAX_POINTS = 20_000  # points per metric for the rules and the dashboard (as a live session)
MAX_SAMPLES = 4000   # sampled rows per kind (evenly thinned, non-finite kept)
MAX_SYSTEM = 3600    # system samples (an hour at 1 Hz, as a live session)
FETCH = 100_000      # rows per fetch while reading increments
MAX_CELLS = 1 << 25  # sampled values held per kind (rows x width x fields; 256 MB)
MAX_WIDTH = 100_000  # modules or parameters in one sampled row
MAX_CHUNKS = 200     # stored chunks of sampled rows read per kind at once (evenly spread)
FIELDS = {"activations": len(ACTIVATION_FIELDS), "grads": len(GRAD_FIELDS)}
# rows whose columns hold what the writer writes (a crafted file may hold anything)
VALID_SCALAR = ("typeof(step)='integer' AND typeof(name)='text' AND typeof(time) IN "
                "('real','integer') AND typeof(value) IN ('real','integer','null')")
VALID_SYSTEM = " AND ".join(f"typeof({c}) IN ('real','integer','null')"
                            for c in ("time", "cpu_percent", "rss_mb", "gpu_mb"))


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


def _plain_row(row: tuple) -> bool:
    """A ``(step, value, time)`` row of the types the writer writes."""
    step, value, when = row
    return (isinstance(step, int) and isinstance(when, (int, float))
            and (value is None or isinstance(value, (int, float))))


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
        self.damage: dict[str, str] = {}  # table -> what could not be read
        self.enveloped = False  # the file keeps min/max envelopes (store/envelope.py)

    def update(self, conn: sqlite3.Connection, widths: dict[str, int]) -> None:
        """Read the rows added since the last update, in one read transaction (a
        consistent snapshot even while the writer commits); a damaged table is noted in
        :attr:`damage` and the others are still read."""
        conn.execute("BEGIN")
        try:
            for table, part in (("scalars", lambda: self._scalars(conn)),
                                ("samples", lambda: self._samples(conn, widths)),
                                ("system", lambda: self._system(conn))):
                try:
                    part()
                except DamagedRun as exc:
                    self.damage.setdefault(exc.table, str(exc))
                except sqlite3.Error as exc:  # (the read budget's stop is named as such)
                    self.damage.setdefault(table, f"table {table!r}: {explain(conn, exc)}")
                except (ValueError, TypeError, OverflowError) as exc:
                    self.damage.setdefault(table, f"table {table!r}: {exc}")
        finally:
            conn.execute("COMMIT")
        for kind, fields in FIELDS.items():  # a kind never read (a damaged table): empty
            width = min(widths.get(kind, 0), MAX_WIDTH)
            self.samples.setdefault(kind, (np.empty(0, np.int64), np.empty((0, width, fields))))

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
                    self._extend(name, part)
        self.scalar_rowid = top

    def _wrong_types(self, what: str) -> None:
        self.damage.setdefault("scalars", f"table 'scalars': rows of {what} hold values of "
                                          "the wrong type (skipped)")

    def _extend(self, name: Any, rows: list[tuple]) -> None:
        """Add ``(step, value, time)`` rows of ``name``; rows of the wrong type (a crafted
        or damaged file: SQLite keeps any type in any column) are skipped and noted."""
        try:
            if not isinstance(name, str):
                raise TypeError(name)
            columns = _columns(rows)
        except (ValueError, TypeError, OverflowError):
            self._wrong_types(repr(name)[:60])
            if not isinstance(name, str):
                return
            columns = _columns([r for r in rows if _plain_row(r)])
        self._series_for(name).extend(*columns)

    def _first_scalars(self, conn: sqlite3.Connection, top: int) -> None:
        if self.enveloped:
            try:
                return self._first_from_envelope(conn)
            except (sqlite3.Error, ValueError, TypeError, OverflowError) as exc:
                self.series.clear()  # read from the rows instead, as an older file is
                self.damage.setdefault("envelope", f"table 'envelope': {explain(conn, exc)} "
                                                   "(read from the rows instead)")
        query = ("SELECT name, count(*), min(step), max(step) FROM scalars WHERE rowid <= ? "
                 "AND {valid} GROUP BY name ORDER BY min(rowid)")
        names = conn.execute(query.format(valid="1"), (top,)).fetchall()
        valid = "1"  # the type filter costs the covering index: only for a damaged table
        if not all(isinstance(n, str) and isinstance(lo, int) and isinstance(hi, int)
                   for n, _, lo, hi in names):
            self._wrong_types("some metrics")
            valid = VALID_SCALAR
            names = conn.execute(query.format(valid=valid), (top,)).fetchall()
        for name, n, lo, hi in names:
            self._extend(name, self._first_rows(conn, name, (n, lo, hi), top, valid))

    def _first_from_envelope(self, conn: sqlite3.Connection) -> None:
        """The first read of a file with envelopes: a metric with more than
        :data:`MAX_POINTS` points is read as the min and the max point of each of
        ``MAX_POINTS // 2`` buckets and its first NaNs, from the envelope's finest level
        that fits (a few thousand rows, however long the run: same snapshot as the rows)."""
        for name, n, lo, hi in spans(conn):
            if n <= MAX_POINTS:
                self._extend(name, conn.execute(
                    "SELECT step, value, time FROM scalars WHERE name=? ORDER BY step, rowid",
                    (name,)).fetchall())
            else:
                # (two points a bucket and the first NaNs: 1.1x the points asked, at most)
                self._series_for(name).extend(*window(conn, name, lo, hi, MAX_POINTS * 9 // 10,
                                                      enveloped=True).rows)

    def _first_rows(self, conn: sqlite3.Connection, name: str, span: tuple[int, int, int],
                    top: int, valid: str) -> list[tuple]:
        """All rows of ``name``, or the min and max row of each step bucket (and the first
        NaNs) when it has more than :data:`MAX_POINTS`."""
        n, lo, hi = span
        if n <= MAX_POINTS:
            return conn.execute("SELECT step, value, time FROM scalars WHERE name=? AND "
                                f"rowid <= ? AND {valid} ORDER BY step, rowid",
                                (name, top)).fetchall()
        width = max(1, -(-(hi - lo + 1) // (MAX_POINTS // 2)))
        rows = []
        for agg in ("min", "max"):
            rows += conn.execute(
                f"SELECT step, {agg}(value), time FROM scalars WHERE name=? AND rowid <= ? "
                f"AND value IS NOT NULL AND {valid} GROUP BY (step - ?) / ?",
                (name, top, lo, width)).fetchall()
        rows += conn.execute(
            "SELECT step, value, time FROM scalars WHERE name=? AND rowid <= ? AND "
            f"value IS NULL AND {valid} ORDER BY step LIMIT ?",
            (name, top, MAX_POINTS // 10)).fetchall()
        return sorted(set(rows), key=lambda r: r[0])

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
        chosen = _spread(conn.execute("SELECT rowid, kind FROM samples WHERE rowid > ? ORDER "
                                      "BY rowid", (self.sample_rowid,)).fetchall())
        if chosen is None:
            cursor = conn.execute("SELECT rowid, kind, steps, rows FROM samples WHERE rowid > ? "
                                  "ORDER BY rowid", (self.sample_rowid,))
        else:
            self.sample_rowid, wanted = chosen
            cursor = conn.execute("SELECT rowid, kind, steps, rows FROM samples WHERE rowid IN "
                                  "(SELECT value FROM json_each(?)) ORDER BY rowid", (wanted,))
        parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {k: [] for k in FIELDS}
        cells, rows = dict.fromkeys(FIELDS, 0), dict.fromkeys(FIELDS, 0)
        for rowid, kind, steps_blob, rows_blob in cursor:  # one chunk at a time: bounded
            self.sample_rowid = max(self.sample_rowid, rowid)
            if kind not in FIELDS:
                continue
            try:
                steps, block = _sample_block(kind, steps_blob, rows_blob)
            except DamagedRun as exc:
                self.damage.setdefault("samples", f"{exc} (rowid {rowid}; skipped)")
                continue
            parts[kind].append((steps, block))
            cells[kind] += block.shape[0] * max(block.shape[1], widths.get(kind, 0)) * FIELDS[kind]
            rows[kind] += steps.size
            if cells[kind] > MAX_CELLS or rows[kind] > MAX_SAMPLES:
                self._merge(kind, parts[kind], widths)
                parts[kind], cells[kind], rows[kind] = [], 0, 0
        for kind, new in parts.items():
            if new or kind not in self.samples:
                self._merge(kind, new, widths)

    def _merge(self, kind: str, parts: list[tuple[np.ndarray, np.ndarray]],
               widths: dict[str, int]) -> None:
        """Join new blocks to what is held, padded to one width, thinned to the rows that
        :data:`MAX_CELLS` allows at that width."""
        fields = FIELDS[kind]
        held = self.samples.get(kind, (np.empty(0, np.int64), np.empty((0, 0, fields))))
        pairs = [held, *parts]
        width = max([min(widths.get(kind, 0), MAX_WIDTH)] + [b.shape[1] for _, b in pairs])
        limit = max(2, min(MAX_SAMPLES, MAX_CELLS // max(1, width * fields)))
        if sum(s.size for s, _ in pairs) > 2 * limit:  # never pad more than the cap allows
            pairs = [thin_rows(s, b, limit) for s, b in pairs]
        steps = np.concatenate([s for s, _ in pairs])
        padded = np.concatenate([_pad(b, width, fields) for _, b in pairs])
        self.samples[kind] = thin_rows(steps, padded, limit)

    # -- system -------------------------------------------------------------------------------
    def _system(self, conn: sqlite3.Connection) -> None:
        bad = conn.execute(f"SELECT count(*) FROM system WHERE rowid > ? AND NOT ({VALID_SYSTEM})",
                           (self.system_rowid,)).fetchone()[0]
        if bad:
            self.damage.setdefault("system", f"table 'system': {bad} rows hold values of the "
                                             "wrong type (skipped)")
        rows = conn.execute(
            "SELECT rowid, time, cpu_percent, rss_mb, gpu_mb FROM system WHERE rowid > ? "
            f"AND {VALID_SYSTEM} ORDER BY rowid DESC LIMIT ?",
            (self.system_rowid, MAX_SYSTEM)).fetchall()
        if not rows:
            return
        self.system_rowid = rows[0][0]
        new = np.asarray([[np.nan if v is None else v for v in r[1:]] for r in reversed(rows)],
                         dtype=float).reshape(-1, 4)
        self.system = np.concatenate([self.system, new])[-MAX_SYSTEM:]


def _spread(ids: list[tuple]) -> tuple[int, str] | None:
    """When there are more than :data:`MAX_CHUNKS` new chunks of a kind (a long run read
    the first time: a chunk per write, so their number grows with the run's duration): the
    last rowid and, as a JSON list, the rowids of :data:`MAX_CHUNKS` of them per kind,
    evenly spread, the newest always. None: read them all."""
    by_kind: dict[Any, list[int]] = {}
    for rowid, kind in ids:
        by_kind.setdefault(kind, []).append(rowid)
    if all(len(r) <= MAX_CHUNKS for r in by_kind.values()):
        return None
    keep: list[int] = []
    for rowids in by_kind.values():
        picks = np.unique(np.linspace(0, len(rowids) - 1, MAX_CHUNKS).astype(np.int64))
        keep += [int(rowids[k]) for k in picks]
    return max(r for r, _ in ids), json.dumps(sorted(keep))


def _sample_block(kind: str, steps_blob: Any, rows_blob: Any) -> tuple[np.ndarray, np.ndarray]:
    """One stored chunk of sampled rows, checked: ``(steps, rows)``."""
    steps = from_npy(steps_blob, f"{kind} steps", "samples")
    block = from_npy(rows_blob, f"{kind} rows", "samples")
    fields = FIELDS[kind]
    if steps.ndim != 1 or steps.dtype.kind not in "iu":
        raise DamagedRun("samples", f"the stored {kind} steps are {steps.dtype} of shape "
                                    f"{steps.shape}; expected one integer per row")
    if (block.ndim != 3 or block.shape[0] != steps.shape[0] or block.shape[2] != fields
            or block.shape[1] > MAX_WIDTH):
        raise DamagedRun("samples", f"the stored {kind} rows have shape {block.shape} for "
                                    f"{steps.shape[0]} steps ({fields} fields each)")
    return steps.astype(np.int64), block


def _pad(block: np.ndarray, width: int, fields: int) -> np.ndarray:
    if block.size == 0:
        return np.empty((0, width, fields))
    if block.shape[1] < width:
        pad = np.full((block.shape[0], width - block.shape[1], block.shape[2]), np.nan)
        block = np.concatenate([block, pad], axis=1)
    return block


def loader_record(blobs: dict[str, Any], arrays: list[tuple[str, bytes]]
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The loader record's parts: the JSON part and its ``loader.<key>`` arrays."""
    record = blobs.get("loader")
    if record is None:
        return {}, {}
    if not isinstance(record, dict):
        raise DamagedRun("blobs", "the stored loader record is not a mapping")
    if not record:
        return {}, {}
    return dict(record), {name.split(".", 1)[1]: from_npy(data, name) for name, data in arrays}
