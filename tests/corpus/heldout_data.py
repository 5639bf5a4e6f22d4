"""Held-out real faults of the data pipeline (see ``heldout_faults.py``): augmentation
before the split, normalisation over the wrong axis, features scaled by rows, inputs
shuffled apart from their labels, a multi-label model that predicts no label, and
validation predictions compared in a shuffled order. Each from a public report, with its
fixed twin; ``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Fault
from ._data import digits, split
from ._loop import acc, finish, fit


def _loader(*arrays, batch_size: int = 32, shuffle: bool = True) -> DataLoader:
    ds = TensorDataset(*(torch.as_tensor(a) for a in arrays))
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle,
                      generator=torch.Generator().manual_seed(0))


# == augmentation before the split ==========================================================
def _augment(x: np.ndarray, y: np.ndarray, copies: int, seed: int):
    """DeepFont's augmentation, on 8x8 glyphs: noise, a slight blur and a one-pixel shift;
    the originals and ``copies`` augmented versions of each."""
    rng = np.random.default_rng(seed)
    xs, ys = [x], [y]
    for _ in range(copies):
        a = x + rng.normal(0, 0.04, x.shape)
        a = 0.8 * a + 0.1 * (np.roll(a, 1, axis=-1) + np.roll(a, -1, axis=-1))
        a = np.roll(a, rng.integers(-1, 2), axis=-2)
        xs.append(a.astype(np.float32))
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


# Source: https://github.com/robinreni96/Font_Recognition-DeepFont/issues/2
#   "issue with training/testing partition": "first, you apply the data augmentation
#   technique, then, you split your data in train and test. This means that you may be
#   adding an example on train set and its augmented version to the test set. This may
#   lead to overestimated performance on your test set"; the author: "Thank you ... for
#   pointing out the error point. I'll fix it" (split first, then augment). Ported: glyph
#   images (digits) augmented 3x, a small CNN; check_split on the two parts.
def augmented_before_split(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits()
    x, y = np.concatenate([xtr, xte]) / 16.0, np.concatenate([ytr, yte])
    if fixed:
        xtr, xte, ytr, yte = split(x.astype(np.float32), y)
        xtr, ytr = _augment(xtr, ytr, 3, seed=0)  # the training part only
    else:
        xtr, xte, ytr, yte = split(*_augment(x.astype(np.float32), y, 3, seed=0))
    checks = vd.check_split(xtr, xte, y_train=ytr, y_test=yte)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(16 * 64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    xtr, xte = (xtr - 0.3) / 0.4, (xte - 0.3) / 0.4
    val = (torch.as_tensor(xte, dtype=torch.float32), torch.as_tensor(yte))
    return fit(model, _loader(xtr.astype(np.float32), ytr, batch_size=64),
               nn.CrossEntropyLoss(), opt, 2, val, acc, checks=checks)


# == z-scores across channels instead of along time ==========================================
def _machine(steps: int, seed: int):
    """A machine's 6 sensor channels, each at its own level and scale; an anomaly lifts
    channel 2 by a few of its standard deviations (the label)."""
    rng = np.random.default_rng(seed)
    level = np.array([20.0, 1.5, 300.0, 0.2, 55.0, 8.0])
    scale = np.array([2.0, 0.3, 25.0, 0.05, 6.0, 1.0])
    x = level + scale * rng.normal(size=(steps, 6))
    y = (rng.random(steps) < 0.3).astype(np.int64)
    x[:, 2] += y * 2.5 * scale[2]
    return x.astype(np.float32), y


# Source: https://github.com/thedatumorg/TSB-AD/pull/79
#   "Fix multivariate normalization in ML detectors": "zscore(X, axis=1) standardized each
#   timestep across channels (erasing amplitude). Use per-channel normalization (axis=0)
#   like the univariate branch". Ported: a 6-channel sensor table (rows are time steps)
#   z-scored per row before an MLP anomaly classifier; the fix z-scores each channel.
def zscore_across_channels(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _machine(2400, seed=0)
    axis = 0 if fixed else 1
    x = (x - x.mean(axis=axis, keepdims=True)) / x.std(axis=axis, keepdims=True)
    xtr, xte, ytr, yte = split(x.astype(np.float32), y)
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, _loader(xtr, ytr, batch_size=64), nn.CrossEntropyLoss(), opt, 4, val,
               acc)


# == features scaled by row instead of by column =============================================
def _housing(n: int, seed: int):
    """Boston-housing-like columns at their own scales (rates, counts, tax, age...)."""
    rng = np.random.default_rng(seed)
    scales = np.array([9.0, 23.0, 7.0, 0.3, 0.12, 0.7, 28.0, 2.1, 8.7, 168.0, 2.2, 91.0, 7.1])
    means = np.array([3.6, 11.0, 11.0, 0.07, 0.55, 6.3, 68.0, 3.8, 9.5, 408.0, 18.5, 356.0,
                      12.6])
    z = rng.normal(size=(n, 13))
    x = means + scales * z
    y = 22 + 3 * np.tanh(z[:, 5]) - 2 * z[:, 12] + 1.5 * z[:, 0] * z[:, 9] \
        + 0.5 * rng.normal(size=n)
    return x.astype(np.float32), y.astype(np.float32)


# Source: https://github.com/GoogleCloudPlatform/vertex-ai-samples/issues/1599
#   "Code for Normalization is wrong": the notebook's `for _ in range(13): x_train[_], max
#   = scale(x_train[_])` divides each of the first 13 *rows* by its maximum: "Normalization
#   happens over 13 rows not over columns (features)"; fixed by scaling each column
#   (x_train[:, _]). Ported: a 13-column housing table, an MLP regressor with MSE.
def features_scaled_by_row_max(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _housing(800, seed=0)
    xtr, xte, ytr, yte = split(x, y)
    for i in range(13):
        if fixed:
            top = np.max(xtr[:, i])
            xtr[:, i], xte[:, i] = xtr[:, i] / top, xte[:, i] / top
        else:  # the notebook's loop: rows 0..12 of each part by their own maximum
            xtr[i], xte[i] = xtr[i] / np.max(xtr[i]), xte[i] / np.max(xte[i])
    model = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte)[:, None])
    return fit(model, _loader(xtr, ytr[:, None], batch_size=32), nn.MSELoss(), opt, 15, val)


# == inputs shuffled, labels not =============================================================
_INTENTS = [["when", "open", "hours", "library", "close"], ["where", "building", "room",
            "located", "find"], ["who", "professor", "teaches", "course", "instructor"],
            ["how", "register", "enroll", "class", "sign"]]


def _questions(n: int, seed: int):
    """Bag-of-words counts of chatbot questions: a few words of the intent's own list and
    some of a shared vocabulary."""
    rng = np.random.default_rng(seed)
    vocab = sorted({w for ws in _INTENTS for w in ws} | {f"w{k}" for k in range(40)})
    index = {w: k for k, w in enumerate(vocab)}
    y = rng.integers(0, len(_INTENTS), n)
    x = np.zeros((n, len(vocab)), np.float32)
    for i in range(n):
        for w in rng.choice(_INTENTS[y[i]], 3):
            x[i, index[w]] += 1
        for k in rng.integers(0, 40, 4):
            x[i, index[f"w{k}"]] += 1
    return x, y.astype(np.int64)


# Source: https://github.com/udacity/sdc-issue-reports/issues/1326
#   "Quiz doesn't verify training set and labels match": the reporter shuffled the
#   features and the labels separately (two different shuffle orders) before batching and
#   the quiz still passed; the maintainers' answer: put features and labels together, then
#   shuffle (one order for both). Ported: bag-of-words intent questions, an MLP classifier;
#   the practitioner checks the (x, y) arrays with vd.check_dataset.
def x_shuffled_not_y(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _questions(1200, seed=0)
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(x))
    x, y = (x[perm], y[perm]) if fixed else (x[perm], y[rng.permutation(len(y))])
    checks = vd.check_dataset((x, y))
    xtr, xte, ytr, yte = x[:900], x[900:], y[:900], y[900:]
    model = nn.Sequential(nn.Linear(x.shape[1], 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, _loader(xtr, ytr), nn.CrossEntropyLoss(), opt, 4, val, acc,
               checks=checks)


# == a multi-label model that predicts no label ==============================================
def _tags(n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 20)).astype(np.float32)
    w = rng.normal(size=(20, k))
    logits = z @ w / np.sqrt(20) - 2.6  # sparse tags: ~5% positive each
    y = (rng.random((n, k)) < 1 / (1 + np.exp(-2 * logits))).astype(np.float32)
    return z, y


def _elementwise_acc(out: torch.Tensor, y: torch.Tensor) -> float:
    return float(((out > 0).float() == y).float().mean())


# Source: https://github.com/appvision-ai/fast-bert/issues/52
#   "500+ multi-labels only predicts zeros": with sparse labels the multi-label classifier
#   (BCEWithLogitsLoss) predicts no label for any text while its accuracy looks high; the
#   fix given: a pos_weight in BCEWithLogitsLoss of about number_neg_samples /
#   number_pos_samples per label. Ported: 8 sparse tags (~5% positive) on 20 features, an
#   MLP; the practitioner logs element-wise accuracy and checks the predictions.
def multilabel_predicts_no_label(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _tags(1600, 8, seed=0)
    xtr, xte, ytr, yte = split(x, y)
    pos = ytr.sum(0)
    pos_weight = torch.as_tensor((len(ytr) - pos) / np.maximum(pos, 1)) if fixed else None
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    found = fit(model, _loader(xtr, ytr, batch_size=64),
                nn.BCEWithLogitsLoss(pos_weight=pos_weight), opt, 4, val, _elementwise_acc)
    with torch.no_grad():
        pred = (model(val[0]) > 0).long().numpy()
    return vd.Findings([*found, *vd.check_predictions(yte.astype(np.int64), pred)])


# == validation predictions in a shuffled order ==============================================
# Source: https://github.com/skorch-dev/skorch/issues/499
#   "Accuracy on training and validation sets different from sk-learn's": the maintainers:
#   "you are enabling shuffling on the validation data loader which is used for
#   predictions as well ... y_pred is not ordered in the same way that X_valid is ... if
#   you compare y_pred with y_valid then the pairs do not match anymore! Set
#   iterator_valid__shuffle=False". Ported: a digits MLP whose validation predictions come
#   from a shuffled loader and are scored against y_valid in its own order.
def validation_predictions_shuffled(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits()
    xtr, xte = xtr.reshape(len(xtr), -1) / 16.0, xte.reshape(len(xte), -1) / 16.0
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train = _loader(xtr.astype(np.float32), ytr)
    valid = _loader(xte.astype(np.float32), yte, batch_size=64, shuffle=not fixed)
    session = vd.watch(model, loader=train)
    for _epoch in range(5):
        model.train()
        for xb, yb in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():  # skorch's predict(X_valid): the valid iterator's order
            losses, preds = [], []
            for xb, yb in valid:
                out = model(xb)
                losses.append(float(F.cross_entropy(out, yb)) * len(yb))
                preds.append(out.argmax(1))
        pred = torch.cat(preds).numpy()
        session.log(val_loss=sum(losses) / len(yte), val_acc=float((pred == yte).mean()))
    return vd.Findings([*finish(session), *vd.check_predictions(yte, pred)])


DATA_FAULTS: list[Fault] = [
    Fault("heldout/augmented-before-split", augmented_before_split, "split-near-duplicates",
          None, "github.com/robinreni96/Font_Recognition-DeepFont/issues/2"),
    Fault("heldout/zscore-across-channels", zscore_across_channels, "input-not-normalized",
          None, "github.com/thedatumorg/TSB-AD/pull/79"),
    Fault("heldout/features-scaled-by-row-max", features_scaled_by_row_max,
          "input-not-normalized", None,
          "github.com/GoogleCloudPlatform/vertex-ai-samples/issues/1599"),
    Fault("heldout/x-shuffled-not-y", x_shuffled_not_y, "labels-shuffled", None,
          "github.com/udacity/sdc-issue-reports/issues/1326"),
    Fault("heldout/multilabel-predicts-no-label", multilabel_predicts_no_label,
          "misleading-accuracy", None, "github.com/appvision-ai/fast-bert/issues/52"),
    Fault("heldout/validation-predictions-shuffled", validation_predictions_shuffled,
          "predictions-misaligned", "val_acc", "github.com/skorch-dev/skorch/issues/499"),
]
