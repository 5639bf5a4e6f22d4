"""Whether class labels carry information about their images: a probe against chance.

Two probes that need no training read a sample of images (pooled to at most
:data:`PROBE_SIDE` pixels a side, each pixel standardised): leave-one-out 1-nearest-
neighbour agreement (the label of an image's nearest other image) and leave-one-out
nearest class mean. Each is compared with what the same probe scores when the labels
are permuted (:data:`PERMUTATIONS` times): labels that belong to their images score far
above that in any image dataset worth training on (digits' 1-NN agrees 98% of the time
against 10% by chance; raw-pixel CIFAR-10, 35% against 10%); labels shuffled apart from
their images score as the permutations do. A third probe, the share of one feature's
variance the classes explain (the best feature), keeps it quiet where a single column
separates the classes among noise columns; a fourth, the best pair of features split at
their medians (:func:`_best_pair`), where the classes are an interaction of two columns
(XOR-like labels) that neither column nor any distance over many noise columns shows.
The probes run in turn and stop at the first that finds the labels informative. The probe
speaks on image inputs and on rows
of a table (``check_dataset``), on enough items for the difference to show
(:data:`PROBE_MIN`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ...findings import Finding

PROBE_SIDE = 16
PROBE_MIN = 200        # items before anything is said
PERMUTATIONS = 100
Z_QUIET = 2.0          # either probe this many null deviations above chance: labels inform
MIN_PER_CLASS = 5
PAIR_COLUMNS = 128     # the pair probe reads at most this many columns (the first ones)
PAIR_PERMUTATIONS = 30
Z_PAIR = 5.0           # the pair probe's null is a maximum over thousands of pairs, skewed:
                       # 7% of shuffled tables reach 2 deviations, the highest of 60 was 4.1;
                       # XOR labels among 126 noise columns score 9 or more (20% flipped, n=200)


def probe_features(images: np.ndarray) -> np.ndarray:
    """N x C x H x W images as rows of at most ``C * PROBE_SIDE**2`` block means.

    >>> probe_features(np.zeros((2, 1, 32, 32))).shape
    (2, 256)
    """
    n, c, h, w = images.shape
    fh, fw = -(-h // PROBE_SIDE), -(-w // PROBE_SIDE)
    h2, w2 = h // fh, w // fw
    cut = images[:, :, :h2 * fh, :w2 * fw].astype(np.float64)
    return cut.reshape(n, c, h2, fh, w2, fw).mean(axis=(3, 5)).reshape(n, -1)


def label_findings(features: np.ndarray, labels: list, indices: list[int] | None = None,
                   noun: str = "images") -> list[Finding]:
    """``labels-shuffled`` when neither probe finds the labels above chance on at least
    :data:`PROBE_MIN` images of at least two classes.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> d = load_digits()
    >>> x = d.images[:400].reshape(400, -1)
    >>> label_findings(x, d.target[:400].tolist())
    []
    >>> shuffled = np.random.default_rng(0).permutation(d.target[:400]).tolist()
    >>> label_findings(x, shuffled)[0].code
    'labels-shuffled'
    """
    y = _class_ids(labels)
    if y is None or len(y) < PROBE_MIN or not np.isfinite(features).all():
        return []
    x = _standardised(features)
    if x.shape[1] == 0:
        return []
    rng = np.random.default_rng(0)
    scores = []
    for probe in (_nearest_neighbour, _nearest_mean, _best_feature, _best_pair):
        scores.append(_z(probe, x, y, rng))
        if scores[-1][0] >= (Z_PAIR if probe is _best_pair else Z_QUIET):
            return []
    return [_finding(scores, y, indices, noun)]


def _class_ids(labels: list) -> np.ndarray | None:
    """Labels as class ids 0..K-1 when they are classes (not regression values) with at
    least two classes of :data:`MIN_PER_CLASS` items."""
    if not labels or any(isinstance(v, float) and not float(v).is_integer() for v in labels):
        return None
    keys = [v if isinstance(v, (int, str, bool, np.integer)) else str(v) for v in labels]
    counts = Counter(keys)
    if sum(1 for c in counts.values() if c >= MIN_PER_CLASS) < 2 or len(counts) > len(keys) // 2:
        return None
    lookup = {k: i for i, k in enumerate(counts)}
    return np.array([lookup[k] for k in keys])


def _standardised(features: np.ndarray) -> np.ndarray:
    std = features.std(axis=0)
    keep = std > 1e-12 * max(1.0, float(np.abs(features).max()))
    return (features[:, keep] - features[:, keep].mean(axis=0)) / std[keep]


def _nearest_neighbour(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each item's nearest other item (the probe's prediction is that item's label)."""
    sq = (x * x).sum(1)
    dist = sq[:, None] + sq[None, :] - 2 * x @ x.T
    np.fill_diagonal(dist, np.inf)
    return dist.argmin(axis=1)


def _nearest_mean(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Leave-one-out nearest class mean: the class each item lies closest to. An item's
    distance to its own class mean without it is its distance to the full mean scaled by
    ``n / (n - 1)`` (``n`` its class's count), so no mean is recomputed per item."""
    k = y.max() + 1
    onehot = np.eye(k)[y]
    counts = onehot.sum(0)
    means = (onehot.T @ x) / np.maximum(counts, 1)[:, None]
    dist = (x * x).sum(1)[:, None] + (means * means).sum(1)[None] - 2 * x @ means.T
    own = counts[y]
    scale = np.where(own > 1, own / np.maximum(own - 1, 1), np.inf) ** 2
    dist[np.arange(len(y)), y] *= scale
    dist[:, counts < 1] = np.inf
    return dist.argmin(axis=1)


def _best_feature(x: np.ndarray, y: np.ndarray) -> float:
    """The largest share of one feature's variance that the classes explain (eta squared,
    over the features one by one): a column that tells the classes apart alone, even
    where distances over all of them are dominated by noise columns."""
    onehot = np.eye(y.max() + 1)[y]
    counts = onehot.sum(0)
    means = (onehot.T @ x) / np.maximum(counts, 1)[:, None]
    between = (counts[:, None] * means ** 2).sum(0) / len(y)  # x is centred, unit variance
    return float(between.max())


def _best_pair(x: np.ndarray, y: np.ndarray) -> float:
    """The largest share of the labels' variance that the four cells of two features
    split at their medians explain, over every pair of the first :data:`PAIR_COLUMNS`
    columns: XOR-like classes (``y = (x0 > 0) ^ (x1 > 0)``) fill opposite cells, which no
    single column, class mean or distance dominated by noise columns shows. Cell counts
    per class come from one product per class (``B.T @ (B * onehot)``), not a loop over
    pairs."""
    high = (x[:, :PAIR_COLUMNS] > np.median(x[:, :PAIR_COLUMNS], axis=0)).astype(np.float64)
    if high.shape[1] < 2:
        return 0.0
    n, both, ones = len(y), high.T @ high, high.sum(0)
    sizes = _cells(both, ones, ones, n)
    explained = np.zeros_like(both)
    onehot = np.eye(y.max() + 1)[y]
    shares = onehot.mean(0)
    for k, share in enumerate(shares):
        row = high.T @ onehot[:, k]
        counts = _cells(high.T @ (high * onehot[:, k:k + 1]), row, row, onehot[:, k].sum())
        for count, size in zip(counts, sizes):
            explained += (count - size * share) ** 2 / np.maximum(size, 1)
    explained /= n * max(1.0 - float((shares ** 2).sum()), 1e-12)
    np.fill_diagonal(explained, 0.0)
    return float(explained.max())


def _cells(both: np.ndarray, first: np.ndarray, second: np.ndarray, total: float
           ) -> tuple[np.ndarray, ...]:
    """The four cells of every pair (high-high, high-low, low-high, low-low) from the
    high-high counts and each column's high count."""
    return (both, first[:, None] - both, second[None, :] - both,
            total - first[:, None] - second[None, :] + both)


def _z(probe, x: np.ndarray, y: np.ndarray, rng: np.random.Generator
       ) -> tuple[float, float, float]:
    """The probe's agreement with the labels, in deviations of its agreement with
    permuted labels; and both agreements."""
    if probe is _nearest_neighbour:
        nn = probe(x, y)
        score = lambda labels: float((labels[nn] == labels).mean())  # noqa: E731
    elif probe in (_best_feature, _best_pair):
        score = lambda labels: probe(x, labels)  # noqa: E731
    else:
        score = lambda labels: float((probe(x, labels) == labels).mean())  # noqa: E731
    rounds = PAIR_PERMUTATIONS if probe is _best_pair else PERMUTATIONS
    null = np.array([score(rng.permutation(y)) for _ in range(rounds)])
    seen = score(y)
    return (seen - null.mean()) / max(null.std(), 1e-3), seen, float(null.mean())


def _finding(scores: list[tuple[float, float, float]], y: np.ndarray,
             indices: list[int] | None, noun: str = "images") -> Finding:
    (z_nn, nn, nn0), (z_mean, mean, mean0), (z_col, col, col0), (z_pair, pair, pair0) = scores
    one = noun[:-1]
    return Finding(
        "labels-shuffled", "warning",
        f"the labels carry no information about their {noun}: over {len(y)} items of "
        f"{y.max() + 1} classes {'an' if one[0] in 'aeiou' else 'a'} {one}'s nearest neighbour "
        f"has its label {nn:.0%} of the time and the nearest class mean {mean:.0%}, as with "
        f"the labels shuffled at random ({nn0:.0%}, {mean0:.0%}), and no single feature nor "
        "pair of features separates the classes better than under shuffled labels; real labels "
        "score far above it",
        evidence={"items": len(y), "classes": int(y.max() + 1), "nn_agreement": nn,
                  "nn_chance": nn0, "z_nn": z_nn, "mean_agreement": mean,
                  "mean_chance": mean0, "z_mean": z_mean, "best_feature_eta2": col,
                  "best_feature_chance": col0, "z_feature": z_col,
                  "best_pair_share": pair, "best_pair_chance": pair0, "z_pair": z_pair,
                  **({"sampled_indices": indices[:16]} if indices else {})},
        hint="the labels were put in a different order from the images: a list of labels "
             "read before the table or file list was shuffled or sorted, inputs permuted "
             "(x[perm]) without their labels, or two separate shuffles; shuffle inputs and "
             "labels with one permutation (or keep them in one table and shuffle its rows)")
