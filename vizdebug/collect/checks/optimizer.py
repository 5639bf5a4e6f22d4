"""What a sampled step can tell about the optimizer that updates the model: gradients left
over from the previous step (``zero_grad`` never called), the learning rate of each
parameter group, and which tensors it can train at all.

All of it waits until an optimizer counts the steps (:class:`~.clock.StepClock`): before,
a step is a forward pass, and gradient accumulation legitimately spans several.

A gradient still held when a sampled step's first backward begins is not a fault by
itself: in a GAN that backward is the other network's loss (``errG.backward()`` flows
through the discriminator), whose gradients the program resets (``netD.zero_grad()``)
before they are used. The fault is the relation :class:`StaleGradient` checks: an
optimizer step that uses gradients accumulated by a backward that ran before the
previous step, never reset in between.
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from ...records import RunDelta
from ..hooks.param_hooks import drop_empty_hooks
from .anomaly import AnomalyEvent, AnomalyPolicy
from .losses import CHECK_EVERY, FULL_CHECKS
from .mode_watch import mode_sensitive

if TYPE_CHECKING:
    from ..hooks.clock import StepClock



PROBES = 8  # parameters read for a left-over gradient at a sampled step, at most


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
        self.stale: list[StaleGradient] = []  # left-over gradients being followed
        self._probe_order: list[int] | None = None  # parameters read for one (their index)

    def begin(self, step: int, clock: StepClock) -> None:
        """A sampled step starts: note each group's learning rate."""
        self.checked = False
        self.sampled += 1
        if self.stale and all(stale.done for stale in self.stale):
            for stale in self.stale:
                stale.close()  # (their hooks are taken off here, outside their own calls)
            self.stale = []
        optimizer = _optimizer(clock)
        if optimizer is not None:
            self.lr_trace.append((step, tuple(float(g["lr"]) for g in optimizer.param_groups),
                                  time.time()))

    def close(self) -> None:
        """Take off the hooks of a left-over gradient still followed (harmless twice)."""
        followed, self.stale = self.stale, []
        for stale in followed:
            stale.close()

    def first_gradient(self, first: int, clock: StepClock, step: int, *,
                       eval_forward: bool = False) -> None:
        """At the first gradient of a sampled step's first backward pass no other parameter
        has received this pass's gradient yet: one that still holds a non-zero gradient
        kept an earlier one, which is followed until its optimizer steps
        (:class:`StaleGradient`). And the forward pass that this backward follows ran in
        train mode, if the model has layers that care."""
        if self.checked or _optimizer(clock) is None:
            return
        self.checked = True
        if eval_forward:
            self._trained_in_eval(step, clock)
        if self.sampled > FULL_CHECKS and self.sampled % CHECK_EVERY:
            return  # left-over gradients show from the first steps on: thin out the reads
        if self.stale or "missing-zero-grad" in self.policy.kinds:
            return
        for probe_idx in self._probes():
            probe = self.params[probe_idx]()
            if probe is None or probe_idx == first or probe.grad is None \
                    or not probe.requires_grad:
                continue
            if bool(probe.grad.detach().any()):
                self.stale.append(StaleGradient(probe, self.param_paths[probe_idx], step,
                                                self.policy))

    def _probes(self) -> list[int]:
        """The parameters read for a left-over gradient: the first and the last, and the
        first of each top-level sub-module. A model that holds two networks trained by two
        optimizers (a generator and its discriminator in one ModuleDict) has one of them
        reset by the other's loop; the first and last parameters alone may both belong to
        the one reset properly."""
        if self._probe_order is None:
            firsts: dict[str, int] = {}
            for i, path in enumerate(self.param_paths):
                firsts.setdefault(path.split(".", 1)[0], i)
            last = len(self.params) - 1
            self._probe_order = list(dict.fromkeys([0, last, *firsts.values()]))[:PROBES]
        return self._probe_order

    def _trained_in_eval(self, step: int, clock: StepClock) -> None:
        model = self.model_ref()
        if model is None or self.eval_trained_reported:
            return
        layers = sorted({type(m).__name__ for m in eval_layers_in_training(model, clock)})
        if not layers:
            return  # eval() changes nothing that trains (a frozen backbone kept in eval)
        self.eval_trained_reported = True
        self.policy.record(AnomalyEvent(
            "train-eval-mode", step, "model", type(model).__name__,
            f"step {step} trained on a forward pass made in eval mode: "
            f"{', '.join(layers[:4])} behave as at inference (no dropout, frozen "
            "BatchNorm statistics)",
            {"check": "trained-in-eval"}))

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

    def records_since(self, cursor: int | None) -> tuple[RunDelta, int | None]:
        """The collector contract: the learning-rate trace's points after step ``cursor``
        (one chunk of ``lr/group<i>`` points; a group a step lacks has none)."""
        chunk = self.lr_points(-(1 << 62) if cursor is None else cursor)
        if chunk is None or not chunk[0].size:
            return RunDelta(), cursor
        return RunDelta(scalars=[chunk]), int(chunk[0][-1])


def _lr_table(trace: list[tuple[int, tuple[float, ...], float]]) -> np.ndarray:
    """``(steps, groups)`` learning rates, NaN where a step had fewer groups."""
    width = max(len(row[1]) for row in trace)
    values = np.full((len(trace), width), np.nan)
    for i, row in enumerate(trace):
        values[i, :len(row[1])] = row[1]
    return values


def eval_layers_in_training(model: Any, clock: StepClock) -> list[Any]:
    """The layers in eval mode that change what trains: each mode-sensitive layer (a
    dropout with ``p > 0``, a norm layer that tracks statistics) in eval mode whose
    nearest module with parameters (itself, or the block around it) has parameters that
    require grad and that the optimizer holds. A frozen backbone kept in ``eval()`` (its
    norm layers' parameters ``requires_grad=False``, or not held) is the fine-tuning
    recipe, not a fault."""
    optimizer = _optimizer(clock)
    held = {id(p) for g in getattr(optimizer, "param_groups", ()) for p in g["params"]}
    parents = {id(child): m for m in model.modules() for child in m.children()}
    out = []
    for module in model.modules():
        if module.training or not mode_sensitive(module):
            continue
        owner = module
        while owner is not None and next(owner.parameters(), None) is None:
            owner = parents.get(id(owner))
        if owner is not None and any(p.requires_grad and id(p) in held
                                     for p in owner.parameters()):
            out.append(module)
    return out


class StaleGradient:
    """A parameter that held a gradient when a sampled step's first backward began,
    followed until the next step of an optimizer that holds it.

    A tensor pre-hook on the parameter sees every gradient that arrives (before it is
    added): a gradient that is ``None``, a new tensor (``zero_grad(set_to_none=True)``)
    or all zeros (``zero_()``) was reset, and the following ends. A global optimizer step
    pre-hook sees the step: if that optimizer holds the parameter and its gradient is
    still the old one, the step uses gradients summed over earlier steps:
    ``missing-zero-grad``. Gradient accumulation resets after each step, and so never
    starts one. Both hooks exist only while one parameter is followed (a sampled step);
    a hook is taken off by the other hook or at the next sampled step, never inside its
    own call (torch iterates the hooks while it calls them).

    Examples
    --------
    >>> import torch
    >>> from vizdebug.collect.checks.anomaly import AnomalyPolicy
    >>> w = torch.nn.Parameter(torch.ones(2)); opt = torch.optim.SGD([w], lr=0.1)
    >>> policy = AnomalyPolicy("ignore")
    >>> (w * 2).sum().backward()  # a gradient left from a backward before the step
    >>> stale = StaleGradient(w, "w", 3, policy)
    >>> (w * 2).sum().backward(); opt.step()  # summed into, never reset, then used
    >>> [e.kind for e in policy.events], stale.done
    (['missing-zero-grad'], True)
    >>> stale.close()
    """

    def __init__(self, param: Any, path: str, step: int, policy: AnomalyPolicy) -> None:
        import torch.optim.optimizer as optim

        self.param = weakref.ref(param)
        self.grad = weakref.ref(param.grad)
        self.path, self.step, self.policy = path, step, policy
        self.done = False
        self._holders: dict[int, bool] = {}  # optimizer id -> holds the parameter
        self._grad_hook: Any = param.register_hook(self._arrives)
        self._step_hook: Any = optim.register_optimizer_step_pre_hook(self._before_step)

    def reset(self) -> bool:
        """Whether the gradient followed is gone: ``None``, replaced, or zeroed."""
        param = self.param()
        grad = None if param is None else param.grad
        return grad is None or grad is not self.grad() or not bool(grad.detach().any())

    def _arrives(self, grad: Any) -> None:
        if not self.done and self.reset():
            self.done = True
            _remove(self, "_step_hook")  # (this hook goes at the next sampled step)

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.done or not self._holds(optimizer):
            return
        self.done = True
        _remove(self, "_grad_hook")  # (this hook goes at the next sampled step)
        if not self.reset() and "missing-zero-grad" not in self.policy.kinds:
            self.policy.record(AnomalyEvent(
                "missing-zero-grad", self.step, self.path, "Parameter",
                f"{self.path!r} held a gradient from before step {self.step} when that "
                "step's backward began, and its optimizer stepped with it, never reset: "
                "gradients of earlier steps are being summed into this one",
                {"check": "stale-gradient"}))

    def _holds(self, optimizer: Any) -> bool:
        holds = self._holders.get(id(optimizer))
        if holds is None:
            param = self.param()
            holds = self._holders[id(optimizer)] = any(
                p is param for g in optimizer.param_groups for p in g["params"])
        return holds

    def close(self) -> None:
        """Take both hooks off (harmless twice)."""
        self.done = True
        _remove(self, "_grad_hook")
        _remove(self, "_step_hook")


def _remove(owner: Any, name: str) -> None:
    handle = getattr(owner, name)
    setattr(owner, name, None)
    if handle is not None:
        handle.remove()
        param = owner.param() if name == "_grad_hook" else None
        if param is not None:
            drop_empty_hooks(param)  # (else each backward would still call into it)
