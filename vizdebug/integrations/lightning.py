"""``VizdebugCallback`` for PyTorch Lightning: ``Trainer(callbacks=[VizdebugCallback()])``.

When training starts (after the sanity check, once the train dataloader exists) the
callback calls :func:`vizdebug.watch` on the ``LightningModule`` and its train
dataloader. At each optimizer step it logs the loss ``training_step`` returned (when
gradients accumulate, the mean over the step's batches, as Lightning backpropagates it) and
the training metrics the module logged with ``self.log`` for that step; after each
validation run, the validation metrics under names the diagnosis reads as evaluation
metrics (``val_loss`` stays ``val_loss``, ``val/acc`` becomes ``val_acc``, ``acc``
becomes ``val_acc``). Steps are optimizer steps (``trainer.global_step``). The session
closes when fitting ends, as a failed run when an exception (or Ctrl-C) stops it.

With a DDP strategy every rank watches its own model; with ``run=`` rank ``k > 0``
writes ``<name>.rank<k>.sqlite`` beside rank 0's file, and ``vd.open_run`` on rank 0's
file finds the others. ``dashboard=True`` shows the live dashboard on rank 0 only. With
``ddp_fork``/``ddp_notebook`` the ranks run in forked processes and the callback in the
notebook keeps no session: follow the stored run with ``vd.open_run(path).dashboard()``.

Examples
--------
>>> from vizdebug.integrations.lightning import VizdebugCallback  # doctest: +SKIP
>>> cb = VizdebugCallback(run="runs/exp1.sqlite")                   # doctest: +SKIP
>>> L.Trainer(max_epochs=3, callbacks=[cb]).fit(module, train_dl, val_dl)  # doctest: +SKIP
>>> cb.session.findings()                                            # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Any

from lightning.pytorch.callbacks import Callback

from ..collect.session.core import Session
from . import _common


class VizdebugCallback(Callback):
    """Watch a Lightning fit with vizdebug.

    Parameters
    ----------
    run : path, optional
        Also store the run in this SQLite file (or a new file in this folder); read it
        with ``vd.open_run(path)``.
    track_embeddings : dict or list of dicts, optional
        Layers to track over training, as :meth:`vizdebug.Session.track_embeddings`
        arguments: ``{"layer": "net.1", "probe": x_val, "labels": y_val}`` (the probe
        goes through the model's ``forward``; ``every`` is ``"epoch"`` by default).
    dashboard : bool
        Show the live dashboard when training starts (in a notebook; rank 0 only).
    **watch_options
        Passed to :func:`vizdebug.watch`: ``every``, ``on_anomaly``, ...

    Attributes
    ----------
    session : vizdebug.Session or None
        The session of the last fit (``.findings()``, ``.dashboard()``, ``.scalars()``).
    """

    def __init__(self, run: str | os.PathLike | None = None, *, track_embeddings: Any = None,
                 dashboard: bool = False, **watch_options: Any) -> None:
        self.run = run
        self.tracking = _common.check_tracking(track_embeddings)
        self.dashboard = bool(dashboard)
        self.watch_options = _common.check_watch_options(run, watch_options)
        self.session: Session | None = None
        self._loss = _common.StepLoss()
        self._steps_seen = 0
        self._in_step = False
        # metric name -> the value object last seen (kept, so that a new one is told apart)
        self._logged: dict[str, Any] = {}
        self._before_validation: dict[str, Any] = {}

    # -- start and end ------------------------------------------------------------------
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        _common.finish(self.session)  # a callback reused for a second fit
        run = _common.shared_run_path(self.run, trainer.strategy.broadcast)
        loader = trainer.train_dataloader
        self.session = _common.start(pl_module, loader if _is_loader(loader) else None, run,
                                     self.watch_options, self.tracking,
                                     config=getattr(pl_module, "hparams", None))
        self._loss = _common.StepLoss()
        self._steps_seen, self._in_step = trainer.global_step, False
        self._logged = dict(trainer.callback_metrics)
        if self.dashboard and trainer.is_global_zero:
            _common.display(self.session.dashboard())

    def on_fit_end(self, trainer: Any, pl_module: Any) -> None:
        _common.finish(self.session)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        _common.finish(self.session, exception)

    # -- training steps ---------------------------------------------------------------------
    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any,
                             batch_idx: int) -> None:
        if self.session is not None and not self._in_step:
            self._in_step = True  # the first batch of an optimizer step
            self.session.begin_step()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        session = self.session
        if session is None or session.closed:
            return
        self._loss.add(outputs.get("loss") if isinstance(outputs, dict) else outputs)
        if trainer.global_step <= self._steps_seen:
            return  # gradients still accumulate: the step is not over
        self._steps_seen, self._in_step = trainer.global_step, False
        step = trainer.global_step - 1
        metrics = self._fresh(trainer, lambda name: not _common.is_eval(name)
                              and name != "loss" and not name.endswith("_epoch"))
        loss = self._loss.take()
        if loss is not None:
            metrics["loss"] = loss
        if metrics:
            session.log(step, **metrics)

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self.session is not None and not self.session.closed:
            self.session.log(max(trainer.global_step - 1, 0), epoch=trainer.current_epoch + 1)

    # -- validation ------------------------------------------------------------------------
    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        self._before_validation = dict(trainer.callback_metrics)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        session = self.session
        if session is None or session.closed or trainer.sanity_checking:
            return
        before, metrics = self._before_validation, dict(trainer.callback_metrics)
        new = {_common.eval_name(name): value for name, value in metrics.items()
               if before.get(name) is not value}
        self._logged.update(metrics)
        self._before_validation = {}
        if new:
            session.log(max(trainer.global_step - 1, 0), **new)

    def _fresh(self, trainer: Any, wanted: Any) -> dict[str, Any]:
        """The metrics the module logged since the last look (a new value object)."""
        out = {}
        for name, value in trainer.callback_metrics.items():
            if wanted(name) and self._logged.get(name) is not value:
                out[name] = self._logged[name] = value
        return out


def _is_loader(loader: Any) -> bool:
    import torch

    return isinstance(loader, torch.utils.data.DataLoader)
