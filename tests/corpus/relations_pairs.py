"""Faults that are relations: inputs and targets out of step (image and mask lists from an
unsorted glob, an augmentation applied to the image and not its mask, labels shuffled
apart from their inputs). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix.

The relation vizdebug measures is between each input and its own target, against the
other pairings of the same data: an image's edges lie on its own mask's boundaries far
more than on other images' masks (``pairs-misaligned`` names the pairs whose edges follow
another item's mask, or their own mask only once flipped or rotated); an image's nearest
neighbour shares its class far more often than chance (``labels-shuffled`` when the
labels agree with the images no better than a random permutation of them)."""

from __future__ import annotations

import tempfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

import vizdebug as vd

from . import Fault
from ._data import digits
from ._loop import acc, finish, fit


def _blobs(n: int, side: int, seed: int, classes: int = 2):
    """Colour images of one or two ellipses on a textured background, and their masks of
    class ids (0 background, 1.. one class per ellipse kind)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:side, :side]
    images = np.empty((n, 3, side, side), np.float32)
    masks = np.zeros((n, side, side), np.int64)
    for i in range(n):
        img = rng.normal(0.3, 0.04, (3, side, side)) + 0.05 * np.sin(xx / 3.0)
        for c in range(1, classes + 1):
            cy, cx = rng.uniform(4, side - 4, 2)
            ry, rx = rng.uniform(2.5, side / 4, 2)
            inside = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
            masks[i][inside] = c
            img[:, inside] += rng.uniform(0.3, 0.6) * np.array([1.0, 0.4 * c, 0.2])[:, None]
        images[i] = img
    return images, masks


class _TinyFCN(nn.Module):
    def __init__(self, in_ch: int, out_ch: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_ch, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=2, dilation=2), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, out_ch, 1))

    def forward(self, x):
        return self.body(x)


def _scandir_order(paths: list[Path]) -> list[Path]:
    """The order a directory listing gives on ext4: by a hash of the file name (htree),
    neither sorted nor the same in two folders. (tmpfs would give creation order, which
    hides the fault; this is the order the reporters' machines gave.)"""
    return sorted(paths, key=lambda p: zlib.crc32(p.name.encode()))


# Source: https://github.com/Dana-Farber-AIOS/pathml/issues/56
#   "Pannuke masks and images don't match": next(iter(train)) shown side by side, the
#   masks belong to other images; "the lists of filepaths for masks and images are created
#   separately using pathlib.Path.glob(), but glob is unordered". The fix sorts both lists.
#   Ported: 24 px colour tiles with two kinds of nuclei-like ellipses written as .npy
#   files, masks under their own names, a per-pixel CrossEntropy FCN; the practitioner
#   scans the dataset with vd.check_dataset before training.
class _TileDataset(Dataset):
    def __init__(self, root: Path, fixed: bool) -> None:
        images, masks = list((root / "images").glob("*.npy")), list((root / "masks").glob("*.npy"))
        order = sorted if fixed else _scandir_order
        self.images, self.masks = order(images), order(masks)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        return (torch.as_tensor(np.load(self.images[i])),
                torch.as_tensor(np.load(self.masks[i])))


def masks_glob_unsorted(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    images, masks = _blobs(160, 24, seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "images").mkdir()
        (root / "masks").mkdir()
        for k, (img, m) in enumerate(zip(images, masks)):
            np.save(root / "images" / f"tile_{k:04d}.npy", img)
            np.save(root / "masks" / f"tile_{k:04d}_mask.npy", m)
        ds = _TileDataset(root, fixed)
        checks = vd.check_dataset(ds)
        items = [ds[i] for i in range(len(ds))]
    train = TensorDataset(torch.stack([a for a, _ in items]), torch.stack([b for _, b in items]))
    model = _TinyFCN(3, 3)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xv, yv = torch.as_tensor(images[-32:]), torch.as_tensor(masks[-32:])
    train_loader = DataLoader(train, batch_size=16, shuffle=True,
                              generator=torch.Generator().manual_seed(0))
    return fit(model, train_loader, nn.CrossEntropyLoss(), opt, 3, (xv, yv), _pixel_acc,
               checks=checks)


def _pixel_acc(out: torch.Tensor, y: torch.Tensor) -> float:
    return float((out.argmax(1) == y).float().mean())


# Source: https://github.com/albumentations-team/albumentations/issues/397
#   "How to make identical composed random/elastic transforms on image pair (input,
#   target) for segmentation?": the reporter set random.seed(seed) and called
#   spatialTransforms(image=image) and then spatialTransforms(image=mask) - "doesn't
#   work as expected": each call draws its own flips and crops. ternaus: pass both in one
#   call, transformed = SpatialTransforms(image=image, mask=mask). Ported: a numpy Compose
#   of random flips and quarter turns, binary (N, 1, H, W) float masks, BCEWithLogitsLoss;
#   the practitioner looks at one batch with vd.check_batch.
class _RandomDihedral:
    """Random horizontal/vertical flips and a random quarter turn (p=0.5 each), applied to
    every array passed in one call with the same draw (albumentations' contract)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def __call__(self, **arrays: np.ndarray) -> dict[str, np.ndarray]:
        h, v, k = self.rng.random() < 0.5, self.rng.random() < 0.5, int(self.rng.integers(4))
        out = {}
        for name, a in arrays.items():
            a = a[..., ::-1] if h else a
            a = a[..., ::-1, :] if v else a
            out[name] = np.ascontiguousarray(np.rot90(a, k, axes=(-2, -1)))
        return out


class _AugmentedPairs(Dataset):
    def __init__(self, images, masks, joint: bool) -> None:
        self.images, self.masks, self.joint = images, masks, joint
        self.aug = _RandomDihedral(np.random.default_rng(0))

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        img, mask = self.images[i], (self.masks[i] > 0).astype(np.float32)[None]
        if self.joint:
            out = self.aug(image=img, mask=mask)
            img, mask = out["image"], out["mask"]
        else:  # two calls: two draws
            img, mask = self.aug(image=img)["image"], self.aug(image=mask)["image"]
        return torch.as_tensor(img), torch.as_tensor(mask)


def mask_augmented_separately(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    images, masks = _blobs(256, 20, seed=2, classes=1)
    ds = _AugmentedPairs(images[:224], masks[:224], joint=fixed)
    train_loader = DataLoader(ds, batch_size=32, shuffle=True,
                              generator=torch.Generator().manual_seed(0))
    checks = vd.check_batch(next(iter(train_loader)))
    val = (torch.as_tensor(images[224:]),
           torch.as_tensor((masks[224:] > 0).astype(np.float32)[:, None]))
    model = _TinyFCN(3, 1)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, train_loader, nn.BCEWithLogitsLoss(), opt, 3, val, _binary_pixel_acc,
               checks=checks)


def _binary_pixel_acc(out: torch.Tensor, y: torch.Tensor) -> float:
    return float(((out > 0).float() == y).float().mean())


# Source: https://github.com/Borda/kaggle_image-classify/pull/12
#   "fix dataset shuffle": "the shuffle was made after taking raw labels :/" - the
#   Plant-Pathology dataset read self.raw_labels = list(self.data['labels']) and then
#   shuffled the table (self.data.sample(frac=1)), so the image names came in the shuffled
#   order and the labels in the CSV's; the model could not learn. The fix takes the labels
#   after the shuffle. Ported: a DataFrame of image names and labels over digits "files",
#   a small CNN with CrossEntropyLoss; the practitioner scans the dataset first.
class _TableDataset(Dataset):
    def __init__(self, table: pd.DataFrame, files: dict, labels_after_shuffle: bool) -> None:
        self.files = files
        self.data = table
        if not labels_after_shuffle:
            self.raw_labels = list(self.data["labels"])
        self.data = self.data.sample(frac=1, random_state=42).reset_index(drop=True)
        if labels_after_shuffle:
            self.raw_labels = list(self.data["labels"])
        self.img_names = list(self.data["image"])

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int):
        img = torch.as_tensor(self.files[self.img_names[i]]) / 16.0
        return (img - 0.3) / 0.4, int(self.raw_labels[i])


class _SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(16 * 16, 10))

    def forward(self, x):
        return self.net(x)


def labels_read_before_shuffle(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits()
    names = [f"{k:05x}.png" for k in range(len(xtr))]
    table = pd.DataFrame({"image": names, "labels": ytr})
    ds = _TableDataset(table, dict(zip(names, xtr)), labels_after_shuffle=fixed)
    checks = vd.check_dataset(ds)
    train_loader = DataLoader(ds, batch_size=64, shuffle=True,
                              generator=torch.Generator().manual_seed(0))
    val = ((torch.as_tensor(xte) / 16.0 - 0.3) / 0.4, torch.as_tensor(yte))
    model = _SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, train_loader, nn.CrossEntropyLoss(), opt, 3, val, acc, checks=checks)


# Source: https://github.com/hitzhangyu/Self-supervised-Image-Enhancement-Network-Training-With-Low-Light-Images-Only/issues/12
#   "关于训练数据的shuffle" (about shuffling the training data): train() in model.py
#   shuffles the low-light input images and not train_high_data / train_low_data_eq that
#   pair with them, so each input is trained towards another image. The fix shuffles the
#   paired arrays with one permutation. Ported: dark, noisy colour images as inputs, the
#   clean images as targets, an image-to-image CNN with an L1 loss; the practitioner scans
#   the (inputs, targets) pair of arrays with vd.check_dataset before training.
def enhancement_inputs_shuffled(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    rng = np.random.default_rng(3)
    high, _ = _blobs(192, 20, seed=3)
    low = (0.25 * high + rng.normal(0, 0.02, high.shape)).astype(np.float32)
    perm = rng.permutation(len(low))
    low, high = (low[perm], high[perm]) if fixed else (low[perm], high)
    checks = vd.check_dataset((low, high))
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3, 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train_loader = DataLoader(TensorDataset(torch.as_tensor(low[:160]),
                                            torch.as_tensor(high[:160])),
                              batch_size=16, shuffle=True,
                              generator=torch.Generator().manual_seed(0))
    session = vd.watch(model, loader=train_loader)
    val_x, val_y = torch.as_tensor(low[160:]), torch.as_tensor(high[160:])
    for _ in range(3):
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.l1_loss(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        with torch.no_grad():
            session.log(val_loss=float(F.l1_loss(model(val_x), val_y)))
    return finish(session, checks)


FAULTS: list[Fault] = [
    Fault("masks-glob-unsorted", masks_glob_unsorted, "pairs-misaligned", None,
          "github.com/Dana-Farber-AIOS/pathml/issues/56"),
    Fault("mask-augmented-separately", mask_augmented_separately, "pairs-misaligned", None,
          "github.com/albumentations-team/albumentations/issues/397"),
    Fault("labels-read-before-shuffle", labels_read_before_shuffle, "labels-shuffled", None,
          "github.com/Borda/kaggle_image-classify/pull/12"),
    Fault("enhancement-inputs-shuffled", enhancement_inputs_shuffled, "pairs-misaligned",
          None, "github.com/hitzhangyu/Self-supervised-Image-Enhancement-Network-Training-"
                "With-Low-Light-Images-Only/issues/12"),
]
