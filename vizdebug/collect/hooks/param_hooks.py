"""The gradient hooks of a model's parameters, and their sizes, lazy modules' included.

Until a lazy module's (``nn.LazyLinear``, ``nn.LazyConv2d``, ...) first forward its
parameters are ``UninitializedParameter``: every torch call on them raises (``numel()``,
``register_post_accumulate_grad_hook``). The first forward gives them their shape in place
(the same tensor objects, so their ids and weak references stay valid). :class:`ParamHooks`
hooks the parameters that exist, counts 0 elements for the others, and hooks them once
they exist.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["ParamHooks", "class_name", "is_uninitialized"]

HookMaker = Callable[[int], Callable]  # parameter index -> its post-accumulate-grad hook


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


class ParamHooks:
    """Puts the gradient hooks on the parameters that exist; knows their sizes.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.LazyLinear(2), torch.nn.Linear(2, 1))
    >>> params = ParamHooks(list(model.parameters()))
    >>> params.numel, params.waiting
    ([0, 0, 2, 1], [0, 1])
    >>> _ = model(torch.ones(1, 3))
    >>> params.attach_ready(lambda idx: print, [])
    >>> params.numel, params.waiting
    ([6, 2, 2, 1], [])
    """

    def __init__(self, params: list[Any]) -> None:
        self.params = [weakref.ref(p) for p in params]
        self.waiting = [i for i, p in enumerate(params) if is_uninitialized(p)]
        #: elements per parameter (0 until materialised); updated in place, so a reader
        #: holding this list sees the sizes once they exist
        self.numel = [0 if i in self.waiting else p.numel() for i, p in enumerate(params)]

    def attach(self, make_hook: HookMaker, add: Callable[[Any], None]) -> None:
        """Hook every parameter that exists (``add`` keeps each handle)."""
        for idx, ref in enumerate(self.params):
            param = ref()
            if param is not None and not is_uninitialized(param):  # (lazy: after forward)
                add(param.register_post_accumulate_grad_hook(make_hook(idx)))

    def attach_ready(self, make_hook: HookMaker, handles: list[Any]) -> None:
        """After a forward pass: note the sizes of the parameters that now exist and, while
        the per-layer hooks are on (``handles`` not empty), hook them (otherwise the next
        :meth:`attach` does)."""
        if not self.waiting:
            return
        ready = [i for i in self.waiting
                 if (p := self.params[i]()) is not None and not is_uninitialized(p)]
        for idx in ready:
            param = self.params[idx]()
            self.numel[idx] = param.numel()
            if handles:
                handles.append(param.register_post_accumulate_grad_hook(make_hook(idx)))
        self.waiting = [i for i in self.waiting if i not in ready]
