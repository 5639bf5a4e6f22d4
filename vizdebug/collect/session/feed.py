"""What a Session hands its run store: one :class:`~vizdebug.records.RunDelta` per write.

The store writes only what it is handed; this object decides what that is: a fold of the
session's collectors (:func:`~.folds.collectors`, the collector contract of
:mod:`vizdebug.collect.contract`) from the cursors it keeps, plus what it hands over on its
own schedule (the loader's whole record every few seconds, the newest captured batch, the
tracked embeddings, the parameters' sizes when they changed). It reads the collectors
through the Session, which it holds by a weak reference (a session nobody keeps is closed
by its ``__del__``, and a feed without its session hands over nothing more). The store
calls it under its own lock, from its thread or from ``close()``.
"""

from __future__ import annotations

import platform
import sys
import time
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._env import distributed_rank
from ..._version import __version__
from ...records import RunDelta
from ...reproducibility import environment, last_seed
from ..contract import Collector, fold
from .folds import collectors

if TYPE_CHECKING:
    from .core import Session

BATCH_INTERVAL = 30.0      # seconds between two captured batches handed over
LOADER_INTERVAL = 2.0      # seconds between two loader snapshots (a whole record each time;
#                            the store writes every 0.5 s for the logged points' sake)
MAX_BATCH_BYTES = 8 << 20  # a captured batch larger than this is cut to its first items


def start_meta(session: Session) -> dict[str, Any]:
    """The settings of a run, written once when its store opens: versions, the process,
    what is watched (fixed when the hooks are attached)."""
    torch = sys.modules.get("torch")
    hooks = session.hooks
    model = hooks.model_ref()
    return {
        "vizdebug_version": __version__, "host": platform.node(), "argv": list(sys.argv),
        "python": platform.python_version(), "torch": getattr(torch, "__version__", None),
        "numpy": np.__version__, "rank": session.rank, "world_size": distributed_rank()[1],
        "model_class": type(model).__name__ if model is not None else None,
        "every": session.every, "param_numel": list(session.param_numel),
        "module_paths": list(hooks.module_paths),
        "module_classes": list(hooks.module_classes),
        "param_paths": list(hooks.param_paths),
        # for reproducing the run: the last vd.set_seed() of this process, the versions
        "seed": last_seed(), "environment": environment(),
        "config": dict(session.config),  # what vd.compare_runs groups and tabulates by
    }


class StoreFeed:
    """Builds the deltas of one session's run store (see the module docstring)."""

    def __init__(self, session: Session) -> None:
        self._session = weakref.ref(session)
        # each collector's cursor (the collector contract); the scalar log's starts past
        # its beginning: its points reach the store through the sink as they resolve
        self._cursors: dict[str, Any] = {"scalars": 0}
        self._loader_at = -1e9
        self._batch_at = -1e9
        self._captured_ids: set[int] = set()
        self._traced_names: set[str] = set()
        self._param_numel: list[int] | None = None  # as last handed over

    def start(self) -> RunDelta:
        """The first delta: the run's settings."""
        session = self._session()
        meta = start_meta(session) if session is not None else {}
        self._param_numel = meta.get("param_numel")
        return RunDelta(meta=meta)

    def report(self, where: str, exc: BaseException) -> None:
        """A failed write, as a collector error of the session."""
        session = self._session()
        if session is not None:
            session._on_error(where, exc)

    def take(self, final: bool) -> RunDelta:
        """What happened since the last delta (``final``: the session has closed): the
        fold of the session's collectors from the cursors of the last one."""
        session = self._session()
        if session is None:
            return RunDelta()
        if not final:
            session.hooks.read_sealed()
        delta = fold(self._due(session, final), self._cursors)
        frames, probes = session._take_embeddings()
        return replace(delta, meta={**self._traced(delta.scalars), **self._numel(session)},
                       batch=self._batch(session, final), failed=session.failed,
                       embeddings=frames, probes=probes)

    def _due(self, session: Session, final: bool) -> list[tuple[str, Collector]]:
        """The collectors read at this write: the loader's whole record every
        :data:`LOADER_INTERVAL` seconds (and at the end), the program facts once more at
        the end (the optimizers' step counts move between the snapshots the tap marks)."""
        now = time.monotonic()
        loader_due = final or now - self._loader_at >= LOADER_INTERVAL
        if final:
            self._cursors.pop("program", None)
        parts = [c for c in collectors(session) if c[0] != "loader" or loader_due]
        if loader_due and session.tap.batches != self._cursors.get("loader"):
            self._loader_at = now
        return [*parts, ("system", session.system)]

    def _numel(self, session: Session) -> dict[str, Any]:
        """The parameters' sizes again when they changed: a lazy module's exist from its
        first forward, after the run's start."""
        numel = list(session.param_numel)
        if numel == self._param_numel:
            return {}
        self._param_numel = numel
        return {"param_numel": numel}

    def _traced(self, chunks: list) -> dict[str, Any]:
        """The ``traced`` setting (names of the series vizdebug recorded itself, not the
        program: a stored run's ``scalars()`` leaves them out, as a live session's does)
        when new names came."""
        names = {name for chunk in chunks for name in chunk[1]} - self._traced_names
        if not names:
            return {}
        self._traced_names |= names
        return {"traced": sorted(self._traced_names)}

    def _batch(self, session: Session, final: bool) -> list[np.ndarray]:
        """The newest captured batch as arrays, every :data:`BATCH_INTERVAL` seconds (and
        at the end) when it is one not handed over yet."""
        now = time.monotonic()
        if not final and now - self._batch_at < BATCH_INTERVAL:
            return []
        self._batch_at = now
        captured = list(session.tap.captured)
        if not captured or id(captured[-1]) in self._captured_ids:
            return []
        from ...data.batch import batch_arrays  # the one batch rule (input, then target)

        arrays = batch_arrays(captured[-1], MAX_BATCH_BYTES)
        if arrays:
            self._captured_ids = {id(b) for b in captured}
        return arrays
