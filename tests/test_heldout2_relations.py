"""The relations the second held-out round named (tests/corpus/heldout_faults2.py): a
softmax over the batch inside a module's forward, a class loss that counts the input's
padding, and a discriminator never zeroed inside one watched model. Each with the working
variant that must stay quiet."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import vizdebug as vd


def _loud(findings, code: str) -> list:
    return [f for f in findings if f.code == code and f.severity in ("warning", "error")]


class _Pool(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.score = nn.Linear(8, 1)

    def forward(self, h):  # (batch, seq, 8)
        weights = F.softmax(self.score(h).squeeze(-1), dim=self.dim)
        return (weights.unsqueeze(-1) * h).sum(1)


class _Net(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 8)
        self.pool = _Pool(dim)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.pool(self.proj(x)))


def _train(model, loader, steps: int = 6, loss_fn=None) -> vd.Findings:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = loss_fn or (lambda out, y: F.cross_entropy(out, y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = vd.watch(model, loader=loader, every=1)
        for i, (x, y) in enumerate(loader):
            if i >= steps:
                break
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        found = session.findings()
        session.close()
    return found


def _loader(x, y, batch_size: int = 16):
    ds = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size)


@pytest.mark.parametrize(("dim", "named"), [(0, True), (-1, False)])
def test_softmax_over_the_batch_inside_forward(dim, named):
    torch.manual_seed(0)
    loader = _loader(torch.randn(96, 10, 4), torch.randint(0, 3, (96,)))
    found = _loud(_train(_Net(dim), loader), "axis-order")
    assert bool(found) is named
    if named:
        assert found[0].where == "pool" and "axis 0" in found[0].message


def test_softmax_over_a_batch_long_sequence_says_nothing():
    torch.manual_seed(0)  # seq == batch: which axis is the batch cannot be told
    loader = _loader(torch.randn(64, 16, 4), torch.randint(0, 3, (64,)))
    assert not _loud(_train(_Net(0), loader), "axis-order")


class _Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(12, 8)
        self.out = nn.Linear(8, 12)

    def forward(self, tokens):
        return self.out(self.embed(tokens)).transpose(1, 2)  # (batch, classes, seq)


def _padded(n: int = 64, length: int = 12):
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(1, 12, (n, length), generator=g)
    for i, size in enumerate(torch.randint(3, length - 2, (n,), generator=g).tolist()):
        tokens[i, size:] = 0
    return tokens


@pytest.mark.parametrize(("loss_kwargs", "named"), [
    ({}, True), ({"ignore_index": 0}, False)])
def test_padding_counted_by_the_loss(loss_kwargs, named):
    torch.manual_seed(0)
    tokens = _padded()
    loader = _loader(tokens[:, :-1], tokens[:, 1:])
    found = _train(_Tagger(), loader,
                   loss_fn=lambda out, y: F.cross_entropy(out, y, **loss_kwargs))
    assert bool(_loud(found, "padding-in-loss")) is named


def test_targets_ending_in_one_class_without_padding_say_nothing():
    torch.manual_seed(0)  # a tagger whose sentences end in class 0: the input is no padding
    tokens = torch.randint(1, 12, (64, 12))
    labels = _padded()
    found = _train(_Tagger(), _loader(tokens, labels))
    assert not _loud(found, "padding-in-loss")


@pytest.mark.parametrize("fixed", [False, True])
def test_discriminator_never_zeroed_in_one_watched_model(fixed):
    torch.manual_seed(0)
    gen, disc = nn.Sequential(nn.Linear(8, 8)), nn.Sequential(nn.Linear(8, 4), nn.ReLU(),
                                                               nn.Linear(4, 1))
    model = nn.ModuleDict({"generator": gen, "discriminator": disc})
    opt_g, opt_d = torch.optim.Adam(gen.parameters()), torch.optim.Adam(disc.parameters())
    x = torch.randn(256, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = vd.watch(model, every=1)
        for i in range(12):
            real = x[i * 16:(i + 1) * 16]
            opt_g.zero_grad()
            fake = gen(real)
            (F.l1_loss(fake, real) + 0.1 * disc(fake).mean()).backward()
            opt_g.step()
            if fixed:
                opt_d.zero_grad()
            (disc(fake.detach()).mean() - disc(real).mean()).backward()
            opt_d.step()
            session.log(loss=F.l1_loss(fake, real))
        found = session.findings()
        session.close()
    stale = _loud(found, "missing-zero-grad")
    assert bool(stale) is not fixed
    if stale:
        assert stale[0].where.startswith("discriminator")
