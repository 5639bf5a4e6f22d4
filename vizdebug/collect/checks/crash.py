"""Naming the module that received ``None``: as it happens, or from a crash afterwards.

A forward hook sees a ``None`` input when the module survives it. When the module crashes
on it instead, the exception is examined: by the root module's ``always_call`` hook while
it propagates, or, when no hook was attached (between samples, with the optimizer
counting the steps), from the exception the notebook or the interpreter kept
(``sys.last_value``).

``None`` is a fault only where it reaches a module that cannot take it: as the first
input (the data), in a place the module's ``forward`` does not declare optional (no
``None`` default, no ``Optional`` annotation), or in a custom module that raised after it.
An RNN's ``hx=None``, attention's ``key_padding_mask=None`` or a ``mask=None`` parameter
passed positionally are the module's own defaults.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

from .anomaly import AnomalyEvent, AnomalyPolicy, WatchAnomaly, previous_sibling

# The frames of ``torch.nn.Module._call_impl`` in a traceback are the module calls that
# were running: torch offers no public way to ask which module a forward exception came
# from, so the crash is located by this function's name and its ``self``/``args`` locals
# (checked against the pinned torch by tests/test_collect_hooks.py).
_MODULE_CALL = "_call_impl"


class CrashNamer:
    """Turns a ``None`` input into an ``input-none`` event naming the module and, when
    known, the module that returned ``None`` just before.

    Examples
    --------
    >>> namer = CrashNamer({}, AnomalyPolicy("ignore"), step=lambda: 3)
    >>> namer.output_none("block"); namer.input_none("flat", "Flatten", 0)
    >>> namer.policy.events[0].message
    "module 'flat' (Flatten) received None as input 0 at step 3; 'block' returned None just before"
    """

    def __init__(self, paths: dict[int, str], policy: AnomalyPolicy,
                 step: Callable[[], int]) -> None:
        self.paths = paths  # id(module) -> its path in the model
        self.policy = policy
        self.step = step
        self.none_source: str | None = None  # the last module seen returning None
        self._seen = id(last_exception())  # an earlier crash is not this run's

    def output_none(self, path: str) -> None:
        """A module returned ``None`` (whoever receives it next is told where it came from)."""
        self.none_source = path

    def input_none(self, path: str, cls: str, position: int, frame: Any = None) -> None:
        """Module ``path`` received ``None`` as input ``position``: record (and, under
        ``raise``/``pdb``, raise or debug in ``frame``)."""
        step = max(self.step(), 0)
        source = self.none_source
        origin = f"; {source!r} returned None just before" if source else ""
        event = AnomalyEvent(
            "input-none", step, path, cls,
            f"module {path!r} ({cls}) received None as input {position} at step {step}{origin}",
            {"position": position, "source": source},
        )
        self.policy.handle(event, frame=frame)

    def inputs_none(self, path: str, cls: str, inputs: tuple, frame: Any = None,
                    module: Any = None) -> None:
        """:meth:`input_none` for each ``None`` among a module's positional inputs that
        ``module`` cannot take (see :func:`takes_none`)."""
        for position, arg in enumerate(inputs):
            if arg is None and not takes_none(module, position):
                self.input_none(path, cls, position, frame)

    def crashed(self, exc: BaseException) -> None:
        """Forward raised ``exc``: name the innermost module call if it got a ``None``."""
        if isinstance(exc, WatchAnomaly):
            return
        calls = [tb.tb_frame.f_locals for tb in _tracebacks(exc)
                 if tb.tb_frame.f_code.co_name == _MODULE_CALL
                 and "self" in tb.tb_frame.f_locals]
        if not calls:
            return
        inner = calls[-1]
        args, module = inner.get("args") or (), inner["self"]
        # a torch module raises for its own reasons where it declares None optional
        builtin = type(module).__module__.startswith("torch.")
        position = next((i for i, a in enumerate(args)
                         if a is None and not (builtin and takes_none(module, i))), None)
        path = self.paths.get(id(module))
        if position is None or path is None or self._known(path):
            return
        self.none_source = previous_sibling(calls, self.paths) or self.none_source
        self.input_none(path, type(module).__name__, position)

    def check_last(self) -> None:
        """Examine the exception the interpreter (or IPython) last left unhandled, once."""
        exc = last_exception()
        if exc is None or id(exc) == self._seen:
            return
        self._seen = id(exc)
        self.crashed(exc)

    def _known(self, path: str) -> bool:
        step = self.step()
        return any(ev.kind == "input-none" and ev.module_path == path and ev.step == step
                   for ev in self.policy.events)


def takes_none(module: Any, position: int) -> bool:
    """Whether ``module`` may be handed ``None`` as positional input ``position``: never
    the first (the data); elsewhere where its ``forward`` declares the parameter optional,
    or where the signature cannot tell (``*args``, no signature: it ran, so it took it).

    Examples
    --------
    >>> import torch
    >>> takes_none(torch.nn.LSTM(3, 4), 1), takes_none(torch.nn.LSTM(3, 4), 0)
    (True, False)
    >>> takes_none(torch.nn.Bilinear(2, 2, 1), 1)
    False
    """
    if position == 0:
        return False
    if module is None:
        return False  # (no module to ask)
    optional = _optional_inputs(type(module))
    return optional is None or position > len(optional) or optional[position - 1]


@functools.lru_cache(maxsize=1024)
def _optional_inputs(cls: type) -> tuple[bool, ...] | None:
    """For each positional parameter of ``cls.forward`` after the first: whether it may be
    None. None when the signature cannot tell; the tuple ends at ``*args`` (anything)."""
    try:
        params = list(inspect.signature(cls.forward).parameters.values())[1:]  # (self)
    except (TypeError, ValueError, AttributeError):
        return None
    flags = []
    for param in params[1:]:
        if param.kind not in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            break  # (places past the named ones go to *args: anything)
        text = str(param.annotation)
        flags.append(param.default is None or "None" in text or "Optional" in text)
    return tuple(flags)


def _tracebacks(exc: BaseException) -> Any:
    tb = exc.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def last_exception() -> BaseException | None:
    """The exception the interpreter (or IPython) last left unhandled, if any."""
    return getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
