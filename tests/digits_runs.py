"""Real training runs on scikit-learn's digits, clean or with one injected problem.

Shared by the rule calibration tests, the collector tests and the notebook. Every run
goes through a real ``Dataset``/``DataLoader`` and a plain PyTorch loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Digits(Dataset):
    """8x8 digit images as (1, 8, 8) float tensors, standardised, with int labels."""

    def __init__(self, x: np.ndarray, y: np.ndarray, delay: float = 0.0) -> None:
        self.x = torch.as_tensor(x, dtype=torch.float32).reshape(-1, 1, 8, 8)
        self.y = torch.as_tensor(y, dtype=torch.long)
        self.delay = delay

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.delay:
            time.sleep(self.delay)
        return self.x[i], self.y[i]


def digits_split(seed: int = 0, n_train: int | None = None, normalise: bool = True):
    """Stratified train/val split of digits; pixel statistics from the training part only."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    xtr, xva, ytr, yva = train_test_split(x, y, test_size=0.25, stratify=y, random_state=seed)
    if n_train is not None:
        xtr, ytr = xtr[:n_train], ytr[:n_train]
    if normalise:
        mean, std = xtr.mean(), xtr.std()
        xtr, xva = (xtr - mean) / std, (xva - mean) / std
    return xtr, ytr, xva, yva


class SmallCNN(nn.Module):
    """conv-relu-conv-relu-pool-linear: the model the benchmarks and the notebook use."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 16, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class DeepSigmoid(nn.Module):
    """A deep sigmoid MLP with a small init: gradients vanish towards the input."""

    def __init__(self, depth: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        for _ in range(depth):
            linear = nn.Linear(64, 64)
            nn.init.normal_(linear.weight, std=0.05)
            layers += [linear, nn.Sigmoid()]
        layers.append(nn.Linear(64, 10))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class DeepReLU(nn.Module):
    """Eight ReLU layers initialised with too large a std: the loss and gradients blow up."""

    def __init__(self, depth: int = 8, std: float = 0.35) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        for _ in range(depth):
            linear = nn.Linear(64, 64)
            nn.init.normal_(linear.weight, std=std)
            layers += [linear, nn.ReLU()]
        layers.append(nn.Linear(64, 10))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ForgetsReturn(nn.Module):
    """A block whose forward() has no return statement."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> None:
        self.conv(x)


class NoneModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = ForgetsReturn()
        self.flat = nn.Flatten()
        self.fc = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.flat(self.block(x)))


class BigMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(64, 512), nn.ReLU(),
                                 nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@dataclass
class RunConfig:
    """One run: which model, optimiser, data and bug."""

    model: str = "cnn"
    optimizer: str = "adam"
    lr: float = 1e-3
    epochs: int = 8
    batch_size: int = 64
    n_train: int | None = None
    shuffle_labels: bool = False
    normalise: bool = True
    delay: float = 0.0
    dead_bias: float | None = None
    nan_batch: int | None = None
    seed: int = 0
    model_kwargs: dict[str, Any] = field(default_factory=dict)


MODELS = {"cnn": SmallCNN, "sigmoid": DeepSigmoid, "none": NoneModel, "mlp": BigMLP,
          "deep": DeepReLU}


def build(cfg: RunConfig) -> tuple[nn.Module, DataLoader, DataLoader, torch.optim.Optimizer]:
    """Model, loaders and optimiser for ``cfg``, seeded."""
    torch.manual_seed(cfg.seed)
    xtr, ytr, xva, yva = digits_split(cfg.seed, cfg.n_train, cfg.normalise)
    if cfg.shuffle_labels:
        ytr = np.random.default_rng(cfg.seed).permutation(ytr)
    model = MODELS[cfg.model](**cfg.model_kwargs)
    if cfg.dead_bias is not None:
        first = model.features[0]
        nn.init.constant_(first.bias, cfg.dead_bias)
    gen = torch.Generator().manual_seed(cfg.seed)
    train = DataLoader(Digits(xtr, ytr, cfg.delay), batch_size=cfg.batch_size, shuffle=True,
                       generator=gen)
    val = DataLoader(Digits(xva, yva), batch_size=256)
    opt_cls = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}[cfg.optimizer]
    return model, train, val, opt_cls(model.parameters(), lr=cfg.lr)


def evaluate(model: nn.Module, loader: DataLoader) -> tuple[float, float]:
    model.eval()
    total, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            total += float(nn.functional.cross_entropy(out, y, reduction="sum"))
            correct += int((out.argmax(1) == y).sum())
            n += len(y)
    model.train()
    return total / n, correct / n


def train(cfg: RunConfig, session_factory=None) -> tuple[nn.Module, Any]:
    """Train ``cfg``; with ``session_factory(model, loader)`` the run is watched."""
    model, train_loader, val_loader, opt = build(cfg)
    session = session_factory(model, train_loader) if session_factory else None
    batch_index = 0
    for epoch in range(cfg.epochs):
        for x, y in train_loader:
            if cfg.nan_batch is not None and batch_index == cfg.nan_batch:
                x = x.clone()
                x[0, 0, 0, 0] = float("nan")
            batch_index += 1
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if session is not None:
                session.log(loss=loss)
        if session is not None:
            val_loss, val_acc = evaluate(model, val_loader)
            session.log(val_loss=val_loss, val_acc=val_acc, epoch=epoch)
    return model, session


# A training process that writes a stored run until it is killed (tests of following a
# run from another process, and of reading it after a kill).
_STORE_CHILD = """
import sys, time, torch, vizdebug as vd
import vizdebug.store.writer as w
path, every, w.INTERVAL, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
session = vd.watch(model, store=path, every=every)
start = time.monotonic()
while time.monotonic() - start < 120:  # killed by the test long before
    loss = (model(torch.randn(32, 8)) - 1).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    session.log(loss=loss)
    time.sleep(pause)
"""


def start_store_child(path: Any, *, every: int, interval: float, pause: float) -> Any:
    """Start :data:`_STORE_CHILD` writing to ``path`` (store interval ``interval`` s, a
    ``pause`` s sleep per step); the caller kills it."""
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.Popen(
        [sys.executable, "-c", _STORE_CHILD, str(path), str(every), str(interval), str(pause)],
        cwd=Path(__file__).resolve().parents[1])
