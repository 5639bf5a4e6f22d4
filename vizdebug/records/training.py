"""The records the training rules read: field tuples and :class:`TrainingRecords`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .events import AnomalyEvent
    from .loader import LoaderRecord
    from .program import ProgramFacts


#: What one sampled activation yields (computed in ``collect/``, defined in
#: :mod:`vizdebug.analysis.training.activations`).
ACTIVATION_STATS = ("mean", "std", "zero", "dead", "saturated", "nonfinite", "absmax", "numel")
#: An activation record: the statistics plus the module's place in the step's call order.
ACTIVATION_FIELDS = (*ACTIVATION_STATS, "order")
#: A parameter record of a sampled step.
GRAD_FIELDS = ("grad_norm", "weight_norm", "update_ratio")
#: A loader batch record (statistics of the batch's input).
BATCH_FIELDS = ("min", "max", "mean", "std", "nonfinite", "numel")
#: Metric name prefixes that mark an evaluation metric (not a training one).
EVAL_PREFIXES = ("val_", "valid_", "validation_", "test_", "eval_")


def _no_loader() -> LoaderRecord:
    from .loader import LoaderRecord

    return LoaderRecord()


@dataclass
class TrainingRecords:
    """Everything the rules look at, as plain arrays.

    Examples
    --------
    >>> rec = TrainingRecords(scalars={"loss": (np.arange(3), np.array([1.0, np.nan, 2.0]))})
    >>> rec.train_loss()[0]
    'loss'
    """

    scalars: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    module_paths: list[str] = field(default_factory=list)
    module_classes: list[str] = field(default_factory=list)
    act_steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    activations: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 9)))
    param_paths: list[str] = field(default_factory=list)
    param_numel: list[int] = field(default_factory=list)
    grad_steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    grads: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 3)))
    events: list[AnomalyEvent] = field(default_factory=list)
    loader: LoaderRecord = field(default_factory=_no_loader)
    errors: list[tuple[str, str, int]] = field(default_factory=list)
    every: int | str = 1
    program: ProgramFacts | None = None  # the program's shape (None: not collected)

    def act(self, name: str) -> np.ndarray:
        """One activation field as ``(samples, modules)``."""
        return self.activations[:, :, ACTIVATION_FIELDS.index(name)]

    def grad(self, name: str) -> np.ndarray:
        """One gradient field as ``(samples, params)``."""
        return self.grads[:, :, GRAD_FIELDS.index(name)]

    def train_loss(self) -> tuple[str, np.ndarray, np.ndarray] | None:
        """The training loss curve: ``loss``, else the first ``*loss*`` that is not eval."""
        names = [n for n in self.scalars if "loss" in n and not _is_eval(n)]
        if "loss" in self.scalars:
            names.insert(0, "loss")
        if not names:
            return None
        steps, values = self.scalars[names[0]]
        return names[0], steps, values

    def val_loss(self) -> tuple[str, np.ndarray, np.ndarray] | None:
        """The validation loss curve (``val_loss`` or another eval ``*loss*``)."""
        names = [n for n in self.scalars if "loss" in n and _is_eval(n)]
        if not names:
            return None
        steps, values = self.scalars[names[0]]
        return names[0], steps, values


def _is_eval(name: str) -> bool:
    return name.startswith(EVAL_PREFIXES)



