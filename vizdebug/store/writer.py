"""Writes a watched session to its run file, from a background thread.

Nothing here runs on the training step. ``ScalarLog.resolve`` hands every resolved batch
of points to :meth:`RunWriter.sink` (a bounded queue); a daemon thread wakes every
``interval`` seconds and writes, in one transaction, what arrived since the last write:
new scalar points, new sampled activation/gradient rows, new system samples, and fresh
snapshots of the anomaly events, collector errors and loader statistics when they
changed. Each write renews the heartbeat, so a reader can tell a run that is still going
from one whose process died. A failed write becomes a ``collector-error`` finding of the
session; it never reaches the training loop.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as _dt
import os
import platform
import sys
import threading
import time
import weakref
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._env import distributed_rank, is_tensor
from ..errors import VizdebugError, VizdebugTypeError, describe
from .schema import FORMAT, FORMAT_VERSION, SCHEMA, connect, is_run_file, rank_path, to_json, to_npy

if TYPE_CHECKING:
    from ..collect.session import Session

INTERVAL = 2.0            # seconds between writes
BATCH_INTERVAL = 30.0     # seconds between two captured batches written
MAX_BATCH_BYTES = 8 << 20  # a captured batch larger than this is cut to its first items
MAX_QUEUED = 4096         # resolved chunks held while the disk is slow (then the oldest go)
CAPTURED_SLOTS = 4

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


def _numpy(value: Any) -> np.ndarray | None:
    """A tensor or array as a numeric numpy array (on the CPU), else ``None``."""
    from ..data.arrays import tensor_to_numpy

    if is_tensor(value):
        try:
            value = tensor_to_numpy(value)
        except VizdebugTypeError:  # complex
            return None
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value
    return None


def batch_arrays(batch: Any) -> list[np.ndarray]:
    """The input (and labels, when they line up) of a captured batch, as numpy arrays."""
    from ..collect.loader import batch_input

    x = _numpy(batch_input(batch))
    if x is None or x.ndim == 0:
        return []
    rows = max(1, min(x.shape[0], MAX_BATCH_BYTES // max(1, x[:1].nbytes)))
    out = [x[:rows]]
    if isinstance(batch, (tuple, list)) and len(batch) > 1:
        y = _numpy(batch[1])
        if y is not None and y.ndim >= 1 and y.shape[0] == x.shape[0]:
            out.append(y[:rows])
    return out


class RunWriter:
    """The run file of one session and the thread that keeps it current."""

    def __init__(self, path: Path, session: Session, *, interval: float | None = None) -> None:
        self.path = path
        self.interval = interval or INTERVAL
        self._session = weakref.ref(session)
        self._lock = threading.Lock()
        self._queue: deque[tuple[np.ndarray, tuple[str, ...], np.ndarray, np.ndarray]] = deque(
            maxlen=MAX_QUEUED)
        self.dropped = 0
        self._last = {"activations": -1, "grads": -1}
        self._system_written = 0
        self._snapshots: dict[str, Any] = {}
        self._batch_written_at = -1e9
        self._batch_slot = 0
        self._captured_ids: set[int] = set()
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
        self._write_meta(self._start_meta(session))
        self._thread = threading.Thread(target=_write_loop, args=(weakref.ref(self),),
                                        name="vizdebug-store", daemon=True)
        _OPEN.add(self)

    def start(self) -> RunWriter:
        """Start the writing thread."""
        self._thread.start()
        return self

    # -- what the session hands over ---------------------------------------------------------
    def sink(self, steps: np.ndarray, names: tuple[str, ...], values: np.ndarray,
             times: np.ndarray) -> None:
        """Receive resolved scalar points (called inside ``ScalarLog.resolve``)."""
        if len(self._queue) == self._queue.maxlen:
            self.dropped += len(self._queue[0][0])
        self._queue.append((steps, names, values, times))

    # -- meta -----------------------------------------------------------------------------------
    def _start_meta(self, session: Session) -> dict[str, Any]:
        torch = sys.modules.get("torch")
        model = session.hooks.model_ref()
        now = time.time()
        return {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "vizdebug_version": _version(), "created": now, "heartbeat": now,
            "state": "running", "failed": None, "ticks": 0, "interval": self.interval,
            "pid": os.getpid(), "host": platform.node(), "argv": list(sys.argv),
            "python": platform.python_version(),
            "torch": getattr(torch, "__version__", None), "numpy": np.__version__,
            "rank": session.rank, "world_size": distributed_rank()[1],
            "model_class": type(model).__name__ if model is not None else None,
            "every": session.every, "param_numel": list(session.param_numel),
            # fixed when the hooks are attached: written once
            "module_paths": list(session.hooks.module_paths),
            "module_classes": list(session.hooks.module_classes),
            "param_paths": list(session.hooks.param_paths),
        }

    def _write_meta(self, values: dict[str, Any]) -> None:
        self._conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                               [(k, to_json(v)) for k, v in values.items()])

    # -- one write --------------------------------------------------------------------------------
    def tick(self, *, final_state: str | None = None) -> None:
        """Write what arrived since the last write, in one transaction (any thread)."""
        if os.getpid() != self._pid:
            return
        session = self._session()
        with self._lock:
            if self.closed:
                return
            start = time.thread_time()
            try:
                self._tick(session, final_state)
            except Exception as exc:
                with contextlib.suppress(Exception):
                    self._conn.execute("ROLLBACK")
                if session is not None:
                    session._on_error("the run store", exc)
            self.cpu_seconds += time.thread_time() - start
            if final_state is not None:
                self._close_connection()

    def _tick(self, session: Session | None, final_state: str | None) -> None:
        meta: dict[str, Any] = {}
        if session is not None:
            with contextlib.suppress(Exception):
                session.log_store.resolve()
            if final_state is None:
                session.hooks.read_sealed()
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        self._write_scalars(conn)
        if session is not None:
            self._write_samples(conn, session)
            self._write_system(conn, session)
            self._write_snapshots(conn, session, force=final_state is not None)
            if session.failed:
                meta["failed"] = session.failed
        self.ticks += 1
        meta.update(heartbeat=time.time(), ticks=self.ticks, dropped_points=self.dropped)
        if final_state is not None:
            meta["state"] = final_state
        self._write_meta(meta)
        conn.execute("COMMIT")

    def _write_scalars(self, conn: Any) -> None:
        def rows():  # streamed: a backlog of many points never becomes one big list
            while self._queue:
                steps, names, values, times = self._queue.popleft()
                yield from zip(steps.tolist(), names, values.tolist(), times.tolist())

        # SQLite stores NaN as NULL: written as NULL, read back as NaN
        conn.executemany("INSERT INTO scalars (step, name, value, time) VALUES (?, ?, ?, ?)",
                         rows())

    def _write_samples(self, conn: Any, session: Session) -> None:
        from ..collect.samples import stack_rows

        hooks = session.hooks
        for kind, buffer, width in (("activations", hooks.activations, len(hooks.module_paths)),
                                    ("grads", hooks.grads, len(hooks.param_paths))):
            steps, rows = buffer.since(self._last[kind])
            if steps.size == 0:
                continue
            conn.execute(
                "INSERT INTO samples (kind, first_step, last_step, steps, rows) "
                "VALUES (?, ?, ?, ?, ?)",
                (kind, int(steps[0]), int(steps[-1]), to_npy(steps),
                 to_npy(stack_rows(rows, width))))
            self._last[kind] = int(steps[-1])

    def _write_system(self, conn: Any, session: Session) -> None:
        system = session.system
        new = system.count - self._system_written
        if new <= 0:
            return
        samples = list(system.samples)[-new:]
        conn.executemany("INSERT INTO system (time, cpu_percent, rss_mb, gpu_mb) "
                         "VALUES (?, ?, ?, ?)", samples)
        self._system_written = system.count

    def _put_blob(self, conn: Any, name: str, kind: str, data: bytes | str) -> None:
        conn.execute("INSERT OR REPLACE INTO blobs (name, kind, data) VALUES (?, ?, ?)",
                     (name, kind, data))

    def _write_snapshots(self, conn: Any, session: Session, *, force: bool) -> None:
        events = [vars(ev) for ev in session.policy.events]
        errors = [[w, m, c] for (w, m), c in list(session._errors.items())]
        for name, value in (("events", events), ("errors", errors)):
            text = to_json(value)
            if self._snapshots.get(name) != text:
                self._put_blob(conn, name, "json", text)
                self._snapshots[name] = text
        tap = session.tap
        if tap.batches and self._snapshots.get("loader") != tap.batches:
            record = session._loader_record()
            arrays = {k: v for k, v in record.items() if isinstance(v, np.ndarray)}
            plain = {k: v for k, v in record.items() if not isinstance(v, np.ndarray)}
            for key, array in arrays.items():
                self._put_blob(conn, f"loader.{key}", "npy", to_npy(array))
            self._put_blob(conn, "loader", "json", to_json(plain))
            self._snapshots["loader"] = tap.batches
        now = time.monotonic()
        if force or now - self._batch_written_at >= BATCH_INTERVAL:
            self._write_captured(conn, session)
            self._batch_written_at = now

    def _write_captured(self, conn: Any, session: Session) -> None:
        captured = list(session.tap.captured)
        if not captured or id(captured[-1]) in self._captured_ids:
            return
        arrays = batch_arrays(captured[-1])
        if not arrays:
            return
        slot = self._batch_slot % CAPTURED_SLOTS
        conn.execute("DELETE FROM blobs WHERE name LIKE ?", (f"batch.{slot}.%",))
        for i, array in enumerate(arrays):
            self._put_blob(conn, f"batch.{slot}.{i}", "npy", to_npy(array))
        self._put_blob(conn, f"batch.{slot}", "json", to_json({"order": self._batch_slot}))
        self._captured_ids = {id(b) for b in captured}
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


def _version() -> str:
    from .. import __version__

    return __version__


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
