"""Edge maps of images and boundary maps of their targets, and the edge lift between them.

Pure numpy on N x C x H x W images and N x K x H x W targets (class ids, one-hot or soft
maps, target images). Both sides are pooled alike to at most :data:`SIDE` pixels, so the
geometry of a pair is kept and a batch of 224 px images costs a few milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ...data.arrays import to_numpy
from ...errors import VizdebugError

SIDE = 64            # pairs are compared on a grid of at most this many pixels a side
MIN_BOUNDARY = 6     # a target with fewer boundary pixels says nothing about edges
MAX_TARGET_CHANNELS = 64
MAX_HARD_VALUES = 256  # more distinct values than this: a soft map, not classes
STRONG = 0.5          # a soft map's boundary: changes of at least this share of its top ones


@dataclass(frozen=True)
class ImageEdges:
    """Gradient magnitude across each vertical (``gx``) and horizontal (``gy``) pixel
    border, softened along the border's normal so that a boundary one pixel off still
    counts, and each image's mean gradient."""

    gx: np.ndarray  # N x H x (W-1)
    gy: np.ndarray  # N x (H-1) x W
    mean: np.ndarray  # N


@dataclass(frozen=True)
class TargetEdges:
    """How much each target changes across the same borders (1 where a class changes)."""

    bx: np.ndarray
    by: np.ndarray

    @property
    def amount(self) -> np.ndarray:
        n = len(self.bx)
        return self.bx.reshape(n, -1).sum(1) + self.by.reshape(n, -1).sum(1)


def pair_arrays(images: np.ndarray, target: object
                ) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """Images and their spatial target pooled alike, and whether the target is hard
    (class ids, one-hot, 0/1): ``None`` when the target is not one map per image of the
    images' size (class labels, boxes, vectors, another resolution).

    >>> imgs, tgt, hard = pair_arrays(np.zeros((2, 3, 8, 8)), np.zeros((2, 8, 8), int))
    >>> tgt.shape, hard
    ((2, 1, 8, 8), True)
    """
    if target is None or images.ndim != 4 or not np.isfinite(images).all():
        return None
    try:
        arr = to_numpy(target, "targets")
    except (VizdebugError, ValueError, TypeError):
        return None
    arr = arr[:, None] if arr.ndim == 3 else arr
    n, _, h, w = images.shape
    if arr.ndim != 4 or arr.shape[0] != n or arr.shape[2:] != (h, w) or min(h, w) < 4:
        return None
    if arr.shape[1] > MAX_TARGET_CHANNELS or arr.dtype.kind not in "biuf":
        return None
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        return None
    hard = _is_hard(arr)
    factor = -(-max(h, w) // SIDE)
    pooled = _pool(images, factor, True).astype(np.float64, copy=False)
    return pooled, _pool(arr, factor, not hard), hard


def _is_hard(arr: np.ndarray) -> bool:
    if arr.dtype.kind in "biu":
        return True
    sample = arr[:, :, ::4, ::4]
    return bool(np.all(sample == np.round(sample))) and np.unique(sample).size <= MAX_HARD_VALUES


def _pool(a: np.ndarray, factor: int, average: bool) -> np.ndarray:
    """Block means (images, soft maps) or each block's first pixel (class ids) of
    ``factor`` x ``factor`` blocks."""
    if factor == 1:
        return a
    n, c, h, w = a.shape
    h2, w2 = h // factor, w // factor
    a = a[:, :, :h2 * factor, :w2 * factor]
    if not average:
        return a[:, :, ::factor, ::factor]
    return a.reshape(n, c, h2, factor, w2, factor).mean(axis=(3, 5), dtype=np.float64)


def image_edges(images: np.ndarray) -> ImageEdges:
    """Edge maps of N x C x H x W float images (channels summed)."""
    gx = np.abs(np.diff(images, axis=3)).sum(axis=1)
    gy = np.abs(np.diff(images, axis=2)).sum(axis=1)
    total = gx.reshape(len(gx), -1).sum(1) + gy.reshape(len(gy), -1).sum(1)
    mean = total / (gx[0].size + gy[0].size)
    return ImageEdges(_soften(gx, 2), _soften(gy, 1), mean)


def _soften(g: np.ndarray, axis: int) -> np.ndarray:
    """A [1, 2, 1] / 4 smoothing along ``axis`` (edge-padded)."""
    pad = [(0, 0)] * g.ndim
    pad[axis] = (1, 1)
    p = np.pad(g, pad, mode="edge")
    size = g.shape[axis]
    take = lambda s: np.take(p, np.arange(s, s + size), axis=axis)  # noqa: E731
    return (take(0) + 2 * take(1) + take(2)) / 4


def target_edges(target: np.ndarray, hard: bool) -> TargetEdges:
    """Where N x K x H x W targets change: 1 across a class boundary (any channel) for
    hard targets, the summed absolute change for soft maps."""
    if hard:
        bx = (np.diff(target, axis=3) != 0).any(axis=1).astype(np.float64)
        by = (np.diff(target, axis=2) != 0).any(axis=1).astype(np.float64)
    else:  # the strong changes of a soft map or target image: its own edges, not its noise
        t = target.astype(np.float64)
        bx = _strong(np.abs(np.diff(t, axis=3)).sum(axis=1))
        by = _strong(np.abs(np.diff(t, axis=2)).sum(axis=1))
    return TargetEdges(bx, by)


def _strong(change: np.ndarray) -> np.ndarray:
    """1 where a soft map changes by at least half its 99th-percentile change."""
    n = len(change)
    top = np.percentile(change.reshape(n, -1), 99, axis=1).reshape(n, 1, 1)
    return ((change >= STRONG * top) & (top > 0)).astype(np.float64)


def usable(img: ImageEdges, tgt: TargetEdges) -> np.ndarray:
    """Pairs with edges on both sides: an image that is not flat, a target with enough
    boundary (a mask that is all background says nothing)."""
    return (img.mean > 0) & (tgt.amount >= MIN_BOUNDARY)


def lift_matrix(img: ImageEdges, tgt: TargetEdges) -> np.ndarray:
    """``L[i, j]``: image i's mean gradient on target j's boundaries over its mean
    gradient (1: the boundaries fall on the image's edges no more than anywhere)."""
    n = len(img.gx)
    num = img.gx.reshape(n, -1) @ tgt.bx.reshape(n, -1).T
    num += img.gy.reshape(n, -1) @ tgt.by.reshape(n, -1).T
    return num / np.maximum(tgt.amount, 1e-300)[None, :] / np.maximum(img.mean, 1e-300)[:, None]


def own_lifts(img: ImageEdges, tgt: TargetEdges) -> np.ndarray:
    """The diagonal of :func:`lift_matrix` without the rest."""
    n = len(img.gx)
    num = (img.gx * tgt.bx).reshape(n, -1).sum(1) + (img.gy * tgt.by).reshape(n, -1).sum(1)
    return num / np.maximum(tgt.amount, 1e-300) / np.maximum(img.mean, 1e-300)


def dihedral(target: np.ndarray) -> Iterator[tuple[str, np.ndarray]]:
    """The target flipped and rotated (what a geometric augmentation applied to one side
    only leaves): flips and the half turn, and for square maps the quarter turns and
    transposes."""
    yield "horizontal flip", target[..., ::-1]
    yield "vertical flip", target[..., ::-1, :]
    yield "half turn", target[..., ::-1, ::-1]
    if target.shape[-1] == target.shape[-2]:
        t = np.swapaxes(target, -1, -2)
        yield "transpose", t
        yield "quarter turn", t[..., ::-1, :]
        yield "three-quarter turn", t[..., ::-1]
        yield "anti-transpose", t[..., ::-1, ::-1]


def region_contrast(images: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``C[i, j]``: how far image i's mean brightness inside target j's foreground (what is
    not its most common class) lies from its mean outside, in image i's standard
    deviations. A loose mask (a box around the object) that misses the image's edges
    still holds a different brightness from the rest of the image; another image's mask
    does not."""
    n = len(images)
    grey = images.mean(axis=1).reshape(n, -1)
    labels = target[:, 0] if target.shape[1] == 1 else target.argmax(axis=1)
    flat = labels.reshape(n, -1)
    common = np.array([np.bincount(np.unique(r, return_inverse=True)[1]).argmax() for r in flat])
    fg = np.stack([np.unique(r, return_inverse=True)[1] != c for r, c in zip(flat, common)])
    fg = fg.astype(np.float64)
    size, count = flat.shape[1], fg.sum(1)
    inside = grey @ fg.T / np.maximum(count, 1)[None]
    outside = (grey.sum(1)[:, None] - grey @ fg.T) / np.maximum(size - count, 1)[None]
    std = grey.std(axis=1)
    return np.abs(inside - outside) / np.maximum(std, 1e-300)[:, None]
