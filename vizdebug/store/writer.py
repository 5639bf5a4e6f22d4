"""Writes a run file from a background thread: only what it is handed.

Nothing here runs on the training step, and nothing here knows a Session. The writer is
handed plain records: resolved scalar points through :meth:`RunWriter.sink` (a bounded
queue, called as the scalar log resolves them), and a :class:`~vizdebug.records.RunDelta`
(new sampled rows, system samples, changed snapshots, a captured batch, settings) from
the ``take_delta`` callback its owner gives it. A daemon thread wakes every ``interval``
seconds (0.5 s: a process killed outright loses at most about that much) and writes, in
one transaction, what it was handed since the last write. Each write renews the
heartbeat. The writer holds the run file's lock for its whole life (see
:mod:`~vizdebug.store.claim`): one writer per file, and a reader sees at once that a
writer died.

A failed write is kept, retried with the next one and reported through ``on_error`` (a
Session turns it into a ``collector-error`` finding); it never reaches the training loop.
No write waits long on a lock another process holds on the database: ``close()`` returns
within about :data:`CLOSE_WAIT` seconds; what it could not write is reported and written
by a background thread as soon as the lock is free (for up to :data:`LATE_CLOSE` seconds,
then reported as lost). A forked child (a DataLoader worker) never writes and lets go of
the lock.
"""

from __future__ import annotations

import contextlib
import os
import platform
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import VizdebugError
from ..records import RunDelta, ScalarChunk
from .claim import claim, release, store_path
from .embeddings import write_embeddings
from .registry import OPEN, finish_later, supersede
from .schema import FORMAT, FORMAT_VERSION, SCHEMA, connect, to_json, to_npy

INTERVAL = 0.5            # seconds between writes (at most about this much is lost to a kill)
CLOSE_WAIT = 0.8          # seconds close() waits for a lock another process holds (~1 s in all)
LATE_CLOSE = 60.0         # seconds a close that could not write keeps trying in the background
MAX_QUEUED = 4096         # resolved chunks held while the disk is slow (then the oldest go)
CAPTURED_SLOTS = 4        # captured batches kept in the file (the oldest slot is reused)

__all__ = ["RunWriter", "store_path"]


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
        self.interval = interval or INTERVAL
        self._take_delta = take_delta
        self._on_error = on_error
        self._lock = threading.Lock()
        self._queue: deque[ScalarChunk] = deque(maxlen=MAX_QUEUED)
        self._held: list[ScalarChunk] = []  # taken by a write that has not committed yet
        self.dropped = self._dropped_reported = 0
        self._unwritten = replace(start, meta={})  # handed over, not yet committed
        self._batch_slot = 0
        self.ticks = 0
        self._pid = os.getpid()  # a forked child (a DataLoader worker) must never write
        self.cpu_seconds = 0.0  # CPU time spent writing (thread time of the writing thread)
        self.closed = False
        self.closing: str | None = None  # the final state while a late close goes on
        self.last_error: BaseException | None = None
        self._stop = threading.Event()
        supersede(Path(os.path.realpath(path)))
        self.path, self._lock_fd = claim(path)
        self._open(start)
        self._thread = threading.Thread(target=_write_loop, args=(weakref.ref(self),),
                                        name="vizdebug-store", daemon=True)
        OPEN.add(self)

    def _open(self, start: RunDelta) -> None:
        try:
            self._conn = connect(self.path)
            self._conn.executescript(SCHEMA)
            self._write_meta({**self._file_meta(), **start.meta})
        except Exception as exc:
            release(self._lock_fd)
            raise VizdebugError(f"cannot open store={str(self.path)!r} as SQLite: {exc}") from None

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

    def unwritten(self) -> str:
        """What was handed over and is not in the file yet, in words."""
        points = sum(len(chunk[0]) for chunk in [*self._held, *self._queue.copy()])
        delta = self._unwritten
        rows = sum(int(steps.size) for _, steps, _ in delta.samples)
        text = f"{points} logged points, {rows} sampled rows, {len(delta.system)} system samples"
        text += f", {len(delta.embeddings)} embedding frames" if delta.embeddings else ""
        return text + (", a captured batch" if delta.batch else "")

    # -- meta -----------------------------------------------------------------------------------
    def _file_meta(self) -> dict[str, Any]:
        """The settings the writer itself owns (the rest comes in the first delta)."""
        now = time.time()
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "created": now,
                "heartbeat": now, "state": "running", "failed": None, "ticks": 0,
                "interval": self.interval, "pid": os.getpid(), "host": platform.node(),
                "locked": self._lock_fd is not None}

    def _write_meta(self, values: dict[str, Any]) -> None:
        self._conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                               [(k, to_json(v)) for k, v in values.items()])

    # -- one write --------------------------------------------------------------------------------
    def tick(self, *, final_state: str | None = None) -> None:
        """Take the next delta and write everything not yet written, in one transaction
        (any thread). A failed write is reported and retried with the next."""
        if final_state is not None:
            self.close(final_state)
            return
        if os.getpid() != self._pid:
            return
        with self._lock:
            if not self.closed:
                self._tick(None, report=True)

    def _tick(self, final_state: str | None, *, report: bool) -> bool:
        """One write under ``self._lock``; True when it committed."""
        start = time.thread_time()
        if self.dropped > self._dropped_reported:  # the bounded queue overflowed
            self._dropped_reported = self.dropped
            self._report(VizdebugError(
                "the oldest logged points were dropped: the run file could not be written "
                "for a while and the queue of points was full (the run's dropped_points "
                "counts them)"))
        try:
            if self._take_delta is not None:
                self._absorb(self._take_delta(final_state is not None))
            self._write(final_state)
            ok = True
        except Exception as exc:
            ok, self.last_error = False, exc
            with contextlib.suppress(Exception):
                self._conn.execute("ROLLBACK")
            if report:
                self._report(exc)
        self.cpu_seconds += time.thread_time() - start
        return ok

    def _report(self, exc: BaseException) -> None:
        if self._on_error is not None:
            with contextlib.suppress(Exception):
                self._on_error("the run store", exc)
        else:
            import warnings

            warnings.warn(f"vizdebug run store {str(self.path)!r}: {exc}", RuntimeWarning,
                          stacklevel=2)

    def _write(self, final_state: str | None) -> None:
        delta, conn = self._unwritten, self._conn
        self._take_scalars()  # before BEGIN: what a write takes stays held until it commits
        conn.execute("BEGIN IMMEDIATE")
        self._write_scalars(conn)
        self._write_samples(conn, delta.samples)
        conn.executemany("INSERT INTO system (time, cpu_percent, rss_mb, gpu_mb) "
                         "VALUES (?, ?, ?, ?)", delta.system)
        self._write_snapshots(conn, delta)
        slot = self._write_batch(conn, delta.batch)
        write_embeddings(conn, delta.embeddings, delta.probes)
        meta = {**delta.meta, "heartbeat": time.time(), "ticks": self.ticks + 1,
                "dropped_points": self.dropped}
        if delta.failed:
            meta["failed"] = delta.failed
        if final_state is not None:
            meta["state"] = final_state
        self._write_meta(meta)
        conn.execute("COMMIT")
        self.ticks += 1
        self._batch_slot = slot
        self._unwritten, self._held = RunDelta(), []

    def _take_scalars(self) -> None:
        """Move the queue's chunks behind those a failed write left (bounded: the oldest
        go first, counted in ``dropped``)."""
        held, queue = self._held, self._queue
        while queue:
            held.append(queue.popleft())
        over = len(held) - MAX_QUEUED
        if over > 0:
            self.dropped += sum(len(chunk[0]) for chunk in held[:over])
            del held[:over]

    def _write_scalars(self, conn: Any) -> None:
        def rows():  # streamed: a backlog of many points never becomes one big list
            for steps, names, values, times in self._held:
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
            self._put_blob(conn, "events", "json", to_json([ev.to_json() for ev in delta.events]))
        if delta.errors is not None:
            self._put_blob(conn, "errors", "json", to_json([list(e) for e in delta.errors]))
        if delta.program is not None:
            self._put_blob(conn, "program", "json", to_json(delta.program))
        if delta.loader is not None:
            plain, arrays = delta.loader.parts()
            for key, value in arrays.items():
                self._put_blob(conn, f"loader.{key}", "npy", to_npy(value))
            self._put_blob(conn, "loader", "json", to_json(plain))

    def _write_batch(self, conn: Any, arrays: list[np.ndarray]) -> int:
        """A captured batch goes into the next of :data:`CAPTURED_SLOTS` slots; returns
        the slot counter once it is committed."""
        if not arrays:
            return self._batch_slot
        slot = self._batch_slot % CAPTURED_SLOTS
        conn.execute("DELETE FROM blobs WHERE name LIKE ?", (f"batch.{slot}.%",))
        for i, array in enumerate(arrays):
            self._put_blob(conn, f"batch.{slot}.{i}", "npy", to_npy(array))
        self._put_blob(conn, f"batch.{slot}", "json", to_json({"order": self._batch_slot}))
        return self._batch_slot + 1

    # -- lifetime ---------------------------------------------------------------------------------
    def close(self, state: str = "closed") -> None:
        """The last write, with the final state; stops the thread (harmless twice).

        Returns within about :data:`CLOSE_WAIT` seconds even while another process holds
        the database locked: what could not be written then is reported through
        ``on_error`` and written in the background once the lock is free.
        """
        self._stop.set()
        if self.closed or os.getpid() != self._pid:
            return
        deadline = time.monotonic() + CLOSE_WAIT
        # A write in progress ends soon (it waits on other processes 0.25 s at most); its
        # own work, a long backlog, is not a lock held elsewhere and is waited for.
        if self._lock.acquire(timeout=LATE_CLOSE):
            try:
                self._final_write(state, deadline)
            finally:
                self._lock.release()
        if not self.closed and self.closing is None:
            self.closing = state
            self._report(VizdebugError(
                f"{self.unwritten()} not written yet: the run file {str(self.path)!r} stayed "
                f"locked for {CLOSE_WAIT:g} s ({self.last_error or 'a write in progress'}; "
                f"another process holds it?); retrying in the background for {LATE_CLOSE:g} s"))
            threading.Thread(target=finish_later, args=(self, LATE_CLOSE), daemon=True,
                             name="vizdebug-store-close").start()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _final_write(self, state: str, deadline: float) -> bool:
        """Under ``self._lock``: the last write, waiting on another process's lock only
        until ``deadline``."""
        if self.closed:
            return True
        wait_ms = int(max(0.05, deadline - time.monotonic()) * 1000)
        with contextlib.suppress(Exception):
            self._conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
        if not self._tick(state, report=False):
            return False
        self._close_connection()
        return True

    def give_up(self, why: str) -> None:
        """Stop trying: report what was never written, let go of the file."""
        with self._lock:
            if self.closed:
                return
            lost = self.unwritten()
            self._close_connection()
        self._report(VizdebugError(
            f"lost {lost}: gave up writing the run file {str(self.path)!r} ({why}; last "
            f"error: {self.last_error}). The file keeps what was written before"))

    def _close_connection(self) -> None:
        self.closed = True
        OPEN.discard(self)
        # A finished run becomes one self-contained file (no -wal/-shm beside it) to copy
        # or share; while a reader holds it open this fails at once, harmlessly, and WAL
        # stays.
        with contextlib.suppress(Exception):
            self._conn.execute("PRAGMA busy_timeout = 0")
            self._conn.execute("PRAGMA journal_mode=DELETE")
        with contextlib.suppress(Exception):
            self._conn.close()
        release(self._lock_fd)
        self._lock_fd = None


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
