"""What each rank of a ``torch.distributed`` job records for the merged view of the job:
when its steps wait for the others, and a fingerprint of its replica.

Only a session of a job with more than one process and a run store has this tap. Between
two of its steps nothing runs but one comparison in the clock's ``after_optimizer_step``
listener; at a timed or fingerprinted step it arms two hooks for that one step, removed
when the step ends:

- **timing** (every :data:`TIME_EVERY`-th step): five clock marks, the previous step's end,
  the outermost module's forward start (a DDP wrapper's), the first forward of the watched
  module's own (after ``DistributedDataParallel`` broadcast its buffers), the start of the backward pass (a
  hook on the output's gradient) and the step's end. A rank that waits for the others waits
  in DDP's buffer broadcast (between the two forward starts) or in the gradient all-reduce
  (between the backward start and the step's end); the straggler is the rank that waits
  least (:mod:`vizdebug.analysis.ranks`).
- **fingerprint** (steps 0, 1, 2, 4, ... 64, then every :data:`FINGERPRINT_EVERY`-th): the
  norm and the sum (float64) of every parameter and buffer, read when the wrapped module's
  forward begins, where DDP keeps its replicas identical (the parameters were all-reduced
  and stepped alike, the buffers just broadcast from rank 0). On a GPU this is one copy to
  the host per fingerprinted step.

Every rank follows the same schedule (it counts steps, not seconds), so the ranks' rows
meet at the same steps. Rows go to the store in chunks (``samples`` of kinds
``rank_times`` and ``replicas``; the names of the fingerprinted tensors in the
``replica_paths`` setting). Errors are reported as collector errors, never raised.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from ...records import RunDelta

TIME_EVERY = 4            # every n-th step is timed (doubling past MAX_TIMED rows)
MAX_TIMED = 4096
FINGERPRINT_EVERY = 100   # after the early steps (doubling past MAX_FINGERPRINTS rows)
MAX_FINGERPRINTS = 512
MAX_TENSORS = 4096        # parameters and buffers fingerprinted
HAND_ROWS = 64            # rows kept before they go to the store (or HAND_SECONDS)
HAND_SECONDS = 2.0
KINDS = ("rank_times", "replicas")


def fingerprint_step(step: int, every: int = FINGERPRINT_EVERY) -> bool:
    """Whether ``step`` is fingerprinted: the early powers of two, then every ``every``-th.

    >>> [s for s in range(300) if fingerprint_step(s)]
    [0, 1, 2, 4, 8, 16, 32, 64, 100, 200]
    """
    return step % every == 0 or (step <= 64 and step & (step - 1) == 0)


def _first_grad_tensor(output: Any, depth: int = 0) -> Any:
    """The first floating tensor that requires grad in a forward's output (a tensor, a
    tuple, a list or a dict such as a Hugging Face ``ModelOutput``), else None."""
    import torch

    if isinstance(output, torch.Tensor):
        return output if output.requires_grad else None
    if depth > 3:
        return None
    items = output.values() if isinstance(output, dict) else (
        output if isinstance(output, (tuple, list)) else ())
    for item in items:
        found = _first_grad_tensor(item, depth + 1)
        if found is not None:
            return found
    return None


class RankTap:
    """Times some steps and fingerprints the replica at others (see the module text).

    ``hand(delta)`` receives the rows (the run store's ``hand``); ``on_error(where, exc)``
    what went wrong.
    """

    def __init__(self, model: Any, clock: Any, hand: Callable[[RunDelta], None],
                 on_error: Callable[[str, BaseException], None]) -> None:
        import torch

        inner = getattr(model, "module", None)  # DistributedDataParallel's wrapped module
        self.inner_ref = weakref.ref(inner if isinstance(inner, torch.nn.Module) else model)
        self._inner_ids: set[int] = set()
        self._outer: Any = None  # the outermost module called around the watched one
        self._stack: list[tuple[Any, float]] = []  # modules called before it, still running
        self.clock = clock
        self.hand = hand
        self.on_error = on_error
        self.time_every, self.fingerprint_every = TIME_EVERY, FINGERPRINT_EVERY
        self.timed = self.fingerprinted = 0
        self.columns: dict[str, int] = {}  # tensor name -> column of the replica rows
        self._handed_columns = 0
        self._times: list[tuple[int, list[float]]] = []
        self._prints: list[tuple[int, np.ndarray]] = []
        self._handed_at = time.monotonic()
        self._handles: list[Any] = []
        self._marks: list[float] | None = None
        self._print_due = False
        self._end = math.nan  # the clock when the last step ended
        self._step = 0  # the step that runs now
        self.removed = False
        clock.after_optimizer_step.append(_weak_call(self._step_ended))
        self._arm(0)

    # -- the schedule -------------------------------------------------------------------------
    def _step_ended(self) -> None:
        now = time.perf_counter()
        try:
            if self._handles:
                self._close_step(now)
            self._end = now
            self._step = step = self.clock.step  # (the clock counts the step that begins)
            if step % self.time_every == 0 or fingerprint_step(step, self.fingerprint_every):
                self._arm(step)
            if len(self._times) + len(self._prints) >= HAND_ROWS or (
                    self._times or self._prints) and time.monotonic() - self._handed_at > HAND_SECONDS:
                self.flush()
        except Exception as exc:  # never into the user's optimizer.step()
            self.on_error("the rank tap", exc)

    def _arm(self, step: int) -> None:
        from torch.nn.modules import module as torch_module

        inner = self.inner_ref()
        if inner is None or self.removed:
            return
        self._marks = [self._end, *[math.nan] * 4] if step % self.time_every == 0 else None
        self._print_due = fingerprint_step(step, self.fingerprint_every)
        self._inner_ids = {id(m) for m in inner.modules()}
        self._outer, self._stack = None, []
        self._handles = [torch_module.register_module_forward_pre_hook(self._pre),
                         torch_module.register_module_forward_hook(self._post)]

    def _close_step(self, now: float) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
        marks = self._marks
        if marks is not None and math.isfinite(marks[1]):
            marks[4] = now
            if marks[3] == -1.0:  # no backward pass reached the output
                marks[3] = math.nan
            self._times.append((self._step, marks))
            self.timed += 1
            if self.timed % MAX_TIMED == 0:
                self.time_every *= 2  # (every rank doubles at the same step)
        self._marks = None

    # -- the hooks of an armed step ----------------------------------------------------------------
    def _pre(self, module: Any, args: Any) -> None:
        """Any module's forward in the armed step, until the first of the watched module's
        own: the outermost call around it (a DDP wrapper's, before its buffer broadcast)
        starts the forward pass."""
        if self._outer is not None or not module.training:
            return
        try:
            now = time.perf_counter()
            if id(module) not in self._inner_ids:
                self._stack.append((module, now))
                return
            self._outer, began = self._stack[0] if self._stack else (module, now)
            marks = self._marks
            if self._print_due:
                self._print_due = False
                self._fingerprint(self.inner_ref())
            if marks is not None:  # (after the fingerprint: its time is not the step's)
                marks[1], marks[2] = began, time.perf_counter()
        except Exception as exc:
            self.on_error("the rank tap", exc)

    def _post(self, module: Any, args: Any, output: Any) -> None:
        if self._outer is None:  # a module called before the watched one (and done)
            if self._stack and self._stack[-1][0] is module:
                self._stack.pop()
            return
        marks = self._marks
        if module is not self._outer or marks is None or not math.isnan(marks[3]):
            return
        try:
            tensor = _first_grad_tensor(output)
            if tensor is not None:
                marks[3] = -1.0  # (armed: later forwards of the step leave it)
                tensor.register_hook(self._backward_started)
        except Exception as exc:
            self.on_error("the rank tap", exc)

    def _backward_started(self, grad: Any) -> None:
        if self._marks is not None and self._marks[3] == -1.0:
            self._marks[3] = time.perf_counter()

    def _fingerprint(self, module: Any) -> None:
        """Norm and sum of every parameter and buffer, in one copy to the host."""
        import torch

        named = [*module.named_parameters(), *module.named_buffers()][:MAX_TENSORS]
        values = []
        for name, tensor in named:
            self.columns.setdefault(name, len(self.columns))
            t = tensor.detach()
            if t.is_complex() or t.is_floating_point():
                values.append(torch.stack([torch.linalg.vector_norm(t, dtype=torch.float64)
                                           if t.is_floating_point() else t.abs().double().norm(),
                                           t.sum().real.double() if t.is_complex()
                                           else t.sum(dtype=torch.float64)]))
            else:
                values.append(torch.stack([t.double().norm(), t.sum(dtype=torch.float64)]))
        row = np.full((len(self.columns), 2), np.nan)
        if values:
            got = torch.stack(values).cpu().numpy()
            row[[self.columns[name] for name, _ in named]] = got
        self._prints.append((self._step, row))
        self.fingerprinted += 1
        if self.fingerprinted % MAX_FINGERPRINTS == 0:
            self.fingerprint_every *= 2

    # -- the store ------------------------------------------------------------------------------
    def flush(self) -> None:
        """Hand the rows kept so far to the store."""
        samples = []
        if self._times:
            steps = np.array([s for s, _ in self._times], np.int64)
            samples.append(("rank_times", steps, np.array([m for _, m in self._times])[:, None, :]))
        if self._prints:
            width = len(self.columns)
            rows = np.full((len(self._prints), width, 2), np.nan)
            for i, (_, row) in enumerate(self._prints):
                rows[i, : row.shape[0]] = row
            samples.append(("replicas", np.array([s for s, _ in self._prints], np.int64), rows))
        meta = {}
        if len(self.columns) != self._handed_columns:
            meta = {"replica_paths": list(self.columns)}
            self._handed_columns = len(self.columns)
        self._times, self._prints, self._handed_at = [], [], time.monotonic()
        if samples or meta:
            self.hand(RunDelta(samples=samples, meta=meta))

    def remove(self) -> None:
        """Stop (harmless twice): remove the hooks of an armed step, hand what is left."""
        if self.removed:
            return
        self.removed = True
        for handle in self._handles:
            handle.remove()
        self._handles = []
        try:
            self.flush()
        except Exception as exc:
            self.on_error("the rank tap", exc)


def rank_tap(model: Any, clock: Any, store: Any, on_error: Callable[[str, BaseException], None],
             world_size: int) -> RankTap | None:
    """The tap of a session in a job of ``world_size > 1`` processes with a store, else None."""
    if world_size <= 1 or store is None:
        return None
    return RankTap(model, clock, store.hand, on_error)


def _weak_call(method: Any) -> Callable[[], None]:
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()
    return call
