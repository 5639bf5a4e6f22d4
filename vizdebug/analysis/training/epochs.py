"""The per-epoch metrics table (HF's notebook table, fastai's): a row per epoch, the mean
and last value of each training metric and the last value of each evaluation metric.

Where the epochs end, from what a run records:

- a logged ``epoch`` (``session.log(epoch=e)``): each step belongs to the epoch of the
  first ``epoch`` log at or after it. Logged once at an epoch's end (that call's step is
  the epoch's last training step) or at every step, the rule gives the same rows;
- else each evaluation log (``val_*``, ``test_*``...) ends an epoch (the usual loop
  evaluates once per epoch);
- else no epoch is known, and there is no table (``None``).

Steps after the last known end form a last row marked ``in_progress``. Pure numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...records import EVAL_PREFIXES, TrainingRecords
from .curves import is_lr_name

__all__ = ["EpochTable", "epoch_ends", "epoch_table"]


@dataclass
class EpochTable:
    """One row per epoch.

    ``epoch`` holds each row's number (``-1`` for a last epoch still in progress, whose
    number is not known); ``first_step`` / ``last_step`` the training steps it spans;
    ``columns`` the metrics' columns by name (``loss_mean``, ``loss_last``, ``val_loss``...)
    in the order they were logged; ``source`` says where the boundaries came from
    (``"epoch"`` or the evaluation metric's name).

    Examples
    --------
    >>> rec = TrainingRecords(scalars={
    ...     "loss": (np.arange(6), np.array([4.0, 2.0, 3.0, 1.0, 2.0, 0.0])),
    ...     "val_loss": (np.array([2, 5]), np.array([2.5, 1.5]))})
    >>> t = epoch_table(rec)
    >>> t.epoch.tolist(), t.columns["loss_mean"].tolist(), t.columns["loss_last"].tolist()
    ([1, 2], [3.0, 1.0], [3.0, 0.0])
    """

    epoch: np.ndarray
    first_step: np.ndarray
    last_step: np.ndarray
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    source: str = "epoch"
    counts: dict[str, np.ndarray] = field(default_factory=dict)  # points per row, by column

    def has(self, column: str, row: int) -> bool:
        """Whether ``column`` had a point in ``row`` (a NaN there is then a NaN value)."""
        counts = self.counts.get(column)
        return counts is None or bool(counts[row])

    @property
    def in_progress(self) -> bool:
        """Whether the last row is an epoch that has not ended yet."""
        return bool(self.epoch.size) and int(self.epoch[-1]) == -1

    def __len__(self) -> int:
        return int(self.epoch.size)


def _is_eval(name: str) -> bool:
    return name.startswith(EVAL_PREFIXES)


def epoch_ends(rec: TrainingRecords) -> tuple[np.ndarray, np.ndarray, str] | None:
    """``(last steps, epoch numbers, source)`` of the epochs that ended, or ``None``.

    >>> rec = TrainingRecords(scalars={"epoch": (np.array([9, 19]), np.array([0.0, 1.0]))})
    >>> ends, numbers, source = epoch_ends(rec); ends.tolist(), numbers.tolist(), source
    ([9, 19], [0, 1], 'epoch')
    """
    if "epoch" in rec.scalars:
        steps, values = (np.asarray(a) for a in rec.scalars["epoch"])
        ok = np.isfinite(values.astype(float))
        steps, values = steps[ok], values[ok].astype(float)
        if steps.size:
            # the last step logged with each epoch number (one log per epoch or one per step)
            last = np.r_[np.flatnonzero(np.diff(values) != 0), values.size - 1]
            return steps[last].astype(np.int64), values[last].astype(np.int64), "epoch"
    evals = [n for n in rec.scalars if _is_eval(n) and np.size(rec.scalars[n][0])]
    if evals:
        name = max(evals, key=lambda n: np.size(rec.scalars[n][0]))
        steps = np.unique(np.asarray(rec.scalars[name][0], dtype=np.int64))
        return steps, np.arange(1, steps.size + 1, dtype=np.int64), name
    return None


def _train_steps(rec: TrainingRecords) -> np.ndarray:
    """Every step some training metric was logged at (the steps epochs are made of)."""
    parts = [np.asarray(s, dtype=np.int64) for n, (s, _) in rec.scalars.items()
             if n != "epoch" and not _is_eval(n) and not is_lr_name(n)]
    return np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)


def _reduce(rows: np.ndarray, values: np.ndarray, n: int, how: str) -> np.ndarray:
    """Per row ``0..n-1``: the mean or last of ``values`` (NaN where a row has none).
    A non-finite value stays in the mean: an epoch that saw a NaN loss shows NaN."""
    out = np.full(n, np.nan)
    if how == "last":
        for r, v in zip(rows, values):  # later points overwrite: the last one stays
            out[r] = v
        return out
    sums = np.bincount(rows, weights=values, minlength=n)
    counts = np.bincount(rows, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return out


def epoch_table(rec: TrainingRecords) -> EpochTable | None:
    """The per-epoch table of ``rec`` (``None`` when no epoch boundary is known).

    Training metrics give ``<name>_mean`` and ``<name>_last``; evaluation metrics and
    logged learning rates ``<name>`` (their last value in the epoch).
    """
    found = epoch_ends(rec)
    if found is None:
        return None
    ends, numbers, source = found
    train = _train_steps(rec)
    tail = train.size and (not ends.size or train[-1] > ends[-1])
    n = ends.size + int(bool(tail))
    epoch = np.r_[numbers, [-1] * int(bool(tail))].astype(np.int64)
    last_step = np.r_[ends, train[-1:] if tail else []].astype(np.int64)
    first_step = np.r_[[train[0] if train.size else 0], ends[:-1] + 1][:n]
    if tail:
        first_step = np.r_[first_step[:ends.size], [ends[-1] + 1 if ends.size else train[0]]]
    columns: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    for name, (steps, values) in rec.scalars.items():
        if name == "epoch" or not np.size(steps):
            continue
        steps = np.asarray(steps, dtype=np.int64)
        values = np.asarray(values, dtype=float)
        rows = np.searchsorted(ends, steps, side="left")  # the first end at or after it
        keep = rows < n
        rows, values = rows[keep], values[keep]
        per_row = np.bincount(rows, minlength=n)
        if _is_eval(name) or is_lr_name(name) or name == source:
            columns[name], counts[name] = _reduce(rows, values, n, "last"), per_row
        else:
            for how in ("mean", "last"):
                columns[f"{name}_{how}"] = _reduce(rows, values, n, how)
                counts[f"{name}_{how}"] = per_row
    return EpochTable(epoch, first_step.astype(np.int64), last_step, columns, source, counts)
