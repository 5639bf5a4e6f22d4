"""Ordinary working training programs of different kinds: the clean controls. Each one
trains to a good result; vizdebug must give none of them a warning or an error."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, default_collate

import vizdebug as vd

from . import Control
from ._data import digits_std, loader, regression, sequences, split, tabular_std
from ._loop import acc, binary_acc, evaluate, finish, fit


class _CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 16, 10))

    def forward(self, x):
        return self.head(self.features(x))


def cnn_digits_steplr() -> vd.Findings:
    """A small CNN on digits, mini-batches, Adam, StepLR stepped once per epoch; the
    practitioner looks at a batch first."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    train_loader = loader(xtr, ytr, 32)
    checks = vd.check_batch(next(iter(train_loader)))
    model = _CNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, train_loader, nn.CrossEntropyLoss(), opt, 5, val, acc, sched, checks)


def _channels_last(batch: list) -> list[torch.Tensor]:
    """The loader's batches in channels-last memory (the tutorial converts each batch)."""
    xb, yb = default_collate(batch)
    return [xb.contiguous(memory_format=torch.channels_last), yb]


def cnn_channels_last() -> vd.Findings:
    """The channels-last recipe of PyTorch's memory-format tutorial: the model and each
    batch converted with ``memory_format=torch.channels_last`` (the tensors stay N, C, H,
    W; only their memory is ordered N, H, W, C, and so are the convolutions' outputs)."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    train_loader = DataLoader(loader(xtr, ytr).dataset, batch_size=64, shuffle=True,
                              generator=torch.Generator().manual_seed(0),
                              collate_fn=_channels_last)
    model = _CNN().to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val = (torch.as_tensor(xte).contiguous(memory_format=torch.channels_last),
           torch.as_tensor(yte))
    return fit(model, train_loader, nn.CrossEntropyLoss(), opt, 6, val, acc)


def mlp_breast_cancer_binary() -> vd.Findings:
    """Binary classification on a standardised table with one logit and BCEWithLogitsLoss;
    the practitioner scans the dataset first."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    ytr_f, yte_f = ytr.astype(np.float32)[:, None], yte.astype(np.float32)[:, None]
    train_loader = loader(xtr, ytr_f, 32)
    checks = vd.check_dataset(train_loader.dataset)
    model = nn.Sequential(nn.Linear(30, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    val = (torch.as_tensor(xte), torch.as_tensor(yte_f))
    return fit(model, train_loader, nn.BCEWithLogitsLoss(), opt, 12, val, binary_acc,
               checks=checks)


def regression_full_batch_loader() -> vd.Findings:
    """Regression with one batch per epoch (a DataLoader whose batch is the whole set)."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = regression()
    ytr, yte = ytr[:, None], yte[:, None]
    train_loader = loader(xtr, ytr, batch_size=len(xtr))
    model = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                          nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, train_loader, nn.MSELoss(), opt, 200, val)


def wine_full_batch_tensors() -> vd.Findings:
    """Three-class wine table, full batch from tensors (no DataLoader), SGD with momentum
    and weight decay, validation every 10 steps, stopped once validation stops improving."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("wine")
    x, y = torch.as_tensor(xtr), torch.as_tensor(ytr)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    model = nn.Sequential(nn.Linear(13, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=5e-3)
    session = vd.watch(model)
    for step in range(80):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        session.log(loss=loss)
        if step % 10 == 9:
            v_loss, v_acc = evaluate(model, *val, F.cross_entropy, acc)
            session.log(val_loss=v_loss, val_acc=v_acc)
    return finish(session)


def iris_cosine_schedule() -> vd.Findings:
    """Iris with small mini-batches and a cosine learning-rate schedule per epoch."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("iris")
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    epochs = 25
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, loader(xtr, ytr, 16), nn.CrossEntropyLoss(), opt, epochs, val, acc,
               sched)


def multilabel_tags() -> vd.Findings:
    """Multi-label classification: three independent tags per row, BCEWithLogitsLoss on
    (N, 3) targets."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(900, 10)).astype(np.float32)
    w = rng.normal(size=(10, 3))
    y = (x @ w + 0.3 * rng.normal(size=(900, 3)) > 0).astype(np.float32)
    xtr, xte, ytr, yte = split(x, y)
    train_loader = loader(xtr, ytr, 32)
    checks = vd.check_batch(next(iter(train_loader)))
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))

    def tag_acc(out, t):
        return float(((out > 0).float() == t).float().mean())

    return fit(model, train_loader, nn.BCEWithLogitsLoss(), opt, 8, val, tag_acc,
               checks=checks)


class _GRUClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(1, 24, batch_first=True)
        self.fc = nn.Linear(24, 2)

    def forward(self, x):
        _, h = self.gru(x)
        return self.fc(h[-1])


def gru_sequence_classifier() -> vd.Findings:
    """A GRU that tells high from low frequency in noisy sine snippets."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = sequences()
    model = _GRUClassifier()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, loader(xtr, ytr, 32), nn.CrossEntropyLoss(), opt, 8, val, acc)


class _TinyTransformer(nn.Module):
    def __init__(self, vocab: int = 12, dim: int = 32, length: int = 10) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, length, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=64, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(dim, 2)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens) + self.pos)
        return self.head(h.mean(1))


def tiny_transformer_tokens() -> vd.Findings:
    """A two-layer Transformer encoder on token sequences: does token 7 occur more often
    than token 3? AdamW with a linear warm-up stepped per batch (as warm-ups are)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 12, size=(800, 10))
    label = ((tokens == 7).sum(1) > (tokens == 3).sum(1)).astype(np.int64)
    xtr, xte, ytr, yte = split(tokens.astype(np.int64), label)
    train_loader = loader(xtr, ytr, 32)
    model = _TinyTransformer()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 30))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    session = vd.watch(model, loader=train_loader)
    for _ in range(8):
        model.train()
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            warmup.step()
            session.log(loss=loss)
        v_loss, v_acc = evaluate(model, *val, F.cross_entropy, acc)
        session.log(val_loss=v_loss, val_acc=v_acc)
    return finish(session)


class _Pairs(Dataset):
    """(image, image) pairs for an autoencoder."""

    def __init__(self, images: np.ndarray) -> None:
        self.images = torch.as_tensor(images)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        return self.images[i], self.images[i]


def autoencoder_digits() -> vd.Findings:
    """A convolutional autoencoder on digits: the target is the image itself."""
    torch.manual_seed(0)
    xtr, xte, _, _ = digits_std()
    train_loader = DataLoader(_Pairs(xtr), batch_size=32, shuffle=True,
                              generator=torch.Generator().manual_seed(0))
    checks = vd.check_batch(next(iter(train_loader)))
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 4, 3, padding=1), nn.ReLU(),
        nn.Upsample(scale_factor=2), nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 1, 3, padding=1),
    )
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(xte))
    return fit(model, train_loader, nn.MSELoss(), opt, 6, val, checks=checks)


def logistic_regression_onecycle() -> vd.Findings:
    """Multinomial logistic regression on flattened digits, SGD with OneCycleLR stepped
    every batch, as OneCycleLR is meant to be."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    train_loader = loader(xtr.reshape(len(xtr), -1), ytr, 64)
    model = nn.Linear(64, 10)
    epochs = 8
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, epochs=epochs,
                                                steps_per_epoch=len(train_loader))
    val = (torch.as_tensor(xte.reshape(len(xte), -1)), torch.as_tensor(yte))
    session = vd.watch(model, loader=train_loader)
    for _ in range(epochs):
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            sched.step()
            session.log(loss=loss)
        v_loss, v_acc = evaluate(model, *val, F.cross_entropy, acc)
        session.log(val_loss=v_loss, val_acc=v_acc)
    return finish(session)


class _Forecaster(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(1, 32, batch_first=True)
        self.fc = nn.Linear(32, 1)

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.fc(h[:, -1])


def lstm_forecast_next_value() -> vd.Findings:
    """An LSTM that forecasts the next value of a noisy sine wave from the last 12."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    t = np.arange(3000)
    series = (np.sin(0.07 * t) + 0.5 * np.sin(0.23 * t) + 0.05 * rng.normal(size=t.size))
    windows = np.lib.stride_tricks.sliding_window_view(series, 13)[::3].astype(np.float32)
    x, y = windows[:, :12, None], windows[:, 12:]
    cut = int(0.8 * len(x))  # forecast the future: split in time, not at random
    model = _Forecaster()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    val = (torch.as_tensor(x[cut:]), torch.as_tensor(y[cut:]))
    return fit(model, loader(x[:cut], y[:cut], 32), nn.MSELoss(), opt, 6, val)


def cnn_plateau_scheduler() -> vd.Findings:
    """The CNN with dropout and batch norm, SGD, ReduceLROnPlateau on the validation loss,
    model.eval() for validation and model.train() after it."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    train_loader = loader(xtr, ytr, 64)
    model = _CNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    session = vd.watch(model, loader=train_loader)
    for _ in range(5):
        model.train()
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        v_loss, v_acc = evaluate(model, *val, F.cross_entropy, acc)
        sched.step(v_loss)
        session.log(val_loss=v_loss, val_acc=v_acc)
    return finish(session)


class _Bag(nn.Module):
    def __init__(self, vocab: int = 50) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, 16, mode="mean")
        self.fc = nn.Linear(16, 2)

    def forward(self, tokens):
        return self.fc(self.bag(tokens))


def embedding_bag_text() -> vd.Findings:
    """A bag-of-embeddings text classifier: 'documents' are token ids whose topic decides
    which words are frequent."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    topic = rng.integers(0, 2, size=1000)
    p0 = np.r_[np.full(25, 3.0), np.full(25, 1.0)]
    p0 /= p0.sum()
    p1 = p0[::-1].copy()
    docs = np.stack([rng.choice(50, size=20, p=p1 if c else p0) for c in topic])
    xtr, xte, ytr, yte = split(docs.astype(np.int64), topic.astype(np.int64))
    model = _Bag()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, loader(xtr, ytr, 32), nn.CrossEntropyLoss(), opt, 6, val, acc)


CONTROLS = [
    Control("cnn-digits-steplr", cnn_digits_steplr,
            "CNN with batch norm and dropout, mini-batch, Adam, StepLR per epoch"),
    Control("cnn-channels-last", cnn_channels_last,
            "the same CNN in channels-last memory (model and batches), Adam"),
    Control("mlp-breast-cancer-binary", mlp_breast_cancer_binary,
            "MLP on a table, binary, BCEWithLogitsLoss, check_dataset first"),
    Control("regression-full-batch-loader", regression_full_batch_loader,
            "regression MLP, full batch through a DataLoader, 200 epochs"),
    Control("wine-full-batch-tensors", wine_full_batch_tensors,
            "3-class table, full batch from tensors (no loader), SGD momentum"),
    Control("iris-cosine-schedule", iris_cosine_schedule,
            "iris, mini-batches of 16, CosineAnnealingLR per epoch"),
    Control("multilabel-tags", multilabel_tags, "multi-label (N, 3) targets, BCEWithLogitsLoss"),
    Control("gru-sequence-classifier", gru_sequence_classifier, "GRU sequence classifier"),
    Control("tiny-transformer-tokens", tiny_transformer_tokens,
            "2-layer Transformer encoder on tokens, AdamW, warm-up per batch, clipping"),
    Control("autoencoder-digits", autoencoder_digits,
            "convolutional autoencoder, (image, image) pairs, MSE"),
    Control("logistic-regression-onecycle", logistic_regression_onecycle,
            "linear softmax classifier, OneCycleLR per batch"),
    Control("lstm-forecast-next-value", lstm_forecast_next_value,
            "LSTM forecasting regression, time-ordered split"),
    Control("cnn-plateau-scheduler", cnn_plateau_scheduler,
            "CNN, SGD, ReduceLROnPlateau on val_loss, eval/train switching"),
    Control("embedding-bag-text", embedding_bag_text, "EmbeddingBag text classifier"),
]
