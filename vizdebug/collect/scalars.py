"""The scalar log behind ``Session.log``: cheap appends, lazy resolution, bounded memory.

``log()`` only appends ``(step, name, value, time)`` to a deque (thread-safe, no lock on
the hot path). A one-element CPU tensor is read at once (``item()``: a memory read, no
device to wait for; nothing of it, or of its autograd graph, is kept). Tensors on a device
are detached, never read there: they are turned into numbers in batches (one
``torch.stack(...).tolist()`` per device) when the pending queue fills up or when
someone reads the log. Each metric keeps at most ``capacity`` points; when it is full it
is halved with min/max-preserving downsampling, so spikes and NaNs stay visible.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import VizdebugError, VizdebugTypeError, describe
from ..records import EVAL_PREFIXES, Series

_NUMBER_TYPES = (float, int, bool)
EPOCH_NAMES = ("epoch", "lr")


def is_eval_metric(name: str) -> bool:
    """True for metrics that belong to the last training step rather than a new one.

    Examples
    --------
    >>> is_eval_metric("val_loss"), is_eval_metric("loss")
    (True, False)
    """
    return name.startswith(EVAL_PREFIXES) or name in EPOCH_NAMES


def _check_value(name: str, value: Any) -> Any:
    """The value to store (a number, or a detached one-element tensor on a device), or a
    clear error."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise VizdebugError(
                f"log({name}=...) takes a number or a one-element tensor, got a tensor of "
                f"shape {tuple(value.shape)}; reduce it first, e.g. {name}=t.mean()"
            )
        if value.is_cpu:  # read now: see ScalarLog.log
            number = value.item()
            return number.real if type(number) is complex else number
        return value.detach() if value.requires_grad else value
    numpy_scalar = isinstance(value, np.generic) or (
        isinstance(value, np.ndarray) and value.size == 1)
    if numpy_scalar and value.dtype.kind in "biuf":
        return float(value)
    if isinstance(value, _NUMBER_TYPES):
        return value
    raise VizdebugTypeError(
        f"log({name}=...) takes a number, a numpy scalar or a one-element tensor, "
        f"got {describe(value)}: {value!r:.60}"
    )


def _torch_tensor_type() -> type | None:
    torch = sys.modules.get("torch")
    return torch.Tensor if torch is not None else None


def _resolve_values(values: tuple[Any, ...]) -> np.ndarray:
    """Numbers for a batch of values: tensors are read together, one transfer per device."""
    kinds = set(map(type, values))
    if kinds <= set(_NUMBER_TYPES):
        return np.asarray(values, dtype=float)
    if len(kinds) == 1 and len({v.dtype for v in values}) == 1:
        # The common case (only tensors, of one dtype, e.g. a loss): one stack, no loop.
        # Mixed shapes (0-d and 1-element) or devices fail the stack: grouped below.
        import torch

        try:
            return np.asarray(torch.stack(values).reshape(-1).double().cpu().tolist())
        except (RuntimeError, TypeError):
            pass
    out = np.full(len(values), math.nan)
    tensors: dict[Any, list[int]] = {}
    for i, v in enumerate(values):
        if isinstance(v, _NUMBER_TYPES):
            out[i] = float(v)
        else:
            tensors.setdefault((v.device, v.dtype), []).append(i)
    if tensors:
        import torch

        for idx in tensors.values():
            parts = [values[i] for i in idx]
            parts = [t if t.dim() == 0 else t.reshape(()) for t in parts]
            stacked = torch.stack(parts).double()
            for i, number in zip(idx, stacked.cpu().tolist()):
                out[i] = number
    return out


class ScalarLog:
    """Bounded, lazily resolved storage of logged scalars.

    Examples
    --------
    >>> log = ScalarLog()
    >>> log.log(loss=0.5); log.log(loss=0.25); log.log(val_loss=0.4)
    >>> log.series("val_loss")[0].tolist()
    [1]
    """

    # chunk: every pending entry holding a device tensor is a live, GC-tracked object
    # (CPU tensors are read at once); measured here, 1024 pending tensors cost ~3 us per
    # log() and 4096 cost ~9 us.
    def __init__(self, *, capacity: int = 20_000, chunk: int = 1024,
                 clock: Callable[[], float] = time.time) -> None:
        self.capacity = capacity
        self.chunk = chunk
        self.clock = clock
        self._pending: deque[tuple[int, str, Any, float]] = deque()
        self._series: dict[str, Series] = {}
        self._lock = threading.Lock()
        self._step = 0
        self._is_train: dict[str, bool] = {}
        self._tensor_type: type | None = None
        self.version = 0
        # called with (steps, names, values, times) of every resolved batch (a run store)
        self.sink: Callable[[np.ndarray, tuple[str, ...], np.ndarray, np.ndarray], None] | None = None

    @property
    def next_step(self) -> int:
        """The step the next training metric will get."""
        return self._step

    def log(self, step: int | None = None, **metrics: Any) -> None:
        """Record metrics at ``step`` (by default: the next training step): numbers,
        numpy scalars or one-element tensors (a device tensor is read later, in batches).

        ``step`` counts itself: each call with a training metric is the next step; calls
        with only ``val_*``/``test_*``/``epoch``/``lr`` metrics belong to the last one.
        """
        if step is None:
            step = self._step
            kinds = self._is_train
            for name in metrics:
                train = kinds.get(name)
                if train is None:
                    train = kinds[name] = not is_eval_metric(name)
                if train:
                    self._step = step + 1
                    break
            else:
                step = step - 1 if step > 0 else 0
        else:
            step = self._explicit_step(step)
        now = self.clock()
        append = self._pending.append
        tensor_type = self._tensor_type
        for name, value in metrics.items():
            kind = type(value)
            if kind is tensor_type and value.is_cpu:
                # The common case, inlined: a one-element loss tensor on the CPU is read now
                # (a memory read: there is no device to wait for), so neither the tensor nor
                # its autograd graph is kept. (item() does not warn about requires_grad.)
                try:
                    value = value.item()
                except RuntimeError:  # more than one element: the clear error
                    value = _check_value(name, value)
                if type(value) is complex:
                    value = value.real  # as the batched read of a complex tensor did
            elif kind is tensor_type and value.numel() == 1:
                # On a device: kept unread (read later in batches, never synchronising now),
                # detached (a new tensor object) only when it holds an autograd graph,
                # which must not stay alive.
                if value.requires_grad:
                    value = value.detach()
            elif kind not in _NUMBER_TYPES:
                value = _check_value(name, value)
                tensor_type = self._tensor_type = _torch_tensor_type()
            append((step, name, value, now))
        if len(self._pending) >= self.chunk:
            self.resolve()

    def _explicit_step(self, step: object) -> int:
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
            raise VizdebugTypeError(f"step must be an int or None, got {describe(step)}")
        self._step = max(self._step, int(step) + 1)
        return int(step)

    def resolve(self) -> None:
        """Turn pending values into numbers and move them into the bounded series."""
        with self._lock:
            n = len(self._pending)
            if n == 0:
                return
            items = [self._pending.popleft() for _ in range(n)]
            steps, names, values, times = zip(*items)
            numbers = _resolve_values(values)
            step_arr = np.asarray(steps, dtype=np.int64)
            time_arr = np.asarray(times, dtype=float)
            unique = dict.fromkeys(names)
            for name in unique:
                if len(unique) == 1:
                    sel: Any = slice(None)
                else:
                    sel = np.fromiter((x == name for x in names), dtype=bool, count=n)
                series = self._series.get(name)
                if series is None:
                    series = self._series[name] = Series(self.capacity)
                series.extend(step_arr[sel], numbers[sel], time_arr[sel])
            self.version += 1
            sink = self.sink
            if sink is not None:
                sink(step_arr, names, numbers, time_arr)

    def names(self) -> list[str]:
        """Metric names in the order they were first logged."""
        self.resolve()
        return list(self._series)

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(step, value, time)`` arrays of one metric (sorted by step)."""
        self.resolve()
        if name not in self._series:
            known = ", ".join(self._series) or "nothing yet"
            raise VizdebugError(f"no metric named {name!r} was logged; logged: {known}")
        step, value, when = self._series[name].arrays()
        order = np.argsort(step, kind="stable")
        return step[order], value[order], when[order]

    def all_series(self) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every metric's ``(step, value, time)``."""
        return {name: self.series(name) for name in self.names()}

    def stored_points(self) -> int:
        """How many points are held in memory right now (pending included)."""
        return len(self._pending) + sum(s.size for s in self._series.values())
