"""``open_run(path)``: read a stored run, from another kernel, a script or a crashed job.

A :class:`Run` answers like a Session: ``scalars()``, ``findings()``, ``dashboard()``,
``records()``, ``captured_batches()``, and ``vd.report(run, path)``. It reads the file
again whenever the writer has written since (the dashboard of a run that is still going
follows it live). Nothing is unpickled: arrays are ``.npy`` read with
``allow_pickle=False``, the rest is JSON.

A run file is untrusted input. What cannot be read (a damaged page, a crafted value, a
``.npy`` header claiming more than the file holds) gives a :class:`VizdebugError` that names
the file and the table when you ask for that table (``scalars()``,
``captured_batches()``); ``records()``, ``findings()`` and the dashboard show everything
else and report the damage as a ``collector-error`` finding.
"""

from __future__ import annotations

import contextlib
import html
import platform
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._viewable import Viewable
from ..analysis.training.diagnose import STORE_DROPPED, diagnose, store_dropped
from ..errors import VizdebugError
from ..findings import Finding, Findings
from ..records import LoaderRecord, TrainingRecords
from .backlog import dropped_message
from .claim import LockProbe
from .embeddings import StoredEmbeddings
from .envelope import Window, has_envelope
from .guard import explain, open_read
from .reader import RunReader, loader_record
from .sanitize import (
    MAX_WORLD,
    clean_errors,
    clean_events,
    clean_loader,
    clean_meta,
    clean_program,
    fill_names,
)
from .schema import (
    FORMAT,
    FORMAT_VERSION,
    DamagedRun,
    from_json,
    from_npy,
    is_run_file,
    rank_path,
)
from .windows import Query, check_query, last_step, query_windows, rows_frame, windows_frame

if TYPE_CHECKING:
    import pandas as pd

STALE_AFTER = 4.0   # write intervals without a heartbeat before a "running" run whose
#                     writer's liveness cannot be asked (no file lock) counts as interrupted
HUNG_AFTER = 30.0   # seconds without a heartbeat before a writer that is alive counts as hung


class _SystemArray:
    """What the dashboard reads as ``source.system``."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def array(self) -> np.ndarray:
        return self._array


class Run(Viewable, StoredEmbeddings):
    """A stored run. Build it with :func:`open_run`.

    Examples
    --------
    >>> run = vd.open_run("runs/exp1.sqlite")   # doctest: +SKIP
    >>> run.findings()                          # doctest: +SKIP
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._cache_key: Any = None
        self._records: TrainingRecords | None = None
        self._reader = RunReader()
        self._created: Any = None
        self._probe = LockProbe(path)
        self.damage: dict[str, str] = {}  # table -> what could not be read
        self.meta: dict[str, Any] = {}
        self._read_meta()
        version = self.meta.get("format_version", 0)
        if self.meta.get("format") != FORMAT or not isinstance(version, int) or version > FORMAT_VERSION:
            raise VizdebugError(
                f"{str(path)!r} was written by a newer vizdebug (format "
                f"{str(version)[:40]}); upgrade vizdebug to read it")
        self.system = _SystemArray(np.empty((0, 4)))
        self.title = f"Stored run {path.name}"

    # -- the file -------------------------------------------------------------------------
    def _damaged(self, table: str, detail: object) -> VizdebugError:
        return VizdebugError(f"the run file {str(self.path)!r} is damaged in table "
                             f"{table!r}: {detail}")

    @contextlib.contextmanager
    def _reading(self, table: str) -> Iterator[sqlite3.Connection]:
        """A read-only connection; SQLite errors become clear vizdebug errors that name
        the file and ``table``."""
        try:  # read-only, bounded, and never a view or computed column (store/guard.py)
            conn = open_read(self.path)
        except sqlite3.Error as exc:
            raise VizdebugError(f"cannot read the run file {str(self.path)!r}: {exc}") from None
        try:
            yield conn
        except sqlite3.DatabaseError as exc:
            raise self._damaged(table, explain(conn, exc)) from None
        except DamagedRun as exc:
            raise self._damaged(exc.table, str(exc).split(": ", 1)[-1]) from None
        finally:
            conn.close()

    def _query(self, sql: str, args: tuple = (), table: str = "blobs") -> list[tuple]:
        with self._reading(table) as conn:
            return conn.execute(sql, args).fetchall()

    def _read_meta(self) -> None:
        meta = {}
        for key, value in self._query("SELECT key, value FROM meta LIMIT 10000", table="meta"):
            try:
                meta[str(key)] = from_json(value, f"setting {key!r}", "meta")
            except DamagedRun as exc:
                self.damage.setdefault("meta", str(exc))
        self.meta, problems = clean_meta(meta)
        if problems:
            self.damage.setdefault("meta", "table 'meta': unusable settings " + ", ".join(
                p[:80] for p in problems[:5]))
        self._meta_at = time.monotonic()

    # -- state -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        """``running``, ``closed``, ``ended`` (the script exited without ``close()``),
        ``failed``, or ``interrupted`` (the writer died: its lock on the file is gone, or,
        where that cannot be asked, no heartbeat for a while; or it hangs)."""
        if self.meta.get("state") == "running" and time.monotonic() - self._meta_at > 1.0:
            with contextlib.suppress(VizdebugError):  # a running run: at most 1 s stale
                self._read_meta()
        state = str(self.meta.get("state", "running"))[:40]
        if state != "running":
            return state
        alive = self._writer_alive()
        if alive is False:
            with contextlib.suppress(VizdebugError):  # it may have just closed
                self._read_meta()
            state = str(self.meta.get("state", "running"))[:40]
            return "interrupted" if state == "running" else state
        age = time.time() - (self.meta.get("heartbeat") or 0.0)
        stale = HUNG_AFTER if alive else STALE_AFTER * (self.meta.get("interval") or 2.0) + 1.0
        return "interrupted" if age > stale else "running"

    def _writer_alive(self) -> bool | None:
        """Whether the writer holds its lock; None when that cannot tell (an older file,
        another machine, a file system without locks)."""
        if self.meta.get("locked") is not True or self.meta.get("host") != platform.node():
            return None
        return self._probe.writer_alive()

    @property
    def closed(self) -> bool:
        """True once nothing more will be written (the dashboard stops following)."""
        return self.state != "running"

    @property
    def failed(self) -> str | None:
        """Why the run failed (an exception in ``with watch(...)``), or its interruption."""
        if self.meta.get("failed"):
            return str(self.meta["failed"])[:4000]
        if self.state == "interrupted":
            return f"no write since {time.ctime(float(self.meta.get('heartbeat') or 0))}"
        return None

    @property
    def version(self) -> Any:
        """Changes whenever the writer wrote (one small query)."""
        with contextlib.suppress(VizdebugError):
            self._read_meta()
        return (self.meta.get("created"), self.meta.get("ticks"), self.state)

    # -- reading -----------------------------------------------------------------------------
    def records(self, *, flush: bool = True) -> TrainingRecords:
        """Everything stored, as :class:`~vizdebug.records.TrainingRecords`
        (bounded like a live session's; only what was written since the last call is read).
        """
        key = self.version
        with self._lock:
            if self._records is None or key != self._cache_key:
                created = self.meta.get("created")
                if created != self._created:  # a new run replaced the file (a re-run cell)
                    if self._created is not None:  # (the first read keeps what was noted)
                        self.damage = {}
                    self._reader, self._created = RunReader(), created
                self._reader.enveloped = has_envelope(self.meta)
                self._records = self._load()
                self._cache_key = key
            return self._records

    def _load(self) -> TrainingRecords:
        meta = self.meta
        widths = {"activations": len(meta["module_paths"]), "grads": len(meta["param_paths"])}
        with self._reading("scalars") as conn:
            self._reader.update(conn, widths)
        reader = self._reader
        self.damage.update(reader.damage)
        blobs = self._blobs("events", "errors", "loader", "program")
        self.system = _SystemArray(reader.system)
        act_steps, acts = reader.samples["activations"]
        grad_steps, grads = reader.samples["grads"]
        modules, params = acts.shape[1], grads.shape[1]
        return TrainingRecords(
            scalars={name: (s, v) for name, (s, v, _) in reader.scalars().items()},
            module_paths=fill_names(meta["module_paths"], modules, "module"),
            module_classes=fill_names(meta["module_classes"], modules, "?"), act_steps=act_steps,
            activations=acts, param_paths=fill_names(meta["param_paths"], params, "parameter"),
            param_numel=fill_names(meta["param_numel"], params, 0), grad_steps=grad_steps,
            grads=grads,
            events=self._part(clean_events, blobs.get("events")),
            loader=self._part(lambda b: clean_loader(loader_record(b, self._query(
                "SELECT name, data FROM blobs WHERE name LIKE 'loader.%'"))), blobs) or LoaderRecord(),
            errors=[e for e in self._part(clean_errors, blobs.get("errors"))  # (the file's
                    if not e[1].startswith(STORE_DROPPED)],  # count says it: state_findings)
            every=meta["every"],
            program=self._part(clean_program, blobs.get("program")) or None,
        )

    def _part(self, read: Any, value: Any) -> Any:
        """``read(value)``, or an empty part when it is damaged (the damage is noted)."""
        try:
            return read(value)
        except DamagedRun as exc:
            self.damage.setdefault(exc.table, str(exc))
            return []

    def _blobs(self, *names: str) -> dict[str, Any]:
        marks = ",".join("?" * len(names))
        rows = self._query(f"SELECT name, data FROM blobs WHERE name IN ({marks})", names)
        out = {}
        for name, data in rows:  # these are JSON (an array here is damage)
            try:
                out[name] = from_json(data, name)
            except DamagedRun as exc:
                self.damage.setdefault(exc.table, str(exc))
        return out

    def findings(self) -> Findings:
        """The diagnosis of the stored run (the same rules as a live session), plus a note
        when the run was interrupted or its file is damaged."""
        return diagnose(self.records()) + self.state_findings()

    def state_findings(self) -> list[Finding]:
        """``run-interrupted`` when the writer stopped without closing, a
        ``collector-error`` for each damaged table of the file, and ``store-dropped`` when
        its writer dropped logged points."""
        out = [Finding(
            "collector-error", "warning",
            f"the run file {self.path.name} is damaged: {detail[:600]}; everything else in "
            "it is shown", where=f"{self.path} (table {table})",
            hint="The file was changed after vizdebug wrote it (a copy cut short, a disk "
                 "error, an edit). Nothing in it is executed; keep the original if you can.",
        ) for table, detail in sorted(self.damage.items())]
        dropped = dropped_message(self.meta)
        out += [store_dropped(dropped)] if dropped else []
        if self.state != "interrupted":
            return out
        return [*out, Finding(
            "run-interrupted", "warning",
            f"the run stopped writing without closing: {self.failed}; the last stored "
            f"step is {self.last_step}",
            where=str(self.path),
            evidence={"heartbeat": self.meta.get("heartbeat"), "pid": self.meta.get("pid")},
            hint="The process died (out of memory, killed, a crash in native code) or "
                 "hangs. Everything written before that is here; check the job's log and "
                 "memory (the system panel shows RSS).",
        )]

    @property
    def last_step(self) -> int:
        """The highest step with a logged scalar (-1 when nothing was logged)."""
        try:
            with self._reading("scalars") as conn:
                return last_step(conn, has_envelope(self.meta), self._traced())
        except VizdebugError:
            return -1

    def scalars(self, name: str | Sequence[str] | None = None, start: int | None = None,
                stop: int | None = None, points: int | None = None) -> pd.DataFrame:
        """Everything logged, long form (``step``, ``name``, ``value``, ``time``, ``rank``),
        across every rank of a multi-process job. The series vizdebug traced itself (the
        optimizer's ``lr/group<i>``, named in the ``traced`` setting) are in
        :meth:`records` only, as in a live session (or when asked for by ``name``).

        ``name`` (one or a list), ``start`` and ``stop`` (steps, both included) choose
        what is read; ``points`` bounds the rows per metric: the real points where there
        are at most that many, otherwise the lowest and highest point of each of about
        ``points // 2`` buckets and the first NaNs (real rows; a file written by this
        vizdebug reads only what that needs, however long the run).

        Examples
        --------
        >>> run.scalars("loss", start=900_000, stop=900_500, points=1000)  # doctest: +SKIP
        """
        import pandas as pd

        query = check_query(name, start, stop, points)
        frames = [run._frame(query) for run in [self, *self.rank_runs()]]
        df = pd.concat(frames, ignore_index=True)
        return df.sort_values(["step", "name", "rank"], kind="stable").reset_index(drop=True)

    def _frame(self, query: Query) -> pd.DataFrame:
        rank = int(self.meta.get("rank", 0))
        try:
            if query.names is query.start is query.stop is query.points is None:
                return rows_frame(self._query("SELECT step, name, value, time FROM scalars "
                                              "ORDER BY step, rowid", table="scalars"),
                                  rank, self._traced())
            return windows_frame(self.windows(query), rank)
        except (ValueError, TypeError, OverflowError) as exc:
            if isinstance(exc, VizdebugError):
                raise
            raise self._damaged("scalars", f"a column holds values of the wrong type "
                                           f"({exc})") from None

    def windows(self, query: Query) -> dict[str, Window]:
        """Each metric's :class:`~vizdebug.store.envelope.Window` for ``query`` (one
        snapshot of the file: see :mod:`~vizdebug.store.windows`)."""
        with self._reading("scalars") as conn:
            conn.execute("BEGIN")
            try:
                return query_windows(conn, query, enveloped=has_envelope(self.meta),
                                     hidden=() if query.names else self._traced())
            finally:
                conn.execute("COMMIT")

    def _traced(self) -> list[str]:
        """The names of the series vizdebug recorded itself (the ``traced`` setting)."""
        traced = self.meta.get("traced")
        return [n for n in traced[:64] if isinstance(n, str)] if isinstance(traced, list) else []

    def rank_runs(self) -> list[Run]:
        """The runs of the other ranks of this job (``<name>.rank<k><suffix>`` beside it)."""
        world = int(self.meta.get("world_size") or 1)
        if int(self.meta.get("rank", 0)) != 0 or world <= 1:
            return []
        out = []
        for k in range(1, min(world, MAX_WORLD)):
            other = rank_path(self.path, k)
            if other.exists() and is_run_file(other):
                out.append(Run(other))
        return out

    def captured_batches(self) -> list[tuple[np.ndarray, ...]]:
        """The input batches the loader tap stored (oldest first), as ``(x,)`` or ``(x, y)``
        tuples of arrays for ``vd.show_batch``."""
        rows = self._query("SELECT name, data FROM blobs WHERE name LIKE 'batch.%'")
        order: dict[str, int] = {}
        parts: dict[str, dict[int, np.ndarray]] = {}
        try:
            for name, data in rows:
                bits = str(name).split(".")
                if len(bits) == 2:
                    slot = from_json(data, name)
                    order[bits[1]] = int(slot.get("order", 0) if isinstance(slot, dict) else "?")
                elif len(bits) == 3:
                    parts.setdefault(bits[1], {})[int(bits[2])] = from_npy(data, name)
        except DamagedRun as exc:
            raise self._damaged(exc.table, str(exc).split(": ", 1)[-1]) from None
        except (ValueError, TypeError) as exc:
            raise self._damaged("blobs", f"a captured batch is not one ({exc})") from None
        slots = sorted((s for s in parts if s in order), key=order.__getitem__)
        return [tuple(parts[s][i] for i in sorted(parts[s])) for s in slots]

    # -- views (dashboard(), which follows a run still being written, and to_html() come
    # from Viewable) ---------------------------------------------------------------------
    def _repr_html_(self) -> str:
        return (f"<p class='vd-note'>{html.escape(repr(self))}</p>" + self.findings().to_html())

    def __repr__(self) -> str:
        return (f"<vizdebug Run {self.path.name}: {self.state}, last step {self.last_step}, "
                f"{len(self.meta['module_paths'])} modules, rank "
                f"{self.meta.get('rank', 0)} of {self.meta.get('world_size', 1)}>")
