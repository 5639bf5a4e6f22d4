"""Canonical batches: whatever the user passes becomes images (N x C x H x W) or a table.

A batch keeps the values exactly as the model receives them; display scaling happens in
``analysis.images``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._env import is_tensor
from ..errors import VizdebugError, VizdebugTypeError, describe
from .arrays import tensor_to_numpy, to_numpy, unnest
from .layout import LAYOUTS, infer_layout, is_sequence_batch, to_nchw
from .parts import (  # the batch rule lives in .parts; its names stay importable here
    IMAGE_KEYS,
    LABEL_KEYS,
    BatchParts,
    input_members,
    is_frame,
    is_scalar,
    item_count,
    split_batch,
    split_sample,
    unpack,
)
from .targets import normalise_labels, target_masks

__all__ = ["IMAGE_KEYS", "LABEL_KEYS", "Batch", "BatchParts", "batch_arrays", "input_members",
           "item_count", "make_batch", "split_batch", "split_sample", "unpack"]


@dataclass
class Batch:
    """One batch in canonical form.

    ``images`` is the stacked N x C x H x W array when every image has one shape;
    ``items`` always lists the images one by one (``None`` where a sample was None).
    """

    kind: str  # "image" or "table" (a batch of sequences is a table, one row per sequence)
    items: list[np.ndarray | None] = field(default_factory=list)
    images: np.ndarray | None = None
    table: Any = None  # pandas DataFrame for tabular batches
    labels: list[Any] | None = None  # class ids, or LabelSets for multi-hot targets
    masks: list[np.ndarray] | None = None  # one integer H x W mask per item (segmentation)
    layout: str = ""
    layout_note: str = ""
    was_tensor: bool = False
    indices: list[int] | None = None  # where each item sits in its source (dataset index)
    notes: list[str] = field(default_factory=list)  # about the data: shapes that differ
    info: list[str] = field(default_factory=list)  # about the reading: pages, layout choice
    sequence: tuple[int, int] | None = None  # (steps, features) of a batch of sequences

    def __len__(self) -> int:
        return len(self.table) if self.kind == "table" else len(self.items)

    def index_of(self, k: int) -> int:
        """The source index of the k-th item (its position when the source has none)."""
        return self.indices[k] if self.indices is not None else k

def make_batch(x: Any, y: Any = None, *, layout: str = "auto", what: str = "batch",
               items: int | None = None) -> Batch:
    """Build a canonical :class:`Batch` from inputs ``x`` and optional labels ``y``.

    ``items`` is how many items ``x`` holds when the caller knows (it stacked them); else
    a target with one entry per row of ``x`` says so. With ``layout="auto"`` a 3-D float
    array of N items that do not look like pictures (:func:`~.layout.is_sequence_batch`)
    is a batch of sequences: a table with one row per sequence.

    >>> make_batch(np.zeros((32, 12, 1)), np.arange(32)).sequence
    (12, 1)
    """
    if layout != "auto" and layout not in (*LAYOUTS, "table"):
        raise VizdebugError(f"layout must be 'auto', 'table' or one of {LAYOUTS}, got {layout!r}")
    x, y = unnest(x), unnest(y)  # a nested tensor: its items, of several shapes
    if is_frame(x) or layout == "table":
        out = _table_batch(x, what)
    elif isinstance(x, (list, tuple)) and not _is_number_list(x):
        out = _list_batch(list(x), layout, what)
    else:
        n = items if items is not None else None if is_scalar(y) else item_count(y)
        out = _array_batch(x, layout, what, n, n is not None and getattr(y, "ndim", 1) == 1)
    out.labels = normalise_labels(y, len(out), what)
    if out.labels is None and out.kind == "image":
        spatial = out.images.shape[2:] if out.images is not None else None
        out.masks = target_masks(y, len(out), spatial)
    return out


def _is_number_list(seq: list | tuple) -> bool:
    return len(seq) > 0 and all(np.isscalar(v) and not isinstance(v, (str, bytes)) for v in seq)


def _table_batch(x: Any, what: str) -> Batch:
    import pandas as pd

    if is_frame(x):
        frame = x
    else:
        arr = to_numpy(x, what)
        arr = arr[:, None] if arr.ndim == 1 else arr
        if arr.ndim != 2:
            raise VizdebugError(f"a tabular {what} must be 2-D (samples x features), got {arr.shape}")
        # an object Index: pandas' default string Index takes seconds to read a million names
        names = pd.Index([f"f{i}" for i in range(arr.shape[1])], dtype=object)
        frame = pd.DataFrame(arr, columns=names)
    if len(frame) == 0 or frame.shape[1] == 0:
        raise VizdebugError(f"{what} is an empty table (shape {frame.shape}): nothing to show")
    return Batch(kind="table", table=frame, layout="table", was_tensor=is_tensor(x))


def _array_batch(x: Any, layout: str, what: str, items: int | None,
                 labelled: bool = False) -> Batch:
    """``labelled``: a 1-D target gave ``items``. A 2-D bool or uint8 array is one picture
    (a mask, a grey image) unless such a target has one label per row: then rows of
    binary or byte features."""
    arr = to_numpy(x, what)
    if arr.size == 0:
        raise VizdebugError(f"{what} is empty ({describe(x)}): there is nothing to show")
    picture = arr.ndim == 2 and arr.dtype.kind in "bu" and not (
        labelled and items == arr.shape[0] and items > 1)
    if layout == "auto" and arr.ndim <= 2 and not picture:
        return _table_batch(arr, what)
    guess = infer_layout(arr.shape, items) if layout == "auto" else None
    if guess is not None and guess.layout == "NHW" and is_sequence_batch(arr):
        return _sequence_batch(arr, is_tensor(x))
    chosen = guess.layout if guess else layout
    images = to_nchw(arr, chosen)
    note = _layout_note(chosen, layout, guess.reason if guess else "", guess and guess.ambiguous)
    return Batch(kind="image", items=list(images), images=images, layout=chosen,
                 layout_note=note, was_tensor=is_tensor(x))


def _sequence_batch(arr: np.ndarray, was_tensor: bool) -> Batch:
    """N sequences of T steps x F features as a table of N rows and T * F columns."""
    import pandas as pd

    n, steps, features = arr.shape
    names = [f"t{t}" if features == 1 else f"t{t}.f{j}"
             for t in range(steps) for j in range(features)]
    frame = pd.DataFrame(arr.reshape(n, -1), columns=pd.Index(names, dtype=object))
    note = f"{n} sequences of {steps} steps x {features} features (N, T, F)"
    return Batch(kind="table", table=frame, layout="sequence", layout_note=note,
                 was_tensor=was_tensor, sequence=(steps, features))


def _layout_note(chosen: str, asked: str, reason: str, ambiguous: bool | None) -> str:
    if asked != "auto":
        return f"layout {chosen} (given)"
    text = f"layout {chosen} (inferred{': ' + reason if reason else ''})"
    return text + "; pass layout= to override" if ambiguous else text


def _list_batch(seq: list, layout: str, what: str) -> Batch:
    if not seq:
        raise VizdebugError(f"{what} is an empty list: there is nothing to show")
    items: list[np.ndarray | None] = []
    layouts = set()
    for i, item in enumerate(seq):
        if item is None:
            items.append(None)
            continue
        arr = to_numpy(item, f"{what}[{i}]")
        one = _single_image_layout(arr, layout, f"{what}[{i}]")
        layouts.add(one)
        items.append(to_nchw(arr, one)[0])
    if all(it is None for it in items):
        raise VizdebugTypeError(f"every item of {what} is None ({len(seq)} items): nothing to show")
    shapes = {it.shape for it in items if it is not None}
    complete = all(it is not None for it in items)
    stacked = np.stack(items) if len(shapes) == 1 and complete else None
    notes = [] if len(shapes) == 1 else [f"images differ in shape: {sorted(shapes)[:4]}"]
    return Batch(kind="image", items=items, images=stacked, layout="/".join(sorted(layouts)),
                 layout_note=f"list of {len(seq)} images ({'/'.join(sorted(layouts))})",
                 was_tensor=any(is_tensor(s) for s in seq), notes=notes)


def _single_image_layout(arr: np.ndarray, layout: str, what: str) -> str:
    if layout in ("CHW", "HWC", "HW"):
        return layout
    if arr.ndim == 2:
        return "HW"
    if arr.ndim == 3:
        guess = infer_layout(arr.shape)
        if guess.layout in ("CHW", "HWC"):
            return guess.layout
        if arr.shape[0] == 1:
            return "CHW"
        if arr.shape[2] == 1:
            return "HWC"
    raise VizdebugError(
        f"{what} has shape {arr.shape}; one image must be (H, W), (C, H, W) or (H, W, C) "
        "with 1, 3 or 4 channels"
    )


def batch_arrays(batch: Any, max_bytes: int) -> list[np.ndarray]:
    """The input of a batch (and its target, when it holds one entry per input) as numeric
    numpy arrays of at most ``max_bytes`` each (cut to their first items): what a run
    stores of a captured batch. ``[]`` when the input is not one numeric array.

    >>> arrays = batch_arrays({"label": np.arange(4), "image": np.zeros((4, 1, 2, 2))}, 1 << 20)
    >>> [a.shape for a in arrays]
    [(4, 1, 2, 2), (4,)]
    """
    parts = split_batch(batch)
    x = _numeric(input_members(parts.input)[0])  # siamese/triplet: the first input
    if x is None or x.ndim == 0:
        return []
    rows = max(1, min(x.shape[0], max_bytes // max(1, x[:1].nbytes)))
    out = [x[:rows]]
    y = _numeric(parts.target)
    if y is not None and y.ndim >= 1 and y.shape[0] == x.shape[0]:
        out.append(y[:rows])
    return out


def _numeric(value: Any) -> np.ndarray | None:
    """A tensor or array as a numeric numpy array (on the CPU), else ``None``."""
    if is_tensor(value):
        try:
            value = tensor_to_numpy(value)
        except VizdebugTypeError:  # complex
            return None
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value
    return None
