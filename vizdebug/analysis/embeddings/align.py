"""One layer's representation over training, as layouts that follow each point.

Each frame gets its own PCA (cheap, the first picture) and is turned onto the previous
frame's layout by an orthogonal Procrustes fit (rotation or reflection, after centring and
scaling to unit RMS radius), so that a point only moves when its neighbourhood does. The
refined layouts are t-SNE or UMAP fits **initialised from the previous frame's refined
layout** and then Procrustes-aligned the same way.

Why initialise rather than fit each frame afresh and rotate: on four frames of 2,000
clustered points (64-d) whose class centres drift a little per frame, fresh t-SNE fits
aligned by Procrustes moved points by 0.25 RMS radii per frame, fits initialised from the
previous layout (250 iterations, no early exaggeration) by 0.017, at the same
trustworthiness (0.977) and in a quarter of the time of a fresh fit (33.9 s against
143.9 s on the overloaded 2-core machine); the PCA previews moved 0.15
(``benchmarks/bench_embedding_timeline.py``). Procrustes alone cannot undo the arbitrary
arrangement of clusters that a fresh fit picks; an initialised fit keeps it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .project import pca_layout, refined_layout

FOLLOW_ITER = 250  # t-SNE iterations of a frame initialised from the previous one


def normalised(layout: np.ndarray) -> np.ndarray:
    """``layout`` centred and scaled to unit RMS distance from its centre (as float64).

    >>> normalised(np.array([[0.0, 0.0], [2.0, 0.0]])).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    out = np.asarray(layout, dtype=np.float64)
    out = out - out.mean(axis=0)
    radius = float(np.sqrt((out * out).sum(axis=1).mean()))
    return out / radius if radius > 0 else out


def procrustes_onto(moving: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """``moving`` (normalised) rotated or reflected to lie as close as possible to
    ``fixed`` (normalised): the orthogonal Procrustes solution, one matrix for all points.

    >>> a = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, -2.0]])
    >>> turned = a @ np.array([[0.0, 1.0], [-1.0, 0.0]])  # a quarter turn
    >>> np.allclose(procrustes_onto(turned, a), normalised(a))
    True
    """
    return normalised(turn_onto(moving, fixed))


def turn_onto(moving: np.ndarray, fixed: np.ndarray) -> np.ndarray:
    """``moving`` centred and turned like :func:`procrustes_onto`, keeping its own scale."""
    a = np.asarray(moving, dtype=np.float64)
    a = a - a.mean(axis=0)
    u, _, vt = np.linalg.svd(normalised(a).T @ normalised(fixed))
    return a @ (u @ vt)


def aligned_previews(frames: list[np.ndarray]) -> list[np.ndarray]:
    """The PCA layout of every frame, each turned onto the one before (normalised)."""
    out: list[np.ndarray] = []
    for x in frames:
        layout = normalised(pca_layout(x))
        out.append(procrustes_onto(layout, out[-1]) if out else layout)
    return out


def follow_layout(x: np.ndarray, previous: np.ndarray | None, method: str,
                  params: dict[str, Any] | None = None,
                  stage: Callable[[str], None] | None = None) -> np.ndarray:
    """A refined layout of ``x`` that starts from ``previous`` (the last frame's refined
    layout as this function returned it, or ``None`` for the first frame) and is turned
    onto it; centred, in the library's own scale (:func:`in_box` scales for drawing).

    The start keeps the previous layout's scale: t-SNE started from a copy shrunk to
    sklearn's 1e-4 spreads out again and reshuffles each cluster (on 120 drifting points
    0.16 RMS radii of movement against 0.03 from the layout as it was).
    """
    params = dict(params or {})
    if previous is None or method == "pca":
        layout = np.asarray(refined_layout(x, method, params, stage), dtype=np.float64)
        return layout - layout.mean(axis=0) if previous is None else turn_onto(layout, previous)
    settings: dict[str, Any] = {"init": previous.astype(np.float32)}
    if method == "tsne":
        settings.update(max_iter=FOLLOW_ITER, early_exaggeration=1.0)
    layout = refined_layout(x, method, {**settings, **params}, stage)
    return turn_onto(layout, previous)


def in_box(layouts: list[np.ndarray], margin: float = 0.05) -> list[np.ndarray]:
    """Layouts normalised (centred, unit RMS radius), then scaled by one factor into
    [-1, 1] as float32, so that distances compare across frames.

    >>> [v.tolist() for v in in_box([np.array([[-2.0, 0.0], [2.0, 0.0]])])]
    [[[-0.949999988079071, 0.0], [0.949999988079071, 0.0]]]
    """
    shown = [normalised(v) for v in layouts]
    reach = max((float(np.abs(v).max()) for v in shown if v.size), default=0.0)
    scale = (1 - margin) / reach if reach > 0 else 1.0
    return [(v * scale).astype(np.float32) for v in shown]


def effective_rank(x: np.ndarray) -> float:
    """Roy and Vetterli's effective rank: exp of the entropy of the normalised singular
    values of the centred features (1 for points on a line, d for an isotropic cloud,
    0 when every point is the same).

    >>> round(effective_rank(np.eye(4)), 3), effective_rank(np.ones((3, 2)))
    (3.0, 0.0)
    """
    centred = np.asarray(x, dtype=np.float64)
    centred = centred - centred.mean(axis=0)
    s = np.linalg.svd(centred, compute_uv=False)
    total = float(s.sum())
    if not total > 0 or s.max() <= 1e-9 * max(float(np.abs(x).max()), 1e-30):
        return 0.0
    p = s[s > 0] / total
    return float(np.exp(-(p * np.log(p)).sum()))


def spread(x: np.ndarray) -> float:
    """RMS distance of the points from their centre.

    >>> spread(np.array([[0.0, 0.0], [2.0, 0.0]]))
    1.0
    """
    centred = np.asarray(x, dtype=np.float64) - np.mean(x, axis=0)
    return float(np.sqrt((centred * centred).sum(axis=1).mean()))


def layout_trust(x: np.ndarray, layout: np.ndarray, seed: int = 0) -> float | None:
    """Trustworthiness (k=5) of ``layout`` for ``x`` on a fixed sample of at most 2,000
    points; ``None`` below 11 points."""
    from .quality import (
        TRUST_NEIGHBOURS,
        TRUST_SAMPLE,
        sample_positions,
        trustworthiness,
    )

    pick = sample_positions(len(x), TRUST_SAMPLE, seed)
    k = min(TRUST_NEIGHBOURS, (len(pick) - 1) // 2)
    return trustworthiness(x[pick], layout[pick], k) if k >= TRUST_NEIGHBOURS else None
