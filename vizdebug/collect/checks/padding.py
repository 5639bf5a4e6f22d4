"""Padding that a class loss counts: the model's token input ends in runs of one value (the
batch padded to its longest sequence), and the per-position targets of the class loss end
in runs of one label at the same rows and of the same lengths (give or take the one-token
shift of a language model), a label that is not the loss's ``ignore_index``. The loss
then averages in the positions that hold no token: the model learns to predict padding,
and the loss the program logs is mostly the padding's.

The relation is between the two tensors, not either alone: targets that end in one class
(a tagger's "O" at the end of sentences) say nothing unless the input is padding there;
a loss with ``reduction="none"`` (masked afterwards) and targets set to ``ignore_index``
at the padding are what working programs do, and say nothing either.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PAD_MIN_RUN = 2        # a row counts as padded with at least this many trailing pad tokens
PAD_MIN_ROWS = 0.25    # ... and at least this share of a batch's rows are
PAD_ALIGNED = 0.9      # rows whose target run matches the input's within one position
PAD_MIN_LENGTH = 4     # sequences shorter than this are not looked at


def trailing_runs(values: np.ndarray) -> tuple[int, np.ndarray]:
    """The most common last value of the rows of a 2-d array and, per row, how many of its
    last entries hold it (0 for a row ending in another value).

    >>> trailing_runs(np.array([[5, 6, 0, 0], [7, 0, 0, 0], [1, 2, 3, 4]]))
    (0, array([2, 3, 0]))
    """
    last = values[:, -1]
    kinds, counts = np.unique(last, return_counts=True)
    pad = kinds[np.argmax(counts)]
    same = values[:, ::-1] == pad
    runs = np.where(same.all(axis=1), values.shape[1], np.argmin(same, axis=1))
    return int(pad), runs.astype(np.int64)


def input_padding(tensor: Any) -> tuple[int, np.ndarray] | None:
    """``(pad value, trailing run per row)`` of a batch of token ids (an integer (N, T) CPU
    tensor) when enough of its rows end padded; None otherwise."""
    if not _small_int_2d(tensor) or tensor.shape[1] < PAD_MIN_LENGTH:
        return None
    pad, runs = trailing_runs(tensor.detach().numpy())
    if np.mean(runs >= PAD_MIN_RUN) < PAD_MIN_ROWS or np.ptp(runs) == 0:
        return None  # no padding, or every row alike (a fixed suffix, not a padded batch)
    return pad, runs


def padding_counted(name: str, args: tuple, kwargs: dict,
                    padding: tuple[int, np.ndarray]) -> dict[str, Any] | None:
    """The observation when the class loss ``name`` counts targets at the input's padding
    (its ``detail``), else None."""
    x = args[0] if args else kwargs.get("input")
    t = args[1] if len(args) > 1 else kwargs.get("target")
    pad, runs = padding
    if kwargs.get("reduction", "mean") == "none" or getattr(x, "ndim", 0) != 3:
        return None
    if not _small_int_2d(t) or t.shape[0] != len(runs) or tuple(t.shape) != (x.shape[0],
                                                                            x.shape[2]):
        return None
    label, label_runs = trailing_runs(t.detach().numpy())
    ignore = kwargs.get("ignore_index", -100)
    if label == ignore:
        return None
    padded = runs >= PAD_MIN_RUN
    aligned = np.abs(label_runs - runs) <= 1
    if np.mean(aligned) < PAD_ALIGNED or not np.all(label_runs[padded] >= PAD_MIN_RUN - 1):
        return None
    return {"check": "padding-counted", "function": name, "pad": pad, "label": label,
            "ignore_index": int(ignore), "share": float(label_runs.sum() / t.numel()),
            "rows": float(np.mean(padded)), "shape": list(t.shape)}


def _small_int_2d(t: Any) -> bool:
    import torch

    return (isinstance(t, torch.Tensor) and t.ndim == 2 and t.shape[0] >= 2
            and t.dtype in (torch.int64, torch.int32) and t.device.type == "cpu"
            and t.numel() <= 1_000_000)
