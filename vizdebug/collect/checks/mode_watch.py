"""Forward passes between training epochs: evaluation made in the wrong mode.

Two faults only show in the passes a loop makes *between* training steps, where no hook
runs (the price of a free training step):

- validation in train mode: ``with torch.no_grad(): model(x_val)`` without ``model.eval()``,
  so dropout stays on and BatchNorm normalises with the batch's statistics (and updates
  its running ones with validation data);
- dropout that ``eval()`` cannot reach: ``F.dropout(x, training=True)`` or
  ``nn.Dropout(p)(x)`` built inside ``forward()``, which stays on in eval mode.

:class:`ModeWatch` puts one forward pre-hook (and its post-hook) on the root module when
the watched training loader ends an epoch, and takes it off at the first forward pass
that trains again: the training steps themselves never run it. In that gap a forward
pass with autograd off (``torch.no_grad``/``inference_mode``) and the model in training
mode, with a layer that behaves differently in eval mode, is evaluation in train mode;
it is reported when training goes on (so an MC-dropout inference after training, which
is deliberate, is not). The first few eval-mode passes run under a
``TorchFunctionMode`` that looks for a dropout applied with ``training=True``.
"""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable
from typing import Any

from ..hooks.compiled import graph_safe
from .anomaly import AnomalyEvent
from .losses import _stack_depth

# eval-mode forward passes looked at for an always-on dropout: the first PROBES of each
# gap between epochs, MAX_PROBES in a session (each costs a Python call per torch call)
PROBES = 2
MAX_PROBES = 8
FRAMES = 40  # stack frames searched for the module whose forward() called the dropout
_DROPOUTS = frozenset({
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "feature_dropout", "dropout_", "alpha_dropout_", "feature_dropout_",
    "feature_alpha_dropout_",
})


def mode_sensitive(module: Any) -> bool:
    """Whether ``module`` computes differently in train and eval mode: a dropout with
    ``p > 0``, a batch/instance norm that tracks running statistics."""
    name = type(module).__name__
    if "Dropout" in name:
        return float(getattr(module, "p", 1.0)) > 0
    if "BatchNorm" in name or "InstanceNorm" in name:
        return bool(getattr(module, "track_running_stats", False))
    return False


class ModeWatch:
    """The between-epochs hook on one model (see the module docstring).

    Events go to ``policy``; ``tap`` is the training loader's tap, which arms it at each
    pass's end, disarms it when it closes, and pauses it with the session (a pass after
    its next batch belongs to a training step, e.g. a pseudo-labelling pass under
    ``no_grad``); ``hooks`` gives the step clock and the loss check (whose mode must leave
    before the probe's enters). ``on_error`` is held weakly, as the tap may outlive the
    session.
    """

    def __init__(self, model: Any, policy: Any, tap: Any, hooks: Any,
                 on_error: Callable[[str, BaseException], None]) -> None:
        self.model_ref = weakref.ref(model)
        self.record = policy.record
        self.tap = tap
        self.clock = hooks.clock
        # a compiled model: no hook where it would run compiled, and no dropout probe (a
        # torch function mode is part of what dynamo's compiled code is valid for)
        self.hookable, self.compiled = hooks._root_hookable, bool(hooks.compiled)
        self.before_probe: Callable[[], None] = hooks.losses.disarm
        self._on_error = weakref.WeakMethod(on_error)  # type: ignore[arg-type]
        tap.mode_watch = self
        self.root = type(model).__name__
        self.handles: list[Any] = []
        self.armed_at = -1  # the loader's batch count when the epoch ended
        self.suspect: list[str] | None = None  # mode-sensitive layers of a no-grad train pass
        self.probes = 0  # eval passes probed in this gap
        self.probed = 0  # ... in the session
        self.reported: set[str] = set()
        self._mode: Any = None  # the dropout probe of the eval pass in progress
        self._depth = 0  # the torch function mode stack's depth with the probe on top

    def on_error(self, where: str, exc: BaseException) -> None:
        sink = self._on_error()
        if sink is not None:
            sink(where, exc)

    def arm(self) -> None:
        """The training loader ended an epoch: watch forward passes until training resumes."""
        try:
            model = self.model_ref()
            if model is None or self.handles or not self.hookable:
                return
            self.armed_at, self.probes = self.tap.batches, 0
            # the probe's mode is left before any other post-hook runs (the loss check
            # pushes its own mode there)
            self.handles = [model.register_forward_pre_hook(graph_safe(self._pre_hook)),
                            model.register_forward_hook(graph_safe(self._post_hook),
                                                        always_call=True, prepend=True)]
        except Exception as exc:
            self.on_error("the train/eval mode check", exc)

    def disarm(self) -> bool:
        """Take the hooks off; ``True`` when they were on (between epochs)."""
        handles, self.handles = self.handles, []
        for handle in handles:
            handle.remove()
        self._end_probe()
        return bool(handles)

    # -- hooks ------------------------------------------------------------------------------
    def _pre_hook(self, module: Any, args: tuple) -> None:
        import torch

        if self.tap.paused:
            return  # Session.paused(): the session's own passes (an embedding probe)
        try:
            grad = torch.is_grad_enabled()
            if module.training and grad:  # training resumed: the gap is over
                self._confirm()
                self.disarm()
            elif module.training:
                if self.suspect is None and self.tap.batches == self.armed_at:
                    self.suspect = _train_mode_layers(module)
            elif (self.probes < PROBES and self.probed < MAX_PROBES and not self.compiled
                  and "dropout" not in self.reported and not _has_fast_path(module)):
                self.probes += 1
                self.probed += 1
                self.before_probe()  # a loss check still armed leaves first (modes nest)
                mode = _probe_class()(self)
                mode.__enter__()
                self._mode, self._depth = mode, _stack_depth()
        except Exception as exc:
            self.on_error("the train/eval mode check", exc)

    def _post_hook(self, module: Any, args: tuple, output: Any) -> None:
        self._end_probe()

    def _end_probe(self) -> None:
        mode, self._mode = self._mode, None
        if mode is not None:
            try:
                if _stack_depth() != self._depth:  # never pop another's mode
                    raise RuntimeError("a torch function mode entered in forward() was "
                                       "not left; the dropout probe stays on this thread")
                mode.__exit__(None, None, None)
            except Exception as exc:
                self.on_error("the train/eval mode check", exc)

    # -- findings ---------------------------------------------------------------------------
    def _confirm(self) -> None:
        layers, self.suspect = self.suspect, None
        if not layers or "validation" in self.reported:
            return
        self.reported.add("validation")
        step = max(self.clock.step, 0)
        self.record(AnomalyEvent(
            "train-eval-mode", step, self.root, self.root,
            f"forward passes without gradients (evaluation) ran with the model in train mode "
            f"before step {step}: {', '.join(layers[:4])} behaved as in training (dropout "
            "on, BatchNorm using and updating batch statistics), so the metrics computed "
            "there are not the model's",
            {"check": "validation-in-train-mode"}))

    def dropout_call(self, name: str, args: tuple, kwargs: dict) -> None:
        """A dropout function was called inside an eval-mode forward pass: reported when
        it is applied (``training``/``train`` true, which ``F.dropout`` defaults to) with
        ``p > 0``."""
        try:
            training = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else True))
            p = float(kwargs.get("p", args[1] if len(args) > 1 else 0.5))
            if training and p > 0 and "dropout" not in self.reported:
                self._dropout_seen(name, p)
        except Exception as exc:
            self.on_error("the train/eval mode check", exc)

    def _dropout_seen(self, name: str, p: float) -> None:
        self.reported.add("dropout")
        path = self._caller()
        step = max(self.clock.step, 0)
        self.record(AnomalyEvent(
            "train-eval-mode", step, path, "dropout",
            f"in eval mode, the forward() of {path!r} applied {name}(p={p:g}) with "
            "training=True: eval() cannot switch it off, so the model's predictions are "
            "random at evaluation and inference",
            {"check": "functional-dropout", "function": name}))

    def _caller(self) -> str:
        """The path of the innermost module of the model whose forward() is on the stack."""
        model = self.model_ref()
        paths = {id(m): n or self.root for n, m in model.named_modules()} if model else {}
        frame = sys._getframe(1)
        for _ in range(FRAMES):
            if frame is None:
                break
            path = paths.get(id(frame.f_locals.get("self")))
            if path is not None:
                return path
            frame = frame.f_back
        return self.root


def _train_mode_layers(model: Any) -> list[str]:
    """Classes of the layers in train mode that compute differently in eval mode (``[]``
    when the model has none: then a no-grad pass in train mode changes nothing)."""
    return sorted({type(m).__name__ for m in model.modules() if m.training and mode_sensitive(m)})


def _has_fast_path(model: Any) -> bool:
    """Whether ``model`` holds a layer whose eval-mode fast path turns itself off under a
    torch function mode (its output then differs in the last bits: not probed)."""
    from torch import nn

    fast = (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder)
    return any(isinstance(m, fast) for m in model.modules())


@functools.cache
def _probe_class() -> type:
    """:class:`TorchFunctionMode` subclass made on first use (torch is imported lazily)."""
    from torch.overrides import TorchFunctionMode

    class DropoutProbe(TorchFunctionMode):
        """Sees every torch call of one eval-mode forward pass, for a dropout in training."""

        def __init__(self, watch: ModeWatch) -> None:
            super().__init__()
            self.watch = watch

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if getattr(func, "__name__", "") in _DROPOUTS:
                self.watch.dropout_call(func.__name__, args, kwargs)
            return func(*args, **kwargs)

    return DropoutProbe
