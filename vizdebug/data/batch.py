"""Canonical batches: whatever the user passes becomes images (N x C x H x W) or a table.

A batch keeps the values exactly as the model receives them; display scaling happens in
``analysis.images``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .._env import is_tensor
from ..errors import VizdebugError, VizdebugTypeError, describe
from .arrays import is_arraylike, is_pil, tensor_to_numpy, to_numpy
from .layout import LAYOUTS, infer_layout, to_nchw
from .targets import normalise_labels, target_masks

IMAGE_KEYS = ("image", "images", "img", "imgs", "pixel_values", "x", "input", "inputs", "data")
LABEL_KEYS = ("label", "labels", "target", "targets", "y", "class", "classes", "mask", "masks")


@dataclass
class Batch:
    """One batch in canonical form.

    ``images`` is the stacked N x C x H x W array when every image has one shape;
    ``items`` always lists the images one by one (``None`` where a sample was None).
    """

    kind: str  # "image" or "table"
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

    def __len__(self) -> int:
        return len(self.table) if self.kind == "table" else len(self.items)

    def index_of(self, k: int) -> int:
        """The source index of the k-th item (its position when the source has none)."""
        return self.indices[k] if self.indices is not None else k


class BatchParts(NamedTuple):
    """Which element of a batch is the model's input and which its target."""

    input: Any
    target: Any


def split_batch(batch: Any) -> BatchParts:
    """The one rule for "which element of a batch is the input": used by ``show_batch``,
    the checks, the loader tap and the run store alike. Never raises.

    - a dict (or an object with such attributes): the first of :data:`IMAGE_KEYS` is the
      input and the first of :data:`LABEL_KEYS` the target, in that order of preference
      whatever the dict's own order; without a known input key, the first array-like value
      that is not under a label key (``None`` when there is none);
    - ``(x, y, ...)`` tuples and DataLoader's ``[x, y]`` lists: the first element is the
      input and the second the target, when the second is a scalar or holds one entry per
      input item; a one-element ``[x]`` (a ``TensorDataset`` of inputs only) is ``x``;
    - anything else (an array, a tensor, a list of images) is the input itself.

    Examples
    --------
    >>> import numpy as np
    >>> parts = split_batch({"label": np.arange(2), "image": np.zeros((2, 1, 4, 4))})
    >>> parts.input.shape, parts.target.tolist()
    ((2, 1, 4, 4), [0, 1])
    >>> split_batch([np.zeros((3, 5))]).input.shape
    (3, 5)
    """
    if isinstance(batch, Mapping):
        return _split_keyed(batch, batch.get)
    if isinstance(batch, (tuple, list)):
        if len(batch) == 1 and _has_items(batch[0]):
            return BatchParts(batch[0], None)
        if len(batch) >= 2 and _looks_like_xy(batch) and (
                isinstance(batch, tuple) or _list_xy(batch)):
            return BatchParts(batch[0], batch[1])
        return BatchParts(batch, None)
    if not (is_arraylike(batch) or _is_frame(batch)) and _has_named_parts(batch):
        return _split_keyed(batch, lambda k: getattr(batch, k, None))
    return BatchParts(batch, None)


def split_sample(item: Any) -> BatchParts:
    """:func:`split_batch` for one dataset item: ``(x, y, ...)`` is always input and target
    (one sample's input and target need not have a common first axis: a ``(5,)`` vector
    and a one-hot ``(4,)`` target, an image and a larger target image).

    >>> import numpy as np
    >>> split_sample((np.zeros(5), np.eye(4)[1])).target.tolist()
    [0.0, 1.0, 0.0, 0.0]
    """
    if isinstance(item, (tuple, list)) and len(item) >= 2 and (
            is_arraylike(item[0]) or _is_frame(item[0])):
        return BatchParts(item[0], item[1])
    return split_batch(item)


def _split_keyed(batch: Any, get: Any) -> BatchParts:
    names = list(batch) if isinstance(batch, Mapping) else [
        k for k in (*IMAGE_KEYS, *LABEL_KEYS) if hasattr(batch, k)]
    x_key = next((k for k in IMAGE_KEYS if k in names), None)
    y_key = next((k for k in LABEL_KEYS if k in names), None)
    if x_key is None and isinstance(batch, Mapping):
        x_key = next((k for k in names if k not in LABEL_KEYS and _has_items(batch[k])), None)
    return BatchParts(get(x_key) if x_key is not None else None,
                      get(y_key) if y_key is not None else None)


def _list_xy(batch: list) -> bool:
    """A list is ``[x, y]`` (DataLoader collates tuples into lists) or ``[x, y, ...]``
    with one target per input; a list of images with a ``None`` among them is not."""
    y = batch[1]
    return y is not None and (len(batch) == 2 or item_count(y) == item_count(batch[0]))


def _has_items(obj: Any) -> bool:
    shape = getattr(obj, "shape", None)
    return shape is not None and len(shape) >= 1 and not is_pil(obj)


def _has_named_parts(obj: Any) -> bool:
    return any(hasattr(obj, k) for k in IMAGE_KEYS if k not in ("data",))


def unpack(batch: Any, what: str = "batch", *, sample: bool = False) -> tuple[Any, Any]:
    """Split a batch (or with ``sample=True`` one dataset item) into ``(inputs, labels)``
    by :func:`split_batch` (:func:`split_sample`), strictly: a dict that names no input
    raises a :class:`VizdebugError` listing its keys.

    Examples
    --------
    >>> x, y = unpack({"image": [1], "label": [0]})
    >>> y
    [0]
    """
    if isinstance(batch, Mapping) and not any(k in batch for k in IMAGE_KEYS):
        raise VizdebugError(
            f"{what} is a dict with keys {list(batch)[:10]}; none of them names the inputs. "
            f"Use one of {list(IMAGE_KEYS)} or pass batch[<your key>] directly."
        )
    return tuple(split_sample(batch) if sample else split_batch(batch))


def _looks_like_xy(seq: tuple | list) -> bool:
    x, y = seq[0], seq[1]
    if not (is_arraylike(x) or _is_frame(x) or isinstance(x, list)):
        return False
    if np.isscalar(y) or y is None or getattr(y, "ndim", None) == 0:
        return True
    n_x = item_count(x)
    if n_x is None or item_count(y) != n_x:
        return False
    # a batch of images is 4-D (its target may be a mask or an image); two same-sized
    # single images in a list are two items, not (x, y)
    return getattr(y, "ndim", 1) <= 2 or getattr(x, "ndim", 0) >= 4


def item_count(obj: Any) -> int | None:
    """How many items a batch-like object holds along its first axis (None: not a batch)."""
    if is_pil(obj):
        return None
    shape = getattr(obj, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else None
    return len(obj) if isinstance(obj, (list, tuple)) else None


def _is_frame(obj: Any) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns")


def make_batch(x: Any, y: Any = None, *, layout: str = "auto", what: str = "batch") -> Batch:
    """Build a canonical :class:`Batch` from inputs ``x`` and optional labels ``y``."""
    if layout != "auto" and layout not in (*LAYOUTS, "table"):
        raise VizdebugError(f"layout must be 'auto', 'table' or one of {LAYOUTS}, got {layout!r}")
    if _is_frame(x) or layout == "table":
        out = _table_batch(x, what)
    elif isinstance(x, (list, tuple)) and not _is_number_list(x):
        out = _list_batch(list(x), layout, what)
    else:
        out = _array_batch(x, layout, what)
    out.labels = normalise_labels(y, len(out), what)
    if out.labels is None and out.kind == "image":
        spatial = out.images.shape[2:] if out.images is not None else None
        out.masks = target_masks(y, len(out), spatial)
    return out


def _is_number_list(seq: list | tuple) -> bool:
    return len(seq) > 0 and all(np.isscalar(v) and not isinstance(v, (str, bytes)) for v in seq)


def _table_batch(x: Any, what: str) -> Batch:
    import pandas as pd

    if _is_frame(x):
        frame = x
    else:
        arr = to_numpy(x, what)
        arr = arr[:, None] if arr.ndim == 1 else arr
        if arr.ndim != 2:
            raise VizdebugError(f"a tabular {what} must be 2-D (samples x features), got {arr.shape}")
        frame = pd.DataFrame(arr, columns=[f"f{i}" for i in range(arr.shape[1])])
    if len(frame) == 0 or frame.shape[1] == 0:
        raise VizdebugError(f"{what} is an empty table (shape {frame.shape}): nothing to show")
    return Batch(kind="table", table=frame, layout="table", was_tensor=is_tensor(x))


def _array_batch(x: Any, layout: str, what: str) -> Batch:
    arr = to_numpy(x, what)
    if arr.size == 0:
        raise VizdebugError(f"{what} is empty ({describe(x)}): there is nothing to show")
    if layout == "auto" and arr.ndim <= 2 and not (arr.ndim == 2 and arr.dtype.kind in "bu"):
        return _table_batch(arr, what)
    guess = infer_layout(arr.shape) if layout == "auto" else None
    chosen = guess.layout if guess else layout
    images = to_nchw(arr, chosen)
    note = _layout_note(chosen, layout, guess.reason if guess else "", guess and guess.ambiguous)
    return Batch(kind="image", items=list(images), images=images, layout=chosen,
                 layout_note=note, was_tensor=is_tensor(x))


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
    x = _numeric(parts.input)
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
