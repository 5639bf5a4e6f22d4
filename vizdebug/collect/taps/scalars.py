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

import contextlib
import math
import numbers
import operator
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import VizdebugError, VizdebugTypeError, describe, short_repr
from ...records import EVAL_PREFIXES, RunDelta, Series
from ...store.names import storable_name

_NUMBER_TYPES = (float, int, bool)
EPOCH_NAMES = ("epoch", "lr")
MAX_STEP = 1 << 62  # a step and the one after it fit in int64
FLOAT_INT = 1 << 1000  # ints below this become floats (1e308 is about 2**1023)


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
    clear error: whatever is accepted here can always be turned into a float later."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _check_tensor(name, value)
    if isinstance(value, (np.generic, np.ndarray)):
        return _check_numpy(name, value)
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Real):  # int, Fraction, float subclasses
        try:
            return float(value)
        except (OverflowError, ValueError, TypeError):
            raise VizdebugError(
                f"log({name}=...) got {short_repr(value)}, which does not fit in a float "
                "(at most ~1.8e308); log a smaller number, or float('inf') on purpose"
            ) from None
    raise VizdebugTypeError(
        f"log({name}=...) takes a number, a numpy scalar or a one-element tensor, "
        f"got {describe(value)}: {short_repr(value)}"
    )


def _check_tensor(name: str, value: Any) -> Any:
    if value.numel() != 1:
        raise VizdebugError(
            f"log({name}=...) takes a number or a one-element tensor, got a tensor of "
            f"shape {tuple(value.shape)}; reduce it first, e.g. {name}=t.mean()"
        )
    if value.is_complex():  # refused like a Python complex: which part to keep is the user's
        raise VizdebugTypeError(
            f"log({name}=...) takes a real number, got a complex tensor ({describe(value)}); "
            f"log the part you mean, e.g. {name}=t.abs() or {name}=t.real"
        )
    if value.device.type == "meta":
        raise VizdebugTypeError(
            f"log({name}=...) got a meta tensor ({describe(value)}), which holds no value; "
            "log a tensor with data (on the CPU or a device)"
        )
    if value.is_cpu:  # read now: see ScalarLog.log
        try:
            number = value.item()
        except RuntimeError as exc:
            raise VizdebugTypeError(
                f"log({name}=...) cannot read a value from {describe(value)}: {exc}"[:400]
            ) from None
        return number
    return value.detach() if value.requires_grad else value


def _check_numpy(name: str, value: Any) -> float:
    if value.size == 1 and value.dtype.kind in "biuf":
        with np.errstate(over="ignore"):
            # a (1,) array too: np.array([1.0]); asarray: an np.matrix stays 2-d when reshaped
            return float(np.asarray(value).reshape(-1)[0])
    raise VizdebugTypeError(
        f"log({name}=...) takes a number, a numpy scalar or a one-element tensor, got "
        f"{describe(value)}" + ("; reduce it first, e.g. arr.mean()" if value.size > 1 else "")
    )


def _positional_error(step: object, values: tuple[Any, ...]) -> VizdebugTypeError:
    """What ``log()`` says to a value passed by position: the named form that works
    (``log(loss)``, ``log("loss", 1.0)``, ``log({"loss": 1.0})``)."""
    if isinstance(step, str) and len(values) == 1:
        named = (f"session.log({step}={short_repr(values[0])})" if step.isidentifier()
                 else f"session.log(**{{{step!r}: {short_repr(values[0])}}})")
        return VizdebugTypeError(f"log takes named values: {named}, not log({step!r}, value)")
    if isinstance(step, dict) and not values:
        return VizdebugTypeError("log takes named values: unpack the dict, "
                                 f"session.log(**{short_repr(step)})")
    got = ", ".join(f"{describe(v)}: {short_repr(v)}" for v in (step, *values))
    return VizdebugTypeError(
        "log takes named values, e.g. session.log(loss=loss); its one positional argument "
        f"is the step, and step must be an int or None, got {got}")


def _torch_tensor_type() -> type | None:
    torch = sys.modules.get("torch")
    return torch.Tensor if torch is not None else None


def _resolve_values(values: tuple[Any, ...]) -> np.ndarray:
    """Numbers for a batch of values: tensors are read together, one transfer per device.
    Never raises: a value that cannot be read any more (its device gone) becomes NaN and
    the others are kept."""
    try:
        return _resolve_together(values)
    except Exception:
        return np.asarray([_one_number(v) for v in values], dtype=float)


def _one_number(value: Any) -> float:
    try:
        if isinstance(value, _NUMBER_TYPES):
            return float(value)
        return float(value.detach().reshape(-1)[0].double().cpu().item())
    except Exception:
        return math.nan


def _resolve_together(values: tuple[Any, ...]) -> np.ndarray:
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


def _joined(parts: list[tuple[str, tuple[np.ndarray, ...]]], k: int, dtype: Any) -> np.ndarray:
    arrays = [arrays[k] for _, arrays in parts]
    return np.concatenate(arrays) if arrays else np.empty(0, dtype=dtype)


def _groups(names: tuple[str, ...]) -> dict[str, Any]:
    """Where each name sits in ``names`` (one pass, however many names there are)."""
    first = names[0]
    if all(n is first or n == first for n in names):
        return {first: slice(None)}
    where: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        where.setdefault(name, []).append(i)
    return {name: np.asarray(idx) for name, idx in where.items()}


RESOLVE_EVERY = 0.25  # seconds between resolves in log() when a store is attached

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
        # with a store: called after log() resolved its values (a chunk, or RESOLVE_EVERY
        # seconds' worth, or when it last asked to be called), outside the lock; returns the
        # seconds until it wants to be called again (store/late.py)
        self._after_resolve: Callable[[], float] | None = None
        self._ask_at = math.inf  # when log() next calls it (never without one)

    @property
    def after_resolve(self) -> Callable[[], float] | None:
        return self._after_resolve

    @after_resolve.setter
    def after_resolve(self, call: Callable[[], float] | None) -> None:
        self._after_resolve = call
        self._ask_at = math.inf if call is None else -math.inf

    @property
    def next_step(self) -> int:
        """The step the next training metric will get."""
        return self._step

    def log(self, /, step: int | None = None, *values: Any, **metrics: Any) -> None:
        """Record metrics at ``step`` (by default: the next training step): numbers,
        numpy scalars or one-element tensors (a device tensor is read later, in batches).
        Values are named (``log(loss=...)``); the one positional argument is the step.

        ``step`` counts itself: each call with a training metric is the next step; calls
        with only ``val_*``/``test_*``/``epoch``/``lr`` metrics belong to the last one.
        """
        before = self._step
        if values:
            raise _positional_error(step, values)
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
        name = ""
        try:
            for name, value in metrics.items():
                kind = type(value)
                if kind is float:
                    pass
                elif kind is tensor_type and value.is_cpu:
                    # The common case, inlined: a one-element loss tensor on the CPU is read now
                    # (a memory read: there is no device to wait for), so neither the tensor nor
                    # its autograd graph is kept. (item() does not warn about requires_grad.)
                    try:
                        value = value.item()
                    except RuntimeError:  # more than one element: the clear error
                        value = _check_value(name, value)
                    if type(value) is complex:
                        value = value.real  # as the batched read of a complex tensor did
                elif kind is tensor_type and not value.is_meta and value.numel() == 1:
                    # On a device: kept unread (read later in batches, never synchronising now),
                    # detached (a new tensor object) only when it holds an autograd graph,
                    # which must not stay alive.
                    if value.requires_grad:
                        value = value.detach()
                elif kind is int and -FLOAT_INT < value < FLOAT_INT:
                    pass
                else:  # huge ints, numpy, anything else: checked (to fit a float) or refused
                    value = _check_value(name, value)
                    tensor_type = self._tensor_type = _torch_tensor_type()
                append((step, name, value, now))
        except BaseException:
            self._undo(before, list(metrics).index(name) if name in metrics else 0)
            raise
        if len(self._pending) >= self.chunk or now >= self._ask_at:
            self.resolve()
            late = self._after_resolve
            if late is not None:  # a store whose writer is starved writes here (never raises)
                self._ask_at = now + min(RESOLVE_EVERY, late())

    def _undo(self, step: int, appended: int) -> None:
        """A refused call logs nothing: its values accepted before the refused one go."""
        self._step = step
        with contextlib.suppress(IndexError):  # resolve() in another thread took them
            for _ in range(appended):
                self._pending.pop()

    def _explicit_step(self, step: object) -> int:
        try:
            if isinstance(step, (bool, float, str)):
                raise TypeError
            value = operator.index(step)  # int, numpy integer, integer 0-d tensor
        except TypeError:
            raise _positional_error(step, ()) from None
        if not -MAX_STEP <= value <= MAX_STEP:
            raise VizdebugError(
                f"step={short_repr(value)} is out of range: steps are 64-bit integers, "
                f"|step| at most 2**62; pass the iteration count, or step=None to count"
            )
        self._step = max(self._step, value + 1)
        return value

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
            for name, sel in _groups(names).items():
                series = self._series.get(name)
                if series is None:
                    series = self._series[name] = Series(self.capacity)
                series.extend(step_arr[sel], numbers[sel], time_arr[sel])
            self.version += 1
            sink = self.sink
            if sink is not None:
                sink(step_arr, names, numbers, time_arr)

    def records_since(self, cursor: int | None) -> tuple[RunDelta, int]:
        """The collector contract: from the start (``None``) every point, one scalar chunk
        per metric; from a cursor, the pending values resolved, which hands them to the
        ``sink`` (a run store's: the series are downsampled in place, so no cursor into
        them lasts), and nothing more. A failing sink is the store's to report."""
        if cursor is None:
            chunks = [(s, (name,) * len(s), v, t) for name, (s, v, t) in self.all_series().items()]
            return RunDelta(scalars=chunks), self.version
        with contextlib.suppress(Exception):
            self.resolve()
        return RunDelta(), self.version

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
        """Every metric's ``(step, value, time)``, by its name as stored (a lone surrogate
        escaped: pyarrow and the browser take it, and it reads as the run file has it)."""
        return {storable_name(name): self.series(name) for name in self.names()}

    def long_form(self) -> dict[str, np.ndarray]:
        """Every point as columns ``step``, ``name``, ``value``, ``time`` (metric by metric,
        each sorted by step): one concatenation, however many metrics there are."""
        parts = list(self.all_series().items())
        names = np.asarray([name for name, _ in parts], dtype=object)
        counts = [len(arrays[0]) for _, arrays in parts]
        return {"step": _joined(parts, 0, np.int64), "name": np.repeat(names, counts),
                "value": _joined(parts, 1, float), "time": _joined(parts, 2, float)}

    def stored_points(self) -> int:
        """How many points are held in memory right now (pending included)."""
        return len(self._pending) + sum(s.size for s in self._series.values())
