"""Per-tensor statistics computed on the tensor's own device, without reading them back.

A forward hook keeps an :class:`ActivationSample` (a strided copy of at most ``SUBSAMPLE``
values and the per-unit maxima of ``|a|``); when the step ends, the samples of every module
are reduced together by :func:`batch_activation_stats` and read later in one transfer (see
:mod:`vizdebug.collect.hooks`). Mean, std and the shares (zeros, saturation) are estimated
on the subsample, which keeps the cost flat for large activations; the NaN/inf test and
the per-unit dead test see every element (through the maxima): one NaN or one dead
channel matters."""

from __future__ import annotations

import functools
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


def _per_unit(u: torch.Tensor, dim: int) -> torch.Tensor:
    """Maxima over the batch (``u``, the batch dimension gone) reduced to one per unit,
    ``dim`` being the unit dimension of the output."""
    if u.dim() > 1 and dim == 1:
        return u.reshape(u.shape[0], -1).amax(1)
    if u.dim() > 1:
        return u.amax(dim=[d for d in range(u.dim()) if d != dim - 1])
    return u


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
        unit_max = _per_unit(x.amax(0).abs_().maximum(x.amin(0).abs_()), dim)
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
    u = sample.unit_max.numpy()
    return _row(_value_stats(sample.values.numpy(), module_class), u, sample.has_units,
                sample.numel)


def _value_stats(v: np.ndarray, module_class: str) -> tuple[float, float, float, float]:
    """Mean, std, share of zeros and of saturated values of one subsample."""
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
    zero = (count - np.count_nonzero(mag)) / count if v.size else 0.0
    return mean, std, zero, saturated


def _row(values: tuple[float, float, float, float], u: np.ndarray, has_units: bool,
         numel: int) -> np.ndarray:
    """One :data:`ACTIVATION_FIELDS` row from the value statistics and the unit maxima."""
    mean, std, zero, saturated = values
    dead = np.count_nonzero(u <= DEAD_EPS) / max(u.size, 1) if has_units else 0.0
    absmax = float(u.max()) if u.size else math.nan
    return np.array([mean, std, zero, dead, saturated, float(not math.isfinite(absmax)),
                     absmax, float(numel)])


class CpuActivationSample(NamedTuple):
    """:class:`ActivationSample` on the CPU, cheaper to take: the subsample is a numpy copy,
    and the per-unit maxima are left as the max and the min over the batch dimension (two
    numpy reductions in the hook, the small rest when read)."""

    values: np.ndarray
    hi: np.ndarray
    lo: np.ndarray | None  # None: the output cannot be negative (then max |a| = max a)
    numel: int
    unit_dim: int  # the dimension of ``hi``/``lo`` that indexes units
    reduced: bool = False  # ``hi`` holds the unit maxima of |a| already (a large output)


_NUMPY_DTYPES: tuple = ()
# A CPU sample keeps the max and min over the batch until it is read (up to a few steps
# later) when they hold at most this many values; larger ones are reduced to units at once.
KEEP_MAXIMA = 1 << 14


def activation_sample_cpu(output: torch.Tensor, module_class: str, nonnegative: bool = False,
                          hi: np.ndarray | None = None) -> CpuActivationSample | None:
    """:func:`activation_sample` for a contiguous float32/float64 CPU tensor with a batch
    dimension (else ``None``: use :func:`activation_sample`). The same values are kept:
    the strided subsample, and what the unit maxima are computed from. ``nonnegative``:
    the caller knows the output holds no negative value (a ``ReLU``'s), so the min over
    the batch is not needed (NaN still propagates through the max). ``hi``: the max over
    the batch when the caller knows it (a ReLU of a sampled, unchanged input: ReLU is
    monotone, so ``max_b relu(x_b) = relu(max_b x_b)``, NaN included).

    Examples
    --------
    >>> import torch
    >>> s = activation_sample_cpu(torch.zeros(4, 3), "ReLU")
    >>> float(cpu_activation_rows([s], ["ReLU"])[0, ACTIVATION_FIELDS.index("dead")])
    1.0
    """
    global _NUMPY_DTYPES
    if not _NUMPY_DTYPES:
        import torch

        _NUMPY_DTYPES = (torch.float32, torch.float64)
    x = output.detach()
    if x.dtype not in _NUMPY_DTYPES or not x.is_cpu or not x.is_contiguous():
        return None
    dim = _unit_dim(x, module_class)
    if dim is None:
        return None
    n = x.numel()
    step = max(1, n // SUBSAMPLE)
    a = x.numpy()
    values = a.reshape(-1)[: step * SUBSAMPLE: step].copy()
    # numpy's reductions over the batch axis: a few us cheaper per call than torch's
    hi = np.maximum.reduce(a, axis=0) if hi is None else hi
    lo = None if nonnegative else np.minimum.reduce(a, axis=0)
    if hi.size > KEEP_MAXIMA:  # a large output: its unit maxima now (memory stays small)
        sample = CpuActivationSample(values, hi, lo, n, dim - 1)
        return CpuActivationSample(values, _unit_maxima(sample), None, n, 0, True)
    return CpuActivationSample(values, hi, lo, n, dim - 1)


def _unit_maxima(sample: CpuActivationSample) -> np.ndarray:
    """Per-unit ``max |a|`` = ``max(max a, -min a)`` over the batch (NaN propagates)."""
    hi = sample.hi
    u = np.abs(hi) if sample.lo is None else np.maximum(hi, np.negative(sample.lo))
    if u.ndim > 1:
        if sample.unit_dim == 0:
            return u.reshape(u.shape[0], -1).max(1)
        return u.max(axis=tuple(d for d in range(u.ndim) if d != sample.unit_dim))
    return u


class _Layout(NamedTuple):
    """Index arrays for reducing the samples of one step together (cached per layout)."""

    starts: np.ndarray  # where each module's subsample starts in the concatenation
    lens: np.ndarray
    dof: np.ndarray  # max(len - 1, 1)
    limits: np.ndarray  # each value's saturation limit
    unit_rows: list[int]  # rows of Sigmoid-like modules (saturation near 0 and 1)
    unit_starts: np.ndarray  # where each unit starts in the concatenated maxima
    module_starts: np.ndarray  # where each module's units start among all units
    units: np.ndarray  # units per module


@functools.lru_cache(maxsize=64)
def _layout(key: tuple) -> _Layout:
    lens = np.array([size for size, _, _, _ in key], dtype=np.intp)
    starts = np.cumsum(lens) - lens
    limits = np.repeat(np.array([_BOUNDED.get(cls, 5.0) for _, _, cls, _ in key],
                                dtype=key[0][3]), lens)
    unit_rows = [j for j, (_, _, cls, _) in enumerate(key) if cls in _UNIT]
    units = np.array([shape[0] for _, shape, _, _ in key], dtype=np.intp)
    per_unit = [math.prod(shape) // shape[0] for _, shape, _, _ in key]
    offsets = np.cumsum(units * per_unit) - units * per_unit
    unit_starts = np.concatenate([off + np.arange(n) * k
                                  for off, n, k in zip(offsets, units, per_unit)])
    return _Layout(starts, lens, np.maximum(lens - 1, 1), limits, unit_rows, unit_starts,
                   np.cumsum(units) - units, units)


def cpu_activation_rows(samples: list[Any], classes: list[str]) -> np.ndarray:
    """:data:`ACTIVATION_FIELDS` rows (``(M, 8)``) for CPU samples of either kind.

    The samples of all modules are concatenated and reduced segment by segment
    (``np.add.reduceat``, ``np.maximum.reduceat``): about twenty numpy calls for the
    whole step instead of a dozen per module. Mean and std are computed in float64. A
    subsample that sums to NaN/inf goes through :func:`activation_stats_numpy`'s path.
    """
    out = np.empty((len(samples), len(ACTIVATION_FIELDS)))
    flat = []
    for i, (s, cls) in enumerate(zip(samples, classes)):
        if isinstance(s, CpuActivationSample) and s.unit_dim == 0:
            flat.append(i)
        elif isinstance(s, CpuActivationSample):
            out[i] = _row(_value_stats(s.values, cls), _unit_maxima(s), True, s.numel)
        else:
            out[i] = activation_stats_numpy(s, cls)
    if flat:
        with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf outputs: no warnings
            out[flat] = _flat_rows([samples[i] for i in flat], [classes[i] for i in flat])
    return out


def _flat_rows(fs: list[CpuActivationSample], classes: list[str]) -> np.ndarray:
    values = np.concatenate([s.values for s in fs])
    lay = _layout(tuple((s.values.size, tuple(s.hi.shape), cls, values.dtype.str)
                        for s, cls in zip(fs, classes)))
    sums = np.add.reduceat(values, lay.starts, dtype=np.float64)
    mean = sums / lay.lens
    # sum of squares in float64 minus n mean^2: two passes over the values fewer than
    # centring them; for float32 values the cancellation costs ~1e-16 * (mean/std)^2
    squares = np.add.reduceat(np.square(values, dtype=np.float64), lay.starts)
    std = np.sqrt(np.maximum(squares - sums * mean, 0.0) / lay.dof)
    mag = np.abs(values)
    zero = np.add.reduceat(mag == 0, lay.starts, dtype=np.intp) / lay.lens
    saturated = np.add.reduceat(mag > lay.limits, lay.starts, dtype=np.intp) / lay.lens
    for j in lay.unit_rows:
        v = fs[j].values
        saturated[j] = np.count_nonzero((v < 0.01) | (v > 0.99)) / v.size
    hi = np.concatenate([s.hi.reshape(-1) for s in fs])
    lo = np.concatenate([(s.hi if s.lo is None else s.lo).reshape(-1) for s in fs])
    units = np.maximum.reduceat(np.maximum(hi, np.negative(lo)), lay.unit_starts)
    dead = np.add.reduceat(units <= DEAD_EPS, lay.module_starts, dtype=np.intp) / lay.units
    absmax = np.maximum.reduceat(units, lay.module_starts) + 0.0  # never -0.0
    numel = np.array([float(s.numel) for s in fs])
    rows = np.stack([mean, std, zero, dead, saturated, ~np.isfinite(absmax), absmax, numel], 1)
    for j in np.flatnonzero(~np.isfinite(sums)):  # rare: NaN/inf in the subsample
        rows[j, [0, 1, 2, 4]] = _value_stats(fs[j].values, classes[j])
    return rows


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
