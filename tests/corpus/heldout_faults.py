"""Held-out real faults: the classic failures in clothes the rest of the corpus does not
wear (a frozen graph encoder's BatchNorm, a pruned model's replaced layers, a restoration
loss rebuilt as a new tensor, a triplet loss's square root at zero, a segmentation net's
NLLLoss on raw scores, a TextCNN convolving the embedding axis). Each from a public report
that is not the source of any other entry, with its fixed twin; ``fixed=False`` runs the
code as reported, ``True`` the fix. They were written and run before any rule was changed
for them (the figure is in README.md); the data programs are in ``heldout_data.py``."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Fault
from ._data import digits, digits_std, tabular_std
from ._loop import acc, finish, fit
from .heldout_data import DATA_FAULTS


def _loader(*arrays, batch_size: int = 32, shuffle: bool = True) -> DataLoader:
    ds = TensorDataset(*(torch.as_tensor(a) for a in arrays))
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle,
                      generator=torch.Generator().manual_seed(0))


# == a frozen encoder's BatchNorm put back in train mode ====================================
class _GraphTransformerLike(nn.Module):
    """gt-pyg's shape, on node-feature rows: an encoder of Linear/BatchNorm1d blocks (the
    part ``freeze()`` freezes) and a task head that is fine-tuned."""

    def __init__(self, keep_frozen_eval: bool) -> None:
        super().__init__()
        self.keep_frozen_eval = keep_frozen_eval
        self.encoder = nn.Sequential(nn.Linear(30, 64), nn.BatchNorm1d(64), nn.ReLU(),
                                     nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU())
        self.head = nn.Linear(64, 2)
        self.frozen: list[nn.Module] = []

    def freeze(self) -> None:
        for p in self.encoder.parameters():
            p.requires_grad = False
        self.frozen = [m for m in self.encoder.modules() if isinstance(m, nn.BatchNorm1d)]
        for m in self.frozen:
            m.eval()

    def train(self, mode: bool = True):
        super().train(mode)
        if self.keep_frozen_eval:  # the fix: frozen BatchNorm stays in eval across train()
            for m in self.frozen:
                m.eval()
        return self

    def forward(self, x):
        return self.head(self.encoder(x))


# Source: https://github.com/pgniewko/gt-pyg/issues/112
#   "`freeze()` BatchNorm eval mode is reset by the next model.train()": freeze() sets
#   requires_grad=False and puts the frozen BatchNorm layers in eval mode, but every
#   training loop calls model.train() once per epoch, so "running_mean / running_var keep
#   updating and are overwritten by the fine-tuning data" and the frozen encoder's outputs
#   no longer match the checkpoint. The fix keeps frozen BatchNorm in eval in train().
#   Ported: an encoder pre-trained on one table, frozen, a head fine-tuned on shifted rows.
def frozen_bn_reset_by_train(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    model = _GraphTransformerLike(keep_frozen_eval=fixed)
    pre = torch.optim.Adam(model.parameters(), lr=1e-3)
    for xb, yb in _loader(xtr, ytr, batch_size=32):  # the checkpoint, not watched
        pre.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        pre.step()
    model.freeze()
    shift = np.random.default_rng(1).normal(0.8, 0.2, 30).astype(np.float32)
    ft_x, va_x = xtr * 1.5 + shift, xte * 1.5 + shift  # the fine-tuning data's own scale
    opt = torch.optim.Adam(model.head.parameters(), lr=1e-2)
    train = _loader(ft_x, ytr, batch_size=32)
    session = vd.watch(model, loader=train)
    for _epoch in range(4):
        model.train()  # the loop's call that undoes freeze()'s eval()
        for xb, yb in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(torch.as_tensor(va_x))
        session.log(val_loss=float(F.cross_entropy(out, torch.as_tensor(yte))),
                    val_acc=acc(out, torch.as_tensor(yte)))
    return finish(session)


# == layers replaced after the optimizer was built ==========================================
class _PrunableCNN(nn.Module):
    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten())
        self.fc1 = nn.Linear(16 * 16, width)
        self.fc = nn.Linear(width, 10)

    def forward(self, x):
        return self.fc(F.relu(self.fc1(self.conv(x))))


def _speedup(model: _PrunableCNN, keep: int) -> None:
    """NNI's ModelSpeedup, shrunk: fc1/fc replaced by smaller layers holding the kept
    (un-masked) units' weights."""
    idx = model.fc1.weight.detach().abs().sum(1).argsort(descending=True)[:keep]
    fc1, fc = nn.Linear(model.fc1.in_features, keep), nn.Linear(keep, 10)
    with torch.no_grad():
        fc1.weight.copy_(model.fc1.weight[idx])
        fc1.bias.copy_(model.fc1.bias[idx])
        fc.weight.copy_(model.fc.weight[:, idx])
        fc.bias.copy_(model.fc.bias)
    model.fc1, model.fc = fc1, fc


# Source: https://github.com/microsoft/nni/issues/4521
#   "The parameters are not updated when the pruned model is finetuned": the maintainer:
#   speedup_model() "will replace the layers in the original model with smaller ones ...
#   So the parameters registered in the optimizer are outdated ... an easy way is
#   reinitializing a new optimizer"; the reporter: "I solved this problem by redefining an
#   optimizer". Ported: a digits CNN, its fc layers pruned to 12 units after the optimizer
#   was built, then fine-tuned.
def optimizer_holds_replaced_layers(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    model = _PrunableCNN()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    train = _loader(xtr, ytr, batch_size=64)
    for xb, yb in train:  # a first epoch before pruning, not watched
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    _speedup(model, keep=12)
    if fixed:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, train, nn.CrossEntropyLoss(), opt, 4, val, acc)


# == a multi-stage restoration loss rebuilt as a new tensor =================================
class _StagedRestorer(nn.Module):
    """DGUNet's shape, shrunk: stages that each refine the image and return it."""

    def __init__(self, stages: int = 3) -> None:
        super().__init__()
        self.stages = nn.ModuleList(
            nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                          nn.Conv2d(16, 1, 3, padding=1)) for _ in range(stages))

    def forward(self, x):
        out = []
        for stage in self.stages:
            x = x + stage(x)
            out.append(x)
        return out[::-1]  # the last stage first, as DGUNet returns them


# Source: https://github.com/MC-E/Deep-Generalized-Unfolding-Networks-for-Image-Restoration/issues/6
#   "About Loss": np.sum over the stages' losses failed on CUDA tensors, so the reporter
#   wrote `loss_char = torch.tensor([criterion_char(restored[j], target) for j in ...],
#   requires_grad=True).sum()` and "found the psnr will not change during training": the
#   new tensor is a leaf, cut from every stage's output. The fix sums the stage losses as
#   tensors (the maintainer: a numpy version issue; torch.stack(...).sum() here).
def loss_rebuilt_as_new_tensor(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, _, _ = digits()
    clean_tr, clean_te = xtr / 16.0, xte / 16.0
    rng = np.random.default_rng(0)
    noisy_tr = (clean_tr + rng.normal(0, 0.3, clean_tr.shape)).astype(np.float32)
    noisy_te = (clean_te + rng.normal(0, 0.3, clean_te.shape)).astype(np.float32)
    model = _StagedRestorer()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    train = _loader(noisy_tr, clean_tr, batch_size=32)
    session = vd.watch(model, loader=train)
    for _epoch in range(3):
        for noisy, target in train:
            restored = model(noisy)
            if fixed:
                loss = torch.stack([F.l1_loss(r, target) for r in restored]).sum()
            else:
                loss = torch.tensor([F.l1_loss(r, target) for r in restored],
                                    requires_grad=True).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
        with torch.no_grad():
            val = F.l1_loss(model(torch.as_tensor(noisy_te))[0], torch.as_tensor(clean_te))
        session.log(val_loss=float(val))
    return finish(session)


# == a triplet distance's square root at zero ================================================
def _triplets(x: np.ndarray, y: np.ndarray, n: int, seed: int):
    """(anchor, positive, negative) rows: the positive another row of the anchor's class,
    or, for one triplet in 25, the anchor itself (what an in-batch miner returns when the
    anchor is its class's only row in the batch)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(x), n)
    p = np.array([rng.choice(np.flatnonzero(y == y[i])) for i in a])
    p = np.where(rng.random(n) < 0.04, a, p)
    neg = np.array([rng.choice(np.flatnonzero(y != y[i])) for i in a])
    return x[a], x[p], x[neg]


# Source: https://github.com/huggingface/sentence-transformers/pull/4033
#   "Keep Euclidean similarity gradients finite at zero distance": "Identical dense
#   embeddings have zero Euclidean distance but produce NaN gradients. Differentiating
#   sqrt(sum(square(difference))) at zero introduces an infinite square-root derivative";
#   the maintainer "verified that identical anchor and positive embeddings can produce NaN
#   gradients in TripletLoss, even when the loss is zero". The fix: torch.linalg.
#   vector_norm (a finite zero subgradient). Ported: a digits embedding net, triplet loss.
def triplet_sqrt_at_zero_distance(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, _, ytr, _ = digits_std()
    xtr = xtr.reshape(len(xtr), -1)
    a, p, n = _triplets(xtr, ytr, 1536, seed=0)
    net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 16))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    train = _loader(a, p, n, batch_size=64)

    def dist(u, v):
        if fixed:
            return torch.linalg.vector_norm(u - v, dim=1)
        return torch.sqrt(((u - v) ** 2).sum(1))  # the reported euclidean distance

    session = vd.watch(net, loader=train)
    for _epoch in range(3):
        for xa, xp, xn in train:
            ea, ep, en = net(xa), net(xp), net(xn)
            loss = F.relu(dist(ea, ep) - dist(ea, en) + 1.0).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
    return finish(session)


# == NLLLoss on a segmentation net's raw scores =============================================
def _stripes(n: int, side: int, seed: int):
    """Images of a bright bar on noise; the mask marks the bar (class 1) or not (0)."""
    rng = np.random.default_rng(seed)
    img = rng.normal(0, 0.3, (n, 1, side, side)).astype(np.float32)
    mask = np.zeros((n, side, side), np.int64)
    for i in range(n):
        r = rng.integers(1, side - 3)
        mask[i, r:r + 3] = 1
        img[i, 0, r:r + 3] += 1.0
    return img, mask


# Source: https://github.com/pytorch/pytorch/pull/12703
#   "Fix missing final activation in NLLLoss second example": the 2-d NLLLoss example fed
#   a convolution's output straight into NLLLoss; "The LogSoftmax activation was missing
#   after the convolution layer. Without this activation, the second example loss was
#   sometimes negative." The fix adds nn.LogSoftmax(dim=1). Ported: a small per-pixel
#   segmentation net trained with NLLLoss on (N, C, H, W) scores and (N, H, W) masks.
def nll_loss_on_raw_conv_scores(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    img, mask = _stripes(384, 12, seed=0)
    layers = [nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 3, padding=1)]
    if fixed:
        layers.append(nn.LogSoftmax(dim=1))
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    vi, vm = _stripes(96, 12, seed=1)
    val = (torch.as_tensor(vi), torch.as_tensor(vm))
    return fit(model, _loader(img, mask, batch_size=32), nn.NLLLoss(), opt, 4, val)


# == a TextCNN convolving across the embedding axis ==========================================
def _token_docs(n: int, length: int, vocab: int, seed: int):
    """Token sequences; class 1 holds the bigram (7, 8) somewhere, class 0 only 7 and 8
    apart, so the class is a local pattern in time."""
    rng = np.random.default_rng(seed)
    x = rng.integers(10, vocab, (n, length))
    y = rng.integers(0, 2, n)
    for i in range(n):
        t = rng.integers(0, length - 1)
        if y[i]:
            x[i, t:t + 2] = (7, 8)
        else:
            x[i, t] = 7
            x[i, (t + length // 2) % length] = 8
    return x.astype(np.int64), y.astype(np.int64)


class _TextCNN(nn.Module):
    def __init__(self, length: int, permute: bool) -> None:
        super().__init__()
        self.permute = permute
        self.embedding = nn.Embedding(40, 16)
        in_ch = 16 if permute else length  # the report: in_channels = the sequence length
        self.conv = nn.Conv1d(in_ch, 32, kernel_size=2)
        self.fc = nn.Linear(32, 2)

    def forward(self, tokens):
        x = self.embedding(tokens)  # (batch, seq, emb)
        if self.permute:
            x = x.permute(0, 2, 1)  # the fix: (batch, emb, seq)
        return self.fc(F.relu(self.conv(x)).amax(dim=2))


# Source: https://github.com/FernandoLpz/Text-Classification-CNN-PyTorch/issues/3
#   "Wrong convolution": the Conv1d layers take the embedded (batch, seq_len, emb) tensor
#   as it is, with in_channels set to the sequence length, so they convolve across the
#   embedding dimensions instead of along the text; "The convolution method in function
#   forward is wrong, x=x.permute(0,2,1)", "accordingly, the in-channel should be
#   embedding size as well". Ported: a TextCNN whose class is a bigram.
def textcnn_conv_over_embedding_axis(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _token_docs(768, 24, 40, seed=0)
    vx, vy = _token_docs(192, 24, 40, seed=1)
    model = _TextCNN(24, permute=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(vx), torch.as_tensor(vy))
    return fit(model, _loader(x, y, batch_size=32), nn.CrossEntropyLoss(), opt, 5, val, acc)


FAULTS: list[Fault] = [
    Fault("heldout/frozen-bn-reset-by-train", frozen_bn_reset_by_train,
          "frozen-batchnorm-training", "encoder", "github.com/pgniewko/gt-pyg/issues/112"),
    Fault("heldout/optimizer-holds-replaced-layers", optimizer_holds_replaced_layers,
          "parameters-not-updated", "fc", "github.com/microsoft/nni/issues/4521"),
    Fault("heldout/loss-rebuilt-as-new-tensor", loss_rebuilt_as_new_tensor,
          "zero-gradients", None,
          "github.com/MC-E/Deep-Generalized-Unfolding-Networks-for-Image-Restoration/issues/6"),
    Fault("heldout/triplet-sqrt-at-zero-distance", triplet_sqrt_at_zero_distance,
          "nonfinite-loss", None, "github.com/huggingface/sentence-transformers/pull/4033"),
    Fault("heldout/nll-loss-on-raw-conv-scores", nll_loss_on_raw_conv_scores,
          "loss-output-mismatch", "nll_loss", "github.com/pytorch/pytorch/pull/12703"),
    Fault("heldout/textcnn-conv-over-embedding-axis", textcnn_conv_over_embedding_axis,
          "axis-order", "conv",
          "github.com/FernandoLpz/Text-Classification-CNN-PyTorch/issues/3"),
    *DATA_FAULTS,
]
