"""Forward, pre-forward and gradient hooks on a model: per-layer health, lazily read.

Every ``every``-th training step (a forward pass in training mode) each leaf module's
output is summarised on its device (:func:`~vizdebug.collect.stats.activation_stats`) and
each parameter's gradient norm, weight norm and copy are taken when its gradient is
accumulated. Nothing is read back during the step: a sampled step is *sealed* (stacked)
when the next training step starts, and read one sample period later, when the device
finished it long ago, so the read never stalls the pipeline.

Hooks never change an output (they return ``None``) and never draw random numbers; any
exception inside one is handed to ``on_error`` and training goes on. The model is held by
a weak reference.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .anomaly import AnomalyEvent, AnomalyPolicy, WatchAnomaly
from .samples import SampleBuffer
from .stats import ACTIVATION_FIELDS, activation_stats, describe_tensor

if TYPE_CHECKING:
    import torch

GRAD_FIELDS = ("grad_norm", "weight_norm", "update_ratio")
ErrorSink = Callable[[str, BaseException], None]


def first_tensor(value: Any) -> torch.Tensor | None:
    """The first tensor in an output (a tensor, or the first one in a tuple/list/dict)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                return item
    return None


class _Pending:
    """What one sampled step collected so far (device tensors, not read yet)."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.act: list[tuple[int, torch.Tensor]] = []
        self.grad: list[tuple[int, torch.Tensor, torch.Tensor]] = []
        self.before: dict[int, torch.Tensor] = {}
        self.update: torch.Tensor | None = None


class ModelHooks:
    """The hooks on one model, and the statistics they collected.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    >>> hooks = ModelHooks(model, every=1, policy=AnomalyPolicy("ignore"))
    >>> _ = model(torch.randn(8, 4)); hooks.flush()
    >>> hooks.module_paths
    ['0', '1']
    >>> hooks.remove()
    """

    def __init__(self, model: torch.nn.Module, *, every: int, policy: AnomalyPolicy,
                 on_error: ErrorSink | None = None, capacity: int = 1000) -> None:
        self.every = every
        self.policy = policy
        self.on_error = on_error or (lambda where, exc: None)
        self.model_ref = weakref.ref(model)
        named = [(n, m) for n, m in model.named_modules() if not any(True for _ in m.children())]
        self.module_paths = [n or type(model).__name__ for n, _ in named]
        self.module_classes = [type(m).__name__ for _, m in named]
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.param_paths = [n for n, _ in params]
        self.activations = SampleBuffer(capacity)
        self.grads = SampleBuffer(capacity)
        self.step = -1
        self.sampling = False
        self._eval = False
        self._current: _Pending | None = None
        self._sealed: list[tuple[int, Any, Any]] = []
        self._lock = threading.RLock()
        self._none_source: str | None = None
        self._seen_nonfinite = False
        self.handles: list[Any] = []
        self._register(model, named, params)

    # -- registration -------------------------------------------------------------------
    def _register(self, model: torch.nn.Module, named: list, params: list) -> None:
        add = self.handles.append
        add(model.register_forward_pre_hook(self._root_pre_hook))
        leaves = {id(m) for _, m in named}
        for idx, (_, module) in enumerate(named):
            add(module.register_forward_pre_hook(self._make_pre_hook(idx)))
            add(module.register_forward_hook(self._make_forward_hook(idx)))
        for path, module in model.named_modules():
            if id(module) not in leaves:
                add(module.register_forward_hook(self._make_container_hook(path)))
        for idx, (_, param) in enumerate(params):
            add(param.register_post_accumulate_grad_hook(self._make_grad_hook(idx)))

    def remove(self) -> None:
        """Remove every hook (harmless when called twice)."""
        handles, self.handles = self.handles, []
        for handle in handles:
            handle.remove()
        self._current = None

    # -- hooks --------------------------------------------------------------------------
    def _root_pre_hook(self, module: torch.nn.Module, args: tuple) -> None:
        try:
            self._eval = not module.training
            if self._eval:
                return
            self.step += 1
            self._seal()
            self.sampling = self.step % self.every == 0
            if self.sampling:
                self._current = _Pending(self.step)
        except Exception as exc:
            self.on_error("the step counter", exc)

    def _make_pre_hook(self, idx: int) -> Callable:
        def pre_hook(module: torch.nn.Module, args: tuple) -> None:
            for position, arg in enumerate(args):
                if arg is None:
                    self._input_none(idx, position)
        return pre_hook

    def _make_forward_hook(self, idx: int) -> Callable:
        def forward_hook(module: torch.nn.Module, inputs: tuple, output: Any) -> None:
            try:
                if output is None:
                    self._none_source = self.module_paths[idx]
                    return
                if self.policy.immediate:
                    self._check_finite(idx, inputs, output)
                if self.sampling and not self._eval and self._current is not None:
                    tensor = first_tensor(output)
                    if tensor is not None:
                        stats = activation_stats(tensor, self.module_classes[idx])
                        self._current.act.append((idx, stats))
            except WatchAnomaly:
                raise
            except Exception as exc:
                self.on_error(f"the activation collector on {self.module_paths[idx]!r}", exc)
        return forward_hook

    def _make_container_hook(self, path: str) -> Callable:
        def container_hook(module: torch.nn.Module, inputs: tuple, output: Any) -> None:
            if output is None:
                self._none_source = path or type(module).__name__
        return container_hook

    def _make_grad_hook(self, idx: int) -> Callable:
        def grad_hook(param: torch.Tensor) -> None:
            current = self._current
            if not self.sampling or current is None or param.grad is None:
                return
            try:
                import torch

                with torch.no_grad():
                    grad_norm = torch.linalg.vector_norm(param.grad.detach()).float()
                    weight_norm = torch.linalg.vector_norm(param.detach()).float()
                    current.before[idx] = param.detach().clone()
                current.grad.append((idx, grad_norm, weight_norm))
            except Exception as exc:
                self.on_error(f"the gradient collector on {self.param_paths[idx]!r}", exc)
        return grad_hook

    # -- anomalies ----------------------------------------------------------------------
    def _input_none(self, idx: int, position: int) -> None:
        path, cls = self.module_paths[idx], self.module_classes[idx]
        source = self._none_source
        origin = f"; {source!r} returned None just before" if source else ""
        event = AnomalyEvent(
            "input-none", max(self.step, 0), path, cls,
            f"module {path!r} ({cls}) received None as input {position} at step "
            f"{max(self.step, 0)}{origin}",
            {"position": position, "source": source},
        )
        self.policy.handle(event, frame=_caller_frame())

    def _check_finite(self, idx: int, inputs: tuple, output: Any) -> None:
        import torch

        tensor = first_tensor(output)
        if self._seen_nonfinite or tensor is None or not tensor.is_floating_point():
            return
        if bool(torch.isfinite(tensor.detach()).all()):
            return
        self._seen_nonfinite = True
        path, cls = self.module_paths[idx], self.module_classes[idx]
        step = max(self.step, 0)
        ins = "; ".join(describe_tensor(t) for t in inputs) or "no inputs"
        message = (
            f"first non-finite activation at step {step}: output of {path!r} ({cls}): "
            f"{describe_tensor(tensor)}. Input: {ins}"
        )
        event = AnomalyEvent("nonfinite-activation", step, path, cls, message,
                             {"input": ins, "output": describe_tensor(tensor)})
        self.policy.handle(event, frame=_caller_frame())

    # -- sealing and reading --------------------------------------------------------------
    def _seal(self) -> None:
        """Stack the finished sampled step (no read), and read those sealed earlier."""
        with self._lock:
            current, self._current = self._current, None
            if current is not None:
                self._sealed.append(self._stack(current))
            if len(self._sealed) > 1:
                self._read(self._sealed[:-1])
                self._sealed = self._sealed[-1:]

    def _stack(self, pending: _Pending) -> tuple[int, Any, Any]:
        import torch

        act = None
        if pending.act:
            idx = torch.tensor([i for i, _ in pending.act])
            act = (idx, torch.stack([s for _, s in pending.act]))
        grad = None
        if pending.grad:
            idx = torch.tensor([i for i, _, _ in pending.grad])
            model = self.model_ref()
            by_idx = dict(zip(range(len(self.param_paths)), _params(model))) if model else {}
            with torch.no_grad():
                updates = [
                    torch.linalg.vector_norm(by_idx[i].detach() - pending.before[i]).float()
                    if i in by_idx else torch.tensor(float("nan"))
                    for i, _, _ in pending.grad
                ]
            norms = torch.stack([torch.stack([g, w, u]) for (_, g, w), u
                                 in zip(pending.grad, updates)])
            grad = (idx, norms)
        return pending.step, act, grad

    def _read(self, sealed: list[tuple[int, Any, Any]]) -> None:
        width = len(ACTIVATION_FIELDS) + 1
        for step, act, grad in sealed:
            if act is not None:
                idx, stats = act[0].numpy(), act[1].double().cpu().numpy()
                row = np.full((len(self.module_paths), width), np.nan)
                row[idx, :-1] = stats
                row[idx, -1] = np.arange(idx.size)  # execution order within the step
                self.activations.append(step, row)
                self._note_nonfinite(step, row)
            if grad is not None:
                idx, norms = grad[0].numpy(), grad[1].double().cpu().numpy()
                row = np.full((len(self.param_paths), len(GRAD_FIELDS)), np.nan)
                row[idx] = norms
                row[idx, 2] = norms[:, 2] / np.where(norms[:, 1] > 0, norms[:, 1], np.nan)
                self.grads.append(step, row)

    def _note_nonfinite(self, step: int, row: np.ndarray) -> None:
        """Turn the first sampled non-finite activation into an event (warn/ignore modes)."""
        if self._seen_nonfinite:
            return
        bad = np.flatnonzero(row[:, ACTIVATION_FIELDS.index("nonfinite")] > 0)
        if bad.size == 0:
            return
        self._seen_nonfinite = True
        first = bad[np.argmin(row[bad, -1])]
        path, cls = self.module_paths[first], self.module_classes[first]
        count = int(row[first, ACTIVATION_FIELDS.index("nonfinite")])
        total = int(row[first, ACTIVATION_FIELDS.index("numel")])
        message = (f"first non-finite activation seen at sampled step {step}: output of "
                   f"{path!r} ({cls}) has {count} non-finite values of {total}")
        order = int(row[first, -1])
        self.policy.record(AnomalyEvent("nonfinite-activation", step, path, cls, message,
                                        {"count": count, "numel": total, "order": order}))

    def flush(self) -> None:
        """Seal the step in progress and read everything (call between steps)."""
        with self._lock:
            self._seal()
            sealed, self._sealed = self._sealed, []
            self._read(sealed)

    def read_sealed(self) -> None:
        """Read what is already sealed, leaving the step in progress alone (any thread)."""
        with self._lock:
            sealed, self._sealed = self._sealed, []
            self._read(sealed)


def _params(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p for _, p in model.named_parameters() if p.requires_grad]


def _caller_frame() -> Any:
    import sys

    return sys._getframe(2)
