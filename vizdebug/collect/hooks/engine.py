"""Forward, pre-forward and gradient hooks on a model: per-layer health, lazily read.

:class:`ModelHooks` attaches and detaches the hooks and holds the closures; the state is
owned by the objects the package docstring lists, each with one job.

Between samples no hook runs in the model: the per-layer hooks (and, once an optimizer
counts the steps, the root module's) are attached for sampled steps only; with
``every=1`` or an immediate ``on_anomaly`` they stay. Hooks never change an output (they
return ``None``) and never draw random numbers; any exception inside one is handed to
``on_error`` and training goes on. The model is held by a weak reference.
"""

from __future__ import annotations

import functools
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...records import RunDelta
from ..checks.anomaly import AnomalyPolicy, WatchAnomaly
from ..checks.crash import CrashNamer
from ..checks.losses import LossWatch
from ..checks.optimizer import OptimizerChecks
from .clock import StepClock
from .compiled import graph_safe, hook_sites, under_transform
from .fused import StepPreHook, at_end_of_backward
from .gradients import GradientCollector, StepGrads
from .outputs import OutputCollector
from .param_hooks import ParamHooks, class_name
from .parking import LayerHooks, ParkedHooks, remove_all
from .pending import READ_AFTER, PendingSteps
from .samples import stack_rows
from .sampling import StepSampler
from .stats import first_tensor, nonfinite_event

if TYPE_CHECKING:
    import torch

__all__ = ["READ_AFTER", "ModelHooks"]
# Shape-only modules repeat their input's statistics: not worth a sample.
_RESHAPES = frozenset({"Flatten", "Unflatten", "Identity"})
ErrorSink = Callable[[str, BaseException], None]


class ModelHooks(LayerHooks):
    """The hooks on one model, and the statistics they collected.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
    >>> hooks = ModelHooks(model, every=1, policy=AnomalyPolicy("ignore"))
    >>> _ = model(torch.randn(8, 4)); hooks.flush()
    >>> hooks.module_paths, len(hooks.activations)
    (['0', '1'], 1)
    >>> hooks.remove()
    """

    def __init__(self, model: torch.nn.Module, *, every: int | str, policy: AnomalyPolicy,
                 on_error: ErrorSink | None = None, capacity: int = 1000) -> None:
        self.every = every
        self.sampler = StepSampler(every)
        self.policy = policy
        self.on_error = on_error or (lambda where, exc: None)
        self.model_ref = weakref.ref(model)
        named = [(n, m) for n, m in model.named_modules() if not any(True for _ in m.children())]
        self.module_paths = [n or type(model).__name__ for n, _ in named]
        self.module_classes = [class_name(m) for _, m in named]  # (a lazy one's future class)
        params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.param_paths = [n for n, _ in params]
        # none inside compiled code (torch.compile, TorchScript); gradients are still read
        sites = hook_sites(model, [m for _, m in named])
        self._leaves, self._containers = sites.leaves, sites.containers
        self._root_hookable, self.compiled = sites.root, sites.compiled
        self.outputs = OutputCollector(self.module_classes, [m for _, m in named])
        self.gradients = GradientCollector([p for _, p in params])
        self.param_hooks = ParamHooks([p for _, p in params])  # (lazy ones: after forward)
        self.pending = PendingSteps(self.module_paths, self.module_classes, len(params),
                                    policy, capacity, self.on_error)
        self.activations, self.grads = self.pending.activations, self.pending.grads
        paths = {id(m): n or type(model).__name__ for n, m in model.named_modules()}
        self.crash = CrashNamer(paths, policy, step=lambda: self.step)
        self.optimizer_checks = OptimizerChecks(self.model_ref, self.param_paths,
                                                self.gradients.params, policy, capacity)
        self.losses = LossWatch(policy.record, self.on_error, self._trainable_ids)
        # the loss checks stop before the model's optimizer steps (its loss was seen; at
        # the first step, before the first optimizer that holds the model's parameters:
        # otherwise its whole step ran through the loss checks' mode, ~1.6 ms on an MLP)
        self._loss_seen = StepPreHook(self.losses.disarm, lambda o: self.clock.counts(o),
                                      self.on_error)
        self.sampling = False  # the step in progress is sampled
        self.on_input: Callable[[tuple], None] | None = None  # a sampled step's model input
        self.known_tensors: Callable[[], set[int]] = set  # trained or fed by the program
        self._sampled_step: int | None = None  # its number, until it is sealed
        self._armed = False  # the loss checks may be armed (see _disarm)
        self._eval = self._transformed = False
        # (ident, Thread) of the thread whose steps the clock counts
        self.train_thread: tuple[int, threading.Thread] | None = None
        # Per-layer hooks cost Python calls on every step, so they are attached only for
        # sampled steps; with every=1 or an immediate on_anomaly they stay.
        self.permanent = every == 1 or policy.immediate
        self._paused_at: float | None = None
        self._removed = False
        self._parked: ParkedHooks | None = None  # the per-layer hooks between samples
        self._rooted = False  # whether they include the root hooks
        self.handles: list[Any] = self._root_hooks(model)
        self.step_handles: list[Any] = []
        self._hooked = False
        self.clock = StepClock({id(p) for _, p in params}, self._new_step,
                               self._optimizer_counts, self.on_error)
        if self.permanent:
            self._attach()

    def _trainable_ids(self) -> set[int] | None:
        """Tensors a loss may legitimately reach: the model's and its optimizer's, any other
        optimizer's (a GAN's other network) and the step's own inputs (a penalty term)."""
        ids = self.optimizer_checks.trainable_ids(self.clock)
        return None if ids is None else ids | self.known_tensors()

    @property
    def step(self) -> int:
        """The training step in progress (-1 before the first)."""
        return self.clock.step

    @property
    def steps(self) -> int:
        """Training steps so far (see :attr:`StepClock.steps`)."""
        return self.clock.steps

    # -- registration -------------------------------------------------------------------
    def _root_hooks(self, model: torch.nn.Module) -> list[Any]:
        if not self._root_hookable:
            return []  # steps are counted by the optimizer (or begin_step())
        return [model.register_forward_pre_hook(graph_safe(self._root_pre_hook)),
                model.register_forward_hook(graph_safe(self._root_post_hook),
                                            always_call=True)]

    def _remove_root_hooks(self) -> None:
        handles, self.handles = self.handles, []
        remove_all(handles)

    def pause(self) -> None:
        """Take every hook off until :meth:`resume` (call between training steps); the
        time in between counts neither as training nor as collector time."""
        if self._paused_at is not None or self._removed:
            return
        self._paused_at = self.sampler.clock()
        self._disarm()
        self.clock.unhook()
        self._detach()
        remove_all(self.handles)

    def resume(self) -> None:
        """Put back what :meth:`pause` took off (harmless when not paused)."""
        if self._paused_at is None or self._removed:
            return
        self.sampler.exclude(self.sampler.clock() - self._paused_at)
        self._paused_at = None
        model = self.model_ref()
        if model is None:
            return
        self.clock.hook()
        if self.handles:
            self.handles = self._root_hooks(model)
        if self.permanent or self.sampling or self._sampled_step is not None:
            self._attach()

    def remove(self) -> None:
        """Remove every hook (harmless when called twice)."""
        self._disarm()
        self._paused_at, self._removed = None, True
        self.clock.unhook()
        self._detach(park=False)
        self._remove_root_hooks()
        self.gradients.clear()
        self.outputs.discard()
        self.optimizer_checks.close()  # (a left-over gradient's hooks)
        self._sampled_step = None

    # -- the step clock's callbacks -----------------------------------------------------
    def _optimizer_counts(self) -> None:
        """An optimizer counts the steps from now on: the root hooks go (but for sampled
        steps, or for good with ``every=1``/an immediate ``on_anomaly``)."""
        if not self.permanent:
            self._detach()
            self._remove_root_hooks()

    def _new_step(self) -> None:
        """A training step starts: seal the sampled one that ended, and attach or detach
        the per-layer hooks (a few comparisons between samples)."""
        trainer = self.train_thread
        if trainer is None or trainer[0] != threading.get_ident():
            self.train_thread = (threading.get_ident(), threading.current_thread())
        try:
            if self._armed:
                self._disarm()  # the sampled step's loss was seen (or never came)
            sampler, step = self.sampler, self.clock.step
            sampling = sampler.start_step(step)
            if not sampling and self._sampled_step is None and (
                    self.permanent or not self._hooked):
                self.sampling = False  # (between samples: no more than this)
                return
            start = sampler.clock()
            if self._seal():
                sampler.charge(sampler.clock() - start)
                sampler.sample_done(step)
                sampling = sampler.start_step(step)
                start = sampler.clock()
            self.sampling = sampling
            if sampling:
                sampler.begin_sample()
                self._begin_sample(step)
            if not self.permanent and sampling and not self._hooked:
                self._attach()
            elif not self.permanent and not sampling and self._hooked:
                self._detach()
            sampler.charge(sampler.clock() - start)
        except Exception as exc:
            self.on_error("the step counter", exc)

    def _begin_sample(self, step: int) -> None:
        self._sampled_step = step
        self.optimizer_checks.begin(step, self.clock)
        self.outputs.begin()
        self.gradients.begin()

    def _seal(self) -> bool:
        """Hand the finished sampled step to the pending steps (no read). True when a
        sampled step was sealed."""
        with self.pending.lock:
            step, self._sampled_step = self._sampled_step, None
            if step is None:
                return False
            self.pending.add(step, self.outputs.seal(), self.gradients.seal(), self.step)
            return True

    # -- hooks --------------------------------------------------------------------------
    def _root_pre_hook(self, module: torch.nn.Module, args: tuple) -> None:
        try:
            self._disarm()
            self._transformed = under_transform()  # torch.func: wrapped tensors, no storage
            self._eval = not module.training or self._transformed
            self.clock.forward(module.training)
            if self.on_input is not None and self._sampled_step is not None and not self._eval:
                self.on_input(args)  # a sampled training step's input (the program's shape)
        except Exception as exc:
            self.on_error("the step counter", exc)

    def _root_post_hook(self, module: torch.nn.Module, args: tuple, output: Any) -> None:
        """Reduces the pass's outputs; also runs when forward raised: a module that
        crashed on a ``None`` is named."""
        exc = sys.exc_info()[1]
        try:
            self.param_hooks.attach_ready(self._make_grad_hook, self._hooked)  # lazy modules
            if exc is not None:
                self.outputs.discard()
                self.crash.crashed(exc)
            elif self._sampled_step is not None and not self._transformed:
                start = self.sampler.clock()
                self.outputs.end_forward()
                self.losses.arm(self._sampled_step, args)  # what reaches the loss, until seen
                self._armed = True
                if self.losses.armed:
                    self._loss_seen.start()
                self.sampler.charge(self.sampler.clock() - start)
        except Exception as err:
            self.on_error("the activation collector" if exc is None else "the crash diagnosis",
                          err)

    def _disarm(self) -> None:
        if self.losses.armed:
            self.losses.disarm()
        self._loss_seen.stop()
        self._armed = self.losses.armed  # (a mode pushed after ours keeps it armed)

    def _make_pre_hook(self, idx: int) -> Callable:
        path, cls = self.module_paths[idx], self.module_classes[idx]

        def pre_hook(module: torch.nn.Module, args: tuple) -> None:
            for arg in args:
                if arg is None:
                    # (frame 1 is graph_safe's wrapper; 2 is the module call)
                    self.crash.inputs_none(path, cls, args, sys._getframe(2), module)
                    break
        return pre_hook

    def _make_forward_hook(self, idx: int) -> Callable:
        from torch import Tensor

        immediate = self.policy.immediate
        path, cls = self.module_paths[idx], self.module_classes[idx]
        skip = cls in _RESHAPES
        keep = self.outputs.output

        def forward_hook(module: torch.nn.Module, inputs: tuple, output: Any) -> None:
            try:
                if not immediate:  # (raise/pdb check in a pre-hook)
                    for arg in inputs:
                        if arg is None:
                            self.crash.inputs_none(path, cls, inputs, sys._getframe(0), module)
                            break
                if output is None:
                    self.crash.output_none(path)
                    return
                if immediate:
                    self._check_finite(idx, inputs, output, sys._getframe(0))
                if self.sampling and not self._eval and not skip:
                    tensor = output if isinstance(output, Tensor) else first_tensor(output)
                    if tensor is not None:
                        keep(idx, tensor, module, inputs)  # reduced when forward ends
            except WatchAnomaly:
                raise
            except Exception as exc:
                self.on_error(f"the activation collector on {path!r}", exc)
        return forward_hook

    def _make_container_hook(self, path: str) -> Callable:
        def container_hook(module: torch.nn.Module, inputs: tuple, output: Any) -> None:
            if output is None:
                self.crash.output_none(path or type(module).__name__)
        return container_hook

    def _make_grad_hook(self, idx: int) -> Callable:
        path = self.param_paths[idx]
        return graph_safe(self.gradients.make_hook(  # (compiled autograd traces them)
            idx, self._first_gradient,
            lambda exc: self.on_error(f"the gradient collector on {path!r}", exc)))

    def _first_gradient(self, idx: int, grads: StepGrads) -> None:
        """The first gradient of a sampled step's backward pass: read them all at its end."""
        at_end_of_backward(functools.partial(self._backward_ended, grads))
        self.optimizer_checks.first_gradient(idx, self.clock, self.step, eval_forward=self._eval)

    def _backward_ended(self, grads: StepGrads) -> None:
        try:
            start = self.sampler.clock()
            self.gradients.end_of_backward(grads)
            self.sampler.charge(self.sampler.clock() - start)
        except Exception as exc:
            self.on_error("the gradient collector", exc)

    # -- anomalies ----------------------------------------------------------------------
    def _check_finite(self, idx: int, inputs: tuple, output: Any, frame: Any) -> None:
        """Under raise/pdb: stop at the first non-finite output (a sync per module)."""
        if "nonfinite-activation" not in self.policy.kinds:
            event = nonfinite_event(first_tensor(output), inputs, self.module_paths[idx],
                                    self.module_classes[idx], max(self.step, 0))
            if event is not None:
                self.policy.handle(event, frame=frame)

    # -- reading --------------------------------------------------------------------------
    def check_crash(self) -> None:
        """Name a module that crashed on a ``None`` input, from the exception a notebook
        or the interactive interpreter kept: with the optimizer counting the steps, no
        hook watches forward between samples."""
        if self.clock.optimizer is None or self.permanent:
            return  # the root hooks are attached: they named it as it happened
        try:
            self.crash.check_last()
        except Exception as err:
            self.on_error("the crash diagnosis", err)

    def flush(self) -> None:
        """Seal the step in progress and read everything (call between steps). From
        another thread than the one that trains (a notebook asking for findings while
        training runs in a background thread) only what is sealed is read: sealing the
        step in progress there would race with its hooks."""
        trainer = self.train_thread
        if trainer is not None and trainer[0] != threading.get_ident() and trainer[1].is_alive():
            self.read_sealed()
            return
        self._disarm()
        self.check_crash()
        with self.pending.lock:
            self._seal()
            self.pending.read_all()

    def records_since(self, cursor: tuple[int, int] | None) -> tuple[RunDelta, tuple[int, int]]:
        """The collector contract: the sampled steps read after ``cursor`` (the last
        activation and gradient steps handed over) as ``samples`` blocks; reads nothing
        itself (:meth:`flush`, :meth:`read_sealed` do)."""
        after, blocks = cursor or (-(1 << 62), -(1 << 62)), []
        for kind, buffer, width, last in (
                ("activations", self.activations, len(self.module_paths), after[0]),
                ("grads", self.grads, len(self.param_paths), after[1])):
            steps, rows = buffer.since(last)
            if steps.size:
                blocks.append((kind, steps, stack_rows(rows, width)))
        last = {kind: int(steps[-1]) for kind, steps, _ in blocks}
        return RunDelta(samples=blocks), (last.get("activations", after[0]),
                                          last.get("grads", after[1]))

    def read_sealed(self) -> None:
        """Read what is already sealed, leaving the step in progress alone (any thread)."""
        self.check_crash()
        self.pending.read_all()
