"""The plain training loop most corpus programs share: the loop a tutorial teaches, with
vizdebug attached as the README shows. Programs whose fault *is* the loop (a missing
``zero_grad``, a scheduler stepped per batch, eval mode left on) write their own."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

import vizdebug as vd


def evaluate(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor,
             loss_fn: Callable, metric: Callable | None = None) -> tuple[float, float | None]:
    """Validation loss (and metric) in eval mode, without gradients; back to train mode."""
    model.eval()
    with torch.no_grad():
        out = model(x)
        loss = float(loss_fn(out, y))
        score = metric(out, y) if metric is not None else None
    model.train()
    return loss, score


def fit(model: torch.nn.Module, loader, loss_fn: Callable, optimizer: torch.optim.Optimizer,
        epochs: int, val: tuple[torch.Tensor, torch.Tensor] | None = None,
        metric: Callable | None = None, scheduler=None,
        checks: vd.Findings | None = None,
        crash: type[BaseException] | tuple[type[BaseException], ...] = ()) -> vd.Findings:
    """Train ``epochs`` epochs with vizdebug watching; return its findings (and ``checks``,
    what the program's own ``check_batch``/``check_dataset`` calls said). ``crash`` is the
    error the reported program raised: caught as a notebook shows it, after which the next
    cell asks vizdebug why."""
    session = vd.watch(model, loader=loader)
    model.train()
    with contextlib.suppress(crash):
        _epochs(model, loader, loss_fn, optimizer, epochs, session, val, metric, scheduler)
    return finish(session, checks)


def _epochs(model, loader, loss_fn, optimizer, epochs, session, val, metric, scheduler) -> None:
    for _ in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        if scheduler is not None:
            scheduler.step()
        if val is not None:
            v_loss, v_score = evaluate(model, *val, loss_fn, metric)
            if v_score is None:
                session.log(val_loss=v_loss)
            else:
                session.log(val_loss=v_loss, val_acc=v_score)


def finish(session: vd.Session, checks: vd.Findings | None = None) -> vd.Findings:
    """What the practitioner reads at the end: ``session.findings()`` (plus any checks)."""
    found = session.findings()
    LAST_METRICS.clear()
    LAST_METRICS.update(last_values(session))
    session.close()
    return vd.Findings([*(checks or []), *found])


LAST_METRICS: dict[str, float] = {}  # the last program's final logged values (run.py -v)


def last_values(session: vd.Session) -> dict[str, float]:
    """The first and last value of every logged metric (``loss`` first and last)."""
    df = session.scalars()
    out: dict[str, float] = {}
    for name, part in df.groupby("name", sort=False):
        if name == "loss":
            out["loss_first"] = float(part["value"].iloc[0])
        out[name] = float(part["value"].iloc[-1])
    out["steps"] = float(df["step"].max()) if len(df) else 0.0
    return out


def acc(out: torch.Tensor, y: torch.Tensor) -> float:
    return float((out.argmax(1) == y).float().mean())


def binary_acc(out: torch.Tensor, y: torch.Tensor) -> float:
    """Accuracy of a one-logit binary classifier (threshold at 0)."""
    return float(((out.reshape(-1) > 0).float() == y.reshape(-1)).float().mean())
