"""``watch(model)``: check what was passed, close the session a re-run cell left on the same
model (hooks never pile up), and start a :class:`~vizdebug.collect.session.core.Session`."""

from __future__ import annotations

import math
import numbers
import os
import sys
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..._env import require_torch
from ...errors import VizdebugTypeError, describe
from ...store.names import storable_name
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


def watch(model: torch.nn.Module, *positional: Any, loader: Any = None,
          every: int | str = DEFAULT_EVERY, store: str | os.PathLike | None = None,
          on_anomaly: str = "warn", config: Mapping[str, Any] | None = None) -> Session:
    """Attach collectors to ``model`` (and ``loader``) and return the :class:`Session`.

    Parameters
    ----------
    model : torch.nn.Module
        The model you train. Held by a weak reference; its outputs are never changed. A
        ``torch.compile``'d model stays compiled: no hook runs inside compiled code, so
        the modules there get no activation statistics (their gradients still do); a
        TorchScript module is watched the same way (it refuses Python hooks).
    *positional
        Nothing: every other argument is named (``loader=...``); a value passed by
        position is refused with the form that works.
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
    config : dict, optional
        The run's settings (learning rate, seed, batch size...), stored with the run:
        ``vd.compare_runs`` tabulates, filters and groups runs by them. Keys are text;
        values are numbers, text, booleans or None (anything else is stored as its
        ``repr``); at most 200 settings.

    Examples
    --------
    >>> session = vd.watch(model, loader=train_loader)   # doctest: +SKIP
    >>> session.dashboard()                              # doctest: +SKIP
    """
    _check_model(model)
    if positional:
        raise VizdebugTypeError(
            f"watch() takes the model by position and the rest by name, got "
            f"{len(positional) + 1} positional arguments (the second: "
            f"{describe(positional[0])}); write vd.watch(model, loader=train_loader)")
    every = check_every(every)
    settings = check_config(config)
    policy = AnomalyPolicy(check_on_anomaly(on_anomaly))
    previous = _SESSIONS.get(model)
    if previous is not None:
        previous.close()
    session = Session(model, every=every, policy=policy, loader=loader, store=store,
                      config=settings)
    _SESSIONS[model] = session
    return session


MAX_CONFIG = 200  # settings in one run's config


def check_config(config: object) -> dict[str, Any]:
    """``config=`` as plain JSON values: text keys (at most 200 characters), numbers,
    text, booleans or None (other values as their ``repr``, cut to 200 characters).

    >>> check_config({"lr": 0.1, "layers": [64, 64]})
    {'lr': 0.1, 'layers': '[64, 64]'}
    """
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise VizdebugTypeError(
            f"config must be a dict of settings, e.g. config={{'lr': 0.1, 'seed': 0}}; got "
            f"{describe(config)}")
    if len(config) > MAX_CONFIG:
        raise VizdebugTypeError(f"config holds {len(config)} settings; at most {MAX_CONFIG}")
    return {_config_key(key): _config_value(value) for key, value in config.items()}


def _config_key(key: object) -> str:
    if not isinstance(key, str) or not key or len(key) > 200:
        raise VizdebugTypeError(f"config keys must be non-empty text of at most 200 "
                                f"characters; got {describe(key)}")
    return storable_name(key)


def _config_value(value: object) -> Any:
    """A number, text, boolean or None as it is; anything else as its ``repr``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and abs(int(value)) < 2 ** 63:  # numpy's too
        return int(value)  # (a bigger one is no number SQLite or JSON readers hold)
    if isinstance(value, numbers.Real) and math.isfinite(float(value)):
        return float(value)
    return storable_name(value if isinstance(value, str) else repr(value))[:200]
