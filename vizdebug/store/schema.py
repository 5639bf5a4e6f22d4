"""The on-disk format of a stored run: one SQLite file (WAL mode) per process.

Tables
------
``meta(key, value)``
    JSON values: format version, what was watched (module and parameter paths), the
    sampling setting, the process (pid, host, rank, world size), the state (``running``,
    ``closed``, ``ended``, ``failed``), a heartbeat that the writer renews on every write,
    ``locked`` (the writer holds an exclusive ``flock`` on the file while it lives, see
    :mod:`~vizdebug.store.claim`) and ``dropped_points``.
``scalars(step, name, value, time)``
    Every logged point, appended (no thinning on disk).
``samples(kind, first_step, last_step, steps, rows)``
    Chunks of sampled per-layer statistics (``kind`` is ``activations`` or ``grads``):
    ``steps`` and ``rows`` are ``.npy`` bytes.
``system(time, cpu_percent, rss_mb, gpu_mb)``
    The ~1 Hz process samples.
``blobs(name, kind, data)``
    Snapshots that are replaced as they change: anomaly events and collector errors
    (JSON), the loader's timing and batch statistics (``.npy``), captured batches.
``embeddings(layer, step, epoch, n, dim, data)``
    Tracked embeddings (format version 2): one row per frame, ``data`` the ``n x dim``
    little-endian float32 values (raw bytes, exactly ``n * dim * 4`` of them).
``embedding_probes(layer, n, labels, labels_kind, images)``
    The probe set of each tracked layer, once: labels as ``.npy`` (numbers) or JSON (text),
    ``uint8`` thumbnails as ``.npy``. A version 1 file has neither table: it has no
    tracked embeddings and opens as before.
``envelope(name, level, bucket, n, nans, total, lo_step, lo, hi_step, hi, min_step, vmin,
min_time, max_step, vmax, max_time, nan_step, nan_time)``
    Each metric's min/max aggregate per bucket of ``64 * 4**level`` steps, written with
    the rows (see :mod:`~vizdebug.store.envelope`); the setting ``envelope`` says so. An
    additive table, so the format version stays 2: an older vizdebug reads these files
    (and ignores it), and a file without it (or without the setting) is read from its rows.

Arrays are stored as ``.npy`` bytes written and read with ``allow_pickle=False``; other
values as JSON. Nothing in a run file is ever unpickled, so opening a run from someone else
cannot execute code, and a ``.npy`` header is checked against the bytes that follow it
before anything is allocated.
"""

from __future__ import annotations

import io
import json
import math
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib import format as npformat

from ..errors import VizdebugError
from .guard import UnsafeRun, open_read
from .guard import ro_uri as ro_uri  # where it was first defined: callers import it here

FORMAT = "vizdebug-run"
FORMAT_VERSION = 2  # 2: tracked embeddings (two tables; version 1 files still open)
MAX_NPY_HEADER = 10_000  # bytes of a .npy header (numpy's own default limit)
MAX_NPY_DIMS = 8
NOT_A_RUN = "not a vizdebug run file (an SQLite file written by vd.watch(model, store=...))"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scalars (step INTEGER NOT NULL, name TEXT NOT NULL,
                                    value REAL, time REAL NOT NULL);
CREATE INDEX IF NOT EXISTS scalars_name_step ON scalars (name, step);
CREATE TABLE IF NOT EXISTS samples (kind TEXT NOT NULL, first_step INTEGER NOT NULL,
                                    last_step INTEGER NOT NULL, steps BLOB NOT NULL,
                                    rows BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS system (time REAL NOT NULL, cpu_percent REAL, rss_mb REAL,
                                   gpu_mb REAL);
CREATE TABLE IF NOT EXISTS blobs (name TEXT PRIMARY KEY, kind TEXT NOT NULL,
                                  data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS embeddings (layer TEXT NOT NULL, step INTEGER NOT NULL,
                                       epoch INTEGER, n INTEGER NOT NULL,
                                       dim INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS embeddings_layer ON embeddings (layer, step);
CREATE TABLE IF NOT EXISTS embedding_probes (layer TEXT PRIMARY KEY, n INTEGER NOT NULL,
                                             labels BLOB, labels_kind TEXT, images BLOB);
CREATE TABLE IF NOT EXISTS envelope (name TEXT NOT NULL, level INTEGER NOT NULL,
    bucket INTEGER NOT NULL, n INTEGER NOT NULL, nans INTEGER NOT NULL, total REAL,
    lo_step INTEGER NOT NULL, lo REAL, hi_step INTEGER NOT NULL, hi REAL, min_step INTEGER,
    vmin REAL, min_time REAL, max_step INTEGER, vmax REAL, max_time REAL, nan_step INTEGER,
    nan_time REAL, PRIMARY KEY (name, level, bucket)) WITHOUT ROWID;
"""


def connect(path: Path, *, timeout: float = 0.25) -> sqlite3.Connection:
    """A connection in WAL mode (readers never block the writer, a crash loses at most
    the write in progress). ``synchronous=NORMAL``: committed data survives the process
    dying; only a power cut may lose the last commits. ``timeout``: how long a write waits
    for a lock another process holds (short: a write that cannot go is retried with the
    next, and nothing waits on it)."""
    conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False,
                           isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def rank_path(path: Path, rank: int) -> Path:
    """The file of rank ``rank`` of a multi-process job whose rank 0 writes ``path``.

    >>> rank_path(Path("runs/exp1.sqlite"), 2).name
    'exp1.rank2.sqlite'
    """
    return path if rank == 0 else path.with_name(f"{path.stem}.rank{rank}{path.suffix}")


def _regular(path: Path) -> bool:
    try:  # never open a FIFO or a device to look at it (the open itself may hang)
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def read_meta_quietly(path: Path) -> dict[str, Any]:
    """The ``meta`` table of a run file as plain JSON values, ``{}`` when unreadable."""
    if not _regular(path):
        return {}
    try:
        conn = open_read(path)
        try:
            rows = conn.execute("SELECT key, value FROM meta LIMIT 1000").fetchall()
        finally:
            conn.close()
        return {str(k): json.loads(v) for k, v in rows if isinstance(v, (str, bytes))}
    except (sqlite3.Error, ValueError, RecursionError):  # UnsafeRun is a ValueError
        return {}


def run_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a vizdebug run, or None when it can: not a regular
    file, not SQLite, no vizdebug ``meta``, or (an :class:`UnsafeRun` message) a file that
    holds what no run holds."""
    if not _regular(path):
        return NOT_A_RUN
    try:
        conn = open_read(path, timeout=5.0)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='format' AND "
                               "length(value) < 100").fetchone()
        finally:
            conn.close()
        if row is not None and isinstance(row[0], str) and json.loads(row[0]) == FORMAT:
            return None
    except UnsafeRun as exc:  # another program's database with a view is just not a run
        return str(exc) if exc.run_like else NOT_A_RUN
    except (sqlite3.Error, ValueError, RecursionError):
        pass
    return NOT_A_RUN


def is_run_file(path: Path) -> bool:
    """True when ``path`` is an SQLite file holding a vizdebug run (and nothing a run
    never holds: see :mod:`~vizdebug.store.guard`)."""
    return run_file_problem(path) is None


# -- values ---------------------------------------------------------------------------------
def to_npy(array: np.ndarray) -> bytes:
    """``.npy`` bytes of a numeric array; float64 that float32 holds exactly is stored as
    float32 (the collectors' statistics are float32 on the device: half the disk, no loss).
    """
    array = np.asarray(array)
    if array.dtype == object:
        raise VizdebugError("a run stores numeric arrays only, not Python objects")
    if array.dtype == np.float64 and array.size:
        narrow = array.astype(np.float32)
        with np.errstate(invalid="ignore"):
            if np.array_equal(narrow.astype(np.float64), array, equal_nan=True):
                array = narrow
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


class DamagedRun(VizdebugError):
    """A part of a run file cannot be read; names the table (the Run adds the file)."""

    def __init__(self, table: str, detail: str) -> None:
        super().__init__(f"table {table!r}: {detail}")
        self.table = table


def _npy_header(data: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """Shape, Fortran order, dtype and data offset of ``.npy`` bytes, read without
    allocating anything the bytes do not hold."""
    buf = io.BytesIO(data)
    version = npformat.read_magic(buf)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"unsupported .npy version {version}")
    read = npformat.read_array_header_1_0 if version == (1, 0) else npformat.read_array_header_2_0
    shape, fortran, dtype = read(buf, max_header_size=MAX_NPY_HEADER)
    return shape, fortran, dtype, buf.tell()


def from_npy(data: Any, what: str, table: str = "blobs") -> np.ndarray:
    """The array in ``data``; a :class:`DamagedRun` error (never unpickling, never
    allocating more than the bytes hold) when it is not a numeric ``.npy``."""
    def damaged(detail: str) -> DamagedRun:
        return DamagedRun(table, f"the stored {what} is damaged or not a plain numeric array "
                                 f"({detail}); this run file was not written by vizdebug or "
                                 "was changed afterwards")

    if not isinstance(data, bytes):
        raise damaged(f"{type(data).__name__} where .npy bytes belong")
    try:
        shape, fortran, dtype, offset = _npy_header(data)
    except Exception as exc:  # numpy parsing bytes from anywhere: any failure is damage
        raise damaged(f"{type(exc).__name__}: {exc}") from None
    if dtype.hasobject or dtype.kind not in "biuf":
        raise damaged(f"dtype {dtype}; expected numbers")
    if len(shape) > MAX_NPY_DIMS or any(not isinstance(n, int) or n < 0 for n in shape):
        raise damaged(f"shape {shape}")
    count = math.prod(shape)
    if count * dtype.itemsize != len(data) - offset:
        raise damaged(f"its header claims shape {shape} of {dtype} ({count * dtype.itemsize} "
                      f"bytes) but {len(data) - offset} bytes follow")
    array = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    array = array.reshape(shape, order="F" if fortran else "C")
    return array.astype(np.float64) if dtype == np.float32 else array.copy()


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _finite_or_null(value: Any) -> Any:
    """JSON has no NaN/inf: write them as strings that :func:`from_json` turns back."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): _finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(v) for v in value]
    return value


def to_json(value: Any) -> str:
    """JSON text of plain values (numpy scalars and non-finite floats allowed)."""
    return json.dumps(_finite_or_null(value), default=_json_default, allow_nan=False)


def _restore(value: Any) -> Any:
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore(v) for v in value]
    return value


def from_json(text: Any, what: str, table: str = "blobs") -> Any:
    """The value in ``text``, or a :class:`DamagedRun` error when the stored JSON is
    damaged."""
    try:
        return _restore(json.loads(text))
    except (TypeError, ValueError, RecursionError) as exc:
        raise DamagedRun(table, f"the stored {what} is not valid JSON ({exc})") from None
