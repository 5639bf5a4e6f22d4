"""Writes a run file from a background thread: only what it is handed.

Nothing here runs on the training step, and nothing here knows a Session. The writer is
handed plain records: resolved scalar points through :meth:`RunWriter.sink` (a bounded
queue, called as the scalar log resolves them), and a :class:`~vizdebug.records.RunDelta`
(new sampled rows, system samples, changed snapshots, a captured batch, settings) from
the ``take_delta`` callback its owner gives it. A daemon thread wakes every ``interval``
seconds (0.5 s: a process killed outright loses at most about that much) and writes what
it was handed since the last write: the delta and the first logged points in one
transaction, more points in further transactions of at most
:data:`~vizdebug.store.backlog.MAX_COMMIT` points each, for at most :data:`TICK_SHARE` of
the interval. When logging outpaces the writer, the oldest points not yet written are
dropped (see :mod:`~vizdebug.store.backlog`), so that a kill still loses about a second
at most and ``close()`` writes for at most :data:`CLOSE_BUDGET`; what was dropped is
counted in the file (``dropped_points``, ``dropped_why``) and reported as a
:class:`~vizdebug.store.backlog.StoreDropped` (a ``store-dropped`` finding). Each write
renews the heartbeat. The writer holds the run file's lock for its whole life (see
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
from .backlog import DROP_REASONS, Backlog, StoreDropped
from .blobs import write_batch, write_snapshots
from .claim import claim, release, store_path
from .embeddings import write_embeddings
from .envelope import SPEC, write_envelope
from .late import LateWrite
from .registry import OPEN, finish_later, supersede
from .schema import FORMAT, FORMAT_VERSION, SCHEMA, connect, to_json, to_npy

INTERVAL = 0.5            # seconds between writes (at most about this much is lost to a kill)
CLOSE_WAIT = 0.8          # seconds close() waits for a lock another process holds (~1 s in all)
TICK_SHARE = 0.5          # share of the interval a write may spend committing a backlog
CLOSE_BUDGET = 0.5        # seconds the last write may spend committing a backlog
LATE_CLOSE = 60.0         # seconds a close that could not write keeps trying in the background
MAX_QUEUED = 4096         # resolved chunks held while the disk is slow (then the oldest go)

__all__ = ["RunWriter", "store_path"]


class RunWriter(LateWrite):
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
        self._backlog = Backlog()  # taken from the queue, not committed yet
        self.dropped = self._counted = 0  # points dropped; those counted under a reason
        self._why: set[str] = set()  # the reasons (DROP_REASONS keys) of every drop
        self._why_new: set[str] = set()  # those not reported yet
        self._piece = 0  # chunks of the backlog in the transaction being written
        self._unwritten = replace(start, meta={})  # handed over, not yet committed
        self._batch_slot = 0
        self.ticks = 0
        self._written = time.monotonic()  # the last write (or a logging thread's try at one)
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
        points = self._backlog.points() + sum(len(chunk[0]) for chunk in self._queue.copy())
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
                "locked": self._lock_fd is not None, "envelope": SPEC}

    def _write_meta(self, values: dict[str, Any]) -> None:
        self._conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                               [(k, to_json(v)) for k, v in values.items()])

    # -- one write --------------------------------------------------------------------------------
    def tick(self, *, final_state: str | None = None) -> None:
        """Take the next delta and write what was not written yet, in bounded transactions
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
        self._report_drops()
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

    # -- what is dropped ------------------------------------------------------------------------
    def _drop(self, points: int, why: str) -> None:
        """Count ``points`` dropped for the reason ``why`` (a key of DROP_REASONS)."""
        if points > 0:
            self.dropped += points
            self._counted += points
            self._why.add(why)
            self._why_new.add(why)

    def _note_queue_drops(self) -> None:
        """Points the full queue dropped (``sink`` counts them) get their reason."""
        if self.dropped > self._counted:
            self._counted = self.dropped
            self._why.add("full")
            self._why_new.add("full")

    def _report_drops(self) -> None:
        """Report each reason of new drops once per write (a stable message: a Session
        counts repeats; the file keeps the number of points)."""
        self._note_queue_drops()
        for why in sorted(self._why_new):
            self._report(StoreDropped(f"{DROP_REASONS[why]} (the run's dropped_points "
                                      "setting counts them)"))
        self._why_new.clear()

    # -- one write --------------------------------------------------------------------------------
    def _write(self, final_state: str | None) -> None:
        """The delta and the first piece of the logged points in one transaction, then
        further pieces until none is left or the time budget is spent; a last write
        drops what it could not write by then."""
        backlog, final = self._backlog, final_state is not None
        self._bound(final)
        budget = CLOSE_BUDGET if final else self.interval * TICK_SHARE
        began, delta = time.monotonic(), self._unwritten
        while True:
            if delta is None and backlog.held and time.monotonic() - began >= budget:
                if not final:
                    return  # the rest goes with the next write
                self._drop(backlog.drop_all(), "closing")
            self._piece = backlog.piece()
            last = self._piece == len(backlog.held)
            at = time.monotonic()
            self._commit(delta, final_state if last else None)
            backlog.done(self._piece, time.monotonic() - at)
            if last:
                return
            delta = None

    def _bound(self, final: bool) -> None:
        """Take the queue and keep the backlog within its bounds: memory, and, when the
        writer is behind, what it commits in an interval (in a close: its budget)."""
        backlog = self._backlog
        self._drop(backlog.take(self._queue, MAX_QUEUED), "full")
        self._note_queue_drops()
        self._drop(backlog.bound(CLOSE_BUDGET if final else self.interval),
                   "closing" if final else "overload")

    def _commit(self, delta: RunDelta | None, state: str | None) -> None:
        """One transaction: the piece of logged points, the delta (with the first piece
        of a write), the heartbeat and the counts; ``state`` with the last of a close."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        self._write_scalars(conn)
        slot = self._batch_slot
        meta: dict[str, Any] = {"heartbeat": time.time(), "ticks": self.ticks + 1,
                                "dropped_points": self.dropped}
        if self._why:
            meta["dropped_why"] = sorted(self._why)
        if delta is not None:
            slot = self._write_delta(conn, delta)
            meta = {**delta.meta, **meta, **({"failed": delta.failed} if delta.failed else {})}
        if state is not None:
            meta["state"] = state
        self._write_meta(meta)
        conn.execute("COMMIT")
        self.ticks += 1
        self._written = time.monotonic()
        if delta is not None:
            self._batch_slot, self._unwritten = slot, RunDelta()

    def _write_delta(self, conn: Any, delta: RunDelta) -> int:
        """Everything but the logged points; returns the captured-batch slot counter."""
        self._write_samples(conn, delta.samples)
        conn.executemany("INSERT INTO system (time, cpu_percent, rss_mb, gpu_mb) "
                         "VALUES (?, ?, ?, ?)", delta.system)
        write_snapshots(conn, delta)
        slot = write_batch(conn, delta.batch, self._batch_slot)
        write_embeddings(conn, delta.embeddings, delta.probes)
        return slot

    def _write_scalars(self, conn: Any) -> None:
        """The rows of the piece being committed (its names in storable form)."""
        # SQLite stores NaN as NULL: written as NULL, read back as NaN
        conn.executemany("INSERT INTO scalars (step, name, value, time) VALUES (?, ?, ?, ?)",
                         self._backlog.rows(self._piece))
        # the min/max levels of the same points, in the same transaction (store/envelope.py)
        write_envelope(conn, *self._backlog.columns(self._piece))

    def _write_samples(self, conn: Any, samples: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        for kind, steps, rows in samples:
            if steps.size == 0:
                continue
            conn.execute(
                "INSERT INTO samples (kind, first_step, last_step, steps, rows) "
                "VALUES (?, ?, ?, ?, ?)",
                (kind, int(steps[0]), int(steps[-1]), to_npy(steps), to_npy(rows)))

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
        # A write in progress ends soon: it waits on other processes 0.25 s at most, and
        # commits a backlog for TICK_SHARE of the interval at most.
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
        stop, interval, began = writer._stop, writer.interval, time.monotonic()
        writer.tick()
        del writer
        # a write every interval (not an interval after each): a write that spent its
        # budget on a backlog does not push the next one later
        if stop.wait(max(0.05, interval - (time.monotonic() - began))):
            return
