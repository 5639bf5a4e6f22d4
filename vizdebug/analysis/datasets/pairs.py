"""Whether each image and its spatial target (a mask, a target image) are one pair.

An image's edges lie where its mask changes class: the relation between the two is
measured as an *edge lift*, the image's mean gradient at the target's boundaries over its
mean gradient everywhere (1 = chance). Each image is scored against its own target,
against the other items' targets (the shuffled baseline: what chance reaches in this
data) and against its own target flipped or rotated. A pair is out of step when another
target, or its own target transformed, lines up with the image far better than its own
does: an image and mask list read from an unsorted ``glob()``, or a flip applied to the
image and not to its mask. With no such candidate in sight, a batch whose images have
clear regions and whose own (hard) masks align no better than the shuffled pairings is
named too. Nothing is said where the evidence is thin (few pairs with edges).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...findings import Finding, fmt_indices
from .pair_edges import (
    ImageEdges,
    TargetEdges,
    dihedral,
    image_edges,
    lift_matrix,
    own_lifts,
    pair_arrays,
    region_contrast,
    target_edges,
    usable,
)

MIN_PAIRS = 8         # pairs with edges on both sides before anything is said
STANDS_OUT = 1.6      # a pairing this many times the shuffled median lift ...
Z_OUT = 6.0           # ... and this many robust deviations above it stands out
BETTER = 1.5          # an alternative beats the own target by this factor
MIS_SHARE = 0.25      # of the pairs that show a relation, the share out of step to speak
MIS_MIN = 3
MIS_SHARE_ALL = 0.1   # ... and of all pairs with edges (chance matches stay below it)
AT_CHANCE_SHARE = 0.1  # negative case: at most this share of own pairings stand out,
AT_CHANCE_ABOVE = 0.7  # ... at most this share beat the median shuffled one (chance: half)
REGION_LIFT = 2.5     # ... while the images' own regions (above/below their mean) align
NEGATIVE_MIN = 12


@dataclass(frozen=True)
class PairVerdict:
    """Per-pair outcome of the alignment test (positions within the batch)."""

    aligned: list[int]
    misaligned: list[int]
    explained_by: dict[int, str]  # position -> "hflip", "rot90", ... or "item 17"
    own: np.ndarray
    best: np.ndarray
    base: np.ndarray
    considered: int
    region_lift: float
    lift_share: float  # share of pairs whose own target beats the median shuffled lift
    contrast_share: float  # ... and whose own mask separates the brightness better


def judge_pairs(images: np.ndarray, target: np.ndarray, hard: bool) -> PairVerdict | None:
    """Score every image against every target of the batch and its own target
    transformed; ``None`` when too few pairs have edges on both sides."""
    img, tgt = image_edges(images), target_edges(target, hard)
    ok = usable(img, tgt)
    if ok.sum() < MIN_PAIRS:
        return None
    lifts = lift_matrix(img, tgt)
    own, base, spread = _baseline(lifts, ok)
    alt, why = _alternatives(lifts, img, target, hard, ok)
    stands = (own >= STANDS_OUT * base) & (own - base >= Z_OUT * spread)
    alt_out = (alt >= STANDS_OUT * base) & (alt - base >= Z_OUT * spread)
    mis = ok & alt_out & (alt >= BETTER * np.maximum(own, base))
    aligned = ok & stands & ~mis
    explained = {int(k): why[k] for k in np.flatnonzero(mis)}
    return PairVerdict(np.flatnonzero(aligned).tolist(), np.flatnonzero(mis).tolist(),
                       explained, own, alt, base, int(ok.sum()),
                       _region_lift(images, img, ok), float((own > base)[ok].mean()),
                       _contrast_share(images, target, ok) if hard else 1.0)


def _baseline(lifts: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Own lifts, and the median and robust spread of each image's lifts with the other
    usable targets (the shuffled pairings)."""
    n = len(lifts)
    others = lifts.copy()
    others[np.eye(n, dtype=bool)] = np.nan
    others[:, ~ok] = np.nan
    base = np.nanmedian(others, axis=1)
    mad = np.nanmedian(np.abs(others - base[:, None]), axis=1) * 1.4826
    return np.diag(lifts).copy(), base, np.maximum(mad, 0.05 * base)


def _alternatives(lifts: np.ndarray, img: ImageEdges, target: np.ndarray, hard: bool,
                  ok: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """For each image the best lift of a target that is not its own as it stands: another
    item's target, or its own flipped or rotated (a transform that leaves it unchanged
    is no alternative)."""
    n = len(lifts)
    others = lifts.copy()
    others[np.eye(n, dtype=bool)] = -np.inf
    others[:, ~ok] = -np.inf
    best, why = others.max(axis=1), [f"item {j}" for j in others.argmax(axis=1)]
    for name, moved in dihedral(target):
        lift = own_lifts(img, target_edges(moved, hard))
        lift[np.all((moved == target).reshape(n, -1), axis=1)] = -np.inf
        better = lift > best
        best = np.where(better, lift, best)
        why = [name if b else w for b, w in zip(better, why)]
    return best, why


def _region_lift(images: np.ndarray, img: ImageEdges, ok: np.ndarray) -> float:
    """How well the images' own bright/dark regions align with their edges (median edge
    lift of each image thresholded at its mean): high when the images have clear regions,
    near 1 for texture or noise, so that a negative verdict has something to stand on.
    The threshold is midway between the dark and bright ends (2nd and 98th percentiles),
    so that background noise does not draw regions of its own."""
    grey = images.mean(axis=1)
    lo, hi = np.percentile(grey.reshape(len(grey), -1), [2, 98], axis=1)
    regions = (grey > ((lo + hi) / 2)[:, None, None]).astype(np.int64)[:, None]
    tgt: TargetEdges = target_edges(regions, True)
    keep = usable(img, tgt) & ok
    return float(np.median(own_lifts(img, tgt)[keep])) if keep.any() else 0.0


def _contrast_share(images: np.ndarray, target: np.ndarray, ok: np.ndarray) -> float:
    """The share of usable pairs whose own mask separates the image's brightness better
    than the median other mask does (about half when the pairing is chance)."""
    contrast = region_contrast(images, target)
    own = np.diag(contrast).copy()
    contrast[np.eye(len(contrast), dtype=bool)] = np.nan
    contrast[:, ~ok] = np.nan
    return float((own > np.nanmedian(contrast, axis=1))[ok].mean())


def pair_findings(images: np.ndarray, target: object, indices: list[int]
                  ) -> tuple[list[Finding], list[int]]:
    """``pairs-misaligned`` for a batch of images (N x C x H x W) and their targets, and
    the positions of the pairs named (for the batch view's flags).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> masks = np.zeros((16, 16, 16), np.int64)
    >>> for k in range(16):
    ...     masks[k, rng.integers(0, 8):, rng.integers(0, 8):] = 1
    >>> images = (masks[:, None] + rng.normal(0, 0.1, (16, 1, 16, 16))).astype(np.float32)
    >>> pair_findings(images, masks, list(range(16)))[0]
    []
    >>> pair_findings(images, masks[::-1].copy(), list(range(16)))[0][0].code
    'pairs-misaligned'
    """
    arrays = pair_arrays(images, target)
    if arrays is None:
        return [], []
    verdict = judge_pairs(*arrays)
    if verdict is None:
        return [], []
    found = _misaligned_finding(verdict, indices)
    if found:
        return found, verdict.misaligned
    if arrays[2]:
        return _at_chance_finding(verdict, indices), []
    return [], []


def _misaligned_finding(v: PairVerdict, indices: list[int]) -> list[Finding]:
    shown = len(v.aligned) + len(v.misaligned)
    need = max(MIS_MIN, MIS_SHARE * shown, MIS_SHARE_ALL * v.considered)
    if len(v.misaligned) < need:
        return []
    hit = [indices[k] for k in v.misaligned]
    moved = [k for k in v.misaligned if not v.explained_by[k].startswith("item")]
    examples = "; ".join(_example(v, k, indices) for k in v.misaligned[:3])
    geometric = len(moved) * 2 >= len(v.misaligned)
    return [Finding(
        "pairs-misaligned", "warning",
        f"{len(hit)} of {v.considered} image/target pairs are out of step: "
        + ("their targets line up with the image only once flipped or rotated"
           if geometric else "their images line up with another item's target, not their own")
        + f" ({examples}; {len(v.aligned)} pairs align as they stand)",
        where=fmt_indices(hit),
        evidence={"indices": hit[:256], "count": len(hit), "of": v.considered,
                  "aligned": len(v.aligned),
                  "explained_by": {str(indices[k]): _named(v.explained_by[k], indices)
                                   for k in v.misaligned[:64]},
                  "own_lift": [round(float(v.own[k]), 3) for k in v.misaligned[:64]],
                  "best_lift": [round(float(v.best[k]), 3) for k in v.misaligned[:64]]},
        hint=(_GEOMETRIC_HINT if geometric else _ORDER_HINT))]


_GEOMETRIC_HINT = (
    "a random flip/rotation/crop applied to the image and not to its mask, or drawn "
    "separately for each (two calls, two random draws): transform both in one call "
    "(albumentations' transform(image=..., mask=...), torchvision.transforms.v2 with "
    "tv_tensors.Mask, or draw the parameters once and apply them to both)")
_ORDER_HINT = (
    "the image and mask lists are not in the same order: glob()/os.listdir() return files "
    "in an arbitrary order; sort both lists (sorted(glob(...))) or build the mask path from "
    "the image's file name; if the inputs were shuffled, shuffle the targets with the same "
    "permutation")


def _named(why: str, indices: list[int]) -> str:
    return f"item {indices[int(why.split()[1])]}" if why.startswith("item") else why


def _example(v: PairVerdict, k: int, indices: list[int]) -> str:
    return (f"#{indices[k]}: own lift {v.own[k]:.2f}, {_named(v.explained_by[k], indices)} "
            f"{v.best[k]:.2f}, shuffled {v.base[k]:.2f}")


def _at_chance_finding(v: PairVerdict, indices: list[int]) -> list[Finding]:
    """No alternative in sight (the true masks are elsewhere in the dataset), but the own
    masks align no better than other images' masks while the images have clear regions."""
    if v.considered < NEGATIVE_MIN or v.region_lift < REGION_LIFT:
        return []
    if len(v.aligned) > AT_CHANCE_SHARE * v.considered:
        return []
    if max(v.lift_share, v.contrast_share) > AT_CHANCE_ABOVE:
        return []
    return [Finding(
        "pairs-misaligned", "warning",
        f"masks do not follow their images: in {v.considered} pairs the image's edges lie "
        f"on its own mask's boundaries no more than on other images' masks (median edge "
        f"lift {np.median(v.own):.2f} own vs {np.median(v.base):.2f} shuffled; "
        f"{len(v.aligned)} pairs align, {v.lift_share:.0%} beat the shuffled median, as "
        f"chance would), though the images have clear regions (lift {v.region_lift:.1f})",
        where=fmt_indices(indices[:v.considered]),
        evidence={"indices": indices[:256], "count": v.considered, "of": v.considered,
                  "aligned": len(v.aligned), "own_lift": float(np.median(v.own)),
                  "shuffled_lift": float(np.median(v.base)),
                  "region_lift": v.region_lift, "lift_share": v.lift_share,
                  "contrast_share": v.contrast_share},
        hint=_ORDER_HINT)]
