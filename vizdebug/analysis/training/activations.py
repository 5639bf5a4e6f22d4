"""The definition of the activation statistics: one output in, one row out, plain numpy.

This is the reference. The collectors (:mod:`vizdebug.collect.hooks.stats`) compute the same row
faster, for many outputs at once and on the outputs' own device; their tests compare them
with :func:`activation_stats` on random inputs. The thresholds live here, once.

What a row holds (:data:`~vizdebug.records.ACTIVATION_STATS`):

- ``mean``, ``std`` (``ddof=1``; 0 for fewer than two values), ``zero`` (share of exact
  zeros) and ``saturated`` (share of saturated values) are estimated on a strided
  subsample of at most :data:`SUBSAMPLE` values, NaNs left out: that keeps their cost flat
  for large outputs;
- ``dead``, ``nonfinite``, ``absmax`` and ``numel`` see every element, through the
  per-unit maxima of ``|a|`` over the batch: one NaN or one dead channel matters. A unit is
  a channel (dimension 1), or a feature (the last dimension of a 3-d output that is not a
  convolution's); an output without a batch of at least two has no units (``dead`` is 0).
"""

from __future__ import annotations

import math

import numpy as np

from ...records import ACTIVATION_STATS

__all__ = ["ACTIVATION_STATS", "BOUNDED", "DEAD_EPS", "SATURATION", "SUBSAMPLE", "UNIT_RANGE",
           "activation_stats", "saturated", "saturation_limit", "subsample_step", "unit_axis"]

#: Values of an output that its mean, std, zero and saturated shares are estimated from.
SUBSAMPLE = 1024
#: A unit is dead when its largest ``|a|`` over the whole batch is at most this.
DEAD_EPS = 1e-8
#: A value is saturated beyond this ``|a|`` (unbounded activations: a value this large
#: pushes whatever follows into its flat region).
SATURATION = 5.0
#: Bounded activations saturate near their bound instead.
BOUNDED = {"Tanh": 0.99, "Hardtanh": 0.99, "Softsign": 0.99}
#: Activations onto (0, 1) saturate near either end: below ``UNIT_LOW`` or above ``UNIT_HIGH``.
UNIT_RANGE = frozenset({"Sigmoid", "Hardsigmoid", "Softmax"})
UNIT_LOW, UNIT_HIGH = 0.01, 0.99


def unit_axis(shape: tuple[int, ...], module_class: str) -> int | None:
    """The axis of an output of this shape that indexes units (``None``: no units).

    Examples
    --------
    >>> unit_axis((64, 16, 8, 8), "Conv2d"), unit_axis((4, 7, 32), "Linear"), unit_axis((5,), "ReLU")
    (1, 2, None)
    """
    if len(shape) < 2 or shape[0] < 2:
        return None
    if len(shape) == 3 and not module_class.startswith("Conv"):
        return 2
    return 1


def subsample_step(numel: int) -> int:
    """The stride of the subsample: every ``step``-th value, at most :data:`SUBSAMPLE`."""
    return max(1, numel // SUBSAMPLE)


def saturation_limit(module_class: str) -> float:
    """The ``|a|`` beyond which a value of this module's output counts as saturated
    (``inf`` for the (0, 1) activations, which saturate at both ends instead)."""
    if module_class in UNIT_RANGE:
        return math.inf
    return BOUNDED.get(module_class, SATURATION)


def saturated(values: np.ndarray, module_class: str) -> np.ndarray:
    """Which of these values are saturated, for an output of this module class."""
    if module_class in UNIT_RANGE:
        return (values < UNIT_LOW) | (values > UNIT_HIGH)
    return np.abs(values) > saturation_limit(module_class)


def activation_stats(output: np.ndarray, module_class: str) -> np.ndarray:
    """The :data:`~vizdebug.records.ACTIVATION_STATS` of one output, as float64.

    Examples
    --------
    >>> a = np.zeros((4, 3)); a[:, 0] = [1.0, -2.0, 3.0, 6.0]
    >>> dict(zip(ACTIVATION_STATS, activation_stats(a, "Linear").tolist()))["dead"]
    0.6666666666666666
    >>> float(activation_stats(np.array([0.995, 0.5, -0.999, 0.0]), "Tanh")[4])  # saturated
    0.5
    """
    a = np.asarray(output)
    a = a if a.dtype.kind == "f" else a.astype(np.float32)
    flat = a.reshape(-1)
    v = flat[:: subsample_step(flat.size)][:SUBSAMPLE].astype(np.float64)
    v = v[~np.isnan(v)]
    axis = unit_axis(a.shape, module_class)
    if axis is None:
        unit_max = np.abs(flat).max(keepdims=True) if flat.size else np.zeros(1)
    else:
        unit_max = np.abs(a).max(axis=tuple(d for d in range(a.ndim) if d != axis))
    with np.errstate(invalid="ignore", over="ignore"):  # inf in the subsample: std is NaN
        mean = v.mean() if v.size else math.nan
        std = v.std(ddof=1) if v.size > 1 else 0.0
    share = (lambda mask: float(np.mean(mask))) if v.size else (lambda mask: 0.0)
    dead = float(np.mean(unit_max <= DEAD_EPS)) if axis is not None else 0.0
    absmax = float(unit_max.max()) + 0.0  # never -0.0
    return np.array([mean, std, share(v == 0), dead, share(saturated(v, module_class)),
                     float(not math.isfinite(absmax)), absmax, float(a.size)])
