"""``watch(model)``: check what was passed, close the session a re-run cell left on the same
model (hooks never pile up), and start a :class:`~vizdebug.collect.session.core.Session`."""

from __future__ import annotations

import os
import sys
import weakref
from typing import TYPE_CHECKING, Any

from ..._env import require_torch
from ...errors import VizdebugTypeError, describe
from ..checks.anomaly import AnomalyPolicy, check_on_anomaly
from ..hooks.sampling import check_every
from .core import Session

if TYPE_CHECKING:
    import torch

DEFAULT_EVERY = "auto"
_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _check_model(model: object) -> None:
    require_torch("watch()")
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(model, torch.nn.Module):
        raise VizdebugTypeError(
            f"watch() takes a torch.nn.Module, got {describe(model)}; pass the model you "
            "train, e.g. vd.watch(model, loader=train_loader)"
        )


def watch(model: torch.nn.Module, *, loader: Any = None, every: int | str = DEFAULT_EVERY,
          store: str | os.PathLike | None = None, on_anomaly: str = "warn") -> Session:
    """Attach collectors to ``model`` (and ``loader``) and return the :class:`Session`.

    Parameters
    ----------
    model : torch.nn.Module
        The model you train. Held by a weak reference; its outputs are never changed.
    loader : DataLoader, optional
        Tapped for data-wait vs compute time, batch statistics and a few captured batches.
    every : int or "auto"
        Per-layer statistics are taken every ``every``-th training step. ``"auto"`` (the
        default) spaces the samples so that they cost about 1% of the training time,
        measured as training runs (a few dozen steps apart for a small CNN on a CPU, every
        few steps for a model whose steps are long). Steps are counted by the optimizer
        that updates the model (by its forward passes until one steps, or in a loop that
        updates weights by hand), so between samples no hook runs in the model. A module
        that crashes on a ``None`` input is named on any step (in a notebook or the
        interactive interpreter, from the exception they keep).
    store : path, optional
        Also write the run to this SQLite file (or a new file in this folder), from a
        background thread every half second: every logged point, the sampled
        statistics, the loader and system records, a few input batches. Read it with
        ``vd.open_run(path)`` from another kernel, a script or after a crash. An earlier
        run at the same path is replaced; any other existing file is left alone (error).
        Rank ``k > 0`` of a ``torch.distributed`` job writes ``<name>.rank<k>.sqlite``.
    on_anomaly : {"warn", "raise", "pdb", "ignore"}
        What to do at the first non-finite activation or ``None`` input. ``"raise"`` and
        ``"pdb"`` check every step (one device sync per module: slower, but exact).

    Examples
    --------
    >>> session = vd.watch(model, loader=train_loader)   # doctest: +SKIP
    >>> session.dashboard()                              # doctest: +SKIP
    """
    _check_model(model)
    every = check_every(every)
    policy = AnomalyPolicy(check_on_anomaly(on_anomaly))
    previous = _SESSIONS.get(model)
    if previous is not None:
        previous.close()
    session = Session(model, every=every, policy=policy, loader=loader, store=store)
    _SESSIONS[model] = session
    return session
