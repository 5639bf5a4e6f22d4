"""Activation statistics for many outputs at once: the collectors' fast paths.

The definition is :func:`vizdebug.analysis.training.activations.activation_stats` (one output,
plain numpy, with the thresholds); these paths compute the same rows and are tested
against it on random inputs.

A sampled step reduces its outputs in two stages. :func:`sample_outputs` runs once per
group of outputs of the same shape, dtype, device and unit axis: they are stacked and
reduced together (the max and min over the batch, a strided subsample), so the number of
tensor calls grows with the number of distinct shapes, not with the number of modules; a
deep stack of equal blocks is a few groups. What it keeps (:class:`GroupSample`) is small
(at most ``SUBSAMPLE`` values and one maximum per unit, per output).
:func:`~.rows.group_rows` turns samples into rows in numpy, many steps' samples in one
call, when they are read.

Float32/float64 CPU outputs are sampled in numpy: for a small output, numpy's per-call
cost is a fraction of torch's dispatch; an output stored in another axis order (a
transposed or channels-last view) is reduced in the order of its memory. Everything else
(devices, half precision, integer outputs) is sampled in torch on its own device, without
a sync; the result is read later.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...analysis.training.activations import (
    SUBSAMPLE,
    subsample_step,
    unit_axis,
)
from ..checks.anomaly import AnomalyEvent

if TYPE_CHECKING:
    import torch


class GroupSample(NamedTuple):
    """What is kept of a group of equal-shape outputs until it is read: per output, a
    strided subsample (``values``, ``(M, S)``) and the per-unit maxima of ``|a|`` over the
    batch (``unit_max``, ``(M, U)``); numpy arrays, or tensors on the outputs' device."""

    values: Any
    unit_max: Any
    numel: int
    has_units: bool


_NUMPY_DTYPES: tuple = ()
_STRIDED: Any = None  # torch.strided, once torch is loaded
GROUP_MAX = 1 << 15
_CHUNK_BYTES = 1 << 19  # a group is stacked and reduced this much at a time (in cache)


def numpy_ready(tensor: torch.Tensor) -> bool:
    """A float32/float64 CPU tensor: readable as a numpy array without a copy (in any
    layout: :func:`_sample_numpy` reduces a permuted one in the order of its memory)."""
    global _NUMPY_DTYPES, _STRIDED
    if not _NUMPY_DTYPES:
        import torch

        _NUMPY_DTYPES, _STRIDED = (torch.float32, torch.float64), torch.strided
    return tensor.dtype in _NUMPY_DTYPES and tensor.is_cpu and tensor.layout is _STRIDED


def _dense_permutation(strides: tuple[int, ...], shape: tuple[int, ...]) -> list[int] | None:
    """The axis order (outermost first) in which an array of these strides is contiguous
    (``None``: it is not a permutation of a contiguous block, e.g. a slice, or empty)."""
    order = sorted(range(len(shape)), key=lambda d: (-strides[d], -shape[d]))
    expected = 1
    for d in reversed(order):
        if shape[d] == 0:
            return None
        if shape[d] != 1 and strides[d] != expected:
            return None
        expected *= shape[d]
    return order


def sample_outputs(outputs: list[torch.Tensor], axis: int | None) -> GroupSample:
    """One :class:`GroupSample` for outputs of the same shape, dtype and device, whose
    units lie along ``axis`` (see :func:`~vizdebug.analysis.training.activations.unit_axis`).

    Examples
    --------
    >>> import torch
    >>> from vizdebug.collect.hooks.rows import group_rows
    >>> s = sample_outputs([torch.zeros(4, 3), torch.ones(4, 3)], 1)
    >>> group_rows([s], ["ReLU", "ReLU"])[:, 3].tolist()  # dead
    [1.0, 0.0]
    """
    return _sample(outputs, axis, None)[0]


def sample_with_relus(outputs: list[torch.Tensor], axis: int, relus: int,
                      relu_axis: int) -> tuple[GroupSample, GroupSample]:
    """:func:`sample_outputs`, and the sample of ``relu(x)`` for each of the first
    ``relus`` outputs (units along ``relu_axis``), taken from the outputs' own reductions: the
    outputs of ``nn.ReLU`` modules whose input is one of these outputs, unchanged. The
    subsample of ``relu(x)`` is ``relu`` of ``x``'s, and as relu is monotone, the per-unit
    max of ``|relu(x)|`` over the batch is ``relu`` of ``x``'s max (NaN included): the
    same values the ReLU outputs' own reductions give, without a pass over them.

    >>> import torch
    >>> from vizdebug.collect.hooks.rows import group_rows
    >>> x = torch.randn(8, 3)
    >>> _, relu = sample_with_relus([x], 1, 1, 1)
    >>> bool((group_rows([relu], ["ReLU"]) == group_rows([sample_outputs([x.relu()], 1)],
    ...                                                   ["ReLU"])).all())
    True
    """
    sample, relu_max = _sample(outputs, axis, relus)
    if isinstance(relu_max, np.ndarray):  # (float32: see the caller)
        values, unit_max = np.maximum(sample.values[:relus], 0), _to_units(relu_max, relu_axis)
    else:
        import torch

        values = torch.relu(sample.values[:relus])
        unit_max = _to_units(relu_max, relu_axis).float()
    return sample, GroupSample(values, unit_max, sample.numel, True)


def _sample(outputs: list[torch.Tensor], axis: int | None,
            relus: int | None) -> tuple[GroupSample, Any]:
    """The sample, and ``relu`` of the per-position maxima over the batch of the first
    ``relus`` outputs (``(relus, ...)``; ``None`` when it is ``None``)."""
    if len(outputs) == 1 and numpy_ready(outputs[0]):
        return _sample_numpy(outputs[0].detach().numpy(), axis, relus)
    import torch

    with torch.no_grad():  # (one context, not a detach() per output)
        return _sample_torch(outputs, axis, relus)


def _sample_numpy(array: np.ndarray, axis: int | None,
                  relus: int | None = None) -> tuple[GroupSample, Any]:
    """One CPU output: numpy's reductions cost less per call than torch's dispatch, which
    matters for an output sampled alone (a group's one stacked reduction does not care)."""
    if not array.flags.c_contiguous:
        return _sample_permuted(array, axis, relus)
    flat = array.reshape(1, -1)
    n = array.size
    step = subsample_step(n)
    # The strided subsample is taken after a first full pass has brought the output into
    # the cache (one value per cache line: a copy first would miss on each).
    if axis is None:
        unit_max = np.abs(flat).max(1, keepdims=True) if n else np.zeros((1, 1), flat.dtype)
        values = flat[:, : step * SUBSAMPLE: step].copy()  # a copy: outlives the output
        return GroupSample(values, unit_max, n, False), None
    # max |a| = max(|max a|, |min a|) over the batch: two reductions, no |a| copy
    hi = np.maximum.reduce(array, axis=0)
    values = flat[:, : step * SUBSAMPLE: step].copy()
    per_unit = np.maximum(np.abs(hi), np.abs(np.minimum.reduce(array, axis=0)))[None]
    relu_max = None if relus is None else np.maximum(hi, 0)[None]
    return GroupSample(values, _to_units(per_unit, axis), n, True), relu_max


def _sample_permuted(array: np.ndarray, axis: int | None,
                     relus: int | None) -> tuple[GroupSample, Any]:
    """An output stored in another axis order (``MultiheadAttention``'s batch-first output
    is a transposed view, a channels-last convolution's is permuted): reduced in the order
    of its memory, where a pass over it is sequential. The maxima over every axis but the
    units' do not depend on the order they are taken in; the subsample is taken at the
    same logical positions as for a contiguous output."""
    layout = _layout(array.shape, array.strides, array.itemsize)
    if layout is None:  # a slice, a broadcast view: copied first
        return _sample_numpy(np.ascontiguousarray(array), axis, relus)
    order, offsets = layout
    n, memory = array.size, array.transpose(order)
    if axis is None:
        unit_max = np.abs(memory).max().reshape(1, 1)
        return GroupSample(memory.reshape(1, -1)[:, offsets], unit_max, n, False), None
    unit = order.index(axis)
    hi = _unit_reduce(memory, unit, np.maximum)
    # (after a first full pass has brought the output into the cache, as for the others)
    values = memory.reshape(1, -1)[:, offsets]  # a copy
    per_unit = np.maximum(np.abs(hi), np.abs(_unit_reduce(memory, unit, np.minimum)))[None]
    # A following ReLU may have other units (a Conv1d's channels, the ReLU's features):
    # its maxima come from the batch maxima in the output's own shape, as for the others.
    relu_max = None if relus is None else np.maximum(
        np.maximum.reduce(array, axis=0), 0)[None]
    return GroupSample(values, per_unit, n, True), relu_max


@functools.lru_cache(maxsize=64)
def _layout(shape: tuple[int, ...], strides: tuple[int, ...],
            itemsize: int) -> tuple[list[int], np.ndarray] | None:
    """For an array of this shape and these byte strides that is a permutation of a
    contiguous block: the axis order of its memory (outermost first), and where the
    subsample's values (every ``step``-th in C order) lie in that memory. ``None`` for
    anything else (a slice, a broadcast view, an empty array). Layouts repeat from step to
    step, so this is computed once per layout."""
    elements = tuple(s // itemsize for s in strides)
    order = _dense_permutation(elements, shape)
    if order is None:
        return None
    n = math.prod(shape)
    index = np.unravel_index(np.arange(0, min(n, subsample_step(n) * SUBSAMPLE),
                                       subsample_step(n)), shape)
    offsets = sum(i * e for i, e in zip(index, elements))
    return order, np.asarray(offsets, dtype=np.intp)


def _unit_reduce(memory: np.ndarray, unit: int, ufunc: np.ufunc) -> np.ndarray:
    """``ufunc`` over every axis of a C-contiguous array but ``unit``: first over its
    outermost axis (one sequential pass over wide rows), then over what is left."""
    if unit == 0:
        return ufunc.reduce(memory.reshape(memory.shape[0], -1), axis=1)
    rest = ufunc.reduce(memory.reshape(memory.shape[0], -1), axis=0)
    before, units = math.prod(memory.shape[1:unit]), memory.shape[unit]
    rest = rest.reshape(before, units, -1)
    if before > 1:
        rest = ufunc.reduce(rest, axis=0)[None]
    return ufunc.reduce(rest[0], axis=1) if rest.shape[2] > 1 else rest[0, :, 0]


def _sample_torch(tensors: list[torch.Tensor], axis: int | None,
                  relus: int | None = None) -> tuple[GroupSample, Any]:
    """Outputs on a device, of other dtypes, or several small ones stacked: one set of
    reductions for the group (torch's reductions over the batch of a stack beat numpy's)."""
    import torch

    if len(tensors) > 1 and axis is not None and tensors[0].is_cpu and (
            tensors[0].is_floating_point()):
        return _sample_chunked(tensors, axis, relus)
    stacked = torch.stack(tensors) if len(tensors) > 1 else tensors[0][None]
    if stacked.is_complex():
        stacked = stacked.abs()  # (a complex output's magnitudes: .float() drops the imaginary part)
    elif not stacked.is_floating_point():
        stacked = stacked.float()
    m, n = len(tensors), tensors[0].numel()
    step = subsample_step(n)
    flat = stacked.reshape(m, -1)
    if axis is None:
        unit_max = flat.abs().amax(1, keepdim=True) if n else flat.new_zeros((m, 1))
        values = flat[:, : step * SUBSAMPLE: step].float().clone()  # (after a full pass)
        return GroupSample(values, unit_max.float(), n, False), None
    hi = stacked.amax(1)
    relu_max = None if relus is None else torch.relu(hi[:relus])
    values = flat[:, : step * SUBSAMPLE: step].float().clone()
    per_unit = torch.maximum(hi.abs_(), stacked.amin(1).abs_())
    return GroupSample(values, _to_units(per_unit, axis).float(), n, True), relu_max


def _sample_chunked(tensors: list[torch.Tensor], axis: int,
                    relus: int | None = None) -> tuple[GroupSample, Any]:
    """Several CPU outputs with units: stacked a few at a time into one small buffer and
    reduced while the buffer is in the cache (one stack of all of them would be written
    to memory and read back, once per reduction)."""
    import torch

    m, first, n = len(tensors), tensors[0], tensors[0].numel()
    step, per = subsample_step(n), max(1, _CHUNK_BYTES // max(n * first.element_size(), 1))
    buf = first.new_empty((min(per, m), *first.shape))
    values = torch.empty((m, min(n, SUBSAMPLE)), dtype=torch.float32)
    # (numpy's strided copy of the subsample is several times faster than torch's)
    flat = (buf.numpy() if numpy_ready(buf) else buf).reshape(len(buf), -1)
    into = values.numpy() if isinstance(flat, np.ndarray) else values
    hi, lo = first.new_empty((m, *first.shape[1:])), first.new_empty((m, *first.shape[1:]))
    for i in range(0, m, per):
        part = tensors[i:i + per]
        chunk = torch.stack(part, out=buf[:len(part)])
        into[i:i + len(part)] = flat[:len(part), : step * SUBSAMPLE: step]
        torch.amax(chunk, 1, out=hi[i:i + len(part)])
        torch.amin(chunk, 1, out=lo[i:i + len(part)])
    relu_max = None if relus is None else torch.relu(hi[:relus])  # (before hi.abs_)
    per_unit = torch.maximum(hi.abs_(), lo.abs_())
    return GroupSample(values, _to_units(per_unit, axis).float(), n, True), relu_max


def _to_units(per_unit: Any, axis: int) -> Any:
    """``(M, ...)`` maxima over the batch reduced to ``(M, units)``: ``axis`` is the unit
    axis of the output (whose batch axis became the group axis)."""
    if per_unit.ndim == 2:
        return per_unit
    if axis == 1:  # channels first: one contiguous slab per unit
        per_unit, others = per_unit.reshape(per_unit.shape[0], per_unit.shape[1], -1), (2,)
    else:
        others = tuple(d for d in range(1, per_unit.ndim) if d != axis)
    if isinstance(per_unit, np.ndarray):
        return per_unit.max(axis=others)
    return per_unit.amax(dim=others)


def describe_tensor(t: Any) -> str:
    """A one-line summary (shape, dtype, min/max/mean, non-finite count), syncing once.

    Used only on the error path (``on_anomaly="raise"``), where a sync is fine.

    Examples
    --------
    >>> import torch
    >>> describe_tensor(torch.tensor([1.0, float("nan")]))
    'shape (2,) float32, 1 non-finite of 2, finite min 1, max 1, mean 1'
    """
    import torch

    if t is None:
        return "None"
    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    x = t.detach()
    dtype = str(x.dtype).replace("torch.", "")
    head = f"shape {tuple(x.shape)} {dtype}"
    if x.numel() == 0 or x.is_complex():
        return head
    x = x.float().reshape(-1)
    finite = torch.isfinite(x)
    n_bad = int(x.numel() - finite.sum())
    good = x[finite]
    if good.numel() == 0:
        return f"{head}, all {x.numel()} values non-finite"
    lo, hi, mean = (float(v) for v in (good.min(), good.max(), good.mean()))
    return (
        f"{head}, {n_bad} non-finite of {x.numel()}, "
        f"finite min {lo:.4g}, max {hi:.4g}, mean {mean:.4g}"
    )


def nonfinite_event(tensor: Any, inputs: tuple, path: str, module_class: str,
                    step: int) -> AnomalyEvent | None:
    """The event for a floating output holding NaN/inf (one sync), else ``None``."""
    import torch

    if tensor is None or not tensor.is_floating_point() or bool(
            torch.isfinite(tensor.detach()).all()):
        return None
    ins = "; ".join(describe_tensor(t) for t in inputs) or "no inputs"
    message = (f"first non-finite activation at step {step}: output of {path!r} "
               f"({module_class}): {describe_tensor(tensor)}. Input: {ins}")
    return AnomalyEvent("nonfinite-activation", step, path, module_class, message,
                        {"input": ins, "output": describe_tensor(tensor)})


def first_tensor(value: Any) -> torch.Tensor | None:
    """The first tensor in an output (a tensor, or the first one in a tuple/list/dict)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                return item
    return None


def output_key(tensor: torch.Tensor, module_class: str) -> tuple:
    """Outputs with equal keys are sampled together (:func:`sample_outputs`); the fourth
    item is their unit axis. Outputs of more than :data:`GROUP_MAX` values are sampled
    alone: stacking would copy them, and their reductions are long enough that one set
    of calls each costs nothing noticeable."""
    shape = tuple(tensor.shape)
    alone = id(tensor) if tensor.numel() > GROUP_MAX else None
    return shape, tensor.dtype, tensor.device, unit_axis(shape, module_class), alone
