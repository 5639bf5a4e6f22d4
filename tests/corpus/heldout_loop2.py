"""Held-out real faults, second round (see ``heldout_faults2.py``): the loop and the model's
inner wiring: a dialogue seq2seq whose evaluation leaves eval mode on, a one-cycle schedule
stepped once per epoch, a VQGAN-like discriminator never zeroed, attention pooling
normalised over the batch, and DLRM's bias initialisation killing the top ReLU. Each from
a public report, with its fixed twin; ``fixed=False`` runs the code as reported, ``True``
the fix."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Fault
from ._data import digits_std, tabular_std
from ._loop import acc, finish, fit


def _loader(*arrays, batch_size: int = 32, shuffle: bool = True) -> DataLoader:
    ds = TensorDataset(*(torch.as_tensor(a) for a in arrays))
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle,
                      generator=torch.Generator().manual_seed(0))


# == evaluation that leaves the model in eval mode ===========================================
class _Seq2Seq(nn.Module):
    """A GRU encoder-decoder with dropout (the MMD model's shape, text only)."""

    def __init__(self, vocab: int = 20, hidden: int = 48) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 24)
        self.encoder = nn.GRU(24, hidden, batch_first=True)
        self.dropout = nn.Dropout(0.3)
        self.decoder = nn.GRU(24, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, src, tgt_in):
        _, h = self.encoder(self.dropout(self.embed(src)))
        dec, _ = self.decoder(self.dropout(self.embed(tgt_in)), h)
        return self.out(self.dropout(dec))  # (batch, seq, vocab)


def _reversal(n: int, length: int, seed: int):
    """Utterances of tokens 2..19 and their responses: the utterance reversed; the decoder
    reads the response shifted right behind a start token (1)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(2, 20, (n, length))
    tgt = src[:, ::-1].copy()
    tgt_in = np.concatenate([np.ones((n, 1), np.int64), tgt[:, :-1]], axis=1)
    return src.astype(np.int64), tgt_in.astype(np.int64), tgt.astype(np.int64)


# Source: https://github.com/shubhamagarwal92/mmd/issues/14
#   "model.eval() in train.py": "In train.py method evaluate, I find you use model.eval()
#   to disable dropout. However, after evaluate, I didn't find model.train() to enable
#   dropout. It seems that once evaluate called, dropout will be disabled"; a commenter:
#   "after evaluate function in train.py line 132, add model.train() ... it works fine".
#   Ported: a GRU seq2seq with dropout answering by reversal, validated every epoch.
def evaluate_leaves_eval_mode(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    src, tgt_in, tgt = _reversal(1024, 5, seed=0)
    vsrc, vin, vtgt = (torch.as_tensor(a) for a in _reversal(256, 5, seed=1))
    model = _Seq2Seq()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    train = _loader(src, tgt_in, tgt)
    session = vd.watch(model, loader=train)

    def evaluate() -> None:
        model.eval()  # the reported evaluate(): no model.train() afterwards
        with torch.no_grad():
            out = model(vsrc, vin)
            session.log(val_loss=float(F.cross_entropy(out.transpose(1, 2), vtgt)),
                        val_acc=float((out.argmax(-1) == vtgt).float().mean()))

    model.train()
    for _epoch in range(6):
        for s, ti, t in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(s, ti).transpose(1, 2), t)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        evaluate()
        if fixed:
            model.train()  # the fix: back to training mode after evaluate()
    return finish(session)


# == a one-cycle schedule stepped once per epoch =============================================
# Source: https://github.com/ageron/handson-mlp/issues/28
#   "[bug] OneCycleLR scheduler should be called after every batch": the solution builds
#   `OneCycleLR(optimizer, epochs=n_epochs, steps_per_epoch=len(train_loader), max_lr=1e-2)`
#   but train_with_early_stopping() "calls scheduler.step() at the end of every epoch",
#   while the documentation says it must be stepped after every batch (pytorch/pytorch#65417:
#   "only a fraction of the schedule is followed"). Ported: a digits MLP, NAdam, 8 epochs.
def one_cycle_stepped_per_epoch(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    xtr, xte = xtr.reshape(len(xtr), -1), xte.reshape(len(xte), -1)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.NAdam(model.parameters(), lr=1e-3)
    train = _loader(xtr, ytr, batch_size=64)
    epochs = 8
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, epochs=epochs, max_lr=1e-2,
                                                steps_per_epoch=len(train))
    vx, vy = torch.as_tensor(xte), torch.as_tensor(yte)
    session = vd.watch(model, loader=train)
    for _epoch in range(epochs):
        model.train()
        for xb, yb in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            if fixed:
                sched.step()
            session.log(loss=loss)
        if not fixed:
            sched.step()  # the reported place: once per epoch
        model.eval()
        with torch.no_grad():
            out = model(vx)
        session.log(val_loss=float(F.cross_entropy(out, vy)), val_acc=acc(out, vy))
    return finish(session)


# == a discriminator whose optimizer is never zeroed ========================================
# Source: https://github.com/Project-MONAI/GenerativeModels/issues/102
#   "Missing zero_grad in the VQGAN tutorial": "it is missing the zero_grad for the
#   discriminator optimizer" (2d_vqgan_tutorial.py: the generator's optimizer is zeroed
#   every step, optimizer_d never); fixed by adding optimizer_d.zero_grad(set_to_none=True).
#   Ported: an autoencoder with an adversarial term on digits rows and a patch-free MLP
#   discriminator, trained as the tutorial does (generator step, then discriminator step).
def discriminator_never_zeroed(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, _, _, _ = digits_std()
    x = xtr.reshape(len(xtr), -1)
    gen = nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 64))
    disc = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    model = nn.ModuleDict({"generator": gen, "discriminator": disc})
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=5e-4)
    train = _loader(x, batch_size=32)
    session = vd.watch(model, loader=train)
    for _epoch in range(4):
        for (images,) in train:
            opt_g.zero_grad(set_to_none=True)
            recon = gen(images)
            adv = F.binary_cross_entropy_with_logits(disc(recon), torch.ones(len(images), 1))
            loss_g = F.l1_loss(recon, images) + 0.01 * adv
            loss_g.backward()
            opt_g.step()
            if fixed:
                opt_d.zero_grad(set_to_none=True)  # the fix
            logits_fake = disc(recon.detach())
            logits_real = disc(images)
            loss_d = 0.5 * (F.binary_cross_entropy_with_logits(logits_fake, torch.zeros_like(logits_fake))
                            + F.binary_cross_entropy_with_logits(logits_real, torch.ones_like(logits_real)))
            loss_d.backward()
            opt_d.step()
            session.log(loss=loss_g, d_loss=loss_d)
    return finish(session)


# == attention pooling normalised over the batch ============================================
class _AttentionPool(nn.Module):
    """PyTorch-NLP's Attention (dot): scores of a query against each context position,
    softmax-normalised, then the weighted mean of the context."""

    def __init__(self, dim: int, over_batch: bool) -> None:
        super().__init__()
        self.query = nn.Parameter(torch.randn(dim) / dim ** 0.5)
        self.over_batch = over_batch

    def forward(self, context):  # (batch, seq, dim)
        scores = context @ self.query  # (batch, seq)
        weights = F.softmax(scores, dim=0 if self.over_batch else -1)  # the report: dims=0
        return (weights.unsqueeze(-1) * context).sum(1)


class _AttnClassifier(nn.Module):
    def __init__(self, over_batch: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 32)
        self.rnn = nn.GRU(32, 32, batch_first=True)
        self.attention = _AttentionPool(32, over_batch)
        self.head = nn.Linear(32, 2)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.head(self.attention(h))


# Source: https://github.com/PetrochukM/PyTorch-NLP/issues/2
#   "Attention's softmax dimension is wrong?": "the weights computed by nn.Attention is
#   always 1 ... I check the code found that the nn.Softmax(dims=0) ... does softmax along
#   the first dimension ... But the first dimension is batch_size * output_len ... it should
#   do it along last dims"; "I changed it to nn.Softmax(dims=-1) ... it worked". Ported: a
#   GRU text classifier with dot attention pooling on a bigram task.
def attention_softmax_over_batch(fixed: bool) -> vd.Findings:
    from .heldout_faults import _token_docs

    torch.manual_seed(0)
    x, y = _token_docs(768, 24, 40, seed=0)
    vx, vy = _token_docs(192, 24, 40, seed=1)
    model = _AttnClassifier(over_batch=not fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(vx), torch.as_tensor(vy))
    return fit(model, _loader(x, y), nn.CrossEntropyLoss(), opt, 5, val, acc)


# == DLRM's bias initialisation killing the top ReLU =========================================
def _dlrm_mlp(sizes: list[int], zero_bias: bool, rng: np.random.Generator) -> nn.Sequential:
    """dlrm_s_pytorch.py's create_mlp: W ~ N(0, sqrt(2/(m+n))), b ~ N(0, sqrt(1/m)), a ReLU
    after every layer (no sigmoid layer: the benchmark's configuration)."""
    layers: list[nn.Module] = []
    for n, m in zip(sizes[:-1], sizes[1:]):
        lin = nn.Linear(n, m)
        w = rng.normal(0.0, np.sqrt(2 / (m + n)), (m, n))
        b = np.zeros(m) if zero_bias else rng.normal(0.0, np.sqrt(1 / m), m)
        with torch.no_grad():
            lin.weight.copy_(torch.as_tensor(w))
            lin.bias.copy_(torch.as_tensor(b))
        layers += [lin, nn.ReLU()]
    return nn.Sequential(*layers)


class _DLRM(nn.Module):
    def __init__(self, zero_bias: bool, seed: int) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        self.bottom = _dlrm_mlp([30, 32, 16], zero_bias, rng)
        self.top = _dlrm_mlp([16, 16, 1], zero_bias, rng)

    def forward(self, dense):
        return self.top(self.bottom(dense))


# Source: https://github.com/facebookresearch/dlrm/pull/358
#   "switched bias initialization to initialize to zeros ...: As set before, the bias may
#   be initialized to a large negative value, leading to a negative input to Relu. This
#   prevents any training, as all derivatives are zero afterward" (pytorch/benchmark#1927:
#   the dlrm model's output was all 0 with `grad_fn=<ReluBackward0>` and "derivative with
#   respect to first linear layer: tensor([[0., 0., ...") . Ported: DLRM's MLPs on a click
#   table (breast-cancer rows, MSE on 0/1 as DLRM's default loss); the top layer's bias
#   draws -1.9 as in the report.
def dlrm_bias_kills_top_relu(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    model = _DLRM(zero_bias=fixed, seed=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ytr_f, yte_f = ytr.astype(np.float32)[:, None], yte.astype(np.float32)[:, None]
    val = (torch.as_tensor(xte), torch.as_tensor(yte_f))
    return fit(model, _loader(xtr, ytr_f), nn.MSELoss(), opt, 5, val)


LOOP_FAULTS: list[Fault] = [
    Fault("heldout2/evaluate-leaves-eval-mode", evaluate_leaves_eval_mode, "train-eval-mode",
          None, "github.com/shubhamagarwal92/mmd/issues/14"),
    Fault("heldout2/one-cycle-stepped-per-epoch", one_cycle_stepped_per_epoch,
          "lr-schedule-stalled", None, "github.com/ageron/handson-mlp/issues/28"),
    Fault("heldout2/discriminator-never-zeroed", discriminator_never_zeroed,
          "missing-zero-grad", "discriminator",
          "github.com/Project-MONAI/GenerativeModels/issues/102"),
    Fault("heldout2/attention-softmax-over-batch", attention_softmax_over_batch,
          "axis-order", "attention", "github.com/PetrochukM/PyTorch-NLP/issues/2"),
    Fault("heldout2/dlrm-bias-kills-top-relu", dlrm_bias_kills_top_relu, "dead-units", "top",
          "github.com/facebookresearch/dlrm/pull/358"),
]
