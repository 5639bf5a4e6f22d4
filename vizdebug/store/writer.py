"""Writes a run file from a background thread: only what it is handed.

Nothing here runs on the training step, and nothing here knows a Session. The writer is
handed plain records: resolved scalar points through :meth:`RunWriter.sink` (a bounded
queue, called as the scalar log resolves them), and a :class:`~vizdebug.records.RunDelta`
(new sampled rows, system samples, changed snapshots, a captured batch, settings) from
the ``take_delta`` callback its owner gives it. A daemon thread wakes every ``interval``
seconds and writes, in one transaction, what it was handed since the last write. Each
write renews the heartbeat, so a reader can tell a run that is still going from one
whose process died. A failed write is retried with the next one and reported through
``on_error`` (a Session turns it into a ``collector-error`` finding); it never reaches
the training loop. A forked child (a DataLoader worker) never writes.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as _dt
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import VizdebugError, VizdebugTypeError, describe
from ..records import RunDelta, ScalarChunk
from .schema import FORMAT, FORMAT_VERSION, SCHEMA, connect, is_run_file, rank_path, to_json, to_npy

INTERVAL = 2.0            # seconds between writes
MAX_QUEUED = 4096         # resolved chunks held while the disk is slow (then the oldest go)
CAPTURED_SLOTS = 4        # captured batches kept in the file (the oldest slot is reused)

_OPEN: weakref.WeakSet = weakref.WeakSet()


def store_path(store: object, rank: int = 0) -> Path:
    """The file a session writes to: ``store`` itself, a new file in a directory, or, for
    rank ``k > 0`` of a multi-process job, ``<name>.rank<k><suffix>`` beside it.

    Examples
    --------
    >>> store_path("runs/exp1.sqlite", rank=1).name
    'exp1.rank1.sqlite'
    """
    if isinstance(store, bool) or not isinstance(store, (str, os.PathLike)):
        raise VizdebugTypeError(
            f"store takes a file path (or a directory for one new file per run), got "
            f"{describe(store)}; e.g. vd.watch(model, store='runs/exp1.sqlite')")
    text = os.fspath(store)
    if not text:
        raise VizdebugError("store is an empty path; pass e.g. store='runs/exp1.sqlite'")
    path = Path(text).expanduser()
    if path.is_dir() or text.endswith(("/", os.sep)):
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        name, n = f"run-{stamp}-{os.getpid()}", 1
        while (path / f"{name}.sqlite").exists():  # two runs in one second: never replace
            n += 1
            name = f"run-{stamp}-{os.getpid()}-{n}"
        path = path / f"{name}.sqlite"
    return rank_path(path, rank)


def _prepare(path: Path) -> None:
    """Make the folder; replace an earlier run at ``path``, refuse to touch anything else."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VizdebugError(f"cannot create the folder for store={str(path)!r}: {exc}") from None
    if path.exists():
        if path.is_dir():
            raise VizdebugError(f"store={str(path)!r} is a folder inside a folder; pass a file path")
        if path.stat().st_size and not is_run_file(path):
            raise VizdebugError(
                f"store={str(path)!r} exists and is not a vizdebug run; refusing to overwrite "
                "it. Pass a new file name, or a folder to get one new file per run")
        for extra in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            with contextlib.suppress(FileNotFoundError):
                extra.unlink()


class RunWriter:
    """The run file of one process and the thread that keeps it current.

    ``start`` is the first delta: its ``meta`` (what was watched, the versions) is written
    at once, so the file is a readable run from the start. At each write the writer takes
    the next delta from ``take_delta(final)`` (``final`` on the last write) and reports a
    failed write as ``on_error("the run store", exc)``.

    Examples
    --------
    >>> import tempfile, os
    >>> path = Path(tempfile.mkdtemp()) / "hand-fed.sqlite"
    >>> writer = RunWriter(path, RunDelta(meta={"every": 1}))
    >>> writer.hand(RunDelta(scalars=[(np.arange(2), ("loss", "loss"),
    ...                                np.array([0.5, 0.25]), np.zeros(2))]))
    >>> writer.close()
    >>> writer.closed, writer.ticks
    (True, 1)
    """

    def __init__(self, path: Path, start: RunDelta, *,
                 take_delta: Callable[[bool], RunDelta] | None = None,
                 on_error: Callable[[str, BaseException], None] | None = None,
                 interval: float | None = None) -> None:
        self.path = path
        self.interval = interval or INTERVAL
        self._take_delta = take_delta
        self._on_error = on_error
        self._lock = threading.Lock()
        self._queue: deque[ScalarChunk] = deque(maxlen=MAX_QUEUED)
        self.dropped = 0
        self._unwritten = replace(start, meta={})  # handed over, not yet committed
        self._batch_slot = 0
        self.ticks = 0
        self._pid = os.getpid()  # a forked child (a DataLoader worker) must never write
        self.cpu_seconds = 0.0  # CPU time spent writing (thread time of the writing thread)
        self.closed = False
        self._stop = threading.Event()
        _prepare(path)
        try:
            self._conn = connect(path)
            self._conn.executescript(SCHEMA)
        except Exception as exc:
            raise VizdebugError(f"cannot open store={str(path)!r} as SQLite: {exc}") from None
        self._write_meta({**self._file_meta(), **start.meta})
        self._thread = threading.Thread(target=_write_loop, args=(weakref.ref(self),),
                                        name="vizdebug-store", daemon=True)
        _OPEN.add(self)

    def start(self) -> RunWriter:
        """Start the writing thread."""
        self._thread.start()
        return self

    # -- what the writer is handed ------------------------------------------------------------
    def sink(self, steps: np.ndarray, names: tuple[str, ...], values: np.ndarray,
             times: np.ndarray) -> None:
        """Receive resolved scalar points (a ``ScalarLog.sink``; any thread, no lock)."""
        if len(self._queue) == self._queue.maxlen:
            self.dropped += len(self._queue[0][0])
        self._queue.append((steps, names, values, times))

    def hand(self, delta: RunDelta) -> None:
        """Receive a delta from any thread; it is written at the next write."""
        with self._lock:
            self._absorb(delta)

    def _absorb(self, delta: RunDelta) -> None:
        for chunk in delta.scalars:
            self.sink(*chunk)
        self._unwritten = self._unwritten.absorb(replace(delta, scalars=[]))

    # -- meta -----------------------------------------------------------------------------------
    def _file_meta(self) -> dict[str, Any]:
        """The settings the writer itself owns (the rest comes in the first delta)."""
        now = time.time()
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "created": now,
                "heartbeat": now, "state": "running", "failed": None, "ticks": 0,
                "interval": self.interval, "pid": os.getpid()}

    def _write_meta(self, values: dict[str, Any]) -> None:
        self._conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                               [(k, to_json(v)) for k, v in values.items()])

    # -- one write --------------------------------------------------------------------------------
    def tick(self, *, final_state: str | None = None) -> None:
        """Take the next delta and write everything not yet written, in one transaction
        (any thread). A failed write is reported and retried with the next."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            if self.closed:
                return
            start = time.thread_time()
            try:
                if self._take_delta is not None:
                    self._absorb(self._take_delta(final_state is not None))
                self._write(final_state)
            except Exception as exc:
                with contextlib.suppress(Exception):
                    self._conn.execute("ROLLBACK")
                if self._on_error is not None:
                    with contextlib.suppress(Exception):
                        self._on_error("the run store", exc)
            self.cpu_seconds += time.thread_time() - start
            if final_state is not None:
                self._close_connection()

    def _write(self, final_state: str | None) -> None:
        delta, conn = self._unwritten, self._conn
        conn.execute("BEGIN IMMEDIATE")
        self._write_scalars(conn)
        self._write_samples(conn, delta.samples)
        conn.executemany("INSERT INTO system (time, cpu_percent, rss_mb, gpu_mb) "
                         "VALUES (?, ?, ?, ?)", delta.system)
        self._write_snapshots(conn, delta)
        self._write_batch(conn, delta.batch)
        self.ticks += 1
        meta = {**delta.meta, "heartbeat": time.time(), "ticks": self.ticks,
                "dropped_points": self.dropped}
        if delta.failed:
            meta["failed"] = delta.failed
        if final_state is not None:
            meta["state"] = final_state
        self._write_meta(meta)
        conn.execute("COMMIT")
        self._unwritten = RunDelta()

    def _write_scalars(self, conn: Any) -> None:
        def rows():  # streamed: a backlog of many points never becomes one big list
            while self._queue:
                steps, names, values, times = self._queue.popleft()
                yield from zip(steps.tolist(), names, values.tolist(), times.tolist())

        # SQLite stores NaN as NULL: written as NULL, read back as NaN
        conn.executemany("INSERT INTO scalars (step, name, value, time) VALUES (?, ?, ?, ?)",
                         rows())

    def _write_samples(self, conn: Any, samples: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        for kind, steps, rows in samples:
            if steps.size == 0:
                continue
            conn.execute(
                "INSERT INTO samples (kind, first_step, last_step, steps, rows) "
                "VALUES (?, ?, ?, ?, ?)",
                (kind, int(steps[0]), int(steps[-1]), to_npy(steps), to_npy(rows)))

    def _put_blob(self, conn: Any, name: str, kind: str, data: bytes | str) -> None:
        conn.execute("INSERT OR REPLACE INTO blobs (name, kind, data) VALUES (?, ?, ?)",
                     (name, kind, data))

    def _write_snapshots(self, conn: Any, delta: RunDelta) -> None:
        if delta.events is not None:
            self._put_blob(conn, "events", "json", to_json(delta.events))
        if delta.errors is not None:
            self._put_blob(conn, "errors", "json", to_json([list(e) for e in delta.errors]))
        if delta.loader is not None:
            for key, value in delta.loader.items():
                if isinstance(value, np.ndarray):
                    self._put_blob(conn, f"loader.{key}", "npy", to_npy(value))
            plain = {k: v for k, v in delta.loader.items() if not isinstance(v, np.ndarray)}
            self._put_blob(conn, "loader", "json", to_json(plain))

    def _write_batch(self, conn: Any, arrays: list[np.ndarray]) -> None:
        """A captured batch goes into the next of :data:`CAPTURED_SLOTS` slots."""
        if not arrays:
            return
        slot = self._batch_slot % CAPTURED_SLOTS
        conn.execute("DELETE FROM blobs WHERE name LIKE ?", (f"batch.{slot}.%",))
        for i, array in enumerate(arrays):
            self._put_blob(conn, f"batch.{slot}.{i}", "npy", to_npy(array))
        self._put_blob(conn, f"batch.{slot}", "json", to_json({"order": self._batch_slot}))
        self._batch_slot += 1

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self, state: str = "closed") -> None:
        """The last write, with the final state; stops the thread (harmless twice)."""
        self._stop.set()
        self.tick(final_state=state)
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)

    def _close_connection(self) -> None:
        self.closed = True
        _OPEN.discard(self)
        # A finished run becomes one self-contained file (no -wal/-shm beside it) to copy
        # or share; while a reader holds it open this fails, harmlessly, and WAL stays.
        with contextlib.suppress(Exception):
            self._conn.execute("PRAGMA journal_mode=DELETE")
        with contextlib.suppress(Exception):
            self._conn.close()


def _write_loop(ref: weakref.ref) -> None:
    while True:
        writer = ref()
        if writer is None or writer.closed:
            return
        stop, interval = writer._stop, writer.interval
        writer.tick()
        del writer
        if stop.wait(interval):
            return


@atexit.register
def _close_all_at_exit() -> None:
    """A script that ends without ``session.close()`` still leaves a complete run."""
    for writer in list(_OPEN):
        with contextlib.suppress(Exception):
            writer.close("ended")
