"""What a DataLoader's sampler draws from its dataset, read without touching its epoch.

A loader over an imbalanced dataset need not show the model an imbalanced stream: a
``WeightedRandomSampler`` draws index ``i`` with probability ``weights[i] / sum(weights)``,
and a custom (batch) sampler may fill each batch class by class. The analysis compares
what is drawn with what the dataset holds.
"""

from __future__ import annotations

import copy
import itertools
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import VizdebugError
from .arrays import to_numpy

DRAWN_INDICES = 4096  # indices read from a custom sampler (indices only: no item is loaded)


@dataclass(frozen=True)
class Draws:
    """How a loader draws: by ``weights`` per dataset index (a weighted sampler), or as
    the ``indices`` its sampler gave for one pass (at most :data:`DRAWN_INDICES`)."""

    sampler: str  # the sampler's class name
    weights: np.ndarray | None = None
    indices: list[int] | None = None


def loader_draws(loader: Any) -> Draws | None:
    """How ``loader`` draws its dataset's items, or ``None`` when it draws them as the
    dataset holds them (sequential or uniformly random order, or not a DataLoader).

    Examples
    --------
    >>> import torch
    >>> from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler
    >>> data = TensorDataset(torch.zeros(4, 2), torch.tensor([0, 0, 0, 1]))
    >>> sampler = WeightedRandomSampler([1.0, 1.0, 1.0, 3.0], num_samples=4)
    >>> loader_draws(DataLoader(data, sampler=sampler)).weights.tolist()
    [1.0, 1.0, 1.0, 3.0]
    >>> loader_draws(DataLoader(data, shuffle=True)) is None
    True
    """
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(loader, torch.utils.data.DataLoader):
        return None
    data = torch.utils.data
    batches = loader.batch_sampler
    sampler = batches.sampler if type(batches) is data.BatchSampler else batches
    if sampler is None:
        sampler = loader.sampler
    if isinstance(sampler, data.WeightedRandomSampler):
        weights = _weights(sampler)
        return Draws(type(sampler).__name__, weights=weights) if weights is not None else None
    if type(sampler) in (data.SequentialSampler, data.RandomSampler):
        return None  # every item, in order or shuffled: the dataset's own balance
    indices = _drawn_indices(batches if batches is not None else sampler, loader.dataset)
    return Draws(type(sampler).__name__, indices=indices) if indices else None


def _weights(sampler: Any) -> np.ndarray | None:
    try:
        weights = to_numpy(sampler.weights, "the sampler's weights").astype(np.float64)
    except (VizdebugError, AttributeError, TypeError, ValueError):
        return None
    ok = weights.ndim == 1 and weights.size and np.isfinite(weights).all() and weights.sum() > 0
    return weights if ok else None


def _drawn_indices(sampler: Any, dataset: Any) -> list[int] | None:
    """The first indices ``sampler`` yields (batches flattened), drawn from a deep copy of
    it (the dataset shared, not copied) under :func:`~.sources.preserved_rng`: a sampler
    that keeps state between epochs (a position, index lists shuffled in place, its own
    generator) draws the next epoch as if nothing had looked."""
    from .sources import preserved_rng  # (sources imports batch, which imports layout)

    try:
        clone = copy.deepcopy(sampler, {id(dataset): dataset})
        with preserved_rng(None):
            drawn = list(itertools.islice(_flat(iter(clone)), DRAWN_INDICES))
    except Exception:  # a sampler that cannot be copied or drawn: nothing to say
        return None
    return drawn if all(isinstance(i, (int, np.integer)) for i in drawn) else None


def _flat(batches: Any) -> Any:
    """Indices one by one, whether a sampler yields them singly or in batches."""
    for b in batches:
        b = b.tolist() if hasattr(b, "tolist") else b
        if isinstance(b, (list, tuple)):
            yield from b
        else:
            yield b
