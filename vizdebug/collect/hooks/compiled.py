"""Hooks that stay out of compiled code: ``torch.compile`` and TorchScript models.

A forward hook on a module that runs inside a ``torch.compile``'d region is traced by
dynamo with the module: vizdebug's hooks read numpy views and keep Python state, so
dynamo breaks the graph there, or gives up on the frame, and the model runs largely
eager for good (19 graphs and 11 breaks instead of one graph, twice the step time).
Two things keep the compiled program as it is:

- :func:`graph_safe` wraps every hook: traced, it returns at once (dynamo folds
  ``is_dynamo_compiling()`` to ``True``, so nothing of vizdebug enters the graph and there
  is no graph break); called as a frame of its own while dynamo is active (a compiled
  module's own hooks run from ``Module._call_impl``, which dynamo does not compile, but
  every Python frame below it would be), its code is marked to run eagerly with all it
  calls.
- :func:`unhookable_ids` names the modules whose hooks could not run eagerly: inside an
  ``OptimizedModule`` (``torch.compile(m)``), a module with ``m.compile()`` and everything
  below it, and TorchScript modules (which refuse Python hooks). The engine attaches no
  forward hook there: their activations are not sampled (their gradients still are:
  parameter hooks run in the autograd engine, outside the compiled forward).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["HookSites", "compiled_paths", "graph_safe", "hook_sites", "under_transform",
           "unhookable_ids"]

_COMPILING: Callable[[], bool] | None = None  # torch.compiler.is_dynamo_compiling, once loaded


def _compiling_check() -> Callable[[], bool]:
    """The cheapest "is dynamo tracing this?" torch has (16 ns; ``is_compiling`` costs
    0.3 us), which dynamo folds to a constant while it traces."""
    global _COMPILING
    if _COMPILING is None:
        import torch

        compiler = getattr(torch, "compiler", None)
        _COMPILING = (getattr(compiler, "is_dynamo_compiling", None)
                      or getattr(compiler, "is_compiling", None) or (lambda: False))
    return _COMPILING


def graph_safe(hook: Callable[..., Any]) -> Callable[..., Any]:
    """``hook``, made invisible to ``torch.compile`` (see the module docstring).

    Examples
    --------
    >>> calls = []
    >>> safe = graph_safe(lambda *args: calls.append(args))
    >>> safe(1, 2); calls
    [(1, 2)]
    """
    compiling = _compiling_check()

    def safe_hook(*args: Any) -> Any:
        if compiling():
            return None  # traced: leave nothing in the graph
        return hook(*args)
    _run_eagerly(safe_hook.__code__)
    return safe_hook


def under_transform() -> bool:
    """True inside a ``torch.func`` transform (``vmap``, ``grad``: per-sample gradients
    through ``functional_call``): its tensors are wrappers without storage, which no
    statistic can read (``.numpy()``, ``.item()`` raise), so the engine observes such a
    forward pass as it does an eval pass: not sampled (one check per forward, ~0.1 us).

    >>> under_transform()
    False
    """
    import torch

    level = getattr(getattr(torch._C, "_functorch", None), "maybe_current_level", None)
    return level is not None and level() is not None


_MARKED: set[Any] = set()


def _run_eagerly(code: Any) -> None:
    """Tell dynamo to run frames of ``code``, and every frame they call, uncompiled (one
    code object serves every hook :func:`graph_safe` makes). torch has no public way to
    do this for a frame it meets on its own; without it (an older torch) the traced
    branch above still keeps the graph whole."""
    if code in _MARKED:
        return
    _MARKED.add(code)
    try:
        from torch._dynamo.eval_frame import (
            FrameAction,
            FrameExecStrategy,
            set_code_exec_strategy,
        )

        set_code_exec_strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))
    except (ImportError, AttributeError, TypeError, RuntimeError):
        pass


def _regions(model: Any) -> list[tuple[str, Any, bool]]:
    """The outermost compiled modules under (or at) ``model``: ``(path, module, whether
    the module's own hooks run inside the compiled code)``. A ``module.compile()``'d
    module's own hooks do not (dynamo compiles its ``forward``, below them); a
    ``torch.compile`` wrapper's inner module's may (a ``torch.nn`` class is traced with
    its hooks), and a TorchScript module refuses them."""
    import torch
    from torch._dynamo.eval_frame import OptimizedModule

    out: list[tuple[str, Any, bool]] = []
    for path, module in model.named_modules():
        if any(path == p or path.startswith(p + ".") or not p for p, _, _ in out):
            continue  # (inside one already found)
        if isinstance(module, OptimizedModule):
            out.append((f"{path}._orig_mod" if path else "_orig_mod", module._orig_mod, True))
        elif isinstance(module, torch.jit.ScriptModule):
            out.append((path, module, True))
        elif getattr(module, "_compiled_call_impl", None) is not None:
            out.append((path, module, False))
    return out


def unhookable_ids(model: Any) -> set[int]:
    """The ids of ``model``'s modules whose hooks would run inside compiled code.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    >>> compiled = torch.compile(model)
    >>> unhookable_ids(compiled) == {id(model), id(model[0]), id(model[1])}
    True
    """
    try:
        return {id(m) for _, region, itself in _regions(model) for m in region.modules()
                if itself or m is not region}
    except Exception:  # a model torch itself cannot walk (its own error comes later)
        return set()


def compiled_paths(model: Any) -> list[str]:
    """Where compiled regions start in ``model`` (``""``: the model itself).

    Examples
    --------
    >>> import torch
    >>> compiled_paths(torch.compile(torch.nn.Linear(2, 2)))
    ['_orig_mod']
    """
    try:
        return [path for path, _, _ in _regions(model)]
    except Exception:
        return []


class HookSites(NamedTuple):
    """Where the engine's forward hooks go: a weak reference per leaf module (a dead one
    for a leaf that gets none), ``(path, weak reference)`` per container that does,
    whether the root does, and where compiled regions start."""

    leaves: list[Callable[[], Any]]
    containers: list[tuple[str, Callable[[], Any]]]
    root: bool
    compiled: list[str]


def _no_module() -> None:
    return None  # (a dead weak reference's answer)


def hook_sites(model: Any, leaves: list[Any]) -> HookSites:
    """The :class:`HookSites` of ``model`` whose leaf modules are ``leaves``.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    >>> sites = hook_sites(torch.compile(model), list(model))
    >>> [ref() for ref in sites.leaves], sites.root, sites.compiled
    ([None, None], True, ['_orig_mod'])
    """
    unhookable = unhookable_ids(model)
    leaf_ids = {id(m) for m in leaves}
    return HookSites(
        [weakref.ref(m) if id(m) not in unhookable else _no_module for m in leaves],
        [(n or type(model).__name__, weakref.ref(m)) for n, m in model.named_modules()
         if id(m) not in leaf_ids and id(m) not in unhookable],
        id(model) not in unhookable, compiled_paths(model) if unhookable else [])
