"""What a run store is handed: :class:`RunDelta`, tracked-embedding frames and probes; and
the rules' records from a delta of a whole run (:func:`records_from_delta`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .events import AnomalyEvent
from .loader import LoaderRecord
from .program import ProgramFacts
from .training import TrainingRecords

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
    events: list[AnomalyEvent] | None = None
    errors: list[tuple[str, str, int]] | None = None
    loader: LoaderRecord | None = None
    program: dict[str, Any] | None = None  # ProgramFacts.to_json(), when it changed
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
            program=newer("program"),
            batch=later.batch or self.batch, meta={**self.meta, **later.meta},
            failed=newer("failed"), embeddings=[*self.embeddings, *later.embeddings],
            probes=[*self.probes, *later.probes])


def records_from_delta(delta: RunDelta, meta: dict[str, Any]) -> TrainingRecords:
    """The rules' :class:`~vizdebug.records.TrainingRecords` from a delta holding a run
    from its start (what a live session's collectors fold to, or what a stored run reads
    back) and the run's settings: ``module_paths``, ``module_classes``, ``param_paths``,
    ``param_numel`` and ``every``.

    >>> d = RunDelta(scalars=[(np.array([0, 1]), ("loss", "loss"), np.array([2.0, 1.0]),
    ...                        np.zeros(2))], errors=[])
    >>> rec = records_from_delta(d, {"module_paths": ["fc"], "param_paths": []})
    >>> rec.scalars["loss"][1].tolist(), rec.activations.shape, rec.loader.batches
    ([2.0, 1.0], (0, 1), 0)
    """
    widths = {"activations": len(meta.get("module_paths", ())),
              "grads": len(meta.get("param_paths", ()))}
    samples = {kind: (np.empty(0, dtype=np.int64), np.empty((0, width)))
               for kind, width in widths.items()}
    for kind, steps, rows in delta.samples:  # (one block per kind from the start)
        samples[kind] = (steps, rows) if not len(samples[kind][0]) else (
            np.concatenate([samples[kind][0], steps]), np.concatenate([samples[kind][1], rows]))
    program = delta.program
    return TrainingRecords(
        scalars=scalar_series(delta.scalars),
        module_paths=list(meta.get("module_paths", ())),
        module_classes=list(meta.get("module_classes", ())),
        act_steps=samples["activations"][0], activations=samples["activations"][1],
        param_paths=list(meta.get("param_paths", ())),
        param_numel=list(meta.get("param_numel", ())),
        grad_steps=samples["grads"][0], grads=samples["grads"][1],
        events=list(delta.events or ()), loader=delta.loader or LoaderRecord(),
        errors=list(delta.errors or ()), every=meta.get("every", 1),
        program=ProgramFacts.from_json(program) if program is not None else None)


def scalar_series(chunks: list[ScalarChunk]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``name -> (steps, values)`` from scalar chunks, in the order names first appear
    (a chunk of one name, as the scalar log gives each series, is taken whole).

    >>> scalar_series([(np.array([1, 1]), ("a", "b"), np.array([0.5, 2.0]), np.zeros(2))])
    {'a': (array([1]), array([0.5])), 'b': (array([1]), array([2.]))}
    """
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for steps, names, values, _ in chunks:
        if not len(names):
            continue
        unique = dict.fromkeys(names)
        if len(unique) == 1:
            parts.setdefault(names[0], []).append((steps, values))
            continue
        labels = np.asarray(names, dtype=object)
        for name in unique:
            sel = labels == name
            parts.setdefault(name, []).append((steps[sel], values[sel]))
    return {name: p[0] if len(p) == 1 else (np.concatenate([s for s, _ in p]),
                                            np.concatenate([v for _, v in p]))
            for name, p in parts.items()}
