"""Canonical batches: whatever the user passes becomes images (N x C x H x W) or a table.

A batch keeps the values exactly as the model receives them; display scaling happens in
``analysis.images``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._env import is_tensor
from ..errors import VizdebugError, VizdebugTypeError, describe
from .arrays import is_arraylike, is_pil, to_numpy
from .layout import LAYOUTS, infer_layout, to_nchw

IMAGE_KEYS = ("image", "images", "img", "imgs", "pixel_values", "x", "input", "inputs", "data")
LABEL_KEYS = ("label", "labels", "target", "targets", "y", "class", "classes")


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
    labels: list[Any] | None = None
    layout: str = ""
    layout_note: str = ""
    was_tensor: bool = False
    indices: list[int] | None = None  # where each item sits in its source (dataset index)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.table) if self.kind == "table" else len(self.items)

    def index_of(self, k: int) -> int:
        """The source index of the k-th item (its position when the source has none)."""
        return self.indices[k] if self.indices is not None else k


def unpack(batch: Any, what: str = "batch") -> tuple[Any, Any]:
    """Split a batch into (inputs, labels): ``(x, y, ...)`` tuples, dicts, or bare inputs.

    Examples
    --------
    >>> x, y = unpack({"image": [1], "label": [0]})
    >>> y
    [0]
    """
    if isinstance(batch, Mapping):
        return _unpack_mapping(batch, what)
    if isinstance(batch, tuple) and len(batch) >= 2 and _looks_like_xy(batch):
        return batch[0], batch[1]
    if isinstance(batch, list) and len(batch) == 2 and _looks_like_xy(batch):
        return batch[0], batch[1]  # DataLoader collates (x, y) samples into a list
    return batch, None


def _looks_like_xy(seq: tuple | list) -> bool:
    x, y = seq[0], seq[1]
    if not (is_arraylike(x) or _is_frame(x) or isinstance(x, list)):
        return False
    if np.isscalar(y) or y is None or getattr(y, "ndim", None) == 0:
        return True
    n_x = item_count(x)
    return n_x is not None and item_count(y) == n_x and getattr(y, "ndim", 1) <= 2


def item_count(obj: Any) -> int | None:
    """How many items a batch-like object holds along its first axis (None: not a batch)."""
    if is_pil(obj):
        return None
    shape = getattr(obj, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else None
    return len(obj) if isinstance(obj, (list, tuple)) else None


def _unpack_mapping(batch: Mapping, what: str) -> tuple[Any, Any]:
    x_key = next((k for k in IMAGE_KEYS if k in batch), None)
    if x_key is None:
        raise VizdebugError(
            f"{what} is a dict with keys {list(batch)[:10]}; none of them names the inputs. "
            f"Use one of {list(IMAGE_KEYS)} or pass batch[<your key>] directly."
        )
    y_key = next((k for k in LABEL_KEYS if k in batch), None)
    return batch[x_key], (batch[y_key] if y_key else None)


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


def normalise_labels(y: Any, n: int, what: str = "batch") -> list[Any] | None:
    """Labels as a list of Python scalars of length ``n`` (one-hot rows become class ids)."""
    if y is None:
        return None
    if np.isscalar(y) or (is_tensor(y) and y.ndim == 0):
        y = [y.item() if is_tensor(y) else y]
    if isinstance(y, (list, tuple)) and any(isinstance(v, str) for v in y):
        arr = np.asarray([str(v) for v in y], dtype=object)
    else:
        try:
            arr = to_numpy(y, f"labels of {what}")
        except VizdebugError:
            arr = np.asarray([str(v) for v in y], dtype=object)
    if arr.ndim == 2 and arr.shape[0] == n and arr.dtype.kind in "biuf":
        arr = arr.argmax(axis=1)  # one-hot or soft labels
    arr = arr.reshape(-1) if arr.ndim > 1 and arr.size == n else arr
    if len(arr) != n:
        raise VizdebugError(
            f"{what} has {n} inputs but {len(arr)} labels ({describe(y)}); they must match"
        )
    return [v.item() if hasattr(v, "item") else v for v in arr]
