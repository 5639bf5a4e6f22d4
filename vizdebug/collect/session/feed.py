"""What a Session hands its run store: one :class:`~vizdebug.records.RunDelta` per write.

The store writes only what it is handed; this object decides what that is. It owns the
cursors of what was already handed over (the last sampled activation and gradient step,
the number of system samples, the last snapshots of events, errors and loader statistics,
the captured batches already stored) and reads the collectors through the Session, which
it holds by a weak reference (a session nobody keeps is closed by its ``__del__``, and a
feed without its session hands over nothing more). The store calls it under its own
lock, from its thread or from ``close()``.
"""

from __future__ import annotations

import contextlib
import platform
import sys
import time
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._env import distributed_rank
from ..._version import __version__
from ...analysis.training.curves import is_lr_name
from ...records import AnomalyEvent, LoaderRecord, RunDelta
from ...reproducibility import environment, last_seed
from ..hooks.samples import stack_rows

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
        self._last_step = {"activations": -1, "grads": -1}
        self._system_count = 0
        self._events: list[AnomalyEvent] | None = None
        self._errors: list[tuple[str, str, int]] | None = None
        self._loader_batches = 0
        self._loader_at = -1e9
        self._batch_at = -1e9
        self._captured_ids: set[int] = set()
        self._lr_step = -1  # the last step of the optimizer's learning-rate trace handed over
        self._traced_names: set[str] = set()
        self._program_version = -1
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
        """What happened since the last delta (``final``: the session has closed)."""
        session = self._session()
        if session is None:
            return RunDelta()
        with contextlib.suppress(Exception):
            session.log_store.resolve()  # its points reach the store through the sink
        if not final:
            session.hooks.read_sealed()
        frames, probes = session._take_embeddings()
        lr_points = self._lr_points(session)
        return RunDelta(scalars=lr_points, meta={**self._traced(lr_points), **self._numel(session)},
                        samples=self._samples(session), system=self._system(session),
                        events=self._new_events(session), errors=self._new_errors(session),
                        loader=self._new_loader(session, final),
                        program=self._new_program(session, final),
                        batch=self._batch(session, final),
                        failed=session.failed, embeddings=frames, probes=probes)

    def _lr_points(self, session: Session) -> list:
        """The optimizer's ``lr/group<i>`` trace, as the live session shows it: only while
        the program logs no learning rate of its own."""
        if any(is_lr_name(name) for name in session.log_store.names()):
            return []
        chunk = session.hooks.optimizer_checks.lr_points(self._lr_step)
        if chunk is None or not chunk[0].size:
            return []
        self._lr_step = int(chunk[0][-1])
        return [chunk]

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

    def _samples(self, session: Session) -> list[tuple[str, np.ndarray, np.ndarray]]:
        hooks, out = session.hooks, []
        for kind, buffer, width in (("activations", hooks.activations, len(hooks.module_paths)),
                                    ("grads", hooks.grads, len(hooks.param_paths))):
            steps, rows = buffer.since(self._last_step[kind])
            if steps.size:
                out.append((kind, steps, stack_rows(rows, width)))
                self._last_step[kind] = int(steps[-1])
        return out

    def _system(self, session: Session) -> list[tuple[float, float, float, float]]:
        system = session.system
        count = system.count
        new = count - self._system_count
        if new <= 0:
            return []
        self._system_count = count
        return list(system.samples)[-new:]

    def _new_events(self, session: Session) -> list[AnomalyEvent] | None:
        events = list(session.policy.events)
        if events == self._events:
            return None
        self._events = events
        return events

    def _new_errors(self, session: Session) -> list[tuple[str, str, int]] | None:
        errors = session.collector_errors()
        if errors == self._errors:
            return None
        self._errors = errors
        return errors

    def _new_program(self, session: Session, final: bool) -> dict[str, Any] | None:
        """The program facts when they changed (and once more at the end: the optimizers'
        step counts move between the snapshots the tap marks)."""
        version = session.program.version
        if version == self._program_version and not final:
            return None
        self._program_version = version
        return session.program.facts().to_json()

    def _new_loader(self, session: Session, final: bool) -> LoaderRecord | None:
        batches, now = session.tap.batches, time.monotonic()
        if not batches or batches == self._loader_batches:
            return None
        if not final and now - self._loader_at < LOADER_INTERVAL:
            return None
        self._loader_batches, self._loader_at = batches, now
        return session.loader_record()

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
