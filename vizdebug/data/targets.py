"""What a batch's targets say per item: class ids, sets of class ids, or masks.

- one label per item (numbers, strings, one-hot or probability rows): a class id each;
- multi-hot rows (0/1, not one per row): a :class:`LabelSet` of the classes present;
- integer H x W targets (segmentation masks): no label, a mask per item;
- anything else (regression vectors, float target images): nothing to caption.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._env import is_tensor
from ..errors import VizdebugError, describe, short_repr
from .arrays import is_pil, tensor_to_numpy, to_numpy

MAX_MASK_CLASSES = 256  # more distinct values than this is an image, not a mask


class LabelSet(tuple):
    """The class ids of one multi-label target, shown as a set: ``{1, 4}``.

    >>> str(LabelSet([1, 4])), str(LabelSet([]))
    ('{1, 4}', '{}')
    """

    __slots__ = ()

    def __str__(self) -> str:
        return "{" + ", ".join(map(str, self)) + "}"

    __repr__ = __str__


def normalise_labels(y: Any, n: int, what: str = "batch") -> list[Any] | None:
    """Labels as a list of length ``n``: Python scalars (one-hot rows become class ids),
    :class:`LabelSet` for multi-hot rows, ``None`` for targets without classes.

    >>> normalise_labels(np.array([[1, 0, 1], [0, 1, 0]]), 2)
    [{0, 2}, {1}]
    """
    if y is None:
        return None
    if is_tensor(y) and y.ndim == 0:
        try:
            y = tensor_to_numpy(y).reshape(1)
        except VizdebugError:
            return None  # a dtype torch cannot read (bits8): nothing to caption
    elif np.isscalar(y):
        y = [y]
    arr = _label_array(y, what)
    if arr is None:
        return None
    if arr.ndim >= 2 and arr.shape[0] == n and arr.size > n:
        if _multi_hot(arr):
            return [LabelSet(np.flatnonzero(row).tolist()) for row in arr]
        if not _class_rows(arr):
            return None  # regression vectors, target images, masks: no class ids
        arr = arr.argmax(axis=1)  # one-hot or soft labels
    arr = arr.reshape(-1) if arr.ndim > 1 and arr.size == n else arr
    if arr.ndim > 1 and arr.shape[0] == n:
        return None  # empty targets, (N, 0): nothing to caption
    if arr.ndim == 0 or len(arr) != n:
        raise VizdebugError(
            f"{what} has {n} inputs but {arr.size} labels ({describe(y)}); they must match"
        )
    return [v.item() if hasattr(v, "item") else v for v in arr]


def _label_array(y: Any, what: str) -> np.ndarray | None:
    if isinstance(y, (list, tuple)) and any(isinstance(v, str) for v in y):
        return np.asarray([_text(v) for v in y], dtype=object)
    try:
        return to_numpy(y, f"labels of {what}")
    except VizdebugError:
        if not isinstance(y, (list, tuple)) or any(getattr(v, "ndim", 0) for v in y):
            return None  # ragged per-item targets (masks of several sizes): no captions
        return np.asarray([_text(v) for v in y], dtype=object)


def _text(v: Any) -> str:
    """A label as its text; one whose ``str`` fails (a list nested thousands deep) by a
    short description."""
    try:
        return str(v)
    except Exception:  # RecursionError, or a __str__ that raises
        return short_repr(v)


def _class_rows(arr: np.ndarray) -> bool:
    """True for ``(N, C)`` one-hot or probability rows (each in [0, 1], summing to 1)."""
    if arr.ndim != 2 or arr.dtype.kind not in "biuf":
        return False
    with np.errstate(all="ignore"):
        values = arr.astype(np.float64)
        return bool(np.all((values >= 0) & (values <= 1))
                    and np.allclose(values.sum(axis=1), 1.0, atol=1e-3))


def _multi_hot(arr: np.ndarray) -> bool:
    """True for ``(N, C)`` rows of 0/1 that are not all one-hot (multi-label targets)."""
    if arr.ndim != 2 or arr.shape[1] < 2 or arr.dtype.kind not in "biuf":
        return False
    return bool(np.isin(arr, (0, 1)).all() and (arr.sum(axis=1) != 1).any())


def target_masks(y: Any, n: int, spatial: tuple[int, int] | None) -> list[np.ndarray] | None:
    """One integer ``H x W`` mask per item when ``y`` holds segmentation masks: whole
    numbers, ``(N, H, W)`` or ``(N, 1, H, W)``, of the images' size when they have one.

    >>> target_masks(np.zeros((2, 4, 4), dtype=np.int64), 2, (4, 4))[0].shape
    (4, 4)
    """
    if y is None or (isinstance(y, (list, tuple)) and not y):
        return None
    try:
        arr = _pil_indices(y) if isinstance(y, (list, tuple)) and is_pil(y[0]) else \
            to_numpy(y, "targets")
    except (VizdebugError, ValueError):
        return None
    if arr.ndim == 4 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 3 or arr.shape[0] != n or 0 in arr.shape:
        return None
    if spatial is not None and tuple(arr.shape[1:]) != tuple(spatial):
        return None
    return list(arr.astype(np.int64)) if _whole_numbers(arr) else None


def _pil_indices(masks: list | tuple) -> np.ndarray:
    """PIL masks as their stored values: a palette ("P") mask holds class ids, which
    reading it as a picture (RGBA) would lose."""
    return np.stack([np.asarray(m if m.mode in ("P", "L", "I", "1", "I;16") else m.convert("L"))
                     for m in masks])


def _whole_numbers(arr: np.ndarray) -> bool:
    if arr.dtype.kind in "biu":
        return len(np.unique(arr[:, ::4, ::4])) <= MAX_MASK_CLASSES
    if arr.dtype.kind != "f" or not np.isfinite(arr).all():
        return False
    with np.errstate(all="ignore"):
        whole = bool(np.all(arr == np.round(arr))) and np.abs(arr).max() < 2**31
    return whole and len(np.unique(arr[:, ::4, ::4])) <= MAX_MASK_CLASSES


def names_as_codes(y_train: Any, y_test: Any) -> tuple[Any, Any]:
    """Class names (strings in a list, an array, a pandas Series or Categorical) as
    integer codes shared by both splits of ``check_split`` (one name, one code); other
    targets as given.

    >>> names_as_codes(np.array(["pos", "neg"]), ["neg", "neg"])
    (array([1, 0]), array([0, 0]))
    """
    names = [_class_names(y) for y in (y_train, y_test)]
    if names == [None, None]:
        return y_train, y_test
    known = sorted({v for n in names if n is not None for v in n})
    lookup = {v: i for i, v in enumerate(known)}
    return tuple(y if n is None else np.array([lookup[v] for v in n], dtype=np.int64)
                 for y, n in zip((y_train, y_test), names))  # type: ignore[return-value]


def _class_names(y: Any) -> list[str] | None:
    values = y.to_numpy() if hasattr(y, "to_numpy") and not hasattr(y, "columns") else y
    if type(values).__module__.startswith("pandas"):
        values = np.asarray(values, dtype=object)  # a Categorical
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "USO":
        values = values.tolist()
    if isinstance(values, (list, tuple)) and values and all(isinstance(v, str) for v in values):
        return [str(v) for v in values]
    return None
