"""How good a picture of a representation is, and what its geometry says about the labels.

- :func:`trustworthiness`: the same figure as ``sklearn.manifold.trustworthiness`` (how
  many of a point's neighbours in the picture are strangers in the features).
- :func:`knn_accuracy`: how often a point's ``k`` nearest neighbours vote for its own label,
  in the features (how separable the classes are) and in the picture (what it distorts).
- :func:`label_noise_suspects` and :func:`overlapping_classes` turn the neighbour votes into
  the ``label-noise-suspects`` and ``class-overlap`` findings (cleanlab's kNN route).

Big sets are analysed on a fixed random sample (see ``TRUST_SAMPLE`` and
``NEIGHBOUR_SAMPLE``); every result says how many points it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .pca import conditioned

K_NEIGHBOURS = 10
TRUST_NEIGHBOURS = 5  # sklearn's default
TRUST_SAMPLE = 2000  # the rank matrix is m x m
NEIGHBOUR_SAMPLE = 10000  # brute-force kNN over the features is m^2 x d
SUSPECT_AGREEMENT = 0.8  # at least 8 of 10 neighbours carry one other label
OVERLAP_SHARE = 0.25  # a pair whose neighbour votes cross this often is not separated


def sample_positions(n: int, limit: int, seed: int = 0) -> np.ndarray:
    """All of ``range(n)``, or a sorted fixed random sample of ``limit`` of them.

    >>> sample_positions(5, 10).tolist(), len(sample_positions(100, 10))
    ([0, 1, 2, 3, 4], 10)
    """
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))


def neighbour_index(x: np.ndarray, k: int = K_NEIGHBOURS) -> np.ndarray:
    """The ``k`` nearest other points of every row of ``x`` (``n x k`` positions, nearest
    first; fewer columns when there are fewer other points).

    >>> neighbour_index(np.array([[0.0], [1.0], [5.0]]), k=1).ravel().tolist()
    [1, 0, 1]
    """
    from sklearn.neighbors import NearestNeighbors

    k = min(k, len(x) - 1)
    if k < 1:
        return np.zeros((len(x), 0), dtype=np.intp)
    # neighbours do not change with scale; squared distances of values near 1e300 overflow
    return NearestNeighbors(n_neighbors=k).fit(conditioned(x)).kneighbors(return_distance=False)


def trustworthiness(x: np.ndarray, layout: np.ndarray, k: int = TRUST_NEIGHBOURS) -> float:
    """sklearn's trustworthiness of ``layout`` for ``x`` (1 is perfect; needs k < n / 2).

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(50, 4))
    >>> round(trustworthiness(x, x[:, :2]), 3)
    0.735
    """
    n = len(x)
    if not 1 <= k < n / 2:
        raise ValueError(f"trustworthiness needs 1 <= k < n / 2; got k={k} for n={n}")
    x = conditioned(x)  # ranks do not change with scale; x @ x.T of values near 1e300 does
    sq = (x * x).sum(axis=1)
    dist = np.maximum(sq[:, None] + sq[None, :] - 2 * (x @ x.T), 0)
    np.fill_diagonal(dist, np.inf)
    order = np.argsort(dist, axis=1)
    rank = np.empty((n, n), dtype=np.int64)
    rank[np.arange(n)[:, None], order] = np.arange(1, n + 1)
    near = neighbour_index(layout, k)
    excess = rank[np.arange(n)[:, None], near] - k
    total = float(excess[excess > 0].sum())
    return 1.0 - total * 2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0))


def label_codes(labels: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """Labels as codes ``0..c-1`` and the label of each code.

    >>> codes, names = label_codes(np.array(["b", "a", "b"]))
    >>> codes.tolist(), names
    ([1, 0, 1], ['a', 'b'])
    """
    try:
        names, codes = np.unique(labels, return_inverse=True)
    except TypeError:  # mixed types: compare as text
        names, codes = np.unique(labels.astype(str), return_inverse=True)
    return codes.reshape(-1).astype(np.intp), names.tolist()


def neighbour_votes(neighbours: np.ndarray, codes: np.ndarray, n_classes: int) -> np.ndarray:
    """``m x c`` counts: how many of each point's neighbours carry each label."""
    votes = np.zeros((len(neighbours), n_classes), dtype=np.int64)
    rows = np.repeat(np.arange(len(neighbours)), neighbours.shape[1])
    np.add.at(votes, (rows, codes[neighbours].ravel()), 1)
    return votes


def knn_accuracy(neighbours: np.ndarray, codes: np.ndarray) -> float:
    """Share of points whose neighbours' majority label is their own (ties: the smaller
    code wins), the leave-one-out kNN classifier's accuracy.

    >>> knn_accuracy(np.array([[1], [0], [1]]), np.array([0, 0, 1]))
    0.6666666666666666
    """
    if neighbours.shape[1] == 0:
        return float("nan")
    votes = neighbour_votes(neighbours, codes, int(codes.max()) + 1)
    return float(np.mean(votes.argmax(axis=1) == codes))


@dataclass(frozen=True)
class Suspects:
    """Points whose neighbours overwhelmingly carry one other label."""

    positions: np.ndarray  # into the analysed rows
    suspected: np.ndarray  # the code most neighbours carry
    agreement: np.ndarray  # share of neighbours carrying it


def label_noise_suspects(votes: np.ndarray, codes: np.ndarray,
                         agreement: float = SUSPECT_AGREEMENT) -> Suspects:
    """Points where at least ``agreement`` of the neighbours carry one label that is not
    theirs (a flipped label sits inside another class's cluster).

    >>> votes = np.array([[0, 10], [9, 1], [1, 9]])
    >>> label_noise_suspects(votes, np.array([0, 0, 1])).positions.tolist()
    [0]
    """
    total = votes.sum(axis=1)
    other = votes.copy()
    other[np.arange(len(codes)), codes] = -1
    best = other.argmax(axis=1)
    share = other[np.arange(len(codes)), best] / np.maximum(total, 1)
    hit = np.flatnonzero((share >= agreement) & (total > 0))
    hit = hit[np.argsort(-share[hit], kind="stable")]
    return Suspects(hit, best[hit], share[hit])


def overlapping_classes(votes: np.ndarray, codes: np.ndarray,
                        share: float = OVERLAP_SHARE) -> list[tuple[int, int, float]]:
    """Pairs of classes whose points' neighbour votes go to each other at least ``share``
    of the time (votes between the two only): ``(a, b, crossing share)``, worst first.

    >>> votes = np.array([[5, 5, 0], [5, 5, 0], [0, 0, 10]])
    >>> overlapping_classes(votes, np.array([0, 1, 2]))
    [(0, 1, 0.5)]
    """
    c = votes.shape[1]
    mix = np.zeros((c, c))
    np.add.at(mix, codes, votes)  # mix[a, b]: votes for b from points labelled a
    pairs = []
    for a in range(c):
        for b in range(a + 1, c):
            within = mix[a, a] + mix[b, b] + mix[a, b] + mix[b, a]
            cross = (mix[a, b] + mix[b, a]) / within if within else 0.0
            if cross >= share and min(mix[a].sum(), mix[b].sum()) > 0:
                pairs.append((a, b, round(float(cross), 4)))
    return sorted(pairs, key=lambda p: -p[2])
