"""Sealed steps waiting to be read, and their batched read into the sample buffers.

Nothing is read back during a step: a sampled step is *sealed* when the next training step
starts and read later, once the oldest sealed step is ``READ_AFTER`` steps old, all waiting
steps at once (16 steps of ``every=1``; the samples of ``"auto"``, farther apart, a few
at a time: see ``READ_BATCH``), when the device finished them long ago, so the read never
stalls the pipeline. A read reduces the samples of all its steps together (:func:`~.rows.group_rows`)
and reads every device norm in one transfer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ...records import ACTIVATION_FIELDS, ACTIVATION_STATS, GRAD_FIELDS
from ..checks.anomaly import AnomalyEvent, AnomalyPolicy
from .gradients import SealedGrads, grad_rows
from .outputs import StepSamples
from .rows import group_rows
from .samples import SampleBuffer

# Sealed steps are read in batches once the oldest is this many steps old: a read costs a
# fixed number of numpy calls, run with caches cold from the training step, so reading
# several steps at once costs about what reading one did.
READ_AFTER = 16
# ... and once at least READ_BATCH of them wait, or the oldest is READ_LATEST steps old: the
# dense early samples of "auto" (steps 0, 10, 20, 30, ...) are read a few at a time, not one
# by one (a read of one step of a 33-module MLP cost ~0.7 ms, about what four cost).
READ_BATCH = 4
READ_LATEST = 128
_ORDER = ACTIVATION_FIELDS.index("order")
_NONFINITE = ACTIVATION_FIELDS.index("nonfinite")


class PendingSteps:
    """Owns the sealed steps not read yet, and the buffers they are read into
    (``activations``: ``(modules, 9)`` rows; ``grads``: ``(params, 3)`` rows).

    Examples
    --------
    >>> pending = PendingSteps(["fc"], ["Linear"], 1, AnomalyPolicy("ignore"))
    >>> pending.add(0, None, None); pending.read_all(); len(pending.activations)
    0
    """

    def __init__(self, module_paths: list[str], module_classes: list[str], n_params: int,
                 policy: AnomalyPolicy, capacity: int = 1000,
                 on_error: Callable[[str, BaseException], None] | None = None) -> None:
        self.module_paths = module_paths
        self.module_classes = module_classes
        self.n_params = n_params
        self.policy = policy
        self.activations = SampleBuffer(capacity)
        self.grads = SampleBuffer(capacity)
        self._sealed: list[tuple[int, StepSamples | None, SealedGrads | None]] = []
        self.lock = threading.RLock()
        # a read that fails is reported here (the session's collector errors), never raised
        # to whoever asked for the records
        self.on_error = on_error or (lambda where, exc: None)

    def add(self, step: int, act: StepSamples | None, grad: SealedGrads | None,
            now: int | None = None) -> None:
        """Sampled step ``step``, sealed at step ``now``; the older sealed steps are read
        when the oldest is due."""
        with self.lock:
            self._sealed.append((step, act, grad))
            now = step if now is None else now
            age, waiting = now - self._sealed[0][0], len(self._sealed) - 1
            if waiting and age > READ_AFTER and (waiting >= READ_BATCH or age > READ_LATEST):
                sealed, self._sealed = self._sealed[:-1], self._sealed[-1:]
                self._read(sealed)

    def read_all(self) -> None:
        """Read every sealed step now."""
        with self.lock:
            sealed, self._sealed = self._sealed, []
            self._read(sealed)

    def _read(self, sealed: list[tuple[int, Any, Any]]) -> None:
        acts = [(step, act) for step, act, _ in sealed if act is not None]
        grads = [(step, grad) for step, _, grad in sealed if grad is not None]
        for where, read, items in (("the activation collector", self._read_activations, acts),
                                   ("the gradient collector", self._read_grads, grads)):
            try:
                if items:
                    read(items)
            except Exception as exc:  # those steps' rows stay empty
                self.on_error(where, exc)

    def _read_activations(self, acts: list[tuple[int, StepSamples]]) -> None:
        classes = self.module_classes
        rows = group_rows([s for _, act in acts for s in act.samples],
                          [classes[i] for _, act in acts for i in act.idx])
        blocks, start = [], 0
        for _, act in acts:
            block = np.full((len(classes), len(ACTIVATION_FIELDS)), np.nan)
            block[act.idx, :len(ACTIVATION_STATS)] = rows[start:start + len(act.idx)]
            block[act.idx, _ORDER] = act.order
            blocks.append(block)
            start += len(act.idx)
        steps = [step for step, _ in acts]
        self.activations.extend(steps, blocks)
        self._note_nonfinite(steps, blocks)

    def _read_grads(self, grads: list[tuple[int, SealedGrads]]) -> None:
        blocks = []
        for (_, (idx, _, _)), values in zip(grads, grad_rows([g for _, g in grads])):
            block = np.full((self.n_params, len(GRAD_FIELDS)), np.nan)
            block[idx] = values
            weight = values[:, 1]
            block[idx, 2] = values[:, 2] / np.where(weight > 0, weight, np.nan)
            blocks.append(block)
        self.grads.extend([step for step, _ in grads], blocks)

    def _note_nonfinite(self, steps: list[int], blocks: list[np.ndarray]) -> None:
        """The first sampled non-finite activation becomes an event (warn/ignore modes;
        under raise/pdb the hooks caught it as it happened)."""
        if "nonfinite-activation" in self.policy.kinds:
            return
        for step, block in zip(steps, blocks):
            bad = np.flatnonzero(block[:, _NONFINITE] > 0)
            if bad.size:
                self._nonfinite_event(step, block, bad[np.argmin(block[bad, _ORDER])])
                return

    def _nonfinite_event(self, step: int, block: np.ndarray, first: int) -> None:
        path, cls = self.module_paths[first], self.module_classes[first]
        row = dict(zip(ACTIVATION_FIELDS, block[first]))
        total = int(row["numel"])
        message = (f"first non-finite activation seen at sampled step {step}: output of "
                   f"{path!r} ({cls}, {total} values) holds NaN/inf (max |a| = "
                   f"{row['absmax']})")
        self.policy.record(AnomalyEvent("nonfinite-activation", step, path, cls, message,
                                        {"numel": total, "order": int(row["order"])}))
