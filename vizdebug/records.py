"""Record types and field tuples shared by every layer: the bottom of the package.

Collectors (``collect/``) produce these records, the store (``store/``) writes and reads
them back, the rules (``analysis/``) read them, the views read a :class:`TrainingSource`.
Here: the field tuples, :class:`TrainingRecords`, the bounded scalar :class:`Series`,
the :class:`TrainingSource` protocol (a live Session or a stored Run) and
:class:`RunDelta` (what a Session hands its run store at each write). Nothing here
imports another vizdebug module, so every layer can import it without a cycle. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

#: What one sampled activation yields (computed in ``collect/``, defined in
#: :mod:`vizdebug.analysis.training.activations`).
ACTIVATION_STATS = ("mean", "std", "zero", "dead", "saturated", "nonfinite", "absmax", "numel")
#: An activation record: the statistics plus the module's place in the step's call order.
ACTIVATION_FIELDS = (*ACTIVATION_STATS, "order")
#: A parameter record of a sampled step.
GRAD_FIELDS = ("grad_norm", "weight_norm", "update_ratio")
#: A loader batch record (statistics of the batch's input).
BATCH_FIELDS = ("min", "max", "mean", "std", "nonfinite", "numel")
#: Metric name prefixes that mark an evaluation metric (not a training one).
EVAL_PREFIXES = ("val_", "valid_", "validation_", "test_", "eval_")


@dataclass
class TrainingRecords:
    """Everything the rules look at, as plain arrays.

    Examples
    --------
    >>> rec = TrainingRecords(scalars={"loss": (np.arange(3), np.array([1.0, np.nan, 2.0]))})
    >>> rec.train_loss()[0]
    'loss'
    """

    scalars: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    module_paths: list[str] = field(default_factory=list)
    module_classes: list[str] = field(default_factory=list)
    act_steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    activations: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 9)))
    param_paths: list[str] = field(default_factory=list)
    param_numel: list[int] = field(default_factory=list)
    grad_steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    grads: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 3)))
    events: list[dict[str, Any]] = field(default_factory=list)
    loader: dict[str, Any] = field(default_factory=dict)
    errors: list[tuple[str, str, int]] = field(default_factory=list)
    every: int | str = 1

    def act(self, name: str) -> np.ndarray:
        """One activation field as ``(samples, modules)``."""
        return self.activations[:, :, ACTIVATION_FIELDS.index(name)]

    def grad(self, name: str) -> np.ndarray:
        """One gradient field as ``(samples, params)``."""
        return self.grads[:, :, GRAD_FIELDS.index(name)]

    def train_loss(self) -> tuple[str, np.ndarray, np.ndarray] | None:
        """The training loss curve: ``loss``, else the first ``*loss*`` that is not eval."""
        names = [n for n in self.scalars if "loss" in n and not _is_eval(n)]
        if "loss" in self.scalars:
            names.insert(0, "loss")
        if not names:
            return None
        steps, values = self.scalars[names[0]]
        return names[0], steps, values

    def val_loss(self) -> tuple[str, np.ndarray, np.ndarray] | None:
        """The validation loss curve (``val_loss`` or another eval ``*loss*``)."""
        names = [n for n in self.scalars if "loss" in n and _is_eval(n)]
        if not names:
            return None
        steps, values = self.scalars[names[0]]
        return names[0], steps, values


def _is_eval(name: str) -> bool:
    return name.startswith(EVAL_PREFIXES)



# -- scalar series ------------------------------------------------------------------------


def extreme_indices(arr: np.ndarray, max_points: int) -> np.ndarray:
    """Sorted indices of about ``max_points`` points of the 1-d float ``arr`` that keep,
    from each of ``max_points // 4`` equal buckets, the first point, the minimum, the
    maximum and the first non-finite point (so one spike or one NaN in a million survives).
    Unchecked: :func:`vizdebug.analysis.curves.minmax_indices` validates and calls it.

    >>> extreme_indices(np.array([0.0, 0.0, 9.0, 0.0, 0.0, 0.0]), 4).tolist()
    [0, 2, 5]
    """
    n = arr.size
    if n <= max_points:
        return np.arange(n)
    n_buckets = max(1, max_points // 4)
    width = -(-n // n_buckets)  # ceil
    pad = n_buckets * width - n
    finite = np.isfinite(arr)
    hi = np.concatenate([np.where(finite, arr, -np.inf), np.full(pad, -np.inf)])
    lo = np.concatenate([np.where(finite, arr, np.inf), np.full(pad, np.inf)])
    bad = np.concatenate([~finite, np.zeros(pad, dtype=bool)]).reshape(n_buckets, width)
    offsets = np.arange(n_buckets) * width
    picks = [
        offsets,
        offsets + np.argmax(hi.reshape(n_buckets, width), axis=1),
        offsets + np.argmin(lo.reshape(n_buckets, width), axis=1),
        (offsets + np.argmax(bad, axis=1))[bad.any(axis=1)],
        np.array([0, n - 1]),
    ]
    idx = np.unique(np.concatenate(picks))
    return idx[idx < n]


class Series:
    """One metric's points, at most ``capacity`` of them (older ones thinned by min/max).

    A live session's scalar log and a stored run's reader keep their points in these.

    >>> s = Series(8)
    >>> s.extend(np.arange(20), np.arange(20.0), np.zeros(20))
    >>> s.total, s.size <= 8
    (20, True)
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.step = np.empty(capacity, dtype=np.int64)
        self.value = np.empty(capacity, dtype=float)
        self.time = np.empty(capacity, dtype=float)
        self.size = 0
        self.total = 0

    def extend(self, step: np.ndarray, value: np.ndarray, when: np.ndarray) -> None:
        """Append points, compacting whenever the buffer is full."""
        start = 0
        while start < step.size:
            if self.size == self.capacity:
                self._compact()
            n = min(self.capacity - self.size, step.size - start)
            sl = slice(self.size, self.size + n)
            self.step[sl] = step[start:start + n]
            self.value[sl] = value[start:start + n]
            self.time[sl] = when[start:start + n]
            self.size += n
            start += n
        self.total += step.size

    def _compact(self) -> None:
        keep = extreme_indices(self.value[: self.size], self.capacity // 2)
        n = keep.size
        for arr in (self.step, self.value, self.time):
            arr[:n] = arr[keep]
        self.size = n

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Copies of ``(step, value, time)``."""
        n = self.size
        return self.step[:n].copy(), self.value[:n].copy(), self.time[:n].copy()


# -- what the views read --------------------------------------------------------------------


class ArraySource(Protocol):
    """Something that gives an array now (a Session's system sampler, a Run's samples)."""

    def array(self) -> np.ndarray: ...


@runtime_checkable
class TrainingSource(Protocol):
    """What the views read: a live ``Session`` or a stored ``Run``.

    ``state`` is ``running``, ``closed`` or ``failed`` (a stored run also ``ended`` or
    ``interrupted``); ``version`` changes whenever something new was collected or written;
    ``system.array()`` gives the ``(n, 4)`` process samples (time, cpu %, RSS MiB, GPU MiB);
    ``state_findings()`` lists findings about the run's state itself (``Finding`` objects).
    """

    title: str
    closed: bool
    failed: str | None
    state: str
    system: ArraySource

    @property
    def version(self) -> Any: ...

    def records(self, *, flush: bool = True) -> TrainingRecords: ...

    def state_findings(self) -> Sequence[Any]: ...

    def scalars(self) -> Any: ...

    def captured_batches(self) -> list[Any]: ...


# -- what a run store is handed -----------------------------------------------------------

#: A chunk of resolved scalar points: ``(steps, names, values, times)``.
ScalarChunk = tuple[np.ndarray, tuple[str, ...], np.ndarray, np.ndarray]


@dataclass(frozen=True)
class EmbeddingFrame:
    """A tracked layer's output on a fixed probe set at one point of training.

    ``features`` is ``(n_probe, dim)`` float32, one row per probe sample, in probe order
    (flattened or pooled by the collector); ``step`` the optimizer step it was taken at and
    ``epoch`` the epoch when known. Frames of one layer share ``n_probe``; the labels and
    images of the probe are held once, beside the frames, not in each.

    >>> f = EmbeddingFrame("fc1", 10, 1, np.zeros((4, 3), np.float32))
    >>> f.layer, f.step, f.features.shape
    ('fc1', 10, (4, 3))
    """

    layer: str
    step: int
    epoch: int | None
    features: np.ndarray


#: Bounds of tracked embeddings, for the collector, the store's writer and its reader:
#: probe samples per layer, features per sample, a thumbnail's side in pixels.
MAX_PROBE = 10_000
MAX_EMBEDDING_DIM = 4096
MAX_THUMB_SIDE = 32


@dataclass(frozen=True)
class EmbeddingProbe:
    """The fixed probe set of one tracked layer, stored once beside its frames.

    ``labels`` is one label per probe sample (numbers as an array, anything else as a list
    of strings) or ``None``; ``images`` small ``uint8`` thumbnails, ``(n, h, w)`` or
    ``(n, h, w, 3)``, or ``None``.

    >>> EmbeddingProbe("fc1", 3, np.arange(3), None).n
    3
    """

    layer: str
    n: int
    labels: Any
    images: np.ndarray | None


@dataclass
class RunDelta:
    """What happened since the last write to a run store: plain records, no collector.

    ``samples`` holds ``(kind, steps, rows)`` blocks, ``kind`` being ``activations`` or
    ``grads`` and ``rows`` shaped ``(len(steps), width, fields)``; ``system`` the new
    :data:`vizdebug.collect.taps.system.SYSTEM_FIELDS` tuples. ``events``, ``errors`` and
    ``loader`` are whole snapshots, ``None`` when unchanged since the last delta; ``errors``
    are ``(where, message, count)``; ``loader`` may hold numpy arrays. ``batch`` is the
    newest captured batch as arrays (input first, then the target), already cut to size;
    empty when there is no new one. ``meta`` is written as run settings (the first delta
    of a run carries the start meta: vizdebug version, model class, module paths...);
    ``failed`` the text of the exception that ended the run. ``embeddings`` are the new
    frames of tracked layers, ``probes`` the probe sets of layers tracked since the last
    delta (each handed over once).

    >>> a = RunDelta(system=[(0.0, 1.0, 2.0, 3.0)], errors=[("x", "boom", 1)])
    >>> b = a.absorb(RunDelta(system=[(1.0, 1.0, 2.0, 3.0)], meta={"every": 2}))
    >>> len(b.system), b.errors, b.meta
    (2, [('x', 'boom', 1)], {'every': 2})
    """

    scalars: list[ScalarChunk] = field(default_factory=list)
    samples: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)
    system: list[tuple[float, float, float, float]] = field(default_factory=list)
    events: list[dict[str, Any]] | None = None
    errors: list[tuple[str, str, int]] | None = None
    loader: dict[str, Any] | None = None
    batch: list[np.ndarray] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    failed: str | None = None
    embeddings: list[EmbeddingFrame] = field(default_factory=list)
    probes: list[EmbeddingProbe] = field(default_factory=list)

    def absorb(self, later: RunDelta) -> RunDelta:
        """This delta followed by ``later``, as one (a write that failed goes again with
        the next): appended parts are joined, snapshots taken from the newer one."""
        def newer(name: str) -> Any:
            value = getattr(later, name)
            return getattr(self, name) if value is None else value

        return replace(
            self, scalars=[*self.scalars, *later.scalars],
            samples=[*self.samples, *later.samples], system=[*self.system, *later.system],
            events=newer("events"), errors=newer("errors"), loader=newer("loader"),
            batch=later.batch or self.batch, meta={**self.meta, **later.meta},
            failed=newer("failed"), embeddings=[*self.embeddings, *later.embeddings],
            probes=[*self.probes, *later.probes])
