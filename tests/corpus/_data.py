"""Small in-memory datasets for the corpus programs: what ships with scikit-learn, or made
up on the spot. Nothing is downloaded. Every builder is deterministic (fixed seeds), so a
program gives the same run each time."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def standardise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
    """Scale every column by the training part's mean and std (the others follow)."""
    mean, std = train.mean(axis=0), train.std(axis=0) + 1e-8
    return [(a - mean) / std for a in (train, *others)]


def split(x: np.ndarray, y: np.ndarray, test: float = 0.25, seed: int = 0):
    """A shuffled (not stratified) split: (x_train, x_test, y_train, y_test)."""
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(len(x) * (1 - test))
    tr, te = order[:cut], order[cut:]
    return x[tr], x[te], y[tr], y[te]


def digits(n_train: int | None = None):
    """Digits as float32 (N, 1, 8, 8) images in 0-16 and int64 labels, split 75/25."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.images.astype(np.float32)[:, None]
    xtr, xte, ytr, yte = split(x, d.target.astype(np.int64))
    if n_train is not None:
        xtr, ytr = xtr[:n_train], ytr[:n_train]
    return xtr, xte, ytr, yte


def digits_std(n_train: int | None = None):
    """Digits standardised with the training part's pixel mean and std."""
    xtr, xte, ytr, yte = digits(n_train)
    mean, std = xtr.mean(), xtr.std()
    return (xtr - mean) / std, (xte - mean) / std, ytr, yte


def tabular(name: str):
    """A scikit-learn table, split 75/25, unscaled: (xtr, xte, ytr, yte) as float32/int64."""
    from sklearn import datasets

    loader = {"breast_cancer": datasets.load_breast_cancer, "wine": datasets.load_wine,
              "iris": datasets.load_iris}[name]
    d = loader()
    return split(d.data.astype(np.float32), d.target.astype(np.int64))


def tabular_std(name: str):
    xtr, xte, ytr, yte = tabular(name)
    xtr, xte = standardise(xtr, xte)
    return xtr.astype(np.float32), xte.astype(np.float32), ytr, yte


def regression(n: int = 600, features: int = 8, noise: float = 0.1, seed: int = 0):
    """A smooth non-linear regression problem with standardised inputs; y is (N,)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w = rng.normal(size=features)
    y = np.tanh(x @ w / np.sqrt(features)) * 2 + 0.5 * x[:, 0] * x[:, 1]
    y = (y + noise * rng.normal(size=n)).astype(np.float32)
    return split(x, y)


def sequences(n: int = 512, length: int = 12, seed: int = 0):
    """Noisy sine snippets; the label says whether the frequency is high (1) or low (0)."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, size=n)
    freq = np.where(label == 1, 0.9, 0.35) + rng.normal(0, 0.05, size=n)
    phase = rng.uniform(0, 2 * np.pi, size=n)
    t = np.arange(length)
    x = np.sin(freq[:, None] * t[None] + phase[:, None]) + rng.normal(0, 0.2, (n, length))
    return split(x[..., None].astype(np.float32), label.astype(np.int64))


def loader(x, y, batch_size: int = 32, shuffle: bool = True, seed: int = 0) -> DataLoader:
    """A DataLoader over tensors made from arrays, with a seeded shuffle."""
    ds = TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
    g = torch.Generator().manual_seed(seed)
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle, generator=g)

