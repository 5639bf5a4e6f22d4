"""``VizdebugCallback`` for the Hugging Face ``Trainer``:
``Trainer(..., callbacks=[VizdebugCallback()])``.

``on_train_begin`` calls :func:`vizdebug.watch` on the model and the train dataloader.
The Trainer computes the loss inside the model's ``forward`` (``outputs.loss``), so the
callback reads it there, from a forward hook that returns nothing (training is
unchanged), and logs it as ``loss`` once per optimizer step (``state.global_step``): the
mean of the step's batches when gradients accumulate, or their sum when the model
received ``num_items_in_batch`` (it then divides by the whole step's token count, as the
Trainer reports it). ``on_log`` adds what the Trainer logs during training
(``learning_rate``, ``grad_norm``) and ``on_epoch_end`` the epoch; ``on_evaluate`` the evaluation metrics
(``eval_loss``, ``eval_accuracy``, ...). ``on_train_end`` closes the session.

The Trainer has no event for an exception: after a failed ``trainer.train()`` in a
notebook, call ``callback.close(error)`` (or just ``callback.session.findings()``; the
next ``train()`` closes the old session first).

Examples
--------
>>> from vizdebug.integrations.transformers import VizdebugCallback   # doctest: +SKIP
>>> cb = VizdebugCallback(run="runs/bert.sqlite")                        # doctest: +SKIP
>>> Trainer(model=model, args=args, train_dataset=ds, callbacks=[cb]).train()  # doctest: +SKIP
>>> cb.session.findings()                                                 # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Any

from transformers import TrainerCallback

from ..collect.session.core import Session
from . import _common

# what the Trainer logs that is no training curve: run summaries and timings
_SUMMARY = ("train_", "total_flos")
_TIMINGS = ("_runtime", "_per_second")


class VizdebugCallback(TrainerCallback):
    """Watch a Hugging Face ``Trainer`` run with vizdebug.

    Parameters
    ----------
    run : path, optional
        Also store the run in this SQLite file (or a new file in this folder); read it
        with ``vd.open_run(path)``. Rank ``k > 0`` of a distributed job writes
        ``<name>.rank<k>.sqlite`` beside it.
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
        The session of the last ``train()``.
    """

    def __init__(self, run: str | os.PathLike | None = None, *, track_embeddings: Any = None,
                 dashboard: bool = False, **watch_options: Any) -> None:
        self.run = run
        self.tracking = _common.check_tracking(track_embeddings)
        self.dashboard = bool(dashboard)
        self.watch_options = _common.check_watch_options(run, watch_options)
        self.session: Session | None = None
        self._loss = _common.StepLoss()
        self._scaled = False  # the model divided its loss by the step's item count
        self._hook: Any = None

    # -- start and end ------------------------------------------------------------------
    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       train_dataloader: Any = None, **kwargs: Any) -> None:
        self.close()  # a callback reused for a second train()
        run = _common.shared_run_path(self.run, _broadcast)
        loader = train_dataloader if _is_loader(train_dataloader) else None
        self.session = _common.start(model, loader, run, self.watch_options, self.tracking,
                                     config=_arguments(args))
        self._loss, self._scaled = _common.StepLoss(), False
        self._hook = model.register_forward_hook(self._read_loss, with_kwargs=True)
        if self.dashboard and state.is_world_process_zero:
            _common.display(self.session.dashboard())

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.close()

    def close(self, error: BaseException | None = None) -> None:
        """Remove the loss hook and close the session (as failed when ``error`` is given)."""
        hook, self._hook = self._hook, None
        if hook is not None:
            hook.remove()
        _common.finish(self.session, error)

    # -- training -----------------------------------------------------------------------
    def _read_loss(self, module: Any, args: Any, kwargs: dict, output: Any) -> None:
        """Forward hook: keep the loss of a training forward pass (detached)."""
        import torch

        if not (module.training and torch.is_grad_enabled()):
            return  # an evaluation or prediction pass
        loss = output.get("loss") if hasattr(output, "get") else getattr(output, "loss", None)
        if loss is not None:
            self._loss.add(loss)
            self._scaled = self._scaled or kwargs.get("num_items_in_batch") is not None

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.session is not None and not self.session.closed:
            self.session.begin_step()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.session is None or self.session.closed:
            return
        loss = self._loss.take(mean=not self._scaled)
        if loss is not None:
            self.session.log(state.global_step - 1, loss=loss)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None,
               **kwargs: Any) -> None:
        if self.session is None or self.session.closed or not logs:
            return
        metrics = {name: value for name, value in logs.items()
                   if _is_number(value) and name not in ("loss", "epoch")
                   and not _common.is_eval(name)
                   and not name.startswith(_SUMMARY) and not name.endswith(_TIMINGS)}
        if metrics:
            self.session.log(max(state.global_step - 1, 0), **metrics)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.session is not None and not self.session.closed and state.epoch is not None:
            self.session.log(max(state.global_step - 1, 0), epoch=round(state.epoch))

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict | None = None,
                    **kwargs: Any) -> None:
        if self.session is None or self.session.closed or not metrics:
            return
        found = {_common.eval_name(name, "eval_"): value for name, value in metrics.items()
                 if _is_number(value) and not name.endswith(_TIMINGS) and name != "epoch"}
        if found:
            self.session.log(max(state.global_step - 1, 0), **found)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_loader(loader: Any) -> bool:
    import torch

    return isinstance(loader, torch.utils.data.DataLoader)


def _broadcast(name: str) -> str:
    """Rank 0's ``name`` on every rank of an initialised ``torch.distributed`` job."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return name
    box = [name]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _arguments(args: Any) -> dict[str, Any]:
    """A ``TrainingArguments``' settings (empty when it cannot say them)."""
    try:
        return dict(args.to_dict())
    except Exception:
        return {}
