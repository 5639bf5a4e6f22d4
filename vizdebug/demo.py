"""The demo: a small CNN trained on scikit-learn's digits with vizdebug attached.

``python -m vizdebug demo`` runs it and writes one standalone HTML report. The data goes
through a real ``Dataset``/``DataLoader`` with a real augmentation step, so what vizdebug
shows is what a model in a notebook would receive.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

PENULTIMATE = "7"  # make_model()'s ReLU after the 64-unit Linear
DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def digits_arrays(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits as float32 images (N x 1 x 8 x 8, values 0-16) split 80/20, stratified."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = d.images.astype(np.float32)[:, None]
    return tuple(train_test_split(x, d.target, test_size=0.2, random_state=seed,
                                  stratify=d.target))  # type: ignore[return-value]


class RandomShift:
    """Shift an image by up to ``max_shift`` pixels, padding with the background value.

    ``max_shift=1`` is a sane augmentation for 8x8 digits; ``max_shift=8`` pushes most of
    the digit out of the frame (the bug that show_batch makes visible).
    """

    def __init__(self, max_shift: int = 1, seed: int = 0) -> None:
        self.max_shift = max_shift
        self.rng = np.random.default_rng(seed)

    def __call__(self, img: np.ndarray) -> np.ndarray:
        dy, dx = self.rng.integers(-self.max_shift, self.max_shift + 1, size=2)
        out = np.zeros_like(img)
        h, w = img.shape[-2:]
        ys, yd = slice(max(0, -dy), min(h, h - dy)), slice(max(0, dy), min(h, h + dy))
        xs, xd = slice(max(0, -dx), min(w, w - dx)), slice(max(0, dx), min(w, w + dx))
        out[..., yd, xd] = img[..., ys, xs]
        return out


class DigitsDataset:
    """A map-style torch Dataset over digit images: augment, then standardise."""

    MEAN, STD = 4.88, 6.02  # of the digits' pixel values (0-16)

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform=None,
                 normalize: bool = True) -> None:
        self.images, self.labels = images, labels
        self.transform, self.normalize = transform, normalize

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        import torch

        img = self.images[i]
        if self.transform is not None:
            img = self.transform(img)
        if self.normalize:
            img = (img - self.MEAN) / self.STD
        return torch.from_numpy(np.ascontiguousarray(img, dtype=np.float32)), int(self.labels[i])


def make_model(seed: int = 0):
    """A small CNN for 8x8 digits."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10),
    )


def make_loaders(batch_size: int = 64, max_shift: int = 1, seed: int = 0):
    """Train/validation DataLoaders over digits; ``max_shift`` sets the augmentation."""
    import torch
    from torch.utils.data import DataLoader

    xtr, xva, ytr, yva = digits_arrays(seed)
    train = DigitsDataset(xtr, ytr, transform=RandomShift(max_shift, seed))
    val = DigitsDataset(xva, yva)
    g = torch.Generator().manual_seed(seed)
    return (DataLoader(train, batch_size=batch_size, shuffle=True, generator=g),
            DataLoader(val, batch_size=256))


def evaluate(model, loader) -> tuple[float, float]:
    """(mean loss, accuracy) of ``model`` over ``loader``."""
    import torch
    from torch.nn import functional as F

    model.eval()
    total, correct, loss = 0, 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += int((out.argmax(1) == y).sum())
            total += len(y)
    model.train()
    return loss / total, correct / total


def train(model, train_loader, val_loader, *, epochs: int = 5, lr: float = 1e-3,
          log: Callable[..., Any] | None = None) -> list[dict[str, float]]:
    """A plain PyTorch loop; ``log`` (e.g. ``session.log``) receives every metric."""
    import torch
    from torch.nn import functional as F

    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for epoch in range(epochs):
        for x, y in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if log is not None:
                log(loss=loss.detach())
        val_loss, val_acc = evaluate(model, val_loader)
        history.append({"epoch": epoch, "val_loss": val_loss, "val_acc": val_acc})
        if log is not None:
            log(val_loss=val_loss, val_acc=val_acc)
    return history


def _batch_step(loader, title: str, echo: Callable[[str], None]):
    """show_batch on one loader of the demo, titled for the report."""
    import vizdebug as vd

    view = vd.show_batch(loader, classes=DIGIT_NAMES, mean=DigitsDataset.MEAN,
                         std=DigitsDataset.STD)
    view.title = title
    echo(f"   {view!r}")
    return view


def run_demo(out: str | Path = "vizdebug-demo-report.html", *, epochs: int = 5,
             echo: Callable[[str], None] = print) -> Path:
    """Run the whole demo and write the report; returns its path."""
    import vizdebug as vd

    from ._env import require_torch

    require_torch("The demo (python -m vizdebug demo)")
    t0 = time.perf_counter()
    train_loader, val_loader = make_loaders()
    parts: list[Any] = []

    echo("1. The training batch as the model receives it (show_batch):")
    parts.append(_batch_step(train_loader, "Training batch (augmentation: shift by up to 1 "
                                           "pixel)", echo))
    echo("2. The same pipeline with a too-strong augmentation (shift by up to 8 pixels):")
    parts.append(_batch_step(make_loaders(max_shift=8)[0], "Training batch with a too-strong "
                             "augmentation (shift by up to 8 pixels)", echo))

    echo("3. check_dataset on the training set:")
    data_findings = vd.check_dataset(train_loader)
    echo("   " + (repr(data_findings).replace("\n", "\n   ")))
    parts.append(data_findings)

    echo(f"4. Training a small CNN for {epochs} epochs, watched (vd.watch + dashboard):")
    store = Path(out).with_suffix(".run.sqlite")
    parts.extend(training_step(train_loader, val_loader, epochs, echo, store=store))

    echo("5. Drift between training and validation features (compare_distributions):")
    parts.extend(drift_step(echo))

    path = vd.report(parts, out, title="vizdebug demo: a small CNN on digits")
    echo(f"Report written to {Path(path).resolve()} ({time.perf_counter() - t0:.1f} s)")
    return path


# ---- drift step (compare_distributions): train vs validation features ----------------

def image_features(images: np.ndarray) -> dict[str, np.ndarray]:
    """Per-image summaries a drift check can read: brightness, ink, centroid, extent."""
    x = np.asarray(images, dtype=np.float64).reshape(len(images), 8, 8)
    ink = x > 4
    total = np.maximum(x.sum(axis=(1, 2)), 1e-9)
    rows, cols = np.arange(8)[None, :, None], np.arange(8)[None, None, :]
    return {
        "brightness": x.mean(axis=(1, 2)),
        "ink_fraction": ink.mean(axis=(1, 2)),
        "centroid_row": (x * rows).sum(axis=(1, 2)) / total,
        "centroid_col": (x * cols).sum(axis=(1, 2)) / total,
        "ink_rows": ink.any(axis=2).sum(axis=1).astype(np.float64),
        "ink_cols": ink.any(axis=1).sum(axis=1).astype(np.float64),
    }


def loader_images(loader) -> np.ndarray:
    """One pass over a DataLoader of DigitsDataset, de-standardised back to 0-16."""
    return np.concatenate([x.numpy() for x, _ in loader]) * DigitsDataset.STD + DigitsDataset.MEAN


def drift_step(echo: Callable[[str], None]) -> list[Any]:
    """Train vs validation features: raw (no drift expected), then as a too-strong augmentation delivers them."""
    import vizdebug as vd

    xtr, xva, _, _ = digits_arrays()
    clean = vd.compare_distributions(image_features(xtr), image_features(xva))
    clean.title = "Drift: training vs validation image features (raw)"
    echo(f"   raw train vs validation: {clean!r}")
    bad_loader, _ = make_loaders(max_shift=8)
    shifted = vd.compare_distributions(image_features(loader_images(bad_loader)), image_features(xva))
    shifted.title = "Drift: training images after a too-strong augmentation vs validation"
    echo(f"   augmented (shift up to 8) train vs validation: {shifted!r}")
    return [clean, shifted]  # each view carries its own findings


# ---- training step (vd.watch): the run's dashboard and its diagnosis ---------------------

def training_step(train_loader, val_loader, epochs: int, echo: Callable[[str], None], *,
                  store: str | Path | None = None) -> list[Any]:
    """Train the CNN with ``vd.watch`` attached (writing the run to ``store`` when given),
    its penultimate layer tracked on the validation images; the run's static dashboard,
    its findings and the tracked embeddings go into the report. With a store, the
    report is drawn from the file (``vd.open_run``), as it would be from another kernel."""
    import vizdebug as vd

    model = make_model()
    with vd.watch(model, loader=train_loader, store=store) as session:
        # the penultimate layer (the 64 features the classifier reads: module "7") on the
        # validation images, once per epoch; the report shows how the classes pull apart
        val = val_loader.dataset
        session.track_embeddings(PENULTIMATE, val, images=val.images)
        history = train(model, train_loader, val_loader, epochs=epochs, log=session.log)
    last = history[-1]
    echo(f"   validation accuracy {last['val_acc']:.3f}, loss {last['val_loss']:.3f}")
    source: Any = session
    if store is not None:
        source = vd.open_run(store)
        echo(f"   run stored in {Path(store).resolve()} (read it with vd.open_run, or "
             f"`python -m vizdebug report {Path(store).name}`)")
    findings = source.findings()
    echo("   " + repr(findings).replace("\n", "\n   "))
    source.title = "Training dashboard: a small CNN on digits"
    return [source]  # the run's section carries its findings
