"""Forward, pre-forward and gradient hooks on a model: per-layer health, lazily read.

On sampled training steps (every ``every``-th forward pass in training mode, or as chosen
by :class:`~vizdebug.collect.sampling.StepSampler` for ``"auto"``) each leaf module's
output is sampled on its device (:func:`~vizdebug.collect.stats.activation_sample`; on
the CPU :func:`~vizdebug.collect.stats.activation_sample_cpu`), and at the end of that
step's backward pass every gradient norm, weight norm and a copy of the weights are taken
(fused torch calls on a device, one numpy concatenation on the CPU). Nothing is read back
during the step: a sampled step is *sealed* when the next training step starts and read
later, once the oldest sealed step is ``READ_AFTER`` steps old, all waiting steps at once
(every step of ``every=1``; each sample of ``"auto"``, whose samples are farther apart),
when the device finished them long ago, so the read never stalls the pipeline.

Steps are counted by the optimizer that updates the model's parameters: a global
``torch.optim`` step post-hook (one Python call per optimizer step; ``Optimizer.step``
runs its hook loop anyway), so between samples no hook at all runs in the model's forward
and backward passes: every hook, the root module's included, is attached for sampled
steps only (with ``every=1`` or an immediate ``on_anomaly`` they stay attached). Until
such an optimizer has stepped (or in a loop that updates the weights by hand) two hooks
on the root module count the steps instead: a forward pre-hook, and an ``always_call``
hook that names the module when forward crashes on a ``None`` input. With the optimizer
clock, such a crash is named afterwards, from the exception the notebook or the
interactive interpreter keeps (``sys.last_value``).

Hooks never change an output (they return ``None``) and never draw random numbers; any
exception inside one is handed to ``on_error`` and training goes on. The model is held by
a weak reference.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .anomaly import AnomalyEvent, AnomalyPolicy, WatchAnomaly, previous_sibling
from .fused import at_end_of_backward, copies, differences, norms
from .samples import SampleBuffer
from .sampling import StepSampler
from .stats import (
    ACTIVATION_FIELDS,
    CpuActivationSample,
    activation_sample,
    activation_sample_cpu,
    batch_activation_stats,
    cpu_activation_rows,
    describe_tensor,
    first_tensor,
)

if TYPE_CHECKING:
    import torch

GRAD_FIELDS = ("grad_norm", "weight_norm", "update_ratio")
# Sealed steps are read in batches once the oldest is this many steps old: reading costs
# a fixed two dozen numpy calls, run with caches cold from the training step (~3x their
# warm cost), so with every=1 reading 8 steps at once costs about what one step did.
READ_AFTER = 16
# Shape-only modules repeat their input's statistics: not worth a sample.
_RESHAPES = frozenset({"Flatten", "Unflatten", "Identity"})
ErrorSink = Callable[[str, BaseException], None]


class _Pending:
    """What one sampled step collected so far (device tensors, not read yet)."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.act: list[tuple[int, Any]] = []
        self.ready: list[tuple[int, torch.Tensor]] = []  # (index, parameter) with a grad
        self.queued = False
        self.grad_idx: list[int] = []
        self.grad_norm: list[torch.Tensor] = []
        self.weight_norm: list[torch.Tensor] = []
        self.before: list[Any] = []  # weight copies (tensors), None: in ``flat``
        # numpy path: (flat copy of the weights, their shapes), one per backward pass
        self.flat: list[tuple[np.ndarray, list[tuple[int, ...]]]] = []


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

    def __init__(self, model: torch.nn.Module, *, every: int | str, policy: AnomalyPolicy,
                 on_error: ErrorSink | None = None, capacity: int = 1000) -> None:
        self.every = every
        self.sampler = StepSampler(every)
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
        # (weakref to the output, its version, its max over the batch) of the last CPU sample
        self._last_sample: tuple[Any, int, Any] | None = None
        self._seen_nonfinite = False
        leaf_ids = {id(m) for _, m in named}
        self._leaves = [weakref.ref(m) for _, m in named]
        self._containers = [(n, weakref.ref(m)) for n, m in model.named_modules()
                            if id(m) not in leaf_ids]
        self._params = [weakref.ref(p) for _, p in params]
        self._views: dict[int, tuple[int, np.ndarray]] = {}  # see _param_views
        self._paths = {id(m): n or type(model).__name__ for n, m in model.named_modules()}
        # Per-layer hooks cost Python calls on every step, so they are attached only for
        # sampled steps; with every=1 or an immediate on_anomaly they stay.
        self.permanent = every == 1 or policy.immediate
        self._param_ids = frozenset(id(p) for _, p in params)
        self._owners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._clock: weakref.ref | None = None  # the optimizer whose steps count steps
        self._others = 0  # steps of another owning optimizer since the clock's last one
        self._crash_seen = id(_last_exception())  # an earlier crash is not this run's
        self._paused_at: float | None = None
        self._removed = False
        self.handles: list[Any] = self._root_hooks(model)
        self.step_handles: list[Any] = []
        if self.permanent:
            self._attach()
        self._optimizer_handle = self._hook_optimizers()

    @property
    def steps(self) -> int:
        """Training steps so far: forward passes in training mode, or with the optimizer
        clock, optimizer steps (``step`` is then already the next step's number)."""
        return self.step + (0 if self._clock is not None else 1)

    # -- registration -------------------------------------------------------------------
    def _hook_optimizers(self) -> Any:
        """The global optimizer step post-hook (held weakly: see :func:`_optimizer_hook`)."""
        import torch.optim.optimizer as optim

        return optim.register_optimizer_step_post_hook(_optimizer_hook(weakref.ref(self)))

    def _root_hooks(self, model: torch.nn.Module) -> list[Any]:
        return [model.register_forward_pre_hook(self._root_pre_hook),
                model.register_forward_hook(self._root_post_hook, always_call=True)]

    def _attach(self) -> None:
        add = self.step_handles.append
        model = self.model_ref()
        if self._clock is not None and not self.permanent and model is not None:
            self.step_handles += self._root_hooks(model)  # for eval passes, crash naming
        # A None input is checked before forward only where it must stop there (raise,
        # pdb); otherwise the forward hook sees the same inputs after forward (one Python
        # hook per module instead of two), and a crash on None is named by the root hook.
        before = self.policy.immediate
        for idx, ref in enumerate(self._leaves):
            module = ref()
            if module is not None:
                if before:
                    add(module.register_forward_pre_hook(self._make_pre_hook(idx)))
                add(module.register_forward_hook(self._make_forward_hook(idx, module)))
        for path, ref in self._containers:
            module = ref()
            if module is not None:
                add(module.register_forward_hook(self._make_container_hook(path)))
        for idx, ref in enumerate(self._params):
            param = ref()
            if param is not None:
                add(param.register_post_accumulate_grad_hook(self._make_grad_hook(idx)))

    def _detach(self) -> None:
        handles, self.step_handles = self.step_handles, []
        for handle in handles:
            handle.remove()

    def pause(self) -> None:
        """Take every hook off until :meth:`resume` (call between training steps); the
        time in between counts neither as training nor as collector time."""
        if self._paused_at is not None or self._removed:
            return
        self._paused_at = self.sampler.clock()
        self._optimizer_handle.remove()
        self._detach()
        for handle in self.handles:
            handle.remove()

    def resume(self) -> None:
        """Put back what :meth:`pause` took off (harmless when not paused)."""
        if self._paused_at is None or self._removed:
            return
        self.sampler.exclude(self.sampler.clock() - self._paused_at)
        self._paused_at = None
        model = self.model_ref()
        if model is None:
            return
        self._optimizer_handle = self._hook_optimizers()
        if self.handles:
            self.handles = self._root_hooks(model)
        if self.permanent or self.sampling or self._current is not None:
            self._attach()

    def remove(self) -> None:
        """Remove every hook (harmless when called twice)."""
        self._paused_at, self._removed = None, True
        self._optimizer_handle.remove()
        self._detach()
        self._views.clear()
        handles, self.handles = self.handles, []
        for handle in handles:
            handle.remove()
        self._current = None

    # -- hooks --------------------------------------------------------------------------
    def _root_pre_hook(self, module: torch.nn.Module, args: tuple) -> None:
        try:
            self._eval = not module.training
            if not self._eval and self._clock is None:
                self._new_step()
        except Exception as exc:
            self.on_error("the step counter", exc)

    def _optimizer_stepped(self, optimizer: Any) -> None:
        """After any ``torch.optim`` optimizer's step: a new training step starts when it is
        the optimizer that updates this model (the first one seen stepping; another one
        that steps twice while it does not takes over, e.g. a re-created optimizer)."""
        try:
            clock = self._clock() if self._clock is not None else None
            if clock is not optimizer:
                owns = self._owners.get(optimizer)
                if owns is None:
                    owns = self._owners[optimizer] = any(
                        id(p) in self._param_ids for g in optimizer.param_groups
                        for p in g["params"])
                if not owns:
                    return
                if clock is not None:
                    self._others += 1
                    if self._others < 2:
                        return  # e.g. a second optimizer over other layers, same step
                    self.step += self._others - 1
                self._use_clock(optimizer)
            self._others = 0
            self._new_step()
        except Exception as exc:
            self.on_error("the step counter", exc)

    def _use_clock(self, optimizer: Any) -> None:
        """Count steps by ``optimizer`` from now on: the root hooks go (but for sampled
        steps, or for good with ``every=1``/an immediate ``on_anomaly``)."""
        self._clock = weakref.ref(optimizer)
        if not self.permanent:
            self._detach()
            handles, self.handles = self.handles, []
            for handle in handles:
                handle.remove()

    def _new_step(self) -> None:
        """A training step starts: count it, seal the sampled one that ended, and attach
        or detach the per-layer hooks (a few comparisons between samples)."""
        self.step += 1
        sampler = self.sampler
        sampling = sampler.start_step(self.step)
        if not sampling and self._current is None and (self.permanent or not self.step_handles):
            self.sampling = False
            return
        start = sampler.clock()
        if self._seal():
            sampler.charge(sampler.clock() - start)
            sampler.sample_done(self.step)
            sampling = sampler.start_step(self.step)
            start = sampler.clock()
        self.sampling = sampling
        if sampling:
            sampler.begin_sample()
            self._current = _Pending(self.step)
        if not self.permanent and sampling and not self.step_handles:
            self._attach()
        elif not self.permanent and not sampling and self.step_handles:
            self._detach()
        sampler.charge(sampler.clock() - start)

    def _root_post_hook(self, module: torch.nn.Module, args: tuple, output: Any) -> None:
        """Also runs when forward raised: a module that crashed on a ``None`` is named."""
        self._last_sample = None  # nothing of this forward's outputs outlives it
        exc = sys.exc_info()[1]
        if exc is None or isinstance(exc, WatchAnomaly):
            return
        try:
            self._diagnose_crash(exc)
        except Exception as err:
            self.on_error("the crash diagnosis", err)

    def _diagnose_crash(self, exc: BaseException) -> None:
        """Find the innermost module call in the traceback; report a ``None`` argument."""
        calls = []
        tb = exc.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_code.co_name == "_call_impl" and "self" in frame.f_locals:
                calls.append(frame.f_locals)
            tb = tb.tb_next
        if not calls:
            return
        inner = calls[-1]
        args = inner.get("args") or ()
        if not any(a is None for a in args):
            return
        position = next(i for i, a in enumerate(args) if a is None)
        path = self._paths.get(id(inner["self"]))
        known = any(ev.kind == "input-none" and ev.module_path == path and ev.step == self.step
                    for ev in self.policy.events)
        if path is None or known:
            return
        source = previous_sibling(calls, self._paths)
        self._none_source = source or self._none_source
        self._input_none_event(path, type(inner["self"]).__name__, position)

    def _make_pre_hook(self, idx: int) -> Callable:
        def pre_hook(module: torch.nn.Module, args: tuple) -> None:
            for position, arg in enumerate(args):
                if arg is None:
                    self._input_none(idx, position)
        return pre_hook

    def _make_forward_hook(self, idx: int, module: torch.nn.Module) -> Callable:
        immediate = self.policy.immediate
        cls = self.module_classes[idx]
        skip = cls in _RESHAPES
        nonneg = _nonnegative_type(module)
        relu = type(module).__name__ == "ReLU" and nonneg

        def forward_hook(module: torch.nn.Module, inputs: tuple, output: Any) -> None:
            try:
                if not immediate:  # (raise/pdb check in a pre-hook)
                    for position, arg in enumerate(inputs):
                        if arg is None:
                            self._input_none(idx, position)
                if output is None:
                    self._none_source = self.module_paths[idx]
                    return
                if immediate:
                    self._check_finite(idx, inputs, output)
                current = self._current
                if self.sampling and not self._eval and current is not None and not skip:
                    sampler = self.sampler
                    start = sampler.clock()
                    tensor = first_tensor(output)
                    if tensor is not None:
                        sample = None
                        if tensor.is_cpu:
                            plain = nonneg and _unaltered_output(module)
                            hi, last = None, self._last_sample
                            if relu and plain and last is not None and inputs and (
                                    inputs[0] is last[0]() and inputs[0]._version == last[1]):
                                hi = np.maximum(last[2], 0)  # the input's max, unchanged
                            sample = activation_sample_cpu(tensor, cls, plain, hi)
                            if sample is not None and not sample.reduced:
                                self._last_sample = (weakref.ref(tensor), tensor._version,
                                                     sample.hi)
                        current.act.append((idx, sample or activation_sample(tensor, cls)))
                    sampler.charge(sampler.clock() - start)
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
                current.ready.append((idx, param))  # read at the end of backward
                if not current.queued:
                    current.queued = True
                    at_end_of_backward(lambda: self._reduce_grads(current))
            except Exception as exc:
                self.on_error(f"the gradient collector on {self.param_paths[idx]!r}", exc)
        return grad_hook

    def _reduce_grads(self, pending: _Pending) -> None:
        """At the end of backward: the gradient norms and a copy of the weights (for the
        weight norm and the update ratio when the step is sealed). Float CPU tensors in
        numpy (a few cheap calls each); others in fused torch calls."""
        try:
            import torch

            start = self.sampler.clock()
            ready, pending.ready, pending.queued = pending.ready, [], False
            ready = [(i, p, p.grad) for i, p in ready if p.grad is not None]
            if not ready:
                return
            params, grads = [p for _, p, _ in ready], [g for _, _, g in ready]
            idx = [i for i, _, _ in ready]
            pending.grad_idx += idx
            views = self._param_views(idx) if _numpy_ready(grads) else None
            if views is not None:
                # one concatenation (which is also the weights' copy), one segment sum
                flat = np.concatenate([(g.detach() if g.requires_grad else g).numpy().reshape(-1)
                                       for g in grads] + views)
                sq = np.add.reduceat(np.square(flat, dtype=np.float64), _starts(
                    tuple(g.numel() for g in grads) + tuple(v.size for v in views)))
                norms_ = np.sqrt(sq).tolist()
                pending.grad_norm += norms_[:len(ready)]
                pending.weight_norm += norms_[len(ready):]
                pending.before += [None] * len(ready)
                pending.flat.append((flat[sum(g.numel() for g in grads):],
                                     [tuple(p.shape) for p in params]))
            else:
                with torch.no_grad():
                    params = [p.detach() for p in params]
                    grads = [g.detach() for g in grads]
                    both = norms(grads + params)  # one fused call for gradients and weights
                    pending.grad_norm += both[:len(ready)]
                    pending.weight_norm += both[len(ready):]
                    pending.before += copies(params)
            self.sampler.charge(self.sampler.clock() - start)
        except Exception as exc:
            self.on_error("the gradient collector", exc)

    # -- anomalies ----------------------------------------------------------------------
    def _input_none(self, idx: int, position: int) -> None:
        self._input_none_event(self.module_paths[idx], self.module_classes[idx], position)

    def _input_none_event(self, path: str, cls: str, position: int) -> None:
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
    def _seal(self) -> bool:
        """Stack the finished sampled step (no read), and read those sealed earlier.
        True when a sampled step was sealed."""
        with self._lock:
            current, self._current = self._current, None
            if current is not None:
                self._sealed.append(self._stack(current))
            if len(self._sealed) > 1 and self.step - self._sealed[0][0] > READ_AFTER:
                self._read(self._sealed[:-1])
                self._sealed = self._sealed[-1:]
            return current is not None

    def _stack(self, pending: _Pending) -> tuple[int, Any, Any]:
        import torch

        act = None
        if pending.act:
            idx = [i for i, _ in pending.act]
            samples = [s for _, s in pending.act]
            if all(isinstance(s, CpuActivationSample) or s.values.is_cpu for s in samples):
                act = (idx, samples)  # reduced with numpy when read: cheaper on the CPU
            else:
                samples = [_to_torch(s) for s in samples]
                classes = [self.module_classes[i] for i in idx]
                act = (idx, batch_activation_stats(samples, classes))
        grad = None
        if pending.ready:  # backward ended without running the callback
            self._reduce_grads(pending)
        if pending.grad_idx:
            idx = np.asarray(pending.grad_idx)
            with torch.no_grad():
                views = (self._param_views(pending.grad_idx)
                         if all(b is None for b in pending.before) else None)
                if views is not None:
                    # all float CPU weights: the update from one subtraction, in float64
                    sizes = tuple(v.size for v in views)
                    copy = [f for f, _ in pending.flat]
                    d = np.subtract(np.concatenate(views),
                                    copy[0] if len(copy) == 1 else np.concatenate(copy),
                                    dtype=np.float64)
                    update = np.sqrt(np.add.reduceat(d * d, _starts(sizes)))
                    grad = (idx, None, np.stack([np.asarray(pending.grad_norm),
                                                 np.asarray(pending.weight_norm), update]))
                else:  # norms stacked with other steps' when read (_grad_rows)
                    now = [self._params[i]() for i in pending.grad_idx]
                    if any(p is None for p in now):
                        return pending.step, act, None
                    grad = (idx, self._tensor_norms(pending, [p.detach() for p in now]), None)
        return pending.step, act, grad

    def _param_views(self, idx: list[int]) -> list[np.ndarray] | None:
        """Flat numpy views of these parameters when all are dense float CPU tensors (else
        ``None``), cached while each keeps its storage: optimizers update in place, and
        a replaced ``.data`` has a new address (the cached view keeps the old one alive,
        so the address cannot be reused while it is cached)."""
        views, cache = [], self._views
        for i in idx:
            param = self._params[i]()
            if param is None:
                cache.clear()
                return None
            hit = cache.get(i)
            if hit is None or hit[0] != param.data_ptr():
                if not (_numpy_ready([param]) and param.is_contiguous()):
                    return None  # (a contiguous tensor: reshape(-1) is then a view)
                ptr = param.data_ptr()
                hit = cache[i] = (ptr, param.detach().numpy().reshape(-1))
            views.append(hit[1])
        return views

    @staticmethod
    def _tensor_norms(pending: _Pending, now: list[torch.Tensor]) -> list[torch.Tensor]:
        """The three norm lists as tensors (entries taken in numpy converted)."""
        import torch

        copies_ = iter([torch.from_numpy(part).reshape(shape) for flat, shapes in pending.flat
                        for part, shape in zip(_split(flat, [math.prod(s) for s in shapes]),
                                               shapes)])
        before = [next(copies_) if b is None else b for b in pending.before]
        grad = [torch.tensor(n) if isinstance(n, float) else n for n in pending.grad_norm]
        weight = [torch.tensor(n) if isinstance(n, float) else n for n in pending.weight_norm]
        return grad + weight + norms(differences(now, before))

    @staticmethod
    def _grad_rows(sealed: list[tuple[int, Any, Any]]) -> Any:
        """Each sealed step's ``(k, 3)`` gradient norms: one stack and one read for all."""
        # grad: (idx, list of 3k norm tensors, None) or (idx, None, (3, k) numpy norms)
        grads = [grad for _, _, grad in sealed if grad is not None]
        lists = [grad[1] for grad in grads if grad[1] is not None]
        parts: Any = iter(())
        if lists:
            import torch

            flat = torch.stack([n for norms_ in lists for n in norms_]).double().cpu().numpy()
            parts = iter(_split(flat, [len(norms_) for norms_ in lists]))
        return ((next(parts).reshape(len(GRAD_FIELDS), -1) if grad[1] is not None else grad[2]).T
                for grad in grads)

    def _cpu_rows(self, sealed: list[tuple[int, Any, Any]]) -> Any:
        """The rows of every CPU-sampled step in ``sealed``, reduced in one call."""
        acts = [act for _, act, _ in sealed if act is not None and isinstance(act[1], list)]
        if not acts:
            return iter(())
        classes = self.module_classes
        rows = cpu_activation_rows([s for _, samples in acts for s in samples],
                                   [classes[i] for idx, _ in acts for i in idx])
        return iter(_split(rows, [len(idx) for idx, _ in acts]))

    def _read(self, sealed: list[tuple[int, Any, Any]]) -> None:
        """Reduce the sealed steps (all CPU samples in one call, all device norms in one
        read) and store their rows: consecutive steps that sampled the same modules and
        parameters (every step of ``every=1``) go in as one ``(steps, rows, fields)``
        block, a dozen numpy calls instead of a dozen per step."""
        cpu_rows, grad_rows = self._cpu_rows(sealed), self._grad_rows(sealed)
        acts = [(step, act[0], next(cpu_rows) if isinstance(act[1], list)
                 else act[1].double().cpu().numpy()) for step, act, _ in sealed if act is not None]
        grads = [(step, np.asarray(grad[0]), next(grad_rows))
                 for step, _, grad in sealed if grad is not None]
        for steps, idx, stats in _runs(acts):
            block = np.full((len(steps), len(self.module_paths), len(ACTIVATION_FIELDS) + 1),
                            np.nan)
            block[:, idx, :-1] = stats
            block[:, idx, -1] = np.arange(len(idx))  # execution order within the step
            self.activations.extend(steps, list(block))
            self._note_nonfinite(steps, block)
        for steps, idx, values in _runs(grads):
            rows = np.full((len(steps), len(self.param_paths), len(GRAD_FIELDS)), np.nan)
            rows[:, idx] = values
            weight = values[:, :, 1]
            rows[:, idx, 2] = values[:, :, 2] / np.where(weight > 0, weight, np.nan)
            self.grads.extend(steps, list(rows))

    def _note_nonfinite(self, steps: list[int], block: np.ndarray) -> None:
        """Turn the first sampled non-finite activation into an event (warn/ignore modes):
        ``block`` holds the rows of these steps."""
        if self._seen_nonfinite:
            return
        nonfinite = block[:, :, ACTIVATION_FIELDS.index("nonfinite")] > 0
        bad_steps = np.flatnonzero(nonfinite.any(1))
        if bad_steps.size == 0:
            return
        self._seen_nonfinite = True
        step, row = steps[bad_steps[0]], block[bad_steps[0]]
        bad = np.flatnonzero(nonfinite[bad_steps[0]])
        first = bad[np.argmin(row[bad, -1])]
        path, cls = self.module_paths[first], self.module_classes[first]
        total = int(row[first, ACTIVATION_FIELDS.index("numel")])
        absmax = row[first, ACTIVATION_FIELDS.index("absmax")]
        message = (f"first non-finite activation seen at sampled step {step}: output of "
                   f"{path!r} ({cls}, {total} values) holds NaN/inf (max |a| = {absmax})")
        order = int(row[first, -1])
        self.policy.record(AnomalyEvent("nonfinite-activation", step, path, cls, message,
                                        {"numel": total, "order": order}))

    def check_crash(self) -> None:
        """Name a module that crashed on a ``None`` input, from the exception a notebook
        or the interactive interpreter kept (``sys.last_value``): with the optimizer
        clock, no hook watches forward between samples."""
        if self._clock is None or self.permanent:
            return  # the root hooks are attached: they named it as it happened
        exc = _last_exception()
        if exc is None or id(exc) == self._crash_seen or isinstance(exc, WatchAnomaly):
            return
        self._crash_seen = id(exc)
        try:
            self._diagnose_crash(exc)
        except Exception as err:
            self.on_error("the crash diagnosis", err)

    def flush(self) -> None:
        """Seal the step in progress and read everything (call between steps)."""
        self.check_crash()
        with self._lock:
            self._seal()
            sealed, self._sealed = self._sealed, []
            self._read(sealed)

    def read_sealed(self) -> None:
        """Read what is already sealed, leaving the step in progress alone (any thread)."""
        self.check_crash()
        with self._lock:
            sealed, self._sealed = self._sealed, []
            self._read(sealed)


def _runs(items: list[tuple[int, Any, np.ndarray]]) -> Any:
    """``(steps, index, stacked values)`` for each run of consecutive ``(step, index,
    values)`` items with the same index (and so values of the same shape)."""
    start = 0
    for end in range(1, len(items) + 1):
        if end == len(items) or not np.array_equal(items[end][1], items[start][1]):
            run = items[start:end]
            yield [step for step, _, _ in run], run[0][1], np.stack([v for _, _, v in run])
            start = end


def _optimizer_hook(ref: weakref.ref) -> Callable:
    """The global optimizer step post-hook of one :class:`ModelHooks` (held weakly)."""
    def hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        hooks = ref()
        if hooks is not None:
            hooks._optimizer_stepped(optimizer)
    return hook


def _last_exception() -> BaseException | None:
    """The exception the interpreter (or IPython) last left unhandled, if any."""
    return getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)


def _numpy_ready(tensors: list[torch.Tensor]) -> bool:
    """Dense float32/float64 CPU tensors: their norms and copies are cheaper in numpy (on
    the digits CNN, six ``ndarray.copy`` calls cost a seventh of one ``_foreach_mul``)."""
    import torch

    floats = (torch.float32, torch.float64)
    return all(t.is_cpu and t.layout == torch.strided and t.dtype in floats and t.numel()
               for t in tensors)


def _split(array: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """``array`` cut along its first axis into consecutive parts of these sizes."""
    return np.split(array, np.cumsum(sizes)[:-1])


@functools.lru_cache(maxsize=32)
def _starts(sizes: tuple[int, ...]) -> np.ndarray:
    """Where each of tensors of these sizes starts in their concatenation."""
    ends = np.cumsum(sizes)
    return ends - np.asarray(sizes)


def _nonnegative_type(module: Any) -> bool:
    """A module whose output holds no negative value, by its exact (torch) type."""
    import torch.nn as nn

    return type(module) in (nn.ReLU, nn.ReLU6, nn.Sigmoid, nn.Hardsigmoid, nn.Softmax)


def _unaltered_output(module: Any) -> bool:
    """No other forward hook (which could replace the output) and no patched forward."""
    return (len(module._forward_hooks) == 1 and not _global_hooks()
            and "forward" not in module.__dict__)


def _global_hooks() -> Any:
    return sys.modules["torch.nn.modules.module"]._global_forward_hooks


def _to_torch(sample: Any) -> Any:
    """A :class:`CpuActivationSample` as an :class:`ActivationSample` (a model on several
    devices: its samples are reduced together in torch)."""
    if not isinstance(sample, CpuActivationSample):
        return sample
    import torch

    from .stats import ActivationSample, _unit_maxima

    unit_max = torch.from_numpy(_unit_maxima(sample)).float()
    return ActivationSample(torch.from_numpy(sample.values).float(), unit_max, sample.numel,
                            True)


def _caller_frame() -> Any:
    return sys._getframe(2)
