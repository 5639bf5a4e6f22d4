"""Faults in the data before it reaches the model: layouts, scales, labels destroyed by a
transform, samples that are None, splits that share rows or statistics, classes out of
balance. The practitioner's own checks (``vd.check_batch``, ``vd.check_dataset``,
``vd.check_split``, ``vd.check_predictions``) are called where the README and the design
put them, before or after training."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

import vizdebug as vd

from . import Fault
from ._data import digits, digits_std, loader, regression, split, standardise
from ._loop import acc, finish, fit


# Source: https://github.com/pytorch/pytorch/issues/53959
#   "Custom dataset labels change if numpy dtype is uint8": the dataset passed its uint8
#   labels through the same transform as the images; vfdev-5: "you should not apply
#   ToTensor on mask ... as it also scales the data" (divides uint8 by 255). Every class id
#   becomes 0 after .long(). (pytorch/vision#2497: with ToTensor on the targets the models
#   "could not even overfit on a simple dataset".)
class _ScaledLabels(Dataset):
    def __init__(self, images: np.ndarray, labels: np.ndarray, scale_labels: bool) -> None:
        self.images = images.astype(np.uint8)  # stored as 8-bit, like image files
        self.labels = labels.astype(np.uint8)
        self.scale_labels = scale_labels

    @staticmethod
    def to_tensor(a) -> torch.Tensor:
        """ToTensor's rule: uint8 in 0-255 becomes float in 0-1."""
        return torch.as_tensor(np.asarray(a), dtype=torch.float32) / 255.0

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        x = (self.to_tensor(self.images[i]) - 0.3) / 0.4
        y = self.to_tensor(self.labels[i]) if self.scale_labels else torch.tensor(self.labels[i])
        return x, y.long()


def labels_scaled_by_to_tensor(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits()
    xtr, xte = xtr * 16, xte * 16  # 0-255 pixels, as read from image files
    train_ds = _ScaledLabels(xtr, ytr, scale_labels=not fixed)
    checks = vd.check_dataset(train_ds)
    val_x = (torch.as_tensor(xte.astype(np.uint8), dtype=torch.float32) / 255 - 0.3) / 0.4
    val = (val_x, torch.as_tensor(yte))
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=True,
                              generator=torch.Generator().manual_seed(0))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, train_loader, nn.CrossEntropyLoss(), opt, 6, val, acc, checks=checks)


def _colour_digits():
    """Digits as 3-channel 8x8 'photos' stored height x width x channel (like PIL/OpenCV)."""
    xtr, xte, ytr, yte = digits_std()
    tint = np.array([1.0, 0.6, 0.3], dtype=np.float32)
    to_hwc = lambda a: a[:, 0, :, :, None] * tint  # noqa: E731
    return to_hwc(xtr), to_hwc(xte), ytr, yte


class _PhotoDataset(Dataset):
    def __init__(self, images: np.ndarray, labels: np.ndarray, to_chw: bool) -> None:
        self.images, self.labels, self.to_chw = images, labels, to_chw

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int):
        img = torch.as_tensor(self.images[i])
        if self.to_chw:
            img = img.permute(2, 0, 1)
        return img, torch.as_tensor(self.labels[i])


# Source: https://github.com/LeeJunHyun/Image_Segmentation/issues/29
#   "RuntimeError: Given groups=1, weight of size 64 3 3 3, expected input[1, 512, 512, 3]
#   to have 3 channels, but got 512 channels instead": images went to the model height x
#   width x channel; maintainer: "transpose your dataset to have [3,512,512]" (solved).
#   Ported: the practitioner looks at a batch with vd.check_batch before training.
def images_channels_last(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, _, ytr, _ = _colour_digits()
    train_loader = DataLoader(_PhotoDataset(xtr, ytr, to_chw=fixed), batch_size=32,
                              shuffle=True, generator=torch.Generator().manual_seed(0))
    checks = vd.check_batch(next(iter(train_loader)))
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 16, 10))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    # the notebook shows the channel error; the next cell asks vizdebug why
    return fit(model, train_loader, F.cross_entropy, opt, 3, checks=checks, crash=RuntimeError)


# Source: https://github.com/mks0601/3DMPPE_POSENET_RELEASE/issues/69
#   "The image is not divided by 255": the demo's input "numbers ... are not normally
#   distributed, actually the original image is still in pixels" (values like 1095.97);
#   the author: "this was my mistake when I implemented this project". Ported: digit images
#   as 0-255 pixels fed to a CNN unscaled; the practitioner checks a batch first.
def pixels_not_scaled(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits()
    xtr, xte = xtr * 16, xte * 16  # 0-255
    if fixed:
        mean, std = xtr.mean() / 255, xtr.std() / 255
        xtr, xte = (xtr / 255 - mean) / std, (xte / 255 - mean) / std
    train_loader = loader(xtr, ytr, 64)
    checks = vd.check_batch(next(iter(train_loader)))
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 16, 10))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return fit(model, train_loader, nn.CrossEntropyLoss(), opt, 6, val, acc, checks=checks)


class _CaseDataset(Dataset):
    """Loads case i; for cases whose file is missing the loader falls off its end (None)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, missing: set[int]) -> None:
        self.x, self.y, self.missing = x, y, missing

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        if i in self.missing:
            return None  # the reported __getitem__ returned nothing for these cases
        return torch.as_tensor(self.x[i]), torch.as_tensor(self.y[i])


# Source: https://github.com/nitsaick/kits19-challenge/issues/7
#   "TypeError: default_collate: batch must contain tensors, numpy arrays, numbers, dicts
#   or lists; found <class 'NoneType'>" when running the ROI script over the data; same
#   error in Megvii-BaseDetection/YOLOX#1523, where the maintainer answered "the output of
#   your dataset contains None". Ported: the practitioner asks vd.check_dataset which items.
def dataset_returns_none(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    missing = set() if fixed else {17, 230, 871}
    ds = _CaseDataset(xtr, ytr, missing)
    checks = vd.check_dataset(ds)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    train_loader = DataLoader(ds, batch_size=64, shuffle=True,
                              generator=torch.Generator().manual_seed(0))
    session = vd.watch(model, loader=train_loader)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    try:
        for _ in range(4):
            for xb, yb in train_loader:
                opt.zero_grad()
                loss = F.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                session.log(loss=loss)
    except TypeError:
        pass  # default_collate's error; the next cell asks vizdebug
    return finish(session, checks)


def _check_split(xtr, xte, ytr, yte) -> vd.Findings:
    check_split = vd.check_split  # the design's public API (an AttributeError until it exists)
    return check_split(xtr, xte, y_train=ytr, y_test=yte)


# Source: https://github.com/d2l-ai/d2l-en/issues/843
#   "Data leakage in Kaggle House Prices example": "normalization is applied to
#   all_features, therefore information from the test set is being leaked to the training
#   set"; fit the scaler on the training set, then apply it to both (d2l-en#1595 did so).
#   Ported: house-price-like features in their own units, standardised before the split.
def scaler_fitted_on_all_rows(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 800
    area = rng.lognormal(4.8, 0.4, n)
    rooms = np.clip(np.round(area / 25 + rng.normal(0, 1, n)), 1, None)
    year = rng.integers(1900, 2020, n).astype(float)
    quality = rng.integers(1, 11, n).astype(float)
    x = np.stack([area, rooms, year, quality], 1).astype(np.float32)
    # newer houses land in the test part (a split by listing date), so statistics differ
    order = np.argsort(year + rng.normal(0, 15, n))
    x = x[order]
    y = (np.log(area) * 0.8 + 0.05 * quality + 0.004 * (year - 1900))[order]
    y = ((y - y.mean()) / y.std()).astype(np.float32)
    cut = int(0.75 * n)
    if fixed:
        xtr, xte = standardise(x[:cut], x[cut:])
    else:
        x_all = standardise(x)[0]  # all_features standardised before splitting
        xtr, xte = x_all[:cut], x_all[cut:]
    xtr, xte = xtr.astype(np.float32), xte.astype(np.float32)
    ytr, yte = y[:cut, None], y[cut:, None]
    checks = _check_split(xtr, xte, ytr, yte)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, loader(xtr, ytr, 32), nn.MSELoss(), opt, 6, val, checks=checks)


# Source: https://github.com/zalandoresearch/fashion-mnist/issues/44
#   "Duplicate samples and overlap between train and test": byte-level comparison found 43
#   duplicated training samples and "10 samples in the training set that appear in the
#   test set" (a report on the dataset that PyTorch programs load through torchvision).
#   Ported: a digits table where some rows were recorded twice before the split; the fix
#   drops duplicate rows first.
def duplicates_across_split(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = d.data.astype(np.float32), d.target.astype(np.int64)
    rng = np.random.default_rng(0)
    again = rng.choice(len(x), size=120, replace=False)
    x, y = np.concatenate([x, x[again]]), np.concatenate([y, y[again]])  # recorded twice
    if fixed:
        _, first = np.unique(x, axis=0, return_index=True)
        keep = np.sort(first)
        x, y = x[keep], y[keep]
    xtr, xte, ytr, yte = split(x, y)
    checks = _check_split(xtr, xte, ytr, yte)
    xtr, xte = standardise(xtr, xte)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    val = (torch.as_tensor(xte.astype(np.float32)), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, loader(xtr.astype(np.float32), ytr, 64), nn.CrossEntropyLoss(), opt, 6,
               val, acc, checks=checks)


# Source: https://github.com/thanhhau097/google_fast_or_slow/pull/1
#   "adds normalisation for layout": the loss sat near 7533-7612 for 15 epochs; "Loss
#   started converging after these changes" (MinMaxScaler on the features). Ported: a
#   regression whose features come in units that differ by orders of magnitude.
def features_not_scaled(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = regression()
    units = np.array([1e4, 1e-2, 1.0, 300.0, 5e-3, 1e3, 20.0, 1.0], dtype=np.float32)
    xtr, xte = xtr * units + units, xte * units + units  # raw columns, own units
    if fixed:
        lo, hi = xtr.min(0), xtr.max(0)
        xtr, xte = (xtr - lo) / (hi - lo), (xte - lo) / (hi - lo)
    ytr, yte = ytr[:, None], yte[:, None]
    train_loader = loader(xtr.astype(np.float32), ytr, 32)
    checks = vd.check_batch(next(iter(train_loader)))
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    val = (torch.as_tensor(xte.astype(np.float32)), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, train_loader, nn.MSELoss(), opt, 8, val, checks=checks)


# Source: https://github.com/abhuse/polyloss-pytorch/issues/5
#   "using the weights for an imbalanced dataset": binary data, class 0 86.2% / class 1
#   13.8%; "all my validation predictions turn out to be 0, which is the majority class";
#   the reporter asks how to set the criterion's class weights. Ported: accuracy looks fine
#   while the model never predicts the minority class; the fix weights the classes.
def imbalanced_majority_only(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 900
    y = (rng.random(n) < 0.138).astype(np.int64)
    x = rng.normal(size=(n, 6)).astype(np.float32)
    x[:, 0] += 0.9 * y  # a weak signal
    x[:, 1] += 0.6 * y
    xtr, xte, ytr, yte = split(x, y)
    weight = None
    if fixed:
        counts = np.bincount(ytr, minlength=2)
        weight = torch.as_tensor(len(ytr) / (2 * counts), dtype=torch.float32)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    found = fit(model, loader(xtr, ytr, 32), nn.CrossEntropyLoss(weight=weight), opt, 8, val,
                acc)
    model.eval()
    with torch.no_grad():
        pred = model(val[0]).argmax(1).numpy()
    check_predictions = vd.check_predictions  # the design's public API
    return vd.Findings([*found, *check_predictions(yte, pred)])


FAULTS = [
    Fault("labels-scaled-by-to-tensor", labels_scaled_by_to_tensor, "label-imbalance", None,
          "github.com/pytorch/pytorch/issues/53959"),
    Fault("images-channels-last", images_channels_last, "layout-channels-last", None,
          "github.com/LeeJunHyun/Image_Segmentation/issues/29"),
    Fault("pixels-not-scaled", pixels_not_scaled, "input-not-normalized", None,
          "github.com/mks0601/3DMPPE_POSENET_RELEASE/issues/69"),
    Fault("dataset-returns-none", dataset_returns_none, "input-none", "230",
          "github.com/nitsaick/kits19-challenge/issues/7"),
    Fault("scaler-fitted-on-all-rows", scaler_fitted_on_all_rows, "split-preprocessing-leak",
          None, "github.com/d2l-ai/d2l-en/issues/843"),
    Fault("duplicates-across-split", duplicates_across_split, "split-duplicates", None,
          "github.com/zalandoresearch/fashion-mnist/issues/44"),
    Fault("features-not-scaled", features_not_scaled, "input-not-normalized", None,
          "github.com/thanhhau097/google_fast_or_slow/pull/1"),
    Fault("imbalanced-majority-only", imbalanced_majority_only, "misleading-accuracy", None,
          "github.com/abhuse/polyloss-pytorch/issues/5"),
]
