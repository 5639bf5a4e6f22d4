"""The loader tap: time spent waiting for data vs computing, and what the batches hold.

The tap wraps the *iterator* a loader returns, never the dataset, so it works with
``num_workers > 0`` (workers never see it). For a ``DataLoader`` passed to ``watch`` the
loader's class is swapped for a subclass whose ``__iter__`` adds the tap; ``close()``
swaps it back, so the user's own ``for x, y in loader`` loop is tapped unchanged. Two
sessions watching one loader are both fed (each tap wraps the iterator); the loader gets
its own class back when the last of them closes. Any other iterable can be tapped
explicitly with ``session.tap_loader(iterable)``.

Two live sessions on one loader each count only the passes their own model trained on:
while more than one tap is on a loader, a pass's first batch is held until the next
``next()``, and a tap whose session's step clock did not move meanwhile leaves that pass
alone (a closed session's tap counts nothing). With one tap nothing is held.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from ...data.batch import input_members, split_batch
from ...errors import VizdebugTypeError, describe
from ...records import BATCH_FIELDS, LoaderRecord, RunDelta
from ..hooks.samples import SampleBuffer
from .passes import TappedIterator

# A small float CPU batch is copied (the loop may change it in place) and summarised with
# the next ones, this many at a time, in one set of numpy calls: with caches cold from the
# training step, a dozen numpy calls per batch cost ~60 us there (12 us warm).
DEFER_BATCHES = 8
DEFER_MAX_NUMEL = 1 << 16
# loader -> the taps on it, in the order they were attached: two sessions watching one
# loader both see its batches (the newer one outermost)
_TAPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TAPPED_CLASSES: dict[type, type] = {}


def batch_summary(x: Any) -> tuple[str, str, np.ndarray] | None:
    """``(shape, dtype, BATCH_FIELDS values)`` of a tensor or array, or ``None``.

    Examples
    --------
    >>> batch_summary(np.array([1.0, np.nan, 3.0]))[2].tolist()
    [1.0, 3.0, 2.0, 1.0, 1.0, 3.0]
    """
    if x is None or not hasattr(x, "shape"):
        return None
    shape, dtype = str(tuple(x.shape)), str(x.dtype).replace("torch.", "")
    if hasattr(x, "detach"):
        return shape, dtype, _tensor_summary(x)
    arr = np.asarray(x, dtype=float).reshape(-1)
    return shape, dtype, _array_summary(arr)


def _array_summary(arr: np.ndarray) -> np.ndarray:
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        values = [np.nan] * 4
    else:
        values = [finite.min(), finite.max(), finite.mean(), finite.std()]
    return np.asarray([*values, arr.size - finite.size, arr.size], dtype=float)


def _tensor_summary(x: Any) -> np.ndarray:
    """Torch on the tensor's own data: min/max first (they propagate NaN and show inf), and
    only a batch that holds NaN/inf is copied out to be counted."""
    import torch

    flat = x.detach().reshape(-1)
    if flat.device.type != "cpu":
        flat = flat.cpu()
    if flat.dtype in (torch.float32, torch.float64) and flat.numel():
        return _numpy_summary(flat.numpy())
    if not flat.is_floating_point():
        flat = flat.double()
    if flat.numel() == 0:
        return _array_summary(np.empty(0))
    lo, hi = torch.aminmax(flat)
    std, mean = torch.std_mean(flat, correction=0)
    lo_, hi_, mean_, std_ = torch.stack([lo, hi, mean, std]).tolist()  # one read
    if not (math.isfinite(lo_) and math.isfinite(hi_)):
        return _array_summary(flat.double().numpy())
    return np.asarray([lo_, hi_, mean_, std_, 0.0, flat.numel()])


def _numpy_summary(a: np.ndarray) -> np.ndarray:
    """A float CPU batch in numpy: a third of torch's cost on a 64x1x8x8 batch (12 vs 37 us;
    numpy's calls are cheaper), mean and std accumulated in float64."""
    lo, hi = float(a.min()), float(a.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return _array_summary(a.astype(float))
    mean = float(a.sum(dtype=np.float64)) / a.size
    centred = a - np.float64(mean)
    std = math.sqrt(float(np.dot(centred, centred)) / a.size)
    return np.asarray([lo, hi, mean, std, 0.0, a.size])


def _deferrable(x: Any) -> np.ndarray | None:
    """A small float32/float64 CPU tensor's values, flat (a view), else ``None``."""
    torch = sys.modules.get("torch")
    if (torch is None or not isinstance(x, torch.Tensor) or not x.is_cpu
            or x.dtype not in (torch.float32, torch.float64)
            or not 0 < x.numel() <= DEFER_MAX_NUMEL):
        return None
    return x.detach().numpy().reshape(-1)


def _numpy_summaries(a: np.ndarray) -> list[np.ndarray]:
    """:func:`_numpy_summary` of each row of ``a`` (batches of one size), together."""
    lo, hi = a.min(1), a.max(1)
    n = a.shape[1]
    mean = a.sum(1, dtype=np.float64) / n
    centred = a - mean[:, None]
    std = np.sqrt(np.einsum("ij,ij->i", centred, centred) / n)
    out = np.stack([lo, hi, mean, std, np.zeros_like(mean), np.full_like(mean, n)], 1)
    finite = np.isfinite(lo) & np.isfinite(hi)
    return [row if ok else _array_summary(r.astype(float))
            for row, ok, r in zip(out, finite, a)]


def _finite_input(batch: Any) -> bool:
    """False when the batch's input is a float CPU tensor or array holding NaN or inf: one
    sum (NaN and inf propagate; a float32 overflow only costs a needless description)."""
    torch = sys.modules.get("torch")
    if (type(batch) in (tuple, list) and len(batch) == 2 and torch is not None
            and isinstance(batch[0], torch.Tensor)):
        x = batch[0]  # (input, target): what split_batch says, without its general rule
    else:
        x = input_members(split_batch(batch).input)[0]  # a siamese/triplet batch: its first
    if torch is not None and isinstance(x, torch.Tensor):
        if not (x.is_cpu and x.is_floating_point()) or x.numel() == 0:
            return True
        with np.errstate(all="ignore"):
            total = (x.detach().numpy().sum() if x.dtype in (torch.float32, torch.float64)
                     else float(x.double().sum()))
        return math.isfinite(total)
    if isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.size:
        with np.errstate(all="ignore"):
            return math.isfinite(x.sum())
    return True


class LoaderTap:
    """Timing and batch statistics for the batches a loader yields.

    Examples
    --------
    >>> tap = LoaderTap(every=1)
    >>> for batch in tap.wrap(iter([np.zeros((2, 3)), np.ones((2, 3))])):
    ...     pass
    >>> tap.batches
    2
    """

    def __init__(self, *, every: int = 1, capture: int = 4, capacity: int = 10_000,
                 clock: Callable[[], float] = time.perf_counter,
                 on_error: Callable[[str, BaseException], None] | None = None,
                 check_all: bool = False) -> None:
        self.every = every
        self.check_all = check_all  # also describe any batch whose input is not finite
        self.clock = clock
        self.on_error = on_error or (lambda where, exc: None)
        self.wait = deque(maxlen=capacity)
        self.compute = deque(maxlen=capacity)
        self.total_wait = 0.0
        self.total_compute = 0.0
        self.batches = 0
        self.stats = SampleBuffer(1000)
        self.shapes: dict[str, int] = {}
        self.dtypes: dict[str, int] = {}
        self.captured: deque = deque(maxlen=capture)
        self.closed = False
        self.paused = False  # batches are neither timed nor described (Session.paused)
        self._deferred: deque = deque()  # (batch index, flat copy) not summarised yet
        self._flush_lock = threading.Lock()
        self._loader_ref: weakref.ref | None = None
        self._original_class: type | None = None
        self.passes = 0  # passes that ran to their end (epochs)
        self.pass_batches, self.pass_length = 0, None  # of the pass in progress (if known)
        self.on_pass_end: Callable[[], None] | None = None  # called after each (epochs)
        self.mode_watch: Any = None  # the Session's ModeWatch: armed at a pass's end
        # what moves when the session's model trains (its step clock): with another tap
        # on the loader, whose pass it is (None: every pass is this tap's)
        self.progress: Callable[[], Any] | None = None

    # -- attaching to a DataLoader --------------------------------------------------------
    def attach(self, loader: Any) -> LoaderTap:
        """Tap ``loader``'s iterators from now on, by giving it a tapped subclass."""
        cls = type(loader)
        if not hasattr(cls, "__iter__") or cls.__module__ == "builtins":
            raise VizdebugTypeError(
                f"watch(loader=...) takes a DataLoader (or another loader object), got "
                f"{describe(loader)}; for a plain iterable write "
                "`for batch in session.tap_loader(iterable):` instead"
            )
        original = getattr(cls, "_vizdebug_original_class", cls)
        try:
            loader.__class__ = _tapped_class(original)
            taps = _TAPS.setdefault(loader, [])
            if self not in taps:
                taps.append(self)
        except (TypeError, AttributeError) as exc:  # AttributeError: a read-only __class__
            raise VizdebugTypeError(
                f"cannot tap {describe(loader)}: {exc}; use `session.tap_loader(loader)` in the loop"
            ) from exc
        self._loader_ref, self._original_class = weakref.ref(loader), original
        return self

    def detach(self) -> None:
        """Give the loader its own class back (harmless when called twice)."""
        self.closed = True
        if self.mode_watch is not None:
            self.mode_watch.disarm()
        loader = self._loader_ref() if self._loader_ref is not None else None
        taps = _TAPS.get(loader, []) if loader is not None else []
        if self in taps:
            taps.remove(self)
            if not taps:  # the last tap gone: the loader is the user's own class again
                del _TAPS[loader]
                loader.__class__ = self._original_class
        self._loader_ref = None

    # -- the tapped iterator ----------------------------------------------------------------
    def wrap(self, iterator: Iterator, shared: tuple[LoaderTap, ...] = ()) -> TappedIterator:
        """An iterator that yields what ``iterator`` yields and records timing;
        ``shared``: the live taps on the same loader (see the module docstring)."""
        try:
            self.pass_length = len(iterator)  # type: ignore[arg-type]
        except Exception:  # no length (an IterableDataset, a generator)
            self.pass_length = None
        self.pass_batches = 0
        return TappedIterator(iterator, self, shared)

    @property
    def pass_done(self) -> bool:
        """The pass in progress has yielded all its batches (its end is not seen yet)."""
        return self.pass_length is not None and 0 < self.pass_length <= self.pass_batches

    def record(self, batch: Any, waited: float, computed: float | None) -> None:
        """Account one batch (called by :class:`TappedIterator`; never raises)."""
        try:
            self.batches += 1
            self.pass_batches += 1
            self.wait.append(waited)
            self.total_wait += waited
            if computed is not None:
                self.compute.append(computed)
                self.total_compute += computed
            if (self.batches - 1) % self.every == 0 or (
                    self.check_all and not _finite_input(batch)):
                self._describe(batch)  # every n-th batch (and any with NaN/inf)
        except Exception as exc:
            self.on_error("the loader tap", exc)

    def record_compute(self, seconds: float) -> None:
        """Account the compute time of an epoch's last batch (never raises)."""
        try:
            self.compute.append(seconds)
            self.total_compute += seconds
        except Exception as exc:
            self.on_error("the loader tap", exc)

    def pass_ended(self) -> None:
        """A pass over the loader ran to its end: an epoch (never raises)."""
        self.passes += 1
        if self.mode_watch is not None:
            self.mode_watch.arm()  # (never raises)
        if self.on_pass_end is not None:
            try:
                self.on_pass_end()
            except Exception as exc:
                self.on_error("the embedding tracker", exc)

    def _describe(self, batch: Any) -> None:
        x = input_members(split_batch(batch).input)[0]
        self.captured.append(batch)
        flat = _deferrable(x)
        if flat is not None:
            shape, dtype = str(tuple(x.shape)), str(x.dtype).replace("torch.", "")
            self._deferred.append((self.batches - 1, flat.copy()))
            if len(self._deferred) >= DEFER_BATCHES:
                self.flush()
        else:
            self.flush()  # keep the batches in order
            summary = batch_summary(x)
            if summary is None:
                return
            shape, dtype, values = summary
            self.stats.append(self.batches - 1, values)
        self.shapes[shape] = self.shapes.get(shape, 0) + 1
        self.dtypes[dtype] = self.dtypes.get(dtype, 0) + 1

    def flush(self) -> None:
        """Summarise the deferred batches (any thread)."""
        with self._flush_lock:
            items = [self._deferred.popleft() for _ in range(len(self._deferred))]
            if not items:
                return
            by_size: dict[int, list[int]] = {}
            for i, (_, flat) in enumerate(items):
                by_size.setdefault(flat.size, []).append(i)
            rows: list[Any] = [None] * len(items)
            for idx in by_size.values():
                for i, row in zip(idx, _numpy_summaries(np.stack([items[i][1] for i in idx]))):
                    rows[i] = row
            for (index, _), row in zip(items, rows):
                self.stats.append(index, row)

    def timing(self) -> dict[str, Any]:
        """Per-batch wait and compute seconds (recent ones) and the totals (and the
        deferred batch summaries made, so that ``stats`` is complete)."""
        self.flush()
        return {
            "wait": np.asarray(self.wait, dtype=float),
            "compute": np.asarray(self.compute, dtype=float),
            "total_wait": self.total_wait,
            "total_compute": self.total_compute,
            "batches": self.batches,
        }

    def loader_record(self) -> LoaderRecord:
        """The timing and batch statistics as a record (empty before the first batch)."""
        timing = self.timing()
        if timing["batches"] == 0:
            return LoaderRecord()
        stats = self.stats.stacked(len(BATCH_FIELDS))
        steps = self.stats.steps()
        bad = stats[:, BATCH_FIELDS.index("nonfinite")] > 0 if stats.size else np.zeros(0, bool)
        return LoaderRecord(**timing, batch_steps=steps, batch_stats=stats,
                            nonfinite_batches=[int(s) for s in steps[bad]],
                            shapes=dict(self.shapes), dtypes=dict(self.dtypes))

    def records_since(self, cursor: int | None) -> tuple[RunDelta, int | None]:
        """The collector contract: the whole record when batches came since ``cursor``
        (the batches counted then)."""
        batches = self.batches
        if not batches or batches == cursor:
            return RunDelta(), cursor
        return RunDelta(loader=self.loader_record()), batches


def _tapped_iter(self: Any) -> Iterator:
    original = type(self)._vizdebug_original_class
    iterator = original.__iter__(self)
    live = [tap for tap in _TAPS.get(self, ()) if not tap.closed]
    shared = tuple(tap for tap in live if tap.progress is not None)  # (whose pass: passes.py)
    for tap in live:
        iterator = tap.wrap(iterator, shared)
    return iterator


def _tapped_class(cls: type) -> type:
    """A subclass of ``cls`` whose iterators are tapped (one per class, reused)."""
    tapped = _TAPPED_CLASSES.get(cls)
    if tapped is None:
        namespace = {"__iter__": _tapped_iter, "_vizdebug_original_class": cls,
                     "__module__": cls.__module__, "__qualname__": cls.__qualname__}
        tapped = type(cls.__name__, (cls,), namespace)
        _TAPPED_CLASSES[cls] = tapped
    return tapped


def tap_iterable(iterable: Iterable, tap: LoaderTap) -> Iterator:
    """Tap one pass over any iterable."""
    return tap.wrap(iter(iterable))
