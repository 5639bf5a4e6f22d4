"""Which element of a batch is the model's input and which its target: the one rule.

``show_batch``, the checks, the loader tap, the probe and the run store all read batches
through :func:`split_batch` (one dataset item through :func:`split_sample`), so a batch
means the same thing everywhere: ``(x, y)`` tuples, DataLoader's ``[x, y]`` lists, dicts
and objects with named parts, and groups of parallel inputs (siamese, triplet).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ..errors import VizdebugError, VizdebugTypeError, describe
from .arrays import is_arraylike, is_nested, is_pil

IMAGE_KEYS = ("image", "images", "img", "imgs", "pixel_values", "x", "input", "inputs", "data",
              "input_ids", "input_values")  # (the last two: Hugging Face text and audio)
LABEL_KEYS = ("label", "labels", "target", "targets", "y", "class", "classes", "mask", "masks")


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
    - parallel inputs (siamese, triplet, multi-view): ``((x1, x2, ...), y)`` has the group
      ``(x1, x2, ...)`` as its input when every member holds one entry per target (see
      :func:`input_members`); so have ``(x1, x2, y)``, batches of images of one shape and
      dtype before one target, and ``(anchor, positive, negative)``, three or more such
      batches and no target; an empty target (``((a, p, n), [])``) is none;
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
        return _split_sequence(batch)
    if not (is_arraylike(batch) or is_frame(batch)) and _has_named_parts(batch):
        return _split_keyed(batch, lambda k: getattr(batch, k, None))
    return BatchParts(batch, None)


def _split_sequence(batch: tuple | list) -> BatchParts:
    if len(batch) == 2 and _empty(batch[1]):
        batch = batch[:1]  # ``(x, [])``: a dataset whose items have an empty target
    if len(batch) == 1 and _is_group(batch[0], None):
        return BatchParts(tuple(batch[0]), None)
    if len(batch) == 1 and _has_items(batch[0]):
        return BatchParts(batch[0], None)
    if len(batch) >= 2 and _is_group(batch[0], _target_count(batch[1])):
        return BatchParts(tuple(batch[0]), batch[1])
    group = _parallel_images(batch)
    if len(batch) == group >= 3:
        return BatchParts(tuple(batch), None)  # anchor, positive, negative
    if 2 <= group == len(batch) - 1 and _is_group(batch[:group], _target_count(batch[-1])):
        return BatchParts(tuple(batch[:group]), batch[-1])  # x1, x2, y
    if len(batch) >= 2 and _looks_like_xy(batch) and (
            isinstance(batch, tuple) or _list_xy(batch)):
        return BatchParts(batch[0], batch[1])
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
            is_arraylike(item[0]) or is_frame(item[0])):
        return BatchParts(item[0], item[1])
    if isinstance(item, (tuple, list)) and len(item) >= 2 and _is_group(item[0], None):
        target = None if _no_target(item[1]) else item[1]
        return BatchParts(tuple(item[0]), target)  # ((anchor, positive, negative), y)
    return split_batch(item)


def input_members(x: Any) -> list[Any]:
    """The members of an input: each array of a group of parallel inputs (what
    :func:`split_batch` gives for siamese or triplet batches), else ``[x]`` itself.

    >>> a = np.zeros((4, 1, 8, 8))
    >>> len(input_members(split_batch(((a, a, a), np.arange(4))).input))
    3
    >>> input_members(a)[0].shape
    (4, 1, 8, 8)
    """
    if isinstance(x, tuple) and len(x) >= 2 and all(is_arraylike(m) and not is_pil(m)
                                                     for m in x):
        return list(x)
    return [x]


def _is_group(x: Any, n_target: int | None) -> bool:
    """``x`` is a group of parallel inputs: a tuple or list of two or more arrays that each
    hold ``n_target`` items (any number for one sample, ``n_target=None``). A list of
    single images (as many as the targets, each at most 3-D) stays a list of images."""
    if not isinstance(x, (tuple, list)) or len(x) < 2:
        return False
    if not all(is_arraylike(m) and not is_pil(m) and _has_items(m) for m in x):
        return False
    if n_target is None:
        return True
    counts = {item_count(m) for m in x}
    return counts == {n_target} and (len(x) != n_target or min(m.ndim for m in x) >= 4)


def _parallel_images(batch: tuple | list) -> int:
    """How many leading elements are batches of images of the first one's shape and dtype:
    ``(x1, x2, y)`` pairs and ``(anchor, positive, negative)`` triplets."""
    if not batch:
        return 0
    first, count = batch[0], 0
    for m in batch:
        if not (is_arraylike(m) and not is_pil(m) and not is_nested(m) and not is_nested(first)
                and getattr(m, "ndim", 0) >= 4 and tuple(m.shape) == tuple(first.shape)
                and m.dtype == first.dtype):
            break
        count += 1
    return count


def _target_count(y: Any) -> int | None:
    """How many items a target is for: 1 for a scalar, ``None`` for no target."""
    return 1 if is_scalar(y) else None if _no_target(y) else item_count(y)


def _no_target(y: Any) -> bool:
    return y is None or _empty(y)


def _empty(y: Any) -> bool:
    return isinstance(y, (list, tuple)) and len(y) == 0


def is_scalar(y: Any) -> bool:
    """One value: a Python/numpy scalar or a 0-d array or tensor."""
    return np.isscalar(y) or getattr(y, "ndim", None) == 0


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
    if is_nested(obj):
        return True  # one part per item (its ``shape`` cannot be read)
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
    if not (is_arraylike(x) or is_frame(x) or isinstance(x, list)):
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
    if is_nested(obj):
        return int(obj.size(0))
    shape = getattr(obj, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else None
    return len(obj) if isinstance(obj, (list, tuple)) else None


def dataset_length(dataset: Any, what: str = "the dataset") -> int:
    """``len(dataset)``, or a :class:`VizdebugTypeError` naming the dataset when its
    ``__len__`` raises or returns what ``len()`` refuses (a negative number, a float).

    >>> dataset_length([0, 1, 2])
    3
    """
    try:
        return len(dataset)
    except Exception as exc:  # the user's __len__: name it, do not crash in it
        raise VizdebugTypeError(
            f"len() of {what} ({describe(dataset)}) failed: {type(exc).__name__}: "
            f"{str(exc)[:200]}; it is read by index up to its length: fix its __len__, or "
            "pass a DataLoader or an iterable of batches") from None


def is_frame(obj: Any) -> bool:
    """A pandas DataFrame (told by its type's name: pandas need not be imported)."""
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns")
