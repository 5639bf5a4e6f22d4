"""What both framework callbacks share: their options, the loss of one optimizer step,
evaluation metric names, and the session's start and end."""

from __future__ import annotations

import datetime as _dt
import inspect
import os
from typing import Any

from .._env import in_kernel
from ..collect.session.core import Session
from ..collect.session.watch import watch
from ..errors import VizdebugTypeError, describe
from ..records import EVAL_PREFIXES

# watch()'s own keywords that a callback sets itself
_SET_BY_CALLBACK = ("loader", "store")


def check_watch_options(run: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` if ``watch()`` takes every one of them, else a clear error (raised when
    the callback is built, not in the middle of training)."""
    if run is not None and (isinstance(run, bool) or not isinstance(run, (str, os.PathLike))):
        raise VizdebugTypeError(
            f"run takes a file path (or a folder for a new file per run), got {describe(run)}; "
            "e.g. VizdebugCallback(run='runs/exp1.sqlite')")
    accepted = set(inspect.signature(watch).parameters) - {"model", *_SET_BY_CALLBACK}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise VizdebugTypeError(
            f"VizdebugCallback got {', '.join(map(repr, unknown))}, which vd.watch() does not "
            f"take; it takes {', '.join(sorted(accepted))} (and run= for a stored run)")
    return options


def is_eval(name: str) -> bool:
    """True for a metric name the diagnosis reads as an evaluation metric."""
    return name.startswith(EVAL_PREFIXES)


def check_tracking(spec: Any) -> list[dict[str, Any]]:
    """``track_embeddings=`` as a list of keyword sets for ``Session.track_embeddings``: a
    dict (``{"layer": "net.1", "probe": x_val, "labels": y_val}``) or a list of them."""
    if spec is None:
        return []
    specs = [spec] if isinstance(spec, dict) else spec
    accepted = set(inspect.signature(Session.track_embeddings).parameters) - {"self"}
    if isinstance(specs, (list, tuple)) and all(
            isinstance(one, dict) and {"layer", "probe"} <= set(one) <= accepted
            for one in specs):
        return [dict(one) for one in specs]
    raise VizdebugTypeError(
        f"track_embeddings takes a dict of Session.track_embeddings arguments (or a list "
        f"of them) with 'layer' and 'probe' and any of {sorted(accepted - {'layer', 'probe'})}"
        f", got {describe(spec)}; e.g. track_embeddings={{'layer': 'net.1', "
        "'probe': x_val, 'labels': y_val}")


def eval_name(name: str, prefix: str = "val_") -> str:
    """The name under which a metric computed on evaluation data is logged: one the
    diagnosis reads as an evaluation metric (``val_loss``, ``eval_accuracy``).

    >>> eval_name("val_loss"), eval_name("val/acc"), eval_name("loss"), eval_name("eval/f1")
    ('val_loss', 'val_acc', 'val_loss', 'eval_f1')
    """
    if name.startswith(EVAL_PREFIXES):
        return name
    head, sep, tail = name.partition("/")
    if sep and f"{head}_".startswith(EVAL_PREFIXES) and tail:
        return f"{head}_{tail.replace('/', '_')}"
    return prefix + name.replace("/", "_")


def shared_run_path(run: Any, rank_zero_name: Any) -> Any:
    """``run`` as a file path all ranks of a job agree on: a folder gets one new name,
    chosen by rank 0 and handed to the others by ``rank_zero_name(name)`` (the
    framework's broadcast), so rank ``k`` writes ``<name>.rank<k>.sqlite`` beside it."""
    if run is None or not os.path.isdir(run):
        return run
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = rank_zero_name(f"run-{stamp}-{os.getpid()}")
    return os.path.join(os.fspath(run), f"{name}.sqlite")


class StepLoss:
    """The losses of the forward passes of one optimizer step (several with gradient
    accumulation), detached and summed when the step is logged: no device sync."""

    def __init__(self) -> None:
        self.parts: list[Any] = []

    def add(self, loss: Any) -> None:
        torch = _torch()
        if isinstance(loss, torch.Tensor) and loss.numel() == 1:
            self.parts.append(loss.detach().reshape(()))

    def take(self, *, mean: bool = False) -> Any:
        """The step's loss (the sum of its parts, or their mean), or None; empties it."""
        parts, self.parts = self.parts, []
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        torch = _torch()
        total = torch.stack([p.to(parts[0].device, parts[0].dtype) for p in parts]).sum()
        return total / len(parts) if mean else total


def _torch() -> Any:
    import torch

    return torch


def known_config(settings: Any) -> dict[str, Any]:
    """What a framework already knows of a run's settings (Lightning's ``hparams``, a
    ``TrainingArguments.to_dict()``) as ``config=``: text keys, the first 200; an
    unreadable mapping gives none (it must never stop training).

    >>> known_config({"lr": 0.1, 3: "x"})
    {'lr': 0.1}
    """
    try:
        items = list(dict(settings).items())
    except Exception:
        return {}
    return dict([(k, v) for k, v in items if isinstance(k, str) and 0 < len(k) <= 200][:200])


def start(model: Any, loader: Any, run: Any, options: dict[str, Any],
          tracking: list[dict[str, Any]] = (), config: Any = None) -> Session:
    """``watch(model, ...)`` and the layers to track; a loader vizdebug cannot tap is left
    alone, not refused. ``config``: what the framework knows of the run's settings (the
    user's own ``config=`` option wins)."""
    if config and "config" not in options:
        options = {**options, "config": known_config(config)}
    try:
        session = watch(model, loader=loader, store=run, **options)
    except VizdebugTypeError:
        if loader is None:
            raise
        session = watch(model, store=run, **options)
    try:
        for spec in tracking:
            session.track_embeddings(**spec)
    except BaseException:
        session.close()
        raise
    return session


def finish(session: Session | None, error: BaseException | None = None) -> None:
    """Close ``session`` (a failed run when ``error`` ended training); harmless twice."""
    if session is None or session.closed:
        return
    if error is not None:
        session.__exit__(type(error), error, error.__traceback__)
    else:
        session.close()


def display(view: Any) -> None:
    """Show ``view`` in the notebook (nothing outside a Jupyter kernel)."""
    if in_kernel():
        from IPython.display import display as show

        show(view)
