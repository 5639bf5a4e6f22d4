"""Working programs written by other people that the data checks accused or crashed on.

Each test is the program's data pipeline as its source has it (shrunk to digits or made-up
data), then the check a practitioner would call: no warning, no error, no crash. Beside
each, the fault the rule exists for stays named.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, Dataset, TensorDataset

import vizdebug as vd
from vizdebug.data.batch import make_batch


def _loud(found: vd.Findings) -> list[tuple[str, str]]:
    return [(f.code, f.message) for f in found.at_least("warning")]


@pytest.fixture
def digits_split():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = ((d.images - 4.88) / 6.02).astype(np.float32)
    return torch.as_tensor(x[:, None]), torch.as_tensor(d.target)


# -- 1. siamese and triplet batches ----------------------------------------------------------
class TripletDigits(Dataset):
    """adambielski/siamese-triplet datasets.py@e4b738ef ``TripletMNIST``: for each anchor a
    random positive of its class and a negative of another; ``(img1, img2, img3), []``."""

    def __init__(self, data: torch.Tensor, labels: torch.Tensor) -> None:
        self.data, self.labels = data, labels
        self.labels_set = set(labels.numpy().tolist())
        self.label_to_indices = {c: np.where(labels.numpy() == c)[0] for c in self.labels_set}

    def __getitem__(self, index: int):
        label1 = self.labels[index].item()
        positive_index = index
        while positive_index == index:
            positive_index = np.random.choice(self.label_to_indices[label1])
        negative_label = np.random.choice(list(self.labels_set - {label1}))
        negative_index = np.random.choice(self.label_to_indices[negative_label])
        return (self.data[index], self.data[positive_index], self.data[negative_index]), []

    def __len__(self) -> int:
        return len(self.data)


class SiameseDigits(TripletDigits):
    """The same file's ``SiameseMNIST``: a positive or negative pair, ``(img1, img2), target``."""

    def __getitem__(self, index: int):
        target = np.random.randint(0, 2)
        label1 = self.labels[index].item()
        if target == 1:
            other = np.random.choice(self.label_to_indices[label1])
        else:
            other = np.random.choice(self.label_to_indices[
                np.random.choice(list(self.labels_set - {label1}))])
        return (self.data[index], self.data[other]), target


class AppMatcherDigits(TripletDigits):
    """pytorch/examples siamese_network/main.py ``APP_MATCHER``: ``image_1, image_2, target``."""

    def __getitem__(self, index: int):
        (a, b), target = SiameseDigits.__getitem__(self, index)
        return a, b, torch.tensor(float(target))


def test_triplet_network_trains_and_its_batches_are_checked(digits_split):
    """The triplet trainer (trainer.py: ``model(*data)``, TripletLoss on squared distances):
    check_batch on its ``[[anchor, positive, negative], []]`` batches crashed."""
    np.random.seed(0)
    torch.manual_seed(0)
    x, y = digits_split
    loader = DataLoader(TripletDigits(x, y), batch_size=64, shuffle=True)
    embed = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.PReLU(), nn.Linear(32, 2))
    opt = torch.optim.Adam(embed.parameters(), lr=1e-2)
    assert _loud(vd.check_batch(next(iter(loader)))) == []
    losses = []
    for _ in range(3):
        for data, _target in loader:
            a, p, n = (embed(d) for d in data)
            loss = torch.relu((a - p).pow(2).sum(1) - (a - n).pow(2).sum(1) + 1.0).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert _loud(vd.check_dataset(TripletDigits(x, y), sample=200)) == []
    assert _loud(vd.check_dataset(loader, sample=200)) == []


@pytest.mark.parametrize("dataset", [SiameseDigits, AppMatcherDigits])
def test_siamese_pairs_are_checked_input_by_input(dataset, digits_split):
    np.random.seed(0)
    x, y = digits_split
    loader = DataLoader(dataset(x, y), batch_size=64, shuffle=True)
    assert _loud(vd.check_batch(next(iter(loader)))) == []
    assert _loud(vd.check_dataset(dataset(x, y), sample=200)) == []


def test_every_input_of_a_triplet_is_checked(digits_split):
    """A blank negative is named as the third input (each member gets the image checks)."""
    x, _ = digits_split
    anchor, positive, negative = x[:32], x[32:64], x[64:96].clone()
    negative[5] = negative.min()
    found = vd.check_batch((anchor, positive, negative))
    assert found.codes == ["blank-images"]
    assert found[0].message.startswith("input 3 of 3") and found[0].where == "5"


# -- 2. sequence batches -------------------------------------------------------------------
def _sine_windows(n: int = 256, steps: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = np.arange(steps + 1)
    phase = rng.uniform(0, 2 * np.pi, (n, 1))
    series = np.sin(0.4 * t[None] + phase) + rng.normal(0, 0.05, (n, steps + 1))
    return (torch.tensor(series[:, :-1, None], dtype=torch.float32),
            torch.tensor(series[:, -1:], dtype=torch.float32))


def test_univariate_lstm_batches_are_sequences():
    """The usual ``nn.LSTM(input_size=1, batch_first=True)`` forecaster: windows of shape
    (batch, steps, 1) and the next value (batch, 1). check_batch read the windows as one
    32 x 12 image and refused the 32 targets."""
    torch.manual_seed(0)
    x, y = _sine_windows()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    lstm, head = nn.LSTM(1, 16, batch_first=True), nn.Linear(16, 1)
    opt = torch.optim.Adam([*lstm.parameters(), *head.parameters()], lr=1e-2)
    batch = next(iter(loader))
    assert _loud(vd.check_batch(batch)) == []
    for _ in range(5):
        for xb, yb in loader:
            out, _ = lstm(xb)
            loss = nn.functional.mse_loss(head(out[:, -1]), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert loss.item() < 0.05
    assert make_batch(*batch).sequence == (12, 1)
    assert _loud(vd.check_dataset(TensorDataset(x, y))) == []


def test_padded_multivariate_sequences_are_not_images():
    """UCI-HAR-style sensor windows (batch, 50 steps, 8 channels), shorter recordings
    zero-padded at the end as ``pad_sequence(batch_first=True)`` does: read as 50 x 8
    images, the mostly-padding ones were called blank."""
    rng = np.random.default_rng(1)
    lengths = rng.integers(3, 51, 32)
    t = np.arange(50)[None, :, None]
    x = np.sin(t * rng.uniform(0.1, 1, (32, 1, 8)) + rng.uniform(0, 6, (32, 1, 8)))
    x = np.where(t < lengths[:, None, None], x, 0.0).astype(np.float32)
    x[lengths < 5, :, :] *= (t < 2)  # some recordings hold barely a step or two
    batch = (torch.tensor(x), torch.tensor(rng.integers(0, 6, 32)))
    assert _loud(vd.check_batch(batch)) == []
    assert make_batch(*batch).sequence == (50, 8)
    bad = batch[0].clone()
    bad[3, 7, 2] = float("nan")
    found = vd.check_batch((bad, batch[1]))
    assert found.codes == ["input-nonfinite"] and found[0].where == "3"  # the sequence
    assert "f2" in found[0].message  # the feature


def test_grey_images_stay_images(digits_split):
    x, y = digits_split
    assert make_batch(x[:64, 0], y[:64]).kind == "image"  # digits (N, 8, 8)
    rng = np.random.default_rng(0)
    mnist_like = np.clip(rng.normal(0, 1, (16, 28, 28)).cumsum(1).cumsum(2) / 40, 0, 1)
    assert make_batch(mnist_like.astype(np.float32)).kind == "image"
    wide = np.repeat(np.repeat(x[:16, 0].numpy(), 3, axis=1), 4, axis=2)  # 24 x 32 crops
    assert make_batch(wide).kind == "image"


# -- 3. low-contrast natural crops ------------------------------------------------------------
def _sky_crops(n: int = 32, side: int = 32, seed: int = 0) -> np.ndarray:
    """Crops of a hazy sky in 0-1, as RandomResizedCrop cuts them from a landscape photo:
    a faint gradient (about 5 grey levels of 255), sensor noise, 8-bit quantisation, and
    in every third crop a dark twig three pixels long. Low contrast, but a picture."""
    rng = np.random.default_rng(seed)
    rows = np.linspace(0, 1, side)[:, None]
    out = []
    for k in range(n):
        base = 0.70 + 0.02 * rows + 0.004 * np.sin(np.arange(side) / 5 + k)[None]
        img = np.repeat((base + rng.normal(0, 0.002, (side, side)))[None], 3, axis=0)
        img *= np.array([0.85, 0.92, 1.0])[:, None, None]
        if k % 3 == 0:
            r, c = rng.integers(4, side - 4, 2)
            img[:, r, c:c + 3] = 0.3
        out.append(np.round(img * 255) / 255)
    return np.stack(out).astype(np.float32)


def test_low_contrast_sky_crops_are_not_blank():
    crops = torch.tensor(_sky_crops())
    assert _loud(vd.check_batch((crops, torch.zeros(32, dtype=torch.long) + torch.arange(32) % 2))) == []


def test_blank_images_stay_named(digits_split):
    """Constant fills, all-black crops and a digit's corner on black are still blank."""
    crops = torch.tensor(_sky_crops(16))
    crops[2] = 0.0
    crops[5] = crops[5].mean()
    crops[9] = 0.0
    crops[9, :, 0, :2] = 1.0  # two lit pixels on black
    found = vd.check_batch(crops)
    assert found.codes == ["blank-images"] and found[0].evidence["indices"] == [2, 5, 9]


# -- 4. a WeightedRandomSampler over imbalanced classes ---------------------------------------
def _imbalanced(n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = torch.as_tensor(rng.choice(3, size=n, p=[0.88, 0.09, 0.03]))
    x = torch.randn(n, 6) + 0.8 * nn.functional.one_hot(y, 6).float()
    return TensorDataset(x, y), y


def test_weighted_random_sampler_rebalances_the_classes():
    """The inverse-frequency recipe (tsikup/wsi_data wsi_data/samplers/balanced.py, after
    'Demystifying PyTorch's WeightedRandomSampler'): ``weight = 1 / class_sample_count``,
    ``samples_weight = weight[labels]``, ``WeightedRandomSampler(samples_weight, len)``."""
    dataset, labels = _imbalanced()
    class_sample_count = torch.bincount(labels)
    weight = 1.0 / class_sample_count.float()
    samples_weight = weight[labels]
    sampler = torch.utils.data.WeightedRandomSampler(samples_weight, len(samples_weight),
                                                     generator=torch.Generator().manual_seed(0))
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    state = sampler.generator.get_state()
    found = vd.check_dataset(loader)
    assert _loud(found) == []
    (f,) = [f for f in found if f.code == "label-imbalance"]
    assert "WeightedRandomSampler" in f.message and f.evidence["drawn_ratio"] < 1.5
    assert torch.equal(sampler.generator.get_state(), state)  # looking drew nothing
    shuffled = vd.check_dataset(DataLoader(dataset, batch_size=32, shuffle=True))
    assert shuffled.warnings.codes == ["label-imbalance"]  # not rebalanced: still said


class BalancedBatchSampler(BatchSampler):
    """adambielski/siamese-triplet datasets.py@e4b738ef: ``n_classes`` classes per batch,
    ``n_samples`` of each, index lists shuffled in place as they run out."""

    def __init__(self, labels: torch.Tensor, n_classes: int, n_samples: int) -> None:
        self.labels = labels
        self.labels_set = list(set(labels.numpy().tolist()))
        self.label_to_indices = {c: np.where(labels.numpy() == c)[0] for c in self.labels_set}
        for c in self.labels_set:
            np.random.shuffle(self.label_to_indices[c])
        self.used_label_indices_count = dict.fromkeys(self.labels_set, 0)
        self.n_classes, self.n_samples = n_classes, n_samples
        self.n_dataset, self.batch_size = len(labels), n_samples * n_classes

    def __iter__(self):
        count = 0
        while count + self.batch_size < self.n_dataset:
            classes = np.random.choice(self.labels_set, self.n_classes, replace=False)
            indices = []
            for c in classes:
                used = self.used_label_indices_count[c]
                indices.extend(self.label_to_indices[c][used:used + self.n_samples])
                self.used_label_indices_count[c] += self.n_samples
                if self.used_label_indices_count[c] + self.n_samples > len(self.label_to_indices[c]):
                    np.random.shuffle(self.label_to_indices[c])
                    self.used_label_indices_count[c] = 0
            yield indices
            count += self.batch_size

    def __len__(self) -> int:
        return self.n_dataset // self.batch_size


def test_balanced_batch_sampler_is_handled_and_left_as_it_was():
    np.random.seed(0)
    dataset, labels = _imbalanced()
    sampler = BalancedBatchSampler(labels, 3, 8)
    before = {c: v.copy() for c, v in sampler.label_to_indices.items()}
    found = vd.check_dataset(DataLoader(dataset, batch_sampler=sampler))
    assert _loud(found) == [] and "BalancedBatchSampler" in found[0].message
    assert all((before[c] == sampler.label_to_indices[c]).all() for c in before)
    assert set(sampler.used_label_indices_count.values()) == {0}


# -- 5. a class-weighted model ------------------------------------------------------------------
def test_class_weighted_cross_entropy_is_not_accused():
    """``CrossEntropyLoss(weight=...)`` with scikit-learn's 'balanced' weights
    (``n_samples / (n_classes * bincount(y))``) on four classes, 80% in one: every class is
    recalled above chance (0.87/0.78/0.49/0.78), accuracy 84% beside an 79% majority."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    y = rng.choice(4, size=3000, p=(0.8, 0.1, 0.05, 0.05))
    centres = rng.normal(size=(4, 8))
    x = (rng.normal(size=(3000, 8)) + centres[y]).astype(np.float32)
    xtr, xte, ytr, yte = x[:2250], x[2250:], y[:2250], y[2250:]
    class_weight = len(ytr) / (4 * np.bincount(ytr))
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.CrossEntropyLoss(weight=torch.tensor(class_weight, dtype=torch.float32))
    xb, yb = torch.tensor(xtr), torch.tensor(ytr)
    for _ in range(15):
        perm = torch.randperm(len(xb))
        for i in range(0, len(xb), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            criterion(model(xb[idx]), yb[idx]).backward()
            opt.step()
    with torch.no_grad():
        pred = model(torch.tensor(xte)).argmax(1).numpy()
    report = vd.show_predictions(yte, pred).report
    assert report.recall.min() > 0.25 and report.balanced_accuracy > 0.65
    assert vd.check_predictions(yte, pred) == []


def test_accuracy_beside_a_rarely_recalled_class_is_still_named():
    y = [0] * 90 + [1] * 10
    honest = [0] * 83 + [1] * 7 + [1] * 6 + [0] * 4  # recalls 0.92 / 0.60
    assert vd.check_predictions(y, honest) == []
    flattering = [0] * 88 + [1] * 2 + [1] * 3 + [0] * 7  # recalls 0.98 / 0.30
    assert vd.check_predictions(y, flattering).codes == ["misleading-accuracy"]


# -- 6. multi-output targets in check_split ---------------------------------------------------
def test_multi_output_regression_split():
    """scikit-learn ``make_regression(n_targets=2)`` split by ``train_test_split``, the
    (N, 2) targets of a two-output regressor (MultiOutputRegressor's usual example)."""
    from sklearn.datasets import make_regression
    from sklearn.model_selection import train_test_split

    x, y = make_regression(n_samples=400, n_features=6, n_targets=2, noise=5.0, random_state=0)
    xtr, xte, ytr, yte = train_test_split(x, y, random_state=0)
    assert _loud(vd.check_split(xtr, xte, y_train=ytr, y_test=yte)) == []
    pairs = [(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
             for a, b in zip(xtr, ytr)]
    tests = [(torch.tensor(a, dtype=torch.float32), torch.tensor(b, dtype=torch.float32))
             for a, b in zip(xte, yte)]
    assert _loud(vd.check_split(_Items(pairs), _Items(tests))) == []


def test_a_leak_into_one_target_column_is_named():
    """Multi-label (N, 2) targets, one of them also stored as a feature."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4))
    y = np.stack([x[:, 0] + rng.normal(0, 1, 300) > 0, rng.random(300) < 0.4], axis=1)
    x[:, 3] = y[:, 1] * 2.0 - 1  # the second label under another name
    found = vd.check_split(x[:200], x[200:], y_train=y[:200], y_test=y[200:])
    assert found.codes == ["split-target-leak"] and "target column 1" in found[0].message


class _Items(Dataset):
    def __init__(self, items: list) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        return self.items[i]
