"""Pure image statistics: value range, un-normalisation, per-channel stats, per-image flags.

Everything takes numpy arrays (C x H x W per image, N x C x H x W per batch) and returns
numbers or new arrays; inputs are never modified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import VizdebugError, short_repr

# Thresholds on the display scale [0, 1]; chosen on digits and synthetic photos so that a
# real digit or photo never trips them (see tests/test_images.py).
# Blank: (almost) no information. Apart from at most LIT_MAX pixels that stand out (a random
# crop that kept a digit's corner), the image is one value: BLANK_SHARE of its pixels lie
# within about one grey level of 255 of the median. A constant fill, an all-black crop or
# an image clipped to white is blank; a low-contrast crop of a photograph is not, however
# faint: a sky patch or a smooth gradient spreads over many grey levels, and that texture -
# not the contrast - is what an empty picture lacks. Crops of 8x8 digits that keep 1-4 lit
# pixels keep at most 7 non-zero ones (89% at the background); whole digits light 16+
# pixels, crops shifted by 1-2 pixels 11+; the share bound keeps tiny images (4x4 with 2
# lit) unflagged.
BLANK_LEVEL = 0.004  # within this of the median: at the background value
BLANK_SHARE = 0.85
LIT_DELTA = 0.1     # a pixel stands out when a channel differs this much from its median
LIT_MAX = 4
LIT_MAX_SHARE = 0.1
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
    except (TypeError, ValueError, OverflowError):
        raise VizdebugError(f"{name} must be a number or one number per channel, got "
                            f"{short_repr(value)}") from None
    if name == "std" and np.any(~(arr > 0)):
        raise VizdebugError(f"std must be positive, got {arr.tolist()}")
    if not np.isfinite(arr).all():
        raise VizdebugError(f"{name} must be finite, got {arr.tolist()}")
    if arr.size == 1:
        return np.repeat(arr, c)
    if arr.size != c:
        raise VizdebugError(f"{name} has {arr.size} values but the images have {c} channels")
    return arr


SAMPLE_VALUES = 1 << 18  # decisions about scale read at most this many values


def subsample(x: np.ndarray, limit: int = SAMPLE_VALUES) -> np.ndarray:
    """A strided sample of at most ``limit`` values of ``x`` (all of them when small)."""
    flat = x.reshape(-1)
    return flat if flat.size <= limit else flat[:: -(-flat.size // limit)]


def pooled(image: np.ndarray, max_side: int) -> np.ndarray:
    """Mean-pool a C x H x W image by a whole factor so no side exceeds ~``max_side``.

    NaN/Inf propagate into their pooled pixel, so a single bad value stays visible.
    """
    c, h, w = image.shape
    f = -(-max(h, w) // max_side)  # ceil: the pooled side never exceeds max_side
    if f < 2:
        return image
    fh, fw = min(f, h), min(f, w)  # a 1-pixel strip is pooled along its length only
    hh, ww = (h // fh) * fh, (w // fw) * fw
    x = image[:, :hh, :ww].astype(np.float32, copy=False)
    return x.reshape(c, hh // fh, fh, ww // fw, fw).mean(axis=(2, 4))


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
        raise VizdebugError(
            f"pass mean and std together (the values your Normalize used); got "
            f"mean={short_repr(mean)}, std={short_repr(std)}")
    if m is not None:
        base = _scaling_of(_sample_images(images) * s[None, :, None, None] + m[None, :, None, None],
                           given=True)
        note = f"un-normalised with the given mean/std; {base.note}"
        return Scaling("mean-std", base.lo, base.hi, note, base.absolute, m, s)
    return _scaling_of(_sample_images(images) if images.dtype.kind == "f" else images)


def _sample_images(images: np.ndarray) -> np.ndarray:
    """Up to 64 whole images, spread over the batch: enough to judge the value range."""
    x = images[:: max(1, len(images) // 64)][:64]
    n, c, h, w = x.shape
    step = max(1, int(np.sqrt(h * w * n / (SAMPLE_VALUES / c))))
    return x[:, :, ::step, ::step].astype(np.float64)


def _scaling_of(x: np.ndarray, given: bool = False) -> Scaling:
    c = x.shape[1]
    ones, zeros = np.ones(c), np.zeros(c)
    if x.dtype == np.bool_:
        return Scaling("bool", zeros, ones, "boolean mask: False black, True white", True)
    if x.dtype == np.uint8:
        return Scaling("0-255", zeros, ones * 255, "uint8 values 0-255", True)
    v = subsample(x)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return Scaling("minmax", zeros, ones, "no finite values", False)
    lo, hi = np.percentile(v, [0.1, 99.9])
    shown = f"values {_short(v.min())}..{_short(v.max())}"
    if lo >= -0.05 and hi <= 1.05:
        return Scaling("0-1", zeros, ones, f"{shown}: read as 0-1", True)
    if lo >= -0.5 and 25 < hi <= 260:
        return Scaling("0-255", zeros, ones * 255, f"{shown}: read as 0-255", True)
    if lo >= -1.05 and hi <= 1.05:
        return Scaling("-1-1", -ones, ones, f"{shown}: read as -1..1", True)
    return _minmax(x, given)


def _short(v: float) -> str:
    """A value for a note: 4 significant digits, float noise around 0 shown as 0."""
    return f"{float(np.round(v, 4)) + 0.0:.4g}"


def _minmax(x: np.ndarray, given: bool = False) -> Scaling:
    c = x.shape[1]
    per = np.moveaxis(x, 1, 0).reshape(c, -1)
    per = per[:, :: max(1, per.shape[1] // (SAMPLE_VALUES // c))].astype(np.float64)
    per = np.where(np.isfinite(per), per, np.nan)
    lo = np.nanpercentile(per, 0.5, axis=1)
    hi = np.nanpercentile(per, 99.5, axis=1)
    hi = np.where(hi > lo, hi, lo + 1)
    standardised = bool(np.nanmin(per) < -1e-3)
    what = ("looks standardised" if standardised and not given
            else f"values {_short(np.nanmin(per))}..{_short(np.nanmax(per))}")
    note = f"{what}: each channel stretched over its batch range (0.5th-99.5th percentile)"
    if not given:
        note += "; pass mean=/std= for true colours"
    return Scaling("minmax", lo, hi, note, False)


def to_display(image: np.ndarray, scaling: Scaling) -> np.ndarray:
    """One C x H x W image on the display scale [0, 1] as float32; non-finite stays NaN."""
    wide = np.float64 if image.dtype == np.float64 else np.float32  # no overflow on cast
    with np.errstate(invalid="ignore", over="ignore"):
        x = image.astype(wide)
        if scaling.mean is not None:
            x = x * scaling.std[:, None, None].astype(wide) + scaling.mean[:, None, None].astype(wide)
        c = x.shape[0]
        lo = scaling.lo[:c, None, None].astype(wide)
        hi = scaling.hi[:c, None, None].astype(wide)
        out = (x - lo) / (hi - lo)
        out = np.where(np.isfinite(x), np.clip(np.nan_to_num(out), 0, 1), np.nan)
    return out.astype(np.float32)


def image_flags(raw: np.ndarray, display: np.ndarray, scaling: Scaling) -> list[str]:
    """Flags for one image: ``non-finite``, ``blank``, ``saturated``."""
    flags = []
    if raw.dtype.kind == "f" and not np.isfinite(raw).all():
        flags.append("non-finite")
    finite = display[np.isfinite(display)]
    if finite.size == 0:
        return flags
    if blank(display):
        flags.append("blank")
    elif scaling.absolute and np.mean(finite >= 0.995) > SATURATED_SHARE:
        flags.append("saturated")
    return flags


def blank(display: np.ndarray) -> bool:
    """True when a C x H x W display image holds (almost) no information: apart from at
    most ``LIT_MAX`` pixels (and ``LIT_MAX_SHARE`` of them) that stand out from the
    background, ``BLANK_SHARE`` of its pixels are at one value. An image with non-finite
    values is judged on its finite ones, without standouts.

    >>> img = np.zeros((1, 8, 8)); img[0, 0, :3] = 1.0
    >>> blank(img), blank(np.pad(np.ones((1, 4, 4)), ((0, 0), (2, 2), (2, 2))))
    (True, False)
    >>> sky = np.linspace(0.55, 0.6, 64).reshape(1, 8, 8)  # a faint gradient: not blank
    >>> blank(sky), blank(np.full((1, 8, 8), 0.3))
    (False, True)
    """
    flat = display.reshape(display.shape[0], -1)
    if not np.isfinite(flat).all():
        finite = flat[np.isfinite(flat)]
        return bool(finite.size) and _at_background(finite[None], finite.size)
    sample = flat[:, :: max(1, flat.shape[1] // 1024)]  # the background of a near-empty
    background = np.median(sample, axis=1)[:, None]     # image is the median of any 9+
    if np.count_nonzero((np.abs(sample - background) > LIT_DELTA).any(axis=0)) > LIT_MAX:
        return False  # plenty to see (most images end here, cheaply)
    count = int(np.count_nonzero((np.abs(flat - background) > LIT_DELTA).any(axis=0)))
    if count > (min(LIT_MAX, flat.shape[1] * LIT_MAX_SHARE) if count else 0):
        return False
    return _at_background(flat, flat.shape[1])


def _at_background(flat: np.ndarray, pixels: int) -> bool:
    """``BLANK_SHARE`` of the ``pixels`` of a C x P image within ``BLANK_LEVEL`` of its
    median, in every channel."""
    near = np.abs(flat - np.median(flat, axis=1)[:, None]) <= BLANK_LEVEL
    return bool(np.count_nonzero(near.all(axis=0)) >= BLANK_SHARE * pixels)


def channel_stats(images: np.ndarray) -> list[dict[str, float]]:
    """Raw per-channel statistics of an N x C x H x W batch, as the model receives it."""
    out = []
    for ch in range(images.shape[1]):
        v = images[:, ch]
        bad = int(v.size - np.count_nonzero(np.isfinite(v))) if v.dtype.kind == "f" else 0
        if bad:
            v = v[np.isfinite(v)]
        if v.size == 0:
            out.append({"channel": ch, "min": np.nan, "max": np.nan, "mean": np.nan,
                        "std": np.nan, "non_finite": bad})
            continue
        out.append({"channel": ch, "min": float(v.min()), "max": float(v.max()),
                    "mean": float(v.mean(dtype=np.float64)),
                    "std": float(v.std(dtype=np.float64)), "non_finite": bad})
    return out


def finite_summary(x: np.ndarray, rows: int = 16) -> tuple[float, float, float, float]:
    """``(min, max, mean, std)`` of the finite values of ``x`` (NaN when there are none),
    read ``rows`` items at a time so that no copy of a large batch is ever made.

    >>> finite_summary(np.array([1.0, np.nan, 3.0, np.inf]))
    (1.0, 3.0, 2.0, 1.0)
    """
    x = x.reshape(1, -1) if x.ndim < 2 else x
    lo, hi, total, count = np.inf, -np.inf, 0.0, 0
    for block in _finite_blocks(x, rows):
        lo, hi = min(lo, float(block.min())), max(hi, float(block.max()))
        total += float(block.sum(dtype=np.float64))
        count += block.size
    if not count:
        return (np.nan,) * 4
    mean = total / count
    square = sum(float(np.square(b - mean, dtype=np.float64).sum())
                 for b in _finite_blocks(x, rows))
    return lo, hi, mean, float(np.sqrt(square / count))


def _finite_blocks(x: np.ndarray, rows: int):
    for start in range(0, len(x), rows):
        block = x[start:start + rows]
        block = block[np.isfinite(block)] if block.dtype.kind == "f" else block.reshape(-1)
        if block.size:
            yield block


def abs_p99(images: np.ndarray) -> float:
    """The 99th percentile of |x| over finite values (0 when nothing is finite)."""
    v = np.abs(subsample(images, 1 << 16).astype(np.float64))
    v = v[np.isfinite(v)]
    return float(np.percentile(v, 99)) if v.size else 0.0
