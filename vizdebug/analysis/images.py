"""Pure image statistics: value range, un-normalisation, per-channel stats, per-image flags.

Everything takes numpy arrays (C x H x W per image, N x C x H x W per batch) and returns
numbers or new arrays; inputs are never modified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import VizdebugError

# Thresholds on the display scale [0, 1]; chosen on digits and synthetic photos so that a
# real digit or photo never trips them (see tests/test_images.py).
BLANK_STD = 0.02  # an image whose pixels vary less than this shows nothing
BLANK_SPREAD = 0.06  # ... and whose 1st-99th percentile spread is below this
SATURATED_SHARE = 0.5  # more than half the pixels clipped at the top of the range
NOT_NORMALIZED_ABS = 5.0  # 99th percentile of |x| above this: not standardised


@dataclass(frozen=True)
class Scaling:
    """How raw values map to the display range [0, 1].

    ``kind`` is one of ``bool``, ``0-1``, ``0-255``, ``-1-1``, ``minmax`` (per-channel batch
    range) or ``mean-std`` (un-normalised with the given mean/std, then one of the others).
    """

    kind: str
    lo: np.ndarray  # per channel
    hi: np.ndarray
    note: str
    absolute: bool  # True when the range is a known convention (so clipping means something)
    mean: np.ndarray | None = None
    std: np.ndarray | None = None


def _per_channel(value: float | Sequence[float] | None, c: int, name: str) -> np.ndarray | None:
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise VizdebugError(f"{name} must be a number or one number per channel, got {value!r}") from None
    if name == "std" and np.any(~(arr > 0)):
        raise VizdebugError(f"std must be positive, got {arr.tolist()}")
    if arr.size == 1:
        return np.repeat(arr, c)
    if arr.size != c:
        raise VizdebugError(f"{name} has {arr.size} values but the images have {c} channels")
    return arr


def finite_range(x: np.ndarray) -> tuple[float, float] | None:
    """(min, max) over finite values, or None when nothing is finite."""
    if x.dtype.kind in "biu":
        return (float(x.min()), float(x.max())) if x.size else None
    finite = x[np.isfinite(x)]
    return (float(finite.min()), float(finite.max())) if finite.size else None


def infer_scaling(images: np.ndarray, mean=None, std=None) -> Scaling:
    """Decide how to show ``images`` (N x C x H x W), un-normalising with mean/std if given.

    Examples
    --------
    >>> infer_scaling(np.zeros((2, 3, 4, 4), dtype=np.uint8)).kind
    '0-255'
    >>> infer_scaling(np.random.rand(2, 1, 4, 4)).kind
    '0-1'
    """
    c = images.shape[1]
    m, s = _per_channel(mean, c, "mean"), _per_channel(std, c, "std")
    if (m is None) != (s is None):
        raise VizdebugError("pass mean and std together (the values your Normalize used)")
    if m is not None:
        raw = images.astype(np.float64) * s[None, :, None, None] + m[None, :, None, None]
        base = _scaling_of(raw)
        note = f"un-normalised with the given mean/std; {base.note}"
        return Scaling("mean-std", base.lo, base.hi, note, base.absolute, m, s)
    return _scaling_of(images)


def _scaling_of(x: np.ndarray) -> Scaling:
    c = x.shape[1]
    ones, zeros = np.ones(c), np.zeros(c)
    if x.dtype == np.bool_:
        return Scaling("bool", zeros, ones, "boolean mask: False black, True white", True)
    if x.dtype == np.uint8:
        return Scaling("0-255", zeros, ones * 255, "uint8 values 0-255", True)
    rng = finite_range(x)
    if rng is None:
        return Scaling("minmax", zeros, ones, "no finite values", False)
    lo, hi = rng
    if lo >= -1e-3 and hi <= 1 + 1e-3:
        return Scaling("0-1", zeros, ones, f"values {lo:.3g}..{hi:.3g}: read as 0-1", True)
    if lo >= -0.5 and 25 < hi <= 255.5:
        return Scaling("0-255", zeros, ones * 255, f"values {lo:.3g}..{hi:.3g}: read as 0-255", True)
    if lo >= -1 - 1e-3 and hi <= 1 + 1e-3:
        return Scaling("-1-1", -ones, ones, f"values {lo:.3g}..{hi:.3g}: read as -1..1", True)
    return _minmax(x)


def _minmax(x: np.ndarray) -> Scaling:
    c = x.shape[1]
    per = np.moveaxis(x, 1, 0).reshape(c, -1).astype(np.float64)
    per = np.where(np.isfinite(per), per, np.nan)
    lo = np.nanpercentile(per, 0.5, axis=1)
    hi = np.nanpercentile(per, 99.5, axis=1)
    hi = np.where(hi > lo, hi, lo + 1)
    standardised = bool(np.nanmin(per) < -1e-3)
    what = "looks standardised" if standardised else f"values up to {np.nanmax(per):.3g}"
    note = (f"{what}: shown with each channel stretched over its batch range "
            "(0.5th-99.5th percentile); pass mean=/std= for true colours")
    return Scaling("minmax", lo, hi, note, False)


def to_display(image: np.ndarray, scaling: Scaling) -> np.ndarray:
    """One C x H x W image on the display scale [0, 1] as float32; non-finite stays NaN."""
    x = image.astype(np.float32)
    if scaling.mean is not None:
        x = x * scaling.std[:, None, None] + scaling.mean[:, None, None]
    c = x.shape[0]
    lo = scaling.lo[:c, None, None].astype(np.float32)
    hi = scaling.hi[:c, None, None].astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        out = (x - lo) / (hi - lo)
        out = np.where(np.isfinite(out), np.clip(out, 0, 1), np.nan)
    return out.astype(np.float32)


def image_flags(raw: np.ndarray, display: np.ndarray, scaling: Scaling) -> list[str]:
    """Flags for one image: ``non-finite``, ``blank``, ``saturated``."""
    flags = []
    if raw.dtype.kind == "f" and not np.isfinite(raw).all():
        flags.append("non-finite")
    finite = display[np.isfinite(display)]
    if finite.size == 0:
        return flags
    if finite.std() < BLANK_STD and np.ptp(np.percentile(finite, [1, 99])) < BLANK_SPREAD:
        flags.append("blank")
    elif scaling.absolute and np.mean(finite >= 0.995) > SATURATED_SHARE:
        flags.append("saturated")
    return flags


def channel_stats(images: np.ndarray) -> list[dict[str, float]]:
    """Raw per-channel statistics of an N x C x H x W batch, as the model receives it."""
    out = []
    for ch in range(images.shape[1]):
        v = images[:, ch].astype(np.float64).ravel()
        finite = v[np.isfinite(v)]
        bad = int(v.size - finite.size)
        if finite.size == 0:
            out.append({"channel": ch, "min": np.nan, "max": np.nan, "mean": np.nan,
                        "std": np.nan, "non_finite": bad})
            continue
        out.append({"channel": ch, "min": float(finite.min()), "max": float(finite.max()),
                    "mean": float(finite.mean()), "std": float(finite.std()), "non_finite": bad})
    return out


def abs_p99(images: np.ndarray) -> float:
    """The 99th percentile of |x| over finite values (0 when nothing is finite)."""
    v = np.abs(images.astype(np.float64).ravel())
    v = v[np.isfinite(v)]
    if v.size > 200_000:
        v = v[:: v.size // 200_000]
    return float(np.percentile(v, 99)) if v.size else 0.0
