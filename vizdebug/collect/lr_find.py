"""The LR range test's loop: train a few steps at exponentially rising rates, record the
loss, stop at divergence, and put everything back exactly as it was.

:class:`Snapshot` keeps what a training step changes: every parameter and buffer (and its
``.grad``), the optimizer's per-parameter state (momentum buffers, Adam's moments and step
counts) and its param groups' hyperparameters, each module's train/eval mode, and the RNG
states of torch (CPU and CUDA), numpy, Python and the loader's own generators. Restoring
copies the saved values back into the same objects, so references the user holds (a
scheduler's optimizer, a group dict) stay valid. The curve is read by
:mod:`vizdebug.analysis.training.lr_range`.
"""

from __future__ import annotations

import contextlib
import copy
import math
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.training.lr_range import DIVERGE_FACTOR, Smoother, lr_schedule
from ..data.parts import split_batch
from ..errors import VizdebugError, VizdebugTypeError, describe


@dataclass
class RangeTest:
    """The rates tried, the loss measured at each, and why the test stopped."""

    lrs: np.ndarray
    losses: np.ndarray
    stopped: str
    optimizer: str


def _generators(loader: Any) -> list[Any]:
    """The torch generators a DataLoader and its sampler draw from (shuffling, workers'
    seeds), whose states the test must put back."""
    import torch

    found = []
    for owner in (loader, getattr(loader, "sampler", None), getattr(loader, "batch_sampler", None),
                  getattr(getattr(loader, "batch_sampler", None), "sampler", None)):
        gen = getattr(owner, "generator", None)
        if isinstance(gen, torch.Generator) and all(gen is not g for g in found):
            found.append(gen)
    return found


class Snapshot:
    """Everything a training step changes, saved, and put back by :meth:`restore`."""

    def __init__(self, model: Any, optimizer: Any, loader: Any) -> None:
        import torch

        self.model, self.optimizer = model, optimizer
        self.tensors = [(t, t.detach().clone()) for t in _tensors(model)]
        self.grads = [(p, None if p.grad is None else p.grad.detach().clone())
                      for p in model.parameters()]
        self.modes = [(m, m.training) for m in model.modules()]
        self.opt_state = {p: copy.deepcopy(s) for p, s in optimizer.state.items()}
        self.groups = [{k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
                       for g in optimizer.param_groups]
        self.torch_rng = torch.get_rng_state()
        self.cuda_rng = (torch.cuda.get_rng_state_all()
                         if torch.cuda.is_available() and torch.cuda.is_initialized() else None)
        self.numpy_rng = np.random.get_state()
        self.python_rng = random.getstate()
        self.generators = [(g, g.get_state()) for g in _generators(loader)]

    def restore(self) -> None:
        import torch

        with torch.no_grad():
            for tensor, saved in self.tensors:
                tensor.copy_(saved)
        for p, grad in self.grads:
            p.grad = grad
        for module, mode in self.modes:
            module.training = mode
        self.optimizer.state.clear()
        self.optimizer.state.update(self.opt_state)
        for group, saved in zip(self.optimizer.param_groups, self.groups):
            for key in [k for k in group if k != "params"]:
                del group[key]
            group.update(saved)
        torch.set_rng_state(self.torch_rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        np.random.set_state(self.numpy_rng)
        random.setstate(self.python_rng)
        for gen, state in self.generators:
            gen.set_state(state)


def _tensors(model: Any) -> list[Any]:
    """Each parameter and buffer once (tied weights appear once)."""
    seen: set[int] = set()
    out = []
    for t in [*model.parameters(), *model.buffers()]:
        if id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def _to(obj: Any, device: Any) -> Any:
    """Tensors in ``obj`` (nested in tuples, lists, dicts) moved to ``device``."""
    if hasattr(obj, "to") and hasattr(obj, "device"):
        return obj if obj.device == device else obj.to(device)
    if isinstance(obj, Mapping):
        return {k: _to(v, device) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to(v, device) for v in obj) if not hasattr(obj, "_fields") \
            else type(obj)(*(_to(v, device) for v in obj))
    return obj


def _batch_loss(model: Any, batch: Any, loss_fn: Any, batch_fn: Callable | None,
                forward: Callable | None, device: Any) -> Any:
    if forward is not None:
        return forward(model, _to(batch, device))
    if batch_fn is not None:
        x, y = batch_fn(batch)
    else:
        x, y = split_batch(batch)
        if x is None or (y is None and isinstance(batch, Mapping)):
            keys = list(batch)[:10] if isinstance(batch, Mapping) else describe(batch)
            raise VizdebugError(
                f"lr_find() cannot tell the model's input and target in a batch of {keys}; pass "
                "batch_fn=lambda b: (inputs, target), or forward=lambda model, b: loss")
    x, y = _to(x, device), _to(y, device)
    out = model(**x) if isinstance(x, Mapping) else model(x)
    return loss_fn(out) if y is None else loss_fn(out, y)


def _loss_value(loss: Any, step: int) -> float:
    import torch

    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise VizdebugError(
            f"lr_find() needs a loss of one number per batch; loss_fn returned {describe(loss)} "
            f"at step {step}. Use a reduction such as reduction='mean', or .mean() it in forward=")
    if not loss.requires_grad:
        raise VizdebugError(
            f"lr_find()'s loss at step {step} does not require grad (computed under no_grad, "
            "detached, or the model has no trainable parameters): the test cannot train")
    return float(loss.detach())


def _batches(loader: Any) -> Any:
    """The loader's batches, started again when it runs out (a test longer than an epoch)."""
    while True:
        got = False
        for batch in loader:
            got = True
            yield batch
        if not got:
            raise VizdebugError(f"lr_find() was given a loader with no batches: {describe(loader)}")


def run_range_test(model: Any, loader: Any, loss_fn: Any, optimizer: Any, *, start_lr: float,
                   end_lr: float, num_steps: int, diverge_factor: float = DIVERGE_FACTOR,
                   batch_fn: Callable | None = None,
                   forward: Callable | None = None) -> RangeTest:
    """Train ``num_steps`` steps at rates from ``start_lr`` to ``end_lr`` (log spaced),
    recording each batch's loss; stop when the smoothed loss passes ``diverge_factor`` x
    its best or is not finite. The model, optimizer and RNG states are put back however
    the loop ends (an error in the user's code propagates unchanged after that)."""
    import torch

    device = next(model.parameters()).device
    if optimizer is None:
        optimizer = torch.optim.Adam(model.parameters(), lr=start_lr)
    snapshot = Snapshot(model, optimizer, loader)
    lrs, losses = lr_schedule(start_lr, end_lr, num_steps), []
    smoother = Smoother(factor=diverge_factor)
    batches = _batches(loader)
    with _unwatched(model):
        stopped = _loop(model, optimizer, loss_fn, batches, lrs, losses, smoother, snapshot,
                        batch_fn, forward, device)
    return RangeTest(lrs[:len(losses)], np.asarray(losses, dtype=float), stopped,
                     type(optimizer).__name__)


def _unwatched(model: Any) -> Any:
    """A watching Session's ``paused()`` (its hooks off: the test's steps are not the
    user's training), or nothing when the model is not watched."""
    from .session.watch import _SESSIONS

    session = _SESSIONS.get(model)
    if session is None or session.closed:
        return contextlib.nullcontext()
    return session.paused()


def _loop(model: Any, optimizer: Any, loss_fn: Any, batches: Any, lrs: np.ndarray,
          losses: list[float], smoother: Smoother, snapshot: Snapshot, batch_fn: Any,
          forward: Any, device: Any) -> str:
    stopped = "end"
    try:
        if not model.training:
            model.train()  # the test trains; each module's mode is put back after
        for step, lr in enumerate(lrs):
            batch = next(batches)
            for group in optimizer.param_groups:
                group["lr"] = float(lr)
            optimizer.zero_grad(set_to_none=True)
            loss = _batch_loss(model, batch, loss_fn, batch_fn, forward, device)
            value = _loss_value(loss, step)
            losses.append(value)
            if not math.isfinite(value):
                stopped = "non-finite"
                break
            loss.backward()
            _step(optimizer, model, batch, loss_fn, batch_fn, forward, device)
            if smoother.diverged(smoother.add(value)):
                stopped = "diverged"
                break
    finally:
        batches.close()  # a DataLoader's workers end with its iterator
        snapshot.restore()
    return stopped


def _step(optimizer: Any, model: Any, batch: Any, loss_fn: Any, batch_fn: Any, forward: Any,
          device: Any) -> None:
    import torch

    if not isinstance(optimizer, torch.optim.LBFGS):
        optimizer.step()
        return

    def closure() -> Any:  # LBFGS evaluates the loss several times per step
        optimizer.zero_grad(set_to_none=True)
        loss = _batch_loss(model, batch, loss_fn, batch_fn, forward, device)
        loss.backward()
        return loss

    optimizer.step(closure)


def check_arguments(model: Any, loader: Any, loss_fn: Any, optimizer: Any, start_lr: Any,
                    end_lr: Any, num_steps: Any, forward: Any) -> None:
    """Refuse, by name, what the test cannot use, before it touches anything."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise VizdebugTypeError(f"lr_find() needs a torch.nn.Module as model, got {describe(model)}")
    params = list(model.parameters())
    if any(isinstance(p, torch.nn.parameter.UninitializedParameter) for p in params):
        raise VizdebugError("lr_find() was given a model with lazy modules not yet initialised; "
                            "run one batch through it first, then call lr_find()")
    if not any(p.requires_grad for p in params):
        raise VizdebugError("lr_find() was given a model with no trainable parameters")
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise VizdebugTypeError(
            f"optimizer must be a torch.optim.Optimizer (or None for Adam), got {describe(optimizer)}")
    if loss_fn is None and forward is None or loss_fn is not None and not callable(loss_fn):
        raise VizdebugTypeError(
            f"loss_fn must be callable as loss_fn(output, target), got {describe(loss_fn)}; "
            "or pass forward=lambda model, batch: loss")
    if loader is None or not hasattr(loader, "__iter__"):
        raise VizdebugTypeError(f"lr_find() needs an iterable of batches (a DataLoader), got "
                                f"{describe(loader)}")
    if isinstance(loader, Iterator):
        raise VizdebugTypeError("lr_find() needs a loader it can iterate more than once (a "
                                f"DataLoader or a list of batches), got the iterator {describe(loader)}")
    for name, value in (("start_lr", start_lr), ("end_lr", end_lr)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            raise VizdebugError(f"{name} must be a positive number, got {value!r}")
    if start_lr >= end_lr:
        raise VizdebugError(f"start_lr ({start_lr!r}) must be below end_lr ({end_lr!r}), "
                            "e.g. start_lr=1e-7, end_lr=10")
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 5:
        raise VizdebugError(f"num_steps must be an int of at least 5, got {num_steps!r}")
