"""Gradient norms, weight norms and update ratios of sampled steps.

At the end of a sampled step's backward pass (a callback the hooks queue when the first
gradient arrives) every parameter that received a gradient is read: its gradient norm, its weight
norm and a copy of its weights, so that when the step is sealed (after the optimizer
moved the weights) the update ``||w_after - w_before||`` is one subtraction away.
Dense float32/float64 CPU parameters go through numpy: one concatenation (which is also the
weights' copy) and one segment sum for all of them. Others (devices, half precision,
sparse) go through fused torch calls (:mod:`vizdebug.collect.hooks.fused`) and stay on their
device until the step is read.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...records import GRAD_FIELDS
from .fused import copies, differences, norms

if TYPE_CHECKING:
    import torch

#: A sealed step's gradients: (parameter indices, norm tensors to read, or numpy norms).
SealedGrads = tuple[np.ndarray, Any, Any]


class StepGrads:
    """What one sampled step's backward passes collected (not read yet)."""

    def __init__(self) -> None:
        self.ready: list[tuple[int, torch.Tensor]] = []  # (index, parameter) with a grad
        self.queued = False
        self.idx: list[int] = []
        self.grad_norm: list[Any] = []  # floats (numpy path) or 0-d tensors
        self.weight_norm: list[Any] = []
        self.before: list[Any] = []  # weight copies (tensors); None: in ``flat``
        # numpy path: (flat copy of the weights, their shapes, its FlatParams), one per
        # backward pass
        self.flat: list[tuple[np.ndarray, list[tuple[int, ...]], FlatParams]] = []


class GradientCollector:
    """Owns the parameters (weakly), the cache of their numpy views, and the gradients of
    the sampled step in progress.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Linear(3, 2)
    >>> grads = GradientCollector(list(model.parameters()))
    >>> for i, p in enumerate(model.parameters()):
    ...     _ = p.register_hook(grads.make_hook(i, print, print))
    >>> grads.begin()
    >>> model(torch.ones(4, 3)).sum().backward()  # doctest: +ELLIPSIS
    1 <...StepGrads object at ...>
    >>> grads.end_of_backward(grads.current)
    >>> idx, _, norms_ = grads.seal(); idx.tolist(), norms_.shape  # (in backward's order)
    ([1, 0], (3, 2))
    """

    def __init__(self, params: list[torch.Tensor]) -> None:
        self.params = [weakref.ref(p) for p in params]
        self.current: StepGrads | None = None
        self._views: dict[tuple[int, ...], FlatParams] = {}  # see _flat_of

    def begin(self) -> None:
        """A sampled step starts."""
        self.current = StepGrads()

    def clear(self) -> None:
        self.current = None
        self._views.clear()

    def make_hook(self, idx: int, first: Callable[[int, StepGrads], None],
                  on_error: Callable[[BaseException], None]) -> Callable[[Any], None]:
        """The gradient hook of parameter ``idx`` (a tensor hook, called with the gradient
        that arrives, before it is added to ``.grad``): during a sampled step it keeps the
        parameter until the end of backward, when ``.grad`` is read, and at the first
        gradient of each backward pass calls ``first(idx, step_grads)`` (where the caller
        queues :meth:`end_of_backward` for them: :func:`~.fused.at_end_of_backward`). It
        runs for every parameter of every sampled step, so it does no more than that; an
        exception goes to ``on_error``."""
        ref = self.params[idx]

        def grad_hook(grad: Any) -> None:
            current = self.current  # (None between sampled steps)
            if current is None:
                return
            try:
                param = ref()
                if param is None:
                    return
                current.ready.append((idx, param))
                if not current.queued:
                    current.queued = True
                    first(idx, current)
            except Exception as exc:
                on_error(exc)
        return grad_hook

    def end_of_backward(self, pending: StepGrads) -> None:
        """Gradient norms, weight norms and a copy of the weights of what is ready."""
        ready, pending.ready, pending.queued = pending.ready, [], False
        # (read once; a meta gradient has no values to read)
        ready = [(i, p, g) for i, p in ready if (g := p.grad) is not None and not g.is_meta]
        if not ready:
            return
        idx = [i for i, _, _ in ready]
        grads = [g for _, _, g in ready]
        flat = self._flat_of(idx, [p for _, p, _ in ready])
        if flat is None or not flat.norms(pending, grads):
            _torch_norms(pending, grads, [p for _, p, _ in ready])
        pending.idx += idx  # (last: a failure above leaves the lists in step)

    def seal(self) -> SealedGrads | None:
        """The step in progress, after its optimizer step: its norms and updates, as numpy
        (all weights in numpy) or as tensors to read later. ``None``: no gradient."""
        pending, self.current = self.current, None
        if pending is None:
            return None
        if pending.ready:  # backward ended without running the callback
            self.end_of_backward(pending)
        if not pending.idx:
            return None
        idx = np.asarray(pending.idx)
        now = [self.params[i]() for i in pending.idx]
        if any(p is None for p in now):
            return None
        flat = self._flat_of(pending.idx, now) if all(b is None for b in pending.before) else None
        if flat is not None:  # the update from one subtraction (exact: w_after ~ w_before)
            copies_ = [c for c, _, _ in pending.flat]
            update = flat.update(copies_[0] if len(copies_) == 1 else np.concatenate(copies_))
            for copy, _, owner in pending.flat:
                owner.recycle(copy)
            return idx, None, np.stack([np.asarray(pending.grad_norm),
                                        np.asarray(pending.weight_norm), update])
        return idx, _tensor_norms(pending, [p.detach() for p in now]), None

    def _flat_of(self, idx: list[int], params: list[torch.Tensor]) -> FlatParams | None:
        """The flat numpy views of these parameters when all are dense CPU tensors of one
        float dtype (else ``None``), cached per list of parameters while each keeps its
        storage: optimizers update in place, and a replaced ``.data`` has a new address
        (the cached views keep the old storages alive, so their addresses cannot be reused
        while cached)."""
        ptrs, key = [p.data_ptr() for p in params], tuple(idx)
        hit = self._views.get(key)
        if hit is not None and hit.ptrs == ptrs:
            return hit
        if not all(_numpy_ready(p) and p.is_contiguous() for p in params):
            return None  # (a contiguous tensor: reshape(-1) is then a view)
        if len({p.dtype for p in params}) > 1:
            return None
        if len(self._views) > 8:  # backward passes reaching ever other parameters
            self._views.clear()
        self._views[key] = flat = FlatParams(params, ptrs)
        return flat


class FlatParams:
    """Flat numpy views of a list of dense CPU parameters of one float dtype, and the
    buffers their norms are computed in. The buffers are kept from one sampled step to
    the next: a sampled step reads every gradient and weight (megabytes for a mid-sized
    model), and fresh arrays of that size come as fresh pages from the system."""

    def __init__(self, params: list[torch.Tensor], ptrs: list[int]) -> None:
        self.ptrs = ptrs
        self.views = [p.detach().numpy().reshape(-1) for p in params]
        self.shapes = [tuple(p.shape) for p in params]
        sizes = tuple(v.size for v in self.views)
        self.size = sum(sizes)
        self.dtype = self.views[0].dtype
        self.starts = _starts(sizes)  # each weight in the flat weights
        self._work = np.empty(2 * self.size, self.dtype)
        self._spare: list[np.ndarray] = []  # weight copies read back, for the next step
        self.torch_dtype = params[0].dtype
        # The gradients are stacked by shape (one torch call per shape: reading each as
        # a numpy array is one Python call per parameter), into the first half of the
        # work buffer: the gradients of a shape, then the next shape's.
        by_shape: dict[tuple[int, ...], list[int]] = {}
        for j, shape in enumerate(self.shapes):
            by_shape.setdefault(shape, []).append(j)
        stacked = [j for group in by_shape.values() for j in group]
        flat, start = _torch_view(self._work), 0
        self._stacks = []
        for shape, group in by_shape.items():
            end = start + len(group) * sizes[group[0]]
            self._stacks.append((group, flat[start:end].view(len(group), *shape)))
            start = end
        self._unstack = np.argsort(stacked)  # stacked order -> the parameters' order
        # each gradient (in stacked order), then each weight
        self.both_starts = np.concatenate([_starts(tuple(sizes[j] for j in stacked)),
                                           self.size + self.starts])

    def norms(self, pending: StepGrads, grads: list[torch.Tensor]) -> bool:
        """Gradient and weight norms, and the weights' copy, in a few stacks, one
        concatenation and one segment sum of squares (numpy's pairwise sums keep float32
        accurate to ~1e-7). False: gradients that cannot be stacked here (sparse, another
        device or dtype): the caller uses torch."""
        if not self._stack(grads):
            return False
        n, work = self.size, self._work
        copy = self._spare.pop() if self._spare else np.empty(n, self.dtype)
        np.concatenate(self.views, axis=None, out=copy)  # the weights before the step
        np.square(work[:n], out=work[:n])
        np.square(copy, out=work[n:])
        norms_ = np.sqrt(np.add.reduceat(work, self.both_starts), dtype=np.float64)
        pending.grad_norm += norms_[:len(grads)][self._unstack].tolist()
        pending.weight_norm += norms_[len(grads):].tolist()
        pending.before += [None] * len(grads)
        pending.flat.append((copy, self.shapes, self))
        return True

    def _stack(self, grads: list[torch.Tensor]) -> bool:
        """The gradients into the first half of the work buffer, stacked by shape."""
        import torch

        dtype = self.torch_dtype
        if any(g.dtype != dtype for g in grads):  # (stack would cast them)
            return False
        try:
            with torch.no_grad():  # (a gradient may require grad: create_graph=True)
                for group, out in self._stacks:
                    torch.stack([grads[j] for j in group], out=out)
        except (RuntimeError, NotImplementedError, TypeError):  # sparse, another device
            return False
        return True

    def update(self, before: np.ndarray) -> np.ndarray:
        """``||w_now - w_before||`` of each parameter (float64)."""
        d = self._work[:self.size] if before.size == self.size else np.empty(before.size,
                                                                               self.dtype)
        np.concatenate(self.views, axis=None, out=d)
        np.subtract(d, before, out=d)
        return np.sqrt(np.add.reduceat(np.square(d, out=d), self.starts), dtype=np.float64)

    def recycle(self, copy: np.ndarray) -> None:
        """A weight copy read back: its buffer serves a later step."""
        if copy.size == self.size and copy.dtype == self.dtype and len(self._spare) < 2:
            self._spare.append(copy)


def grad_rows(sealed: list[SealedGrads]) -> list[np.ndarray]:
    """Each sealed step's ``(k, 3)`` gradient norms: the tensors of all steps stacked and
    read at once."""
    lists = [norms_ for _, norms_, _ in sealed if norms_ is not None]
    parts: Any = iter(())
    if lists:
        import torch

        flat = torch.stack([n for norms_ in lists for n in norms_]).double().cpu().numpy()
        parts = iter(np.split(flat, np.cumsum([len(n) for n in lists])[:-1]))
    return [(next(parts).reshape(len(GRAD_FIELDS), -1) if norms_ is not None else values).T
            for _, norms_, values in sealed]


def _torch_norms(pending: StepGrads, grads: list[torch.Tensor],
                 params: list[torch.Tensor]) -> None:
    """Gradient and weight norms and weight copies in torch (devices, half precision,
    sparse gradients), kept as tensors until the step is read."""
    import torch

    with torch.no_grad():
        params = [p.detach() for p in params]
        both = norms([g.detach() for g in grads] + params)  # one fused call for both
        before = copies(params)
    pending.grad_norm += both[:len(params)]
    pending.weight_norm += both[len(params):]
    pending.before += before


def _tensor_norms(pending: StepGrads, now: list[torch.Tensor]) -> list[torch.Tensor]:
    """The three norm lists as tensors (entries taken in numpy converted)."""
    import torch

    numpy_copies = iter([
        torch.from_numpy(part).reshape(shape) for flat, shapes, _ in pending.flat
        for part, shape in zip(np.split(flat, np.cumsum([math.prod(s) for s in shapes])[:-1]),
                               shapes)])
    before = [next(numpy_copies) if b is None else b for b in pending.before]
    grad = [torch.tensor(n) if isinstance(n, float) else n for n in pending.grad_norm]
    weight = [torch.tensor(n) if isinstance(n, float) else n for n in pending.weight_norm]
    return grad + weight + norms(differences(now, before))


def _numpy_ready(t: torch.Tensor) -> bool:
    """A dense, non-empty float32/float64 CPU tensor: its norms and copies are cheaper in
    numpy than through torch's dispatch, for the small tensors of most models."""
    import torch

    return (t.is_cpu and t.layout == torch.strided and t.dtype in (torch.float32, torch.float64)
            and t.numel() > 0)


def _torch_view(array: np.ndarray) -> torch.Tensor:
    import torch

    return torch.from_numpy(array)


@functools.lru_cache(maxsize=32)
def _starts(sizes: tuple[int, ...]) -> np.ndarray:
    """Where each of tensors of these sizes starts in their concatenation."""
    ends = np.cumsum(sizes)
    return ends - np.asarray(sizes)
