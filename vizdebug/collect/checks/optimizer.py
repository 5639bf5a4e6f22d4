"""What a sampled step can tell about the optimizer that updates the model: gradients left
over from the previous step (``zero_grad`` never called), the learning rate of each
parameter group, and which tensors it can train at all.

All of it waits until an optimizer counts the steps (:class:`~.clock.StepClock`): before,
a step is a forward pass, and gradient accumulation legitimately spans several.
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from .anomaly import AnomalyEvent, AnomalyPolicy
from .losses import CHECK_EVERY, FULL_CHECKS

if TYPE_CHECKING:
    from ..hooks.clock import StepClock


# layers whose forward differs between train() and eval()
MODE_SENSITIVE = ("Dropout", "AlphaDropout", "FeatureAlphaDropout", "BatchNorm", "SyncBatchNorm",
                  "InstanceNorm", "LazyBatchNorm", "LazyInstanceNorm")


def _optimizer(clock: StepClock) -> Any:
    return clock.optimizer() if clock.optimizer is not None else None


class OptimizerChecks:
    """Owns the learning-rate trace and the once-per-sampled-step leftover-gradient check."""

    def __init__(self, model_ref: weakref.ref, param_paths: list[str],
                 params: list[weakref.ref], policy: AnomalyPolicy, capacity: int) -> None:
        self.model_ref = model_ref
        self.param_paths = param_paths
        self.params = params
        self.policy = policy
        self.checked = False  # the sampled step's first backward was looked at
        self.sampled = 0
        # (step, each group's rate, wall time) at the sampled steps
        self.lr_trace: deque[tuple[int, tuple[float, ...], float]] = deque(maxlen=capacity)
        self.eval_trained_reported = False

    def begin(self, step: int, clock: StepClock) -> None:
        """A sampled step starts: note each group's learning rate."""
        self.checked = False
        self.sampled += 1
        optimizer = _optimizer(clock)
        if optimizer is not None:
            self.lr_trace.append((step, tuple(float(g["lr"]) for g in optimizer.param_groups),
                                  time.time()))

    def first_gradient(self, first: int, clock: StepClock, step: int, *,
                       eval_forward: bool = False) -> None:
        """At the first gradient of a sampled step's first backward pass no other parameter
        has received this pass's gradient yet: one that still holds a non-zero gradient
        kept the previous step's (``zero_grad`` was not called). And the forward pass that
        this backward follows ran in train mode, if the model has layers that care."""
        if self.checked or _optimizer(clock) is None:
            return
        self.checked = True
        if eval_forward:
            self._trained_in_eval(step)
        if self.sampled > FULL_CHECKS and self.sampled % CHECK_EVERY:
            return  # left-over gradients show from the first steps on: thin out the reads
        probe_idx = 0 if first != 0 else len(self.params) - 1
        probe = self.params[probe_idx]()
        if probe is None or probe_idx == first or probe.grad is None:
            return
        if "missing-zero-grad" in self.policy.kinds or not bool(probe.grad.detach().any()):
            return
        path = self.param_paths[probe_idx]
        self.policy.record(AnomalyEvent(
            "missing-zero-grad", step, path, "Parameter",
            f"{path!r} still held a non-zero gradient when step {step}'s backward began: "
            "gradients of earlier steps are being summed into this one",
            {"severity": "error",
             "hint": "call optimizer.zero_grad() (or model.zero_grad()) once per step, before "
                     "loss.backward(); with gradient accumulation, right after "
                     "optimizer.step()"}))

    def _trained_in_eval(self, step: int) -> None:
        model = self.model_ref()
        if model is None or self.eval_trained_reported:
            return
        layers = sorted({type(m).__name__ for m in model.modules()
                         if type(m).__name__.startswith(MODE_SENSITIVE)})
        if not layers:
            return  # eval() changes nothing in this model
        self.eval_trained_reported = True
        self.policy.record(AnomalyEvent(
            "train-eval-mode", step, "model", type(model).__name__,
            f"step {step} trained on a forward pass made in eval mode: "
            f"{', '.join(layers[:4])} behave as at inference (no dropout, frozen "
            "BatchNorm statistics)",
            {"severity": "warning",
             "hint": "call model.train() after validation (a validate() that ends with "
                     "model.eval() leaves the next training steps in eval mode)"}))

    def trainable_ids(self, clock: StepClock) -> set[int] | None:
        """Ids of the tensors that can be trained: the model's parameters (frozen ones too)
        and the optimizer's; ``None`` until that optimizer is known."""
        model, optimizer = self.model_ref(), _optimizer(clock)
        if model is None or optimizer is None:
            return None
        ids = {id(p) for p in model.parameters()}
        for group in optimizer.param_groups:
            ids.update(id(p) for p in group["params"])
        return ids

    def lr_series(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """The learning rate of each parameter group at the sampled steps, as
        ``lr/group<i>`` series (empty until an optimizer counts the steps)."""
        trace = list(self.lr_trace)
        if not trace:
            return {}
        steps = np.asarray([row[0] for row in trace], dtype=np.int64)
        values = _lr_table(trace)
        return {f"lr/group{i}": (steps, values[:, i]) for i in range(values.shape[1])}

    def lr_points(self, after: int) -> tuple[np.ndarray, tuple[str, ...], np.ndarray,
                                             np.ndarray] | None:
        """The trace's points at steps after ``after`` as one scalar chunk ``(steps, names,
        values, times)``, one point per group and step (what a run store is handed), or
        ``None`` when there is none."""
        trace = [row for row in list(self.lr_trace) if row[0] > after]
        if not trace:
            return None
        values = _lr_table(trace)
        groups = values.shape[1]
        keep = np.isfinite(values).reshape(-1)
        steps = np.repeat(np.asarray([row[0] for row in trace], dtype=np.int64), groups)
        times = np.repeat(np.asarray([row[2] for row in trace], dtype=float), groups)
        names = tuple(f"lr/group{i}" for i in range(groups)) * len(trace)
        return (steps[keep], tuple(n for n, k in zip(names, keep) if k),
                values.reshape(-1)[keep], times[keep])


def _lr_table(trace: list[tuple[int, tuple[float, ...], float]]) -> np.ndarray:
    """``(steps, groups)`` learning rates, NaN where a step had fewer groups."""
    width = max(len(row[1]) for row in trace)
    values = np.full((len(trace), width), np.nan)
    for i, row in enumerate(trace):
        values[i, :len(row[1])] = row[1]
    return values
