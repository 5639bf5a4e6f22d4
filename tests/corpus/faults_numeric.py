"""Faults that show in the numbers of training: losses and activations that go NaN,
gradients that vanish or explode, units that die, curves that never fall or that part
ways with validation, loops that wait for their data."""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

import vizdebug as vd

from . import Fault
from ._data import digits_std, loader, regression, sequences, tabular, tabular_std
from ._loop import acc, binary_acc, finish, fit


def _digits(n_train: int | None = None):
    xtr, xte, ytr, yte = digits_std(n_train)
    return xtr, ytr, (torch.as_tensor(xte), torch.as_tensor(yte))


def _mlp(width: int = 64, act: type[nn.Module] = nn.ReLU, depth: int = 1) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Flatten()]
    sizes = [64] + [width] * depth
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), act()]
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


# Source: https://github.com/karpathy/nanoGPT/issues/136
#   "Loss becomes nan after training for ~2000 iterations"; the fix suggested and confirmed
#   by the reporter: "Try reducing learning rate" ("Confirming this works"). The same with
#   a denoising regressor in PENGLU-WashU/IMC_Denoise#11 (a Keras program: initial learning
#   rate 1, "Please set train_initial_lr as 1e-3"). Ported: an MSE regressor with SGD.
def learning_rate_too_high(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = regression()
    ytr, yte = ytr[:, None], yte[:, None]
    model = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 1))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2 if fixed else 1.0, momentum=0.9)
    return fit(model, loader(xtr, ytr, 32), nn.MSELoss(), opt, 8, val)


# Source: https://github.com/ratschlab/DeepSpot/issues/9
#   "Train loss: nan" for every epoch; maintainer: "It looks like you have nans in your
#   input ... likely from empty cells/spots". (Nixtla/neuralforecast#186, "silent bug,
#   training with NaNs values": "it is hard to notice that the problem is in the data".)
#   Ported: a table read with empty cells (NaN) in one column; fix: impute them.
def nan_in_input_table(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular("breast_cancer")
    rng = np.random.default_rng(0)
    holes = rng.random(len(xtr)) < 0.04
    xtr = xtr.copy()
    xtr[holes, 3] = np.nan  # empty cells in the CSV
    if fixed:
        xtr[holes, 3] = np.nanmedian(xtr[:, 3])
    mean, std = np.nanmean(xtr, 0), np.nanstd(xtr, 0)
    xtr, xte = (xtr - mean) / std, (xte - mean) / std
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1))
    ytr_f, yte_f = ytr.astype("float32")[:, None], yte.astype("float32")[:, None]
    val = (torch.as_tensor(xte.astype("float32")), torch.as_tensor(yte_f))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return fit(model, loader(xtr.astype("float32"), ytr_f, 32), nn.BCEWithLogitsLoss(), opt,
               10, val, binary_acc)


# Source: https://github.com/Nixtla/neuralforecast/issues/186
#   "silent bug, training with NaNs values": with missing values in the `y` column "the
#   loss becomes `nan` during training but it is hard to notice that the problem is in the
#   data". Ported: a regression whose target column has empty cells; fix: drop those rows.
def nan_in_targets(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = regression()
    rng = np.random.default_rng(1)
    ytr = ytr.copy()
    ytr[rng.random(len(ytr)) < 0.03] = np.nan  # missing target values
    if fixed:
        keep = np.isfinite(ytr)
        xtr, ytr = xtr[keep], ytr[keep]
    ytr, yte = ytr[:, None], yte[:, None]
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, loader(xtr, ytr, 32), nn.MSELoss(), opt, 8, val)


# Source: https://github.com/skorch-dev/skorch/issues/481
#   "torch.log(y_pred) in NeuralNetClassifier.get_loss may cause NaN": with softmax outputs
#   and Adam/RMSprop or another learning rate the MNIST example went NaN; "extreme values
#   (close to 1 or 0) in y_pred after softmax ... resulted in torch.log(y_pred) yielding
#   -inf". Fix: log_softmax (or an epsilon).
def log_of_softmax_underflow(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _mlp()

    def loss_fn(logits, y):
        if fixed:
            return F.nll_loss(F.log_softmax(logits, dim=1), y)
        return F.nll_loss(torch.log(F.softmax(logits, dim=1)), y)

    opt = torch.optim.RMSprop(model.parameters(), lr=0.05)
    return fit(model, loader(xtr, ytr, 64), loss_fn, opt, 8, val, acc)


# Source: https://github.com/allenai/allennlp-as-a-library-example/issues/8
#   "Tests are failing": "the activations going into the relu are all negative, and so the
#   gradient gets zeroed out" (fixed by changing the activation). The same dead-ReLU state,
#   reached by training, in discuss.pytorch.org/t/cross-entropy-loss-is-not-decreasing/43814:
#   loss stuck at 2.30, "parameters ... almost all negative, and their derivatives are all
#   zero"; the fix there: a smaller learning rate.
def dead_relu_after_large_step(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _mlp(width=32, depth=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.01 if fixed else 0.6, momentum=0.9)
    return fit(model, loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 8, val, acc)


# Source: https://github.com/goodfire-ai/spd/issues/87
#   "Fix loss spikes": "we're seeing a lot of loss spikes. We should see if reducing the
#   learning rate fixes this"; then: "A smaller learning rate at least reduces the spikes".
#   Ported: Adam at a learning rate far too high for small batches, and the lower one.
def adam_learning_rate_spikes(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _mlp(width=64, depth=2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3 if fixed else 3e-2)
    return fit(model, loader(xtr, ytr, 16), nn.CrossEntropyLoss(), opt, 3, val, acc)


class _SeqRegressor(nn.Module):
    def __init__(self, relu_out: bool) -> None:
        super().__init__()
        self.lstm = nn.LSTM(1, 16, batch_first=True)
        self.fc = nn.Linear(16, 1)
        self.out = nn.ReLU() if relu_out else nn.Identity()

    def forward(self, x):
        h, _ = self.lstm(x)
        return self.out(self.fc(h[:, -1]))


# Source: https://github.com/ProteomicsML/ProteomicsML/pull/203
#   "Do not use ReLU activation for the final regression layer": the tutorial's LSTM
#   returned "constantly 0 for all peptides in validation set"; the pre-ReLU output can be
#   always negative, which zeroes the gradient (the PR does not say which framework the
#   tutorial uses; the fault is the same in PyTorch). Ported: an LSTM regressor whose
#   standardised targets are negative half the time.
def relu_on_regression_output(fixed: bool) -> vd.Findings:
    torch.manual_seed(1)
    xtr, xte, _, _ = sequences()
    ytr = (xtr[:, -3:, 0].mean(1) * 2 - 0.3)[:, None]  # a standardised-ish target
    yte = (xte[:, -3:, 0].mean(1) * 2 - 0.3)[:, None]
    model = _SeqRegressor(relu_out=not fixed)
    with torch.no_grad():
        model.fc.bias.fill_(-0.5)  # an unlucky start: every pre-ReLU output below zero
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    return fit(model, loader(xtr, ytr, 32), nn.MSELoss(), opt, 8, val)


# Source: https://github.com/phlippe/uvadlc_notebooks/issues/119
#   Tutorial 3 (PyTorch), the MLP with sigmoid activations: its test accuracy is "very
#   poor"; the author: "many continued to fail even after longer trainings. You need to be
#   a bit lucky that the gradients don't cancel each other out too much in the early
#   layers". Fix: ReLU-family activations (the tutorial's other models).
def deep_sigmoid_mlp(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _mlp(width=32, depth=4, act=nn.ReLU if fixed else nn.Sigmoid)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    return fit(model, loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 10, val, acc)


class _RNNClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(1, 32, batch_first=True, nonlinearity="relu")
        self.fc = nn.Linear(32, 2)

    def forward(self, x):
        h, _ = self.rnn(x)
        return self.fc(h[:, -1])


# Source: https://github.com/Marcovaldong/lstmp.pytorch/issues/2
#   "Loss function goes to nan after n number of iterations - might be problem of exploding
#   gradient?"; resolved by the reporter: "To train on long sequences, just clip the
#   gradients to a max norm of 1.0". Ported: a ReLU RNN on long sequences, with and without
#   clip_grad_norm_.
def rnn_exploding_without_clipping(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = sequences(length=40)
    model = _RNNClassifier()
    with torch.no_grad():
        model.rnn.weight_hh_l0.mul_(2.5)  # a recurrent init on the large side
    train_loader = loader(xtr, ytr, 32)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    session = vd.watch(model, loader=train_loader)
    for _ in range(8):
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            if fixed:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(val[0])
            session.log(val_loss=float(F.cross_entropy(out, val[1])), val_acc=acc(out, val[1]))
        model.train()
    return finish(session)


# Source: https://github.com/moein-shariatnia/OpenAI-CLIP/issues/9
#   "Train-Validation Loss": "the validation loss increases and never decreases"; the
#   author: "the used models are rather small and the dataset limited ... the models start
#   overfitting the dataset very soon in the training". Ported: a wide MLP trained long on
#   60 rows of breast-cancer data; the fix is what the author points to, the data (the
#   whole training split), with a training length to match.
def overfitting_small_dataset(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    if not fixed:
        xtr, ytr = xtr[:60], ytr[:60]
    model = nn.Sequential(nn.Linear(30, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 2))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2 if not fixed else 1e-3)
    epochs = 15 if fixed else 100
    return fit(model, loader(xtr, ytr, 32), nn.CrossEntropyLoss(), opt, epochs, val, acc)


# Source: https://github.com/DrexelChatbotGroup/DrexelChatbot/issues/15
#   "Incomplete randomization": gac_training_tests.py "randomizes the order of the x data,
#   but not the y data. This invalidates the required association between them." (fixed; a
#   data bug independent of the framework, ported as a PyTorch program).
def inputs_shuffled_without_labels(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    order = np.random.default_rng(1).permutation(len(xtr))
    xtr = xtr[order]
    if fixed:
        ytr = ytr[order]
    model = _mlp()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 8, val, acc)


class _DecodingDataset(Dataset):
    """Items decoded on every access (the report's per-sample loading work), or once."""

    def __init__(self, x: np.ndarray, y: np.ndarray, cache: bool) -> None:
        self.x, self.y, self.cache = x, y, cache
        self.decoded = [self._decode(i) for i in range(len(x))] if cache else None

    def _decode(self, i: int) -> torch.Tensor:
        time.sleep(0.0012)  # reading and decoding one file
        return torch.as_tensor(self.x[i])

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        x = self.decoded[i] if self.decoded is not None else self._decode(i)
        return x, torch.as_tensor(self.y[i])


# Source: https://github.com/open-edge-platform/geti/pull/5958
#   "Increase num_workers to resolve a problem with starved data loader": "Profiling shows
#   the GPU is idle 70-92% of the time, waiting for data rather than performing
#   computations" (data_time ~0.217 s per batch). Ported to a CPU loop whose per-item
#   decoding dwarfs a tiny model's step; the twin decodes once and keeps the tensors.
def input_bound_loader(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std(n_train=640)
    train_loader = DataLoader(_DecodingDataset(xtr, ytr, cache=fixed), batch_size=32,
                              shuffle=True, generator=torch.Generator().manual_seed(0))
    model = _mlp()
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, train_loader, nn.CrossEntropyLoss(), opt, 3, val, acc)


FAULTS = [
    Fault("learning-rate-too-high", learning_rate_too_high, "nonfinite-loss", "loss",
          "github.com/karpathy/nanoGPT/issues/136"),
    Fault("nan-in-input-table", nan_in_input_table, "input-nonfinite", None,
          "github.com/ratschlab/DeepSpot/issues/9"),
    Fault("nan-in-targets", nan_in_targets, "input-nonfinite", None,
          "github.com/Nixtla/neuralforecast/issues/186"),
    Fault("log-of-softmax-underflow", log_of_softmax_underflow, "nonfinite-loss", "loss",
          "github.com/skorch-dev/skorch/issues/481"),
    Fault("dead-relu-after-large-step", dead_relu_after_large_step, "dead-units", "2",
          "github.com/allenai/allennlp-as-a-library-example/issues/8"),
    Fault("adam-learning-rate-spikes", adam_learning_rate_spikes, "unstable-loss", "loss",
          "github.com/goodfire-ai/spd/issues/87"),
    Fault("relu-on-regression-output", relu_on_regression_output, "loss-output-mismatch",
          None, "github.com/ProteomicsML/ProteomicsML/pull/203"),
    Fault("deep-sigmoid-mlp", deep_sigmoid_mlp, "vanishing-gradients", "1.weight",
          "github.com/phlippe/uvadlc_notebooks/issues/119"),
    Fault("rnn-exploding-without-clipping", rnn_exploding_without_clipping,
          "exploding-gradients", None, "github.com/Marcovaldong/lstmp.pytorch/issues/2"),
    Fault("overfitting-small-dataset", overfitting_small_dataset, "overfitting", "val_loss",
          "github.com/moein-shariatnia/OpenAI-CLIP/issues/9"),
    Fault("inputs-shuffled-without-labels", inputs_shuffled_without_labels, "underfitting",
          "loss", "github.com/DrexelChatbotGroup/DrexelChatbot/issues/15"),
    Fault("input-bound-loader", input_bound_loader, "input-bound", None,
          "github.com/open-edge-platform/geti/pull/5958"),
]
