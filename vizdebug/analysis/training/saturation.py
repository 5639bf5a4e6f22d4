"""Whose "saturated" share means something: the decision behind the dashboard's
saturation bar.

A bounded activation (tanh, sigmoid, softmax, hardtanh, softsign) saturates at its own flat
ends, so its share of saturated values is always worth showing. An unbounded module
(``Linear``, a convolution, ``ReLU``) has no flat region: its share of ``|a| > 5`` (see
:data:`~vizdebug.analysis.training.activations.SATURATION`) only matters when a bounded
activation reads that output next and is pushed into *its* flat region. The model's output
layer (logits: nothing follows it in the model) and a layer before a ReLU or another linear
map are not saturating however large their values: a healthy classifier's logits pass 5
as it grows confident, and drawing that as an orange "saturated" bar of 55-90 % beside
"No findings" accuses working code.

"Next" is the next leaf module in registration order (``named_modules``), the order of an
``nn.Sequential`` and of most ``__init__`` bodies; a module that is last has no next and is
read as the output.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...records import ACTIVATION_STATS, TrainingRecords
from .activations import BOUNDED, UNIT_RANGE

#: Modules that pass values through unchanged in range, looked through to find the next
#: reader (a dropout or a reshape between a linear layer and a tanh).
PASS_THROUGH = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                          "Identity", "Flatten", "Unflatten"})


def bounded(module_class: str) -> bool:
    """A module whose output has flat ends of its own."""
    return module_class in UNIT_RANGE or module_class in BOUNDED


def saturation_applies(module_classes: Sequence[str]) -> list[bool]:
    """For each module (in registration order), whether its saturated share means
    saturation: bounded activations always; others only when the next module that reads
    their output (past dropouts and reshapes) is bounded.

    Examples
    --------
    >>> saturation_applies(["Linear", "Tanh", "Linear", "ReLU", "Linear"])
    [True, True, False, False, False]
    >>> saturation_applies(["Conv2d", "Dropout", "Sigmoid"])
    [True, True, True]
    """
    classes = list(module_classes)
    out = []
    for i, cls in enumerate(classes):
        if bounded(cls):
            out.append(True)
            continue
        nxt = next((c for c in classes[i + 1:] if c not in PASS_THROUGH), None)
        out.append(nxt is not None and bounded(nxt))
    return out


def shown_saturation(rec: TrainingRecords) -> np.ndarray:
    """The latest sampled saturated share of each module, NaN where it is not saturation
    (:func:`saturation_applies`): what the dashboard's saturation bar should draw (a NaN bar
    is not drawn). Empty before the first sample."""
    if rec.activations.shape[0] == 0:
        return np.empty(0)
    latest = rec.activations[-1][:, ACTIVATION_STATS.index("saturated")].astype(float)
    applies = np.zeros(latest.shape[0], dtype=bool)
    flags = saturation_applies(rec.module_classes[:latest.shape[0]])
    applies[:len(flags)] = flags
    return np.where(applies, latest, np.nan)
