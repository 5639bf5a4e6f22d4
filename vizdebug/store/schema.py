"""The on-disk format of a stored run: one SQLite file (WAL mode) per process.

Tables
------
``meta(key, value)``
    JSON values: format version, what was watched (module and parameter paths), the
    sampling setting, the process (pid, host, rank, world size), the state (``running``,
    ``closed``, ``failed``) and a heartbeat that the writer renews on every write.
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

Arrays are stored as ``.npy`` bytes written and read with ``allow_pickle=False``; other
values as JSON. Nothing in a run file is ever unpickled, so opening a run from someone else
cannot execute code.
"""

from __future__ import annotations

import io
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import VizdebugError

FORMAT = "vizdebug-run"
FORMAT_VERSION = 1

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
"""


def connect(path: Path, *, timeout: float = 10.0) -> sqlite3.Connection:
    """A connection in WAL mode (readers never block the writer, a crash loses at most
    the write in progress). ``synchronous=NORMAL``: committed data survives the process
    dying; only a power cut may lose the last commits."""
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


def is_run_file(path: Path) -> bool:
    """True when ``path`` is an SQLite file holding a vizdebug run."""
    try:
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return False
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        finally:
            conn.close()
        return row is not None and json.loads(row[0]) == FORMAT
    except (OSError, sqlite3.Error, ValueError):
        return False


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


def from_npy(data: bytes, what: str) -> np.ndarray:
    """The array in ``data``; a clear error (never unpickling) when it is not a numeric
    ``.npy``."""
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise VizdebugError(
            f"the stored {what} is damaged or not a plain numeric array ({exc}); this run file "
            "was not written by vizdebug or was changed afterwards"
        ) from None
    if array.dtype.kind not in "biuf":
        raise VizdebugError(f"the stored {what} has dtype {array.dtype}; expected numbers")
    return array.astype(np.float64) if array.dtype == np.float32 else array


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


def from_json(text: str, what: str) -> Any:
    """The value in ``text``, or a clear error when the stored JSON is damaged."""
    try:
        return _restore(json.loads(text))
    except (TypeError, ValueError) as exc:
        raise VizdebugError(f"the stored {what} is not valid JSON ({exc})") from None
