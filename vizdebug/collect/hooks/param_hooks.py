"""The gradient hooks of a model's parameters, and their sizes, lazy modules' included.

Until a lazy module's (``nn.LazyLinear``, ``nn.LazyConv2d``, ...) first forward its
parameters are ``UninitializedParameter``: every torch call on them raises (``numel()``,
``register_hook``). The first forward gives them their shape in place
(the same tensor objects, so their ids and weak references stay valid). :class:`ParamHooks`
hooks the parameters that exist, counts 0 elements for the others, and hooks them once
they exist.

The hooks are tensor hooks on the parameters (torch calls a leaf's hooks from one dict,
``_backward_hooks``), put in for sampled steps and taken out between them. A hook dict
that torch has once been given stays wired into autograd even when empty: each backward
pass then calls into Python once per parameter (~1 us each: 42 us a step on a 46-parameter
MLP, between samples, when these were post-accumulate-grad hooks, whose wiring cannot be
undone). A leaf's ``_backward_hooks`` set to ``None`` unwires it, so a dict left empty
by taking ours out is set to ``None`` (outside backward), and putting ours back installs
one again: between samples a backward pass meets no hook of ours at all.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

__all__ = ["ParamHooks", "class_name", "drop_empty_hooks", "is_uninitialized"]

HookMaker = Callable[[int], Callable]  # parameter index -> its gradient (tensor) hook


def is_uninitialized(param: Any) -> bool:
    """Whether ``param`` is a lazy module's parameter that has no shape yet.

    Examples
    --------
    >>> import torch
    >>> layer = torch.nn.LazyLinear(2)
    >>> is_uninitialized(layer.weight)
    True
    >>> _ = layer(torch.ones(1, 3)); is_uninitialized(layer.weight)
    False
    """
    from torch.nn.parameter import is_lazy

    return is_lazy(param)


def class_name(module: Any) -> str:
    """The name of ``module``'s class, for a lazy module the class it becomes at its first
    forward (``LazyConv2d`` -> ``Conv2d``: the rules and statistics read layers by class).

    Examples
    --------
    >>> import torch
    >>> class_name(torch.nn.LazyConv2d(4, 3)), class_name(torch.nn.ReLU())
    ('Conv2d', 'ReLU')
    """
    cls = getattr(type(module), "cls_to_become", None) or type(module)
    return cls.__name__


def drop_empty_hooks(tensor: Any) -> None:
    """Unwire a leaf tensor's hook dict once it is empty (see the module docstring); left
    alone inside a backward pass, which may be iterating it.

    Examples
    --------
    >>> import torch
    >>> w = torch.ones(2, requires_grad=True)
    >>> w.register_hook(lambda g: None).remove(); drop_empty_hooks(w); w._backward_hooks
    """
    import torch

    hooks = tensor._backward_hooks
    if hooks is not None and not hooks and tensor.grad_fn is None and (
            torch._C._current_autograd_node() is None):
        tensor._backward_hooks = None


class ParamHooks:
    """Puts the gradient hooks on the parameters that exist and takes them off; knows
    their sizes.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.LazyLinear(2), torch.nn.Linear(2, 1))
    >>> params = ParamHooks(list(model.parameters()))
    >>> params.numel, params.waiting
    ([0, 0, 2, 1], [0, 1])
    >>> _ = model(torch.ones(1, 3))
    >>> params.attach_ready(lambda idx: print, attached=False)
    >>> params.numel, params.waiting
    ([6, 2, 2, 1], [])
    >>> params.attach(lambda idx: print); params.attached, len(model[1].weight._backward_hooks)
    (True, 1)
    >>> params.detach(); params.attached, model[1].weight._backward_hooks
    (False, None)
    """

    def __init__(self, params: list[Any]) -> None:
        self.params = [weakref.ref(p) for p in params]
        self.waiting = [i for i, p in enumerate(params) if is_uninitialized(p)]
        #: elements per parameter (0 until materialised); updated in place, so a reader
        #: holding this list sees the sizes once they exist
        self.numel = [0 if i in self.waiting else p.numel() for i, p in enumerate(params)]
        # each parameter's hook and its key in the hook dict, made once
        self._made: dict[int, tuple[Callable, int]] = {}
        self._on: list[tuple[weakref.ref, int]] = []  # (parameter, key) while attached

    @property
    def attached(self) -> bool:
        return bool(self._on)

    def attach(self, make_hook: HookMaker) -> None:
        """Hook every parameter that exists (lazy ones: after their first forward)."""
        if self._on:
            self.detach()  # (never twice)
        waiting = set(self.waiting)
        for idx, ref in enumerate(self.params):
            if idx not in waiting and (param := ref()) is not None:
                self._hook(idx, param, make_hook)

    def attach_ready(self, make_hook: HookMaker, attached: bool) -> None:
        """After a forward pass: note the sizes of the parameters that now exist and, while
        the hooks are on (``attached``), hook them (otherwise the next :meth:`attach`
        does)."""
        if not self.waiting:
            return
        ready = [i for i in self.waiting
                 if (p := self.params[i]()) is not None and not is_uninitialized(p)]
        for idx in ready:
            param = self.params[idx]()
            self.numel[idx] = param.numel()
            if attached:
                self._hook(idx, param, make_hook)
        self.waiting = [i for i in self.waiting if i not in ready]

    def detach(self) -> None:
        """Take the hooks off (harmless when off), unwiring the dicts left empty (not inside
        a backward pass, which may be iterating them: see :func:`drop_empty_hooks`)."""
        on, self._on = self._on, []
        if not on:
            return
        import torch

        unwire = torch._C._current_autograd_node() is None  # (once, not per parameter)
        for ref, key in on:
            param = ref()
            hooks = None if param is None else param._backward_hooks
            if hooks is not None:
                hooks.pop(key, None)
                if not hooks and unwire and param.grad_fn is None:
                    param._backward_hooks = None

    def _hook(self, idx: int, param: Any, make_hook: HookMaker) -> None:
        """What ``param.register_hook`` does, less the handle: our hook at the end of the
        parameter's hook dict, under a key no handle uses (taken from torch's own counter
        once per parameter, and used again each time it is put back)."""
        if not param.requires_grad:  # (as register_hook would refuse it)
            return
        made = self._made.get(idx)
        if made is None:
            from torch.utils.hooks import RemovableHandle

            made = self._made[idx] = (make_hook(idx), RemovableHandle.next_id)
            RemovableHandle.next_id += 1
        hook, key = made
        hooks = param._backward_hooks
        if hooks is None:
            param._backward_hooks = hooks = OrderedDict()  # (wires the dict into autograd)
        hooks[key] = hook
        self._on.append((self.params[idx], key))
