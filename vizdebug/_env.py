"""Where output goes: a live widget front end, static HTML, or plain text.

Detected in one place, overridable with ``VIZDEBUG_RENDERER`` (``widget``, ``html``,
``text``) or :func:`set_renderer`.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from .errors import VizdebugError

RENDERERS = ("widget", "html", "text")
_override: str | None = None


def set_renderer(mode: str | None) -> None:
    """Force a renderer for this process (``None`` returns to detection)."""
    global _override
    if mode is not None and mode not in RENDERERS:
        raise ValueError(f"renderer must be one of {RENDERERS} or None, got {mode!r}")
    _override = mode


def renderer() -> str:
    """The renderer to use now: the override, the environment variable, or detection."""
    if _override is not None:
        return _override
    env = os.environ.get("VIZDEBUG_RENDERER", "").strip().lower()
    if env:
        if env not in RENDERERS:
            raise ValueError(f"VIZDEBUG_RENDERER must be one of {RENDERERS}, got {env!r}")
        return env
    return "widget" if in_kernel() else "html"


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where a widget front end may be listening)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def is_tensor(obj: object) -> bool:
    """True for a torch tensor, without importing torch."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


TORCH_EXTRA = 'pip install "vizdebug[torch]"'


class MissingDependencyError(VizdebugError, ImportError):
    """A feature needs a package that is not installed; the message names the ``pip`` line.

    Both a :class:`~vizdebug.errors.VizdebugError` and an ``ImportError``, so either
    ``except`` catches it.
    """


def require_torch(feature: str) -> None:
    """Raise :class:`MissingDependencyError` naming ``feature`` when torch is not installed.

    The data and drift side runs without torch; the training side is the ``torch`` extra.
    torch is looked for, not imported (importing it costs a second or more).

    >>> require_torch("watch()")  # torch is installed where the doctests run
    """
    if sys.modules.get("torch") is not None:
        return
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a None entry in sys.modules blocks the import
        found = False
    if found:
        return
    raise MissingDependencyError(
        f"{feature} needs PyTorch, which is not installed: the training side of vizdebug is "
        f"an extra. Install it with `{TORCH_EXTRA}` (on a machine without a GPU, install "
        "the small CPU build first: `pip install torch --index-url "
        "https://download.pytorch.org/whl/cpu`). compare_distributions, check_split, "
        "check_batch, show_batch and show_embeddings work on numpy arrays without it."
    )


def distributed_rank() -> tuple[int, int]:
    """``(rank, world_size)`` of this process in a ``torch.distributed`` job, else ``(0, 1)``.

    torch is only looked at when it is already imported (never imported here).

    >>> distributed_rank()
    (0, 1)
    """
    torch = sys.modules.get("torch")
    try:
        dist = torch.distributed if torch is not None else None
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:
        pass
    return 0, 1
