"""``show_top_losses``: the inputs a model gets most wrong, in the ``show_batch`` grid.

Each cell is captioned ``target → prediction (probability) · loss``; tabular inputs show as
a table whose first columns are those four. The ranking comes from
:mod:`vizdebug.analysis.datasets.top_losses`; every user string is escaped by the batch page.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._env import require_torch
from ..analysis.datasets.top_losses import MAX_SAMPLES, TopLosses, top_losses
from ..data.batch import Batch
from ..data.sources import SlicedSource
from ..errors import VizdebugError
from ._display import shown_where_called
from .batch import BatchView
from .batch_page import check_classes, label_text


class TopLossesView(BatchView):
    """A :class:`BatchView` of the k worst-predicted samples; ``.result`` holds the ranking
    (source indices, losses, targets, predictions, probabilities)."""

    title = "vizdebug top losses"

    def __init__(self, source: SlicedSource, result: TopLosses, note: str, **kw: Any) -> None:
        super().__init__(source, **kw)
        self.result = result
        self.note = note

    def __repr__(self) -> str:
        return "TopLosses" + super().__repr__()[len("Batch"):]


class _RankedSource(SlicedSource):
    """Pages of the ranked samples, each cell numbered by its index in the user's data."""

    def __init__(self, x: Any, y: Any, indices: list[int], description: str) -> None:
        super().__init__(x, y, None, "auto", description)
        self.indices = indices

    def next_page(self) -> Batch | None:
        batch = super().next_page()
        if batch is not None and batch.indices is not None:
            batch.indices = [self.indices[i] for i in batch.indices]
        return batch


def show_top_losses(model: Any, loader: Any, loss_fn: Any, k: int = 16, *, classes=None,
                    mean=None, std=None, max_samples: int = MAX_SAMPLES) -> BatchView:
    """Show the ``k`` samples with the highest loss, worst first, with target, prediction,
    probability and loss.

    The model runs in eval mode under ``torch.no_grad()`` on a fresh pass over the data
    (at most ``max_samples`` items); its train/eval mode, parameters and the global RNG
    states are unchanged afterwards.

    Parameters
    ----------
    model
        A ``torch.nn.Module`` returning logits (several outputs: softmax; one: sigmoid).
    loader
        A DataLoader, a map-style Dataset, an iterable of ``(x, y)`` batches, or one
        ``(x, y)`` pair of tensors or arrays.
    loss_fn
        An ``nn`` loss module or a functional loss (called with ``reduction="none"``); any
        other callable is called once per sample.
    k
        How many samples to show.
    classes
        Class names: a list indexed by label, or a dict from label to name.
    mean, std
        The values your ``Normalize`` used, to show true colours.
    max_samples
        The most items read from ``loader``.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Linear(4, 3)
    >>> x, y = torch.randn(50, 4), torch.randint(0, 3, (50,))
    >>> view = show_top_losses(model, (x, y), torch.nn.CrossEntropyLoss(), k=5,
    ...                        classes=["a", "b", "c"])
    >>> len(view.result.indices), view.pages[0].n_items, "prediction" in view.pages[0].html
    (5, 5, True)
    """
    require_torch("show_top_losses()")
    classes = check_classes(classes)
    res = top_losses(model, loader, loss_fn, k, max_samples=max_samples)
    x = res.inputs.numpy() if hasattr(res.inputs, "numpy") else np.asarray(res.inputs)
    note = _note(res, k, max_samples)
    what = f"top {len(res.indices)} losses"
    if x.ndim <= 2:
        source = _RankedSource(_table(x, res, classes), None, res.indices, what)
    else:
        source = _RankedSource(x, [_caption(res, j, classes) for j in range(len(res.indices))],
                               res.indices, what)
    view = TopLossesView(source, res, note, classes=None, mean=mean, std=std)
    if view._read_page() is None:
        raise VizdebugError(f"the {what} gave nothing to show")
    return shown_where_called(view)


def _fmt(v: Any, classes: Any) -> str:
    if v is None:
        return "?"
    if isinstance(v, float) and v.is_integer() and classes is not None:
        v = int(v)
    return label_text(v, classes)


def _caption(res: TopLosses, j: int, classes: Any) -> str:
    """``target → prediction (probability) · loss`` for the j-th worst sample."""
    prob = res.probabilities[j]
    p = f" ({prob:.2f})" if np.isfinite(prob) else ""
    # a no-break space keeps the loss with its dot when a narrow cell wraps the caption
    return (f"{_fmt(res.targets[j], classes)} \u2192 {_fmt(res.predictions[j], classes)}{p} "
            f"\u00b7\u00a0{res.losses[j]:.3g}")


def _table(x: np.ndarray, res: TopLosses, classes: Any) -> Any:
    """The tabular inputs with target, prediction, probability and loss in front (as text,
    so the input checks look at the features only)."""
    import pandas as pd

    x = x[:, None] if x.ndim == 1 else x
    front = {
        "target": [_fmt(t, classes) for t in res.targets],
        "prediction": [_fmt(p, classes) for p in res.predictions],
        "probability": [f"{p:.3f}" if np.isfinite(p) else "" for p in res.probabilities],
        "loss": [f"{v:.4g}" for v in res.losses],
    }
    features = pd.DataFrame(x, columns=[f"f{i}" for i in range(x.shape[1])])
    return pd.concat([pd.DataFrame(front), features], axis=1)


def _note(res: TopLosses, k: int, max_samples: int) -> str:
    """What was ranked and how, and anything the user should know about it."""
    task = {"multiclass": "probability: softmax of the predicted class",
            "binary": "probability: sigmoid, of the predicted class",
            "regression": "prediction: the model's output"}.get(res.task, "")
    bad = int((~np.isfinite(res.all_losses)).sum())
    parts = [
        f"top {len(res.indices)} losses of {res.n_read} samples, worst first; "
        "caption: target \u2192 prediction (probability) \u00b7 loss", task,
        res.truncated and f"read the first {max_samples} samples only; pass max_samples= to "
                          "rank more",
        res.per_sample_calls and "loss_fn takes no reduction='none': it was called once per sample",
        bad and f"{bad} samples have a non-finite loss; they rank first",
        res.n_read < k and f"k={k} but only {res.n_read} samples were read",
    ]
    return "; ".join(p for p in parts if p)
