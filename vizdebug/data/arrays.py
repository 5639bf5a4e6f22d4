"""Turn whatever the user holds (tensor, ndarray, PIL image, list) into numpy arrays.

Torch is never imported here: a tensor is recognised through ``sys.modules``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._env import is_tensor
from ..errors import VizdebugError, VizdebugTypeError, describe


def is_pil(obj: object) -> bool:
    return type(obj).__module__.startswith("PIL.") and hasattr(obj, "mode")


def is_arraylike(obj: object) -> bool:
    """True for objects that are one array (not a container of samples)."""
    return isinstance(obj, np.ndarray) or is_tensor(obj) or is_pil(obj)


def tensor_to_numpy(t: Any) -> np.ndarray:
    """A CPU numpy copy of a torch tensor (bfloat16 and other numpy-less dtypes widened;
    sparse, quantized and negated/conjugated views made plain first; a nested tensor's
    parts stacked when they share one shape).

    A tensor that holds no readable data (on the ``meta`` device, of a dtype torch cannot
    convert such as ``bits8`` or ``float4_e2m1fn_x2``, or on a device that cannot be read)
    raises a :class:`VizdebugTypeError` that names it; a nested one whose parts differ in
    shape a :class:`VizdebugError`.
    """
    t = t.detach()
    if t.is_complex():
        raise VizdebugTypeError(f"got a complex tensor ({describe(t)}); images are real-valued")
    if t.device.type == "meta":
        raise VizdebugTypeError(
            f"got a tensor on the meta device ({describe(t)}): it has a shape but no values; "
            "pass a tensor with data (e.g. run the pipeline without the meta device)"
        )
    if t.is_nested:
        parts = unnest(t)
        if not isinstance(parts, list):
            raise VizdebugTypeError(f"cannot read the parts of the nested {describe(t)}")
        return _sequence_to_numpy(parts, f"the nested {describe(t)}", 1)
    try:
        plain = _plain(t)
        try:
            return plain.numpy()
        except TypeError:  # bfloat16, float8 and friends have no numpy dtype
            return plain.float().numpy()
    except (TypeError, RuntimeError, NotImplementedError) as exc:
        raise _unreadable(t, exc) from None


def _unreadable(t: Any, exc: Exception) -> VizdebugTypeError:
    """The error for a tensor torch cannot turn into numbers: packed and placeholder dtypes
    (bits8, uint1-7, int1-7, float4_e2m1fn_x2, uninitialised quantized) have no arithmetic
    on the CPU, so not even ``.float()`` reads them."""
    dtype = str(t.dtype).replace("torch.", "")
    if isinstance(exc, NotImplementedError) or (t.dtype.itemsize <= 1 and not t.is_quantized):
        fix = (f"dtype {dtype} holds packed or raw bits that torch cannot convert; view or "
               "unpack it as numbers first, e.g. t.view(torch.uint8), or pass the tensor "
               "before it was packed")
    else:
        fix = f"{type(exc).__name__}: {exc}"
    return VizdebugTypeError(f"cannot read the values of {describe(t)}: {fix}"[:400])


def is_nested(obj: object) -> bool:
    """True for a torch nested tensor (whose ``shape`` may not be read)."""
    return is_tensor(obj) and bool(getattr(obj, "is_nested", False))


def unnest(x: Any) -> Any:
    """A nested tensor as the list of its parts (one per item, shapes may differ);
    anything else, or a nested tensor whose parts cannot be read, as it is.

    >>> import torch
    >>> [p.shape for p in unnest(torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]))]
    [torch.Size([2]), torch.Size([3])]
    """
    if not is_nested(x):
        return x
    try:
        return list(x.detach().unbind())
    except (RuntimeError, NotImplementedError):
        return x


def _plain(t: Any) -> Any:
    """A dense, strided CPU tensor without negative or conjugate bits."""
    if t.is_quantized:
        t = t.dequantize()
    if t.layout is not _strided():
        t = t.to_dense()
    return t.cpu().resolve_neg().resolve_conj()


def dense(x: Any) -> Any:
    """A sparse tensor made dense (to be sliced and read like any other), a nested tensor
    as the list of its parts (items of several shapes, each drawn on its own); else ``x``."""
    if is_nested(x):
        return unnest(x)
    if not is_tensor(x) or x.layout is _strided():
        return x
    try:
        return x.to_dense()
    except (RuntimeError, NotImplementedError) as exc:
        raise VizdebugTypeError(f"cannot read the values of {describe(x)}: {exc}"[:400]) from None


def _strided() -> Any:
    import torch

    return torch.strided


def to_numpy(obj: Any, what: str = "input") -> np.ndarray:
    """``obj`` as a numeric numpy array, or a clear error naming ``what`` it was.

    Examples
    --------
    >>> to_numpy([[0, 1], [2, 3]]).shape
    (2, 2)
    """
    return _to_numpy(obj, what, 0)


# No array has more axes than numpy allows (64); a list nested deeper than this is a
# list that contains itself or a linked structure, never one array: stop before Python's
# recursion limit does.
MAX_NESTING = 32


def _to_numpy(obj: Any, what: str, depth: int) -> np.ndarray:
    if obj is None:
        raise VizdebugTypeError(
            f"{what} is None. A Dataset's __getitem__ or a transform probably returned None "
            "(a branch without `return`); vd.check_dataset(dataset) names the indices."
        )
    if isinstance(obj, (str, bytes)):
        raise VizdebugTypeError(
            f"{what} is a {type(obj).__name__} ({str(obj)[:40]!r}), not image data; pass arrays, "
            "tensors or PIL images (file paths are not loaded: open them with PIL first)."
        )
    if is_tensor(obj):
        arr = tensor_to_numpy(obj)
    elif is_pil(obj):
        arr = _pil_to_numpy(obj)
    elif isinstance(obj, np.ndarray):
        arr = _plain_ndarray(obj, what)
    elif isinstance(obj, (list, tuple)):
        arr = _sequence_to_numpy(obj, what, depth)
    elif np.isscalar(obj):
        arr = np.asarray(obj)
    else:
        raise VizdebugTypeError(
            f"{what} is a {describe(obj)}; vizdebug understands torch tensors, numpy arrays, "
            "PIL images, pandas DataFrames and lists of those."
        )
    return check_numeric(arr, what)


def _plain_ndarray(arr: np.ndarray, what: str) -> np.ndarray:
    """A subclass of ndarray as a plain one (``np.matrix`` keeps two axes whatever it is
    indexed with; a masked array keeps its values, as ``torch.as_tensor`` would read them);
    a structured array is refused with its fields named."""
    if arr.dtype.names:
        raise VizdebugTypeError(
            f"{what} is a structured array with fields {list(arr.dtype.names)[:8]} (shape "
            f"{arr.shape}); pass one field, e.g. x[{arr.dtype.names[0]!r}], or a plain array")
    return arr if type(arr) is np.ndarray else np.asarray(arr)


def _pil_to_numpy(img: Any) -> np.ndarray:
    mode = str(img.mode)
    try:
        if mode not in ("L", "RGB", "RGBA", "1", "I", "F", "I;16"):
            # "LA"/"PA"/"RGBa" (alpha, premultiplied or not) and "P" with transparency keep
            # it; premultiplied grey "La" converts only through "LA"
            img = img.convert("LA") if mode == "La" else img
            img = img.convert("RGBA" if "a" in mode.lower() or mode == "P" else "RGB")
        return np.asarray(img)
    except (ValueError, OSError, TypeError, KeyError) as exc:
        raise VizdebugTypeError(
            f"cannot read a PIL image of mode {mode!r} and size {getattr(img, 'size', '?')} "
            f"({exc}); convert it first, e.g. img.convert('RGB')"
        ) from None


def _sequence_to_numpy(seq: list | tuple, what: str, depth: int) -> np.ndarray:
    if len(seq) == 0:
        raise VizdebugError(f"{what} is an empty {type(seq).__name__}: there is nothing to show")
    if depth >= MAX_NESTING:
        raise VizdebugTypeError(
            f"{what[:40]}... is lists nested over {MAX_NESTING} deep (a list that contains "
            "itself?); "
            "pass an array, a tensor or a list of images")
    for i, item in enumerate(seq):
        if item is None:
            raise VizdebugTypeError(
                f"{what}[{i}] is None. A Dataset's __getitem__ or a transform probably returned "
                "None; vd.check_dataset(dataset) names every such index."
            )
        if isinstance(item, (str, bytes)):
            raise VizdebugTypeError(f"{what}[{i}] is a string ({item[:40]!r}), not a number")
    parts = [_to_numpy(s, f"{what}[{i}]", depth + 1) if not np.isscalar(s)
             else check_numeric(np.asarray(s), f"{what}[{i}]") for i, s in enumerate(seq)]
    shapes = {p.shape for p in parts}
    if len(shapes) > 1:
        raise VizdebugError(
            f"{what} is ragged: its items have shapes {sorted(shapes)[:4]}; pass a list of "
            "images (each drawn on its own) or pad/resize them to one shape."
        )
    return np.stack(parts)


def check_numeric(arr: np.ndarray, what: str) -> np.ndarray:
    """Reject dtypes that cannot be pictures, with the dtype and the fix in the message."""
    kind = arr.dtype.kind
    if kind in "biuf":
        return arr
    if kind in "US":
        raise VizdebugTypeError(
            f"{what} holds strings (dtype {arr.dtype}, shape {arr.shape}); images must be "
            "numeric. Convert with np.asarray(x, dtype=float) if they are numbers in text."
        )
    if kind == "c":
        raise VizdebugTypeError(f"{what} is complex (dtype {arr.dtype}); images are real-valued")
    if kind == "O":
        return _object_array(arr, what)
    raise VizdebugTypeError(f"{what} has dtype {arr.dtype}, which is not numeric")


def _object_array(arr: np.ndarray, what: str) -> np.ndarray:
    flat = arr.ravel()
    nones = [i for i, v in enumerate(flat) if v is None]
    if nones:
        raise VizdebugTypeError(
            f"{what} (dtype object, shape {arr.shape}) contains None at flat positions "
            f"{nones[:10]}; a Dataset or transform returned None somewhere."
        )
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        kinds = sorted({type(v).__name__ for v in flat[:1000]})
        raise VizdebugTypeError(
            f"{what} has dtype object mixing {kinds}; images must be numeric ({exc})"
        ) from None
