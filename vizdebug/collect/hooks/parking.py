"""Per-layer hooks taken off between sampled steps and put back in place for the next one.

The hook engine attaches its per-layer hooks for sampled steps only (between samples no
hook runs in the model). Registering a hook through torch builds a ``RemovableHandle``
each time (a few microseconds per module and parameter: a deep model's sample paid
hundreds of microseconds for it); taking a hook off is ``handle.remove()``, which deletes
the handle's id from the hook dicts it names. :class:`ParkedHooks` remembers, before that
removal, what each dict held under the id, and putting the hooks back writes the same
entries into the same dicts: exactly the state that registering them anew would leave
(torch calls a module's or a tensor's hooks in their dicts' order, and a re-registered
hook went to the end of its dict too), and each handle still removes its hook.

A dict that no longer exists (its module or parameter is gone, or torch replaced it)
makes :meth:`ParkedHooks.restore` refuse, and the caller registers the hooks afresh.
:class:`LayerHooks` is the hook engine's part that attaches, parks and puts back.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable
from typing import Any

from .compiled import graph_safe

__all__ = ["LayerHooks", "ParkedHooks", "remove_all"]

# (the dict, held weakly as the handle holds it; the hook id; what the dict held there)
_Entry = tuple[weakref.ref, int, Any]


class ParkedHooks:
    """The hooks of ``handles``, removed and ready to go back (see the module docstring).

    ``key`` says what the hooks were registered for; :meth:`restore` puts them back only
    for the same key.

    Examples
    --------
    >>> import torch
    >>> layer = torch.nn.Linear(2, 2)
    >>> seen = []
    >>> handle = layer.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    >>> parked = ParkedHooks([handle], key="sampled")
    >>> _ = layer(torch.ones(1, 2)); seen        # parked: the hook does not run
    []
    >>> parked.restore("sampled")
    [<torch.utils.hooks.RemovableHandle object at ...>]
    >>> _ = layer(torch.ones(1, 2)); seen
    [torch.Size([1, 2])]
    >>> handle.remove(); len(layer._forward_hooks)
    0
    """

    def __init__(self, handles: list[Any], key: Hashable = None) -> None:
        self.key = key
        self.handles = handles
        entries: list[_Entry] | None = []
        for handle in handles:
            first = getattr(handle, "hooks_dict_ref", None)
            if first is None:  # a handle of another kind: removed, registered afresh
                handle.remove()
                entries = None
                continue
            hook_id = handle.id
            for ref in (first, *handle.extra_dict_ref):  # what handle.remove() deletes
                hooks = ref()
                if hooks is not None and hook_id in hooks:
                    if entries is not None:
                        entries.append((ref, hook_id, hooks[hook_id]))
                    del hooks[hook_id]
        self.entries = entries

    def restore(self, key: Hashable = None) -> list[Any] | None:
        """Put the hooks back; their handles, or ``None`` (nothing put back) when ``key``
        differs or a dict is gone: register them afresh then. Once only."""
        entries, self.entries = self.entries, None
        if entries is None or key != self.key:
            return None
        dicts = [ref() for ref, _, _ in entries]
        if any(d is None for d in dicts):
            return None
        for hooks, (_, hook_id, value) in zip(dicts, entries):
            hooks[hook_id] = value
        return self.handles


def remove_all(handles: list[Any]) -> None:
    for handle in handles:
        handle.remove()


class LayerHooks:
    """The per-layer part of :class:`~.engine.ModelHooks`: its sampled steps' hooks on the
    leaf modules and the containers, attached, parked between samples and put back, and
    the parameters' (:class:`~.param_hooks.ParamHooks`: put in and taken out) (the
    attributes and hook makers are the engine's)."""

    _parked: ParkedHooks | None
    _rooted: bool
    step_handles: list[Any]

    def _attach(self: Any) -> None:
        model = self.model_ref()
        root = self.clock.optimizer is not None and not self.permanent and model is not None
        key = (root, tuple(self.param_hooks.waiting))  # what the hooks are registered for
        parked, self._parked, self._rooted = self._parked, None, root
        self.param_hooks.attach(self._make_grad_hook)  # (their own: see param_hooks.py)
        if parked is not None and (handles := parked.restore(key)) is not None:
            self.step_handles = handles  # the last sample's hooks, back in place
            return
        add = self.step_handles.append
        if root:
            self.step_handles += self._root_hooks(model)  # for eval passes, crash naming
        # A None input is checked before forward only where it must stop there (raise,
        # pdb); otherwise the forward hook sees the same inputs after forward (one Python
        # hook per module instead of two), and a crash on None is named by the root hook.
        before = self.policy.immediate
        for idx, ref in enumerate(self._leaves):
            module = ref()
            if module is not None:
                if before:
                    add(module.register_forward_pre_hook(graph_safe(self._make_pre_hook(idx))))
                add(module.register_forward_hook(graph_safe(self._make_forward_hook(idx))))
        for path, ref in self._containers:
            module = ref()
            if module is not None:
                add(module.register_forward_hook(graph_safe(self._make_container_hook(path))))

    @property
    def _hooked(self: Any) -> bool:
        """Whether the sampled steps' hooks are on."""
        return bool(self.step_handles) or self.param_hooks.attached

    def _detach(self: Any, park: bool = True) -> None:
        """Take the per-layer hooks off; ``park``: ready for :meth:`_attach` to put back."""
        self.param_hooks.detach()
        handles, self.step_handles = self.step_handles, []
        if park and handles:  # (lazy parameters hooked since the attach are among them)
            self._parked = ParkedHooks(handles, (self._rooted, tuple(self.param_hooks.waiting)))
            return
        remove_all(handles)
        if not park:
            self._parked = None
