"""Run persistence: one SQLite file (WAL mode) per watched process; arrays as ``.npy``
bytes, never pickle. ``watch(model, store=path)`` writes, :func:`open_run` reads."""

from __future__ import annotations

from .opening import open_run
from .run import Run

__all__ = ["Run", "open_run"]
