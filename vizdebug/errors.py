"""The exceptions vizdebug raises for the user's mistakes.

Each message names what was passed (type, shape, dtype, key or index) and what would work.
"""

from __future__ import annotations

import contextlib


class VizdebugError(ValueError):
    """A value vizdebug cannot use; the message says what was seen and what would work."""


class VizdebugTypeError(VizdebugError, TypeError):
    """An object of a kind vizdebug cannot use (also a ``TypeError``)."""


class AnomalyError(RuntimeError):
    """Raised by a watched model with ``on_anomaly="raise"`` at the first anomaly."""


def describe(obj: object) -> str:
    """A short description of ``obj`` for error messages: type, shape and dtype if any.
    Never raises (an object whose ``shape`` or ``len`` fails is described by its type)."""
    name = type(obj).__module__.split(".")[0] + "." + type(obj).__qualname__
    if type(obj).__module__ == "builtins":
        name = type(obj).__qualname__
    parts = [name]
    with contextlib.suppress(Exception):
        shape = getattr(obj, "shape", None)
        if shape is not None:
            parts.append(f"shape {tuple(shape)}")
    with contextlib.suppress(Exception):
        dtype = getattr(obj, "dtype", None)
        if dtype is not None:
            parts.append(f"dtype {dtype}")
    if isinstance(obj, (list, tuple)):
        parts.append(f"length {len(obj)}")
    return ", ".join(parts)


def short_repr(obj: object, limit: int = 60) -> str:
    """``repr(obj)`` cut to ``limit`` characters, for messages; never raises (a huge int is
    described by its size, a failing ``__repr__`` by the type).

    >>> short_repr("x" * 100, 8), short_repr(10**400)
    ("'xxxxxxx", 'an int of 1329 bits')
    """
    if isinstance(obj, int) and obj.bit_length() > 64:
        return f"an int of {obj.bit_length()} bits"  # repr of a huge int is slow or refused
    try:
        return repr(obj)[:limit]
    except Exception:
        return f"<{type(obj).__name__} whose repr failed>"
