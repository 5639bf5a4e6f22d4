"""Per-tensor statistics computed on the tensor's own device, without reading them back.

A forward hook keeps an :class:`ActivationSample` (a strided copy of at most ``SUBSAMPLE``
values and the per-unit maxima of ``|a|``); when the step ends, the samples of every module
are reduced together by :func:`batch_activation_stats` and read later in one transfer (see
:mod:`vizdebug.collect.hooks`). Mean, std and the shares (zeros, saturation) are estimated
on the subsample, which keeps the cost flat for large activations; the NaN/inf test and
the per-unit dead test see every element (through the maxima): one NaN or one dead
channel matters."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    import torch

ACTIVATION_FIELDS = ("mean", "std", "zero", "dead", "saturated", "nonfinite", "absmax", "numel")
SUBSAMPLE = 1024
DEAD_EPS = 1e-8
_BOUNDED = {"Tanh": 0.99, "Hardtanh": 0.99, "Softsign": 0.99}
_UNIT = frozenset({"Sigmoid", "Hardsigmoid", "Softmax"})


def _unit_dim(x: torch.Tensor, module_class: str) -> int | None:
    """The dimension that indexes units: channels (dim 1) or features (last dim of 3-d)."""
    if x.dim() < 2 or x.shape[0] < 2:
        return None
    if x.dim() == 3 and not module_class.startswith("Conv"):
        return 2
    return 1


def activation_stats(output: torch.Tensor, module_class: str) -> torch.Tensor:
    """The :data:`ACTIVATION_FIELDS` of one activation, as a float32 tensor on its device.

    Examples
    --------
    >>> import torch
    >>> s = activation_stats(torch.zeros(4, 3), "ReLU")
    >>> dict(zip(ACTIVATION_FIELDS, s.tolist()))["dead"]
    1.0
    """
    return batch_activation_stats([activation_sample(output, module_class)], [module_class])[0]


class ActivationSample(NamedTuple):
    """What a forward hook keeps of one output: copies of a few thousand values and of the
    per-unit maxima of ``|a|``, taken at once (an in-place op may change the output later)."""

    values: torch.Tensor
    unit_max: torch.Tensor
    numel: int
    has_units: bool


def activation_sample(output: torch.Tensor, module_class: str) -> ActivationSample:
    """Three read-only kernels on the whole output: the max and min over the batch
    dimension, and a strided copy; the rest runs on tensors 1/batch the size.

    ``max |a| = max(|max a|, |min a|)`` exactly (NaN and inf propagate), without writing
    an ``abs`` copy of the whole output: that allocation, among the training step's own,
    cost more than the reductions (in-situ, 6 modules of the digits CNN: ~1000 us per
    step with ``abs``, ~670 us without). The batch dimension goes first: an elementwise
    max over contiguous slabs is several times faster than one multi-dimension ``amax``.
    (numpy was tried on the CPU: its max over non-trailing axes is 5x slower.)
    """
    x = output.detach()
    if not x.is_floating_point():
        x = x.float()
    n = x.numel()
    dim = _unit_dim(x, module_class)
    if dim is None:
        unit_max = x.abs().amax().reshape(1) if n else x.new_zeros(1)
    else:  # dim >= 1, batch of at least 2
        unit_max = x.amax(0).abs_().maximum(x.amin(0).abs_())
        if unit_max.dim() > 1 and dim == 1:
            unit_max = unit_max.reshape(unit_max.shape[0], -1).amax(1)
        elif unit_max.dim() > 1:
            unit_max = unit_max.amax(dim=[d for d in range(unit_max.dim()) if d != dim - 1])
    values = x.reshape(-1)[:: max(1, n // SUBSAMPLE)][:SUBSAMPLE].clone()
    return ActivationSample(values.float(), unit_max.float().reshape(-1), n, dim is not None)


def batch_activation_stats(samples: list[ActivationSample],
                           classes: list[str]) -> torch.Tensor:
    """:data:`ACTIVATION_FIELDS` for many samples at once: an ``(M, 8)`` float32 tensor.

    About twenty kernels whatever the number of modules, instead of a dozen per module.
    ``nonfinite`` is 1 when the output held a NaN or an inf (the max propagates both).

    Examples
    --------
    >>> import torch
    >>> s = batch_activation_stats([activation_sample(torch.zeros(4, 3), "ReLU")], ["ReLU"])
    >>> dict(zip(ACTIVATION_FIELDS, s[0].tolist()))["dead"]
    1.0
    """
    import torch
    from torch.nn.utils.rnn import pad_sequence

    device = samples[0].values.device
    vals = pad_sequence([s.values for s in samples], batch_first=True, padding_value=math.nan)
    valid = ~torch.isnan(vals)
    count = valid.sum(1).clamp(min=1)
    mean = torch.nanmean(vals, 1)
    dev = torch.where(valid, vals - mean[:, None], 0.0)
    std = torch.sqrt((dev * dev).sum(1) / (count - 1).clamp(min=1))
    mag = vals.abs()
    zero = (mag == 0).sum(1) / count
    limits = torch.tensor([_BOUNDED.get(c, 5.0) for c in classes], device=device)
    unit = torch.tensor([c in _UNIT for c in classes], device=device)
    saturated = torch.where(unit[:, None], (vals < 0.01) | (vals > 0.99), mag > limits[:, None])
    saturated = (saturated & valid).sum(1) / count
    units = pad_sequence([s.unit_max for s in samples], batch_first=True, padding_value=0.0)
    lengths = torch.tensor([s.unit_max.numel() for s in samples], device=device)
    inside = torch.arange(units.shape[1], device=device)[None, :] < lengths[:, None]
    has_units = torch.tensor([s.has_units for s in samples], device=device)
    dead = torch.where(has_units, ((units <= DEAD_EPS) & inside).sum(1) / lengths, 0.0)
    absmax = units.amax(1)
    numel = torch.tensor([float(s.numel) for s in samples], device=device)
    return torch.stack([mean, std, zero, dead, saturated, (~torch.isfinite(absmax)).float(),
                        absmax, numel], 1).float()


def activation_stats_numpy(sample: ActivationSample, module_class: str) -> np.ndarray:
    """:func:`batch_activation_stats` for one CPU sample, in numpy.

    On the CPU, numpy's per-call overhead is a few times lower than torch's, and the CPU
    *is* the device: nothing is transferred or synchronised.

    Examples
    --------
    >>> import torch
    >>> s = activation_stats_numpy(activation_sample(torch.zeros(4, 3), "ReLU"), "ReLU")
    >>> float(s[ACTIVATION_FIELDS.index("dead")])
    1.0
    """
    v = sample.values.numpy()
    u = sample.unit_max.numpy()
    total = float(v.sum(dtype=np.float64))
    if not math.isfinite(total):  # rare: drop NaNs (as torch.nanmean does)
        v = v[~np.isnan(v)]
        total = float(v.sum(dtype=np.float64))
    count = max(v.size, 1)
    mean = total / v.size if v.size else math.nan
    centred = v - mean
    std = math.sqrt(float(np.dot(centred, centred)) / (v.size - 1)) if v.size > 1 else 0.0
    mag = np.abs(v)
    if module_class in _UNIT:
        saturated = np.count_nonzero((v < 0.01) | (v > 0.99)) / count
    else:
        saturated = np.count_nonzero(mag > _BOUNDED.get(module_class, 5.0)) / count
    dead = np.count_nonzero(u <= DEAD_EPS) / max(u.size, 1) if sample.has_units else 0.0
    absmax = float(u.max()) if u.size else math.nan
    return np.array([mean, std, (count - np.count_nonzero(mag)) / count if v.size else 0.0,
                     dead, saturated, float(not math.isfinite(absmax)), absmax,
                     float(sample.numel)])


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


def grad_norms(tensors: list[torch.Tensor]) -> torch.Tensor:
    """L2 norms of several tensors in one fused call (``torch._foreach_norm`` when present).

    Examples
    --------
    >>> import torch
    >>> grad_norms([torch.ones(4), torch.zeros(2)]).tolist()
    [2.0, 0.0]
    """
    import torch

    if not tensors:
        return torch.zeros(0)
    detached = [t.detach() for t in tensors]
    foreach_norm = getattr(torch, "_foreach_norm", None)
    if foreach_norm is not None:
        try:
            return torch.stack([n.float() for n in foreach_norm(detached)])
        except RuntimeError:  # mixed devices or dtypes: fall back to one norm each
            pass
    return torch.stack([torch.linalg.vector_norm(t).float() for t in detached])


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
