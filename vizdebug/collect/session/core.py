"""``watch(model)``: the Session that ties hooks, loader tap, scalar log and sampler together.

A Session is the one object a notebook keeps: ``log()`` during training, ``dashboard()``
to see it live, ``findings()`` for the diagnosis, ``scalars()`` for the numbers, and
``to_html()`` so ``vd.report(session, path)`` works. Watching the same model again (a
re-run cell) closes the previous session first, so hooks never pile up.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..._env import distributed_rank
from ..._viewable import Viewable
from ...analysis.training.diagnose import diagnose
from ...findings import Finding, Findings
from ...records import LoaderRecord, TrainingRecords
from ...store.writer import RunWriter, store_path
from ..checks.anomaly import AnomalyPolicy
from ..checks.mode_watch import ModeWatch
from ..hooks.engine import ModelHooks
from ..taps.embeddings import EmbeddingTracking
from ..taps.hyper import attach as attach_hyper
from ..taps.loader import LoaderTap, tap_iterable
from ..taps.program import ProgramTap
from ..taps.ranks import rank_tap
from ..taps.scalars import ScalarLog
from ..taps.system import SystemSampler
from .feed import StoreFeed
from .folds import session_records
from .lifecycle import Lifecycle, kernel_shell

if TYPE_CHECKING:
    import pandas as pd
    import torch


TAP_EVERY = 10  # batch statistics of every n-th batch (all batches are timed)


class Session(Viewable, EmbeddingTracking):
    """A watched training run. Build one with :func:`watch`.

    Examples
    --------
    >>> import torch, vizdebug as vd
    >>> model = torch.nn.Linear(3, 2)
    >>> with vd.watch(model, every=1) as session:
    ...     loss = model(torch.randn(4, 3)).pow(2).mean()
    ...     loss.backward()
    ...     session.log(loss=loss)
    >>> session.scalars()["name"].tolist()
    ['loss']
    """

    title = "vizdebug training session"

    def __init__(self, model: torch.nn.Module, *, every: int | str, policy: AnomalyPolicy,
                 loader: Any = None, store: Any = None, system_interval: float = 1.0,
                 store_interval: float | None = None,
                 config: dict[str, Any] | None = None) -> None:
        self.every = every
        self.config: dict[str, Any] = dict(config or {})  # the run's settings (watch(config=))
        self.policy = policy
        self.rank = distributed_rank()[0]
        store_file = store_path(store, self.rank) if store is not None else None
        self.log_store = ScalarLog()
        self._errors: dict[tuple[str, str], int] = {}
        self._error_lock = threading.Lock()
        # Statistics of every 10th batch at most (each batch is timed); with every=1 each
        # batch is also checked for NaN/inf (one sum) and described when it has any.
        self.tap = LoaderTap(every=max(every, TAP_EVERY) if isinstance(every, int) else TAP_EVERY,
                             check_all=every == 1, on_error=self._on_error)
        if loader is not None:  # first: a refused loader must leave the model untouched
            self.tap.attach(loader)
        self.hooks = ModelHooks(model, every=every, policy=policy, on_error=self._on_error)
        self.tap.progress = _step_of(self.hooks.clock)  # (a loader two sessions watch)
        self.modes = ModeWatch(model, policy, self.tap, self.hooks, self._on_error)  # eval passes
        self.program = _program_tap(model, self.hooks, loader)  # the program's shape
        self.hyper = attach_hyper(self)  # lr, momentum, weight decay per group
        self.param_numel = self.hooks.param_hooks.numel  # (a lazy module's: after forward)
        self.system = SystemSampler(system_interval).start()
        self.closed = False
        self.failed: str | None = None
        self._dashboards: list[Any] = []  # live views (with a widget) to push data to
        # notebook: "stopped"/"idle" at the cell's end; the first anomaly shown as a finding
        self.lifecycle = Lifecycle(self, _progress, kernel_shell())
        if self.lifecycle.active:
            policy.notify = self.lifecycle.anomaly_notice
        # Until a live view is shown, log() is the scalar log's own method (no wrapper
        # call, no keyword re-packing: about 0.5 us of the 1.5 us a call costs).
        self.log = self.log_store.log  # type: ignore[method-assign]
        self._views_due = 0.0
        self.last_log_at = -1e9  # time.monotonic() of the last log() while a view is live
        self.store: RunWriter | None = None
        if store_file is not None:
            feed = StoreFeed(self)  # what the store is handed at each write
            try:
                self.store = RunWriter(store_file, feed.start(), take_delta=feed.take,
                                       on_error=feed.report, interval=store_interval)
            except BaseException:
                self._stop_collectors()
                raise
            self.log_store.sink = self.store.sink
            self.log_store.after_resolve = self.store.help_if_late
            self.store.start()
        # a rank of a multi-process job: waits and replica fingerprints at some steps
        self.rank_tap = rank_tap(model, self.hooks.clock, self.store, self._on_error,
                                 distributed_rank()[1])

    # -- during training --------------------------------------------------------------------
    def log(self, /, step: int | None = None, *values: Any, **metrics: Any) -> None:
        """Record scalar metrics, by name: numbers or one-element tensors (read later, in
        batches). A value passed by position is refused with the named form that works.

        ``step`` counts itself: each call with a training metric is the next step; calls
        with only ``val_*``/``test_*``/``epoch``/``lr`` metrics belong to the last one.

        Examples
        --------
        >>> session.log(loss=loss)                  # doctest: +SKIP
        >>> session.log(val_loss=0.3, val_acc=0.91)  # doctest: +SKIP
        """
        self.log_store.log(step, *values, **metrics)
        if "epoch" in metrics and "_trackers" in self.__dict__:
            self._on_epoch_end()  # an epoch ended (tracked embeddings)
        if self._dashboards:
            self.last_log_at = now = time.monotonic()
            if now >= self._views_due:
                self._refresh_views()

    def begin_step(self) -> None:
        """A training step begins (call before its first forward): until the optimizer
        first steps, these calls count the steps instead of forward passes, for a step
        that calls ``forward`` several times (gradient accumulation) or never (a Lightning
        ``training_step`` calling submodules). The framework callbacks call it."""
        self.hooks.clock.begin()

    def add_view(self, view: Any) -> None:
        """Keep a live view and refresh it from ``log()`` (throttled) from now on."""
        self._dashboards.append(view)
        self.__dict__.pop("log", None)  # log() now also refreshes the views

    def tap_loader(self, iterable: Iterable) -> Iterator:
        """Iterate ``iterable`` with timing and batch statistics (for non-DataLoader loops).

        Examples
        --------
        >>> for x, y in session.tap_loader(my_batches):  # doctest: +SKIP
        ...     ...
        """
        return tap_iterable(iterable, self.tap)

    def _on_error(self, where: str, exc: BaseException) -> None:
        key = (where, f"{type(exc).__name__}: {exc}"[:300])
        with self._error_lock:
            if key in self._errors or len(self._errors) < 20:
                self._errors[key] = self._errors.get(key, 0) + 1

    # -- reading ------------------------------------------------------------------------------
    @property
    def version(self) -> tuple[int, ...]:
        """Changes whenever something new was collected (for views that poll)."""
        return (self.log_store.version, len(self.log_store._pending), self.hooks.step,
                self.tap.batches, self.system.count, self.state)

    def records(self, *, flush: bool = True) -> TrainingRecords:
        """Everything collected, as :class:`~vizdebug.records.TrainingRecords`.

        ``flush=True`` also reads the step in progress (call it between steps); views that
        poll from another thread pass ``flush=False``. A fold of the collectors' records
        from the start (:mod:`vizdebug.collect.session.folds`).
        """
        return session_records(self, flush=flush)

    def collector_errors(self) -> list[tuple[str, str, int]]:
        """What went wrong inside the collectors: ``(where, message, count)``."""
        return [(w, m, c) for (w, m), c in list(self._errors.items())]

    def loader_record(self) -> LoaderRecord:
        """The loader tap's timing and batch statistics (empty before the first batch)."""
        return self.tap.loader_record()

    @property
    def state(self) -> str:
        """``running``, ``closed`` or ``failed`` (an exception left ``with watch(...)``);
        in a notebook also ``stopped (cell finished)`` or ``idle since HH:MM``."""
        if self.failed:
            return "failed"
        return "closed" if self.closed else (self.lifecycle.state() or "running")

    def state_findings(self) -> list[Finding]:
        """Findings about the run's state itself: none for a live session (a stored run
        reports an interruption)."""
        return []

    def findings(self) -> Findings:
        """The diagnosis of everything collected so far.

        Examples
        --------
        >>> session.findings()   # doctest: +SKIP
        """
        return diagnose(self.records())

    def scalars(self) -> pd.DataFrame:
        """Everything logged, long form: ``step``, ``name``, ``value``, ``time``, ``rank``.

        Examples
        --------
        >>> session.scalars().pivot_table(index="step", columns="name", values="value")  # doctest: +SKIP
        """
        import pandas as pd

        columns = self.log_store.long_form()  # one frame, not one per metric
        if not len(columns["step"]):
            return pd.DataFrame({"step": pd.Series(dtype="int64"), "name": pd.Series(dtype=str),
                                 "value": pd.Series(dtype=float),
                                 "time": pd.Series(dtype=float), "rank": pd.Series(dtype="int64")})
        df = pd.DataFrame(columns)
        df["rank"] = self.rank
        return df.sort_values(["step", "name"], kind="stable").reset_index(drop=True)

    def captured_batches(self) -> list[Any]:
        """The last few input batches the loader tap kept (for ``vd.show_batch``)."""
        return list(self.tap.captured)

    # -- views (dashboard() and to_html() come from Viewable) ------------------------------
    def _live_by_default(self) -> bool:
        return True  # a session's dashboard is a widget even after close (its final state)

    def _repr_html_(self) -> str:
        return self.findings().to_html()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "watching"
        return (f"<vizdebug Session {state}: {len(self.hooks.module_paths)} modules, "
                f"step {self.hooks.steps}, every={self.every}>")

    # -- lifetime -----------------------------------------------------------------------------
    def close(self) -> None:
        """Read what is left, remove every hook, stop the sampler (harmless twice)."""
        if self.closed:
            return
        self.hooks.flush()
        self._final_embeddings()
        self._stop_collectors()
        self.closed = True
        self.lifecycle.close()
        if self.store is not None:
            self.store.close("failed" if self.failed else "closed")
        self._notify_views()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Detach the collectors for a block of code between training steps (a profiling
        run, a side experiment on the same model): no hook runs, loader batches are not
        recorded, and ``"auto"`` leaves the time out of its step timing.

        Examples
        --------
        >>> with session.paused():                # doctest: +SKIP
        ...     profile_one_step(model)
        """
        if self.closed:
            yield
            return
        self.hooks.pause()
        self.tap.paused = self.program.axes.paused = True
        try:
            yield
        finally:
            self.tap.paused = self.program.axes.paused = False
            if not self.closed:
                self.hooks.resume()

    def _stop_collectors(self) -> None:
        if getattr(self, "rank_tap", None) is not None:
            self.rank_tap.remove()  # (its last rows go to the store before it closes)
        self.hooks.remove()
        self.program.remove()
        self.tap.detach()
        self.system.stop()

    def _refresh_views(self) -> None:
        """Refresh live dashboards from the training loop's own thread (throttled)."""
        due = []
        for view in list(self._dashboards):
            try:
                view.refresh()
                due.append(view.due())
            except Exception as exc:  # a view must never break training
                self._on_error("the dashboard refresh", exc)
        self._views_due = min(due) if due else time.monotonic() + 1.0

    def _notify_views(self) -> None:
        for view in self._dashboards:
            view.refresh(force=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc is not None:
            self.failed = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        self.close()

    def __del__(self) -> None:
        try:
            if not self.closed:
                self._stop_collectors()
                if self.store is not None:
                    self.store.close("ended")
        except Exception:
            pass


def _program_tap(model: torch.nn.Module, hooks: ModelHooks, loader: Any) -> ProgramTap:
    """The program's shape, fed by the hooks' sampled inputs and every optimizer's steps."""
    program = ProgramTap(model)
    clock = hooks.clock
    program.step = lambda: clock.step
    program.loss_functions = lambda: list(hooks.losses.functions)
    program.soft_targets = lambda: hooks.losses.soft_targets
    hooks.on_input = program.observe_input
    hooks.known_tensors = program.known_ids
    program.axes.on_error = hooks.on_error
    clock.any_step = program.optimizer_stepped
    if loader is not None:
        program.observe_loader(loader)
        hooks.losses.loader_batch = program.loader_batch_size  # (a seq-first input's batch)
    return program


def _step_of(clock: Any) -> Any:
    """A reader of ``clock``'s step (what moves when the watched model trains)."""
    return lambda: clock.step


def _progress(session: Session) -> tuple[int, int]:
    """What moves at every training step: the logged step and the optimizer's count."""
    return (session.log_store.next_step, session.hooks.steps)
