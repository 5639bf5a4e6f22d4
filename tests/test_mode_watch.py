"""Forward passes between training epochs (vizdebug.collect.checks.mode_watch): validation made
in train mode, dropout that eval() cannot reach; and nothing on the deliberate patterns
that look alike (Monte Carlo dropout after training, a pseudo-labelling pass inside a step,
a model whose layers do not care about the mode)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import vizdebug as vd

X = torch.randn(96, 10, generator=torch.Generator().manual_seed(1))
Y = (X[:, 0] > 0).long()
XV = torch.randn(40, 10, generator=torch.Generator().manual_seed(2))


class Net(nn.Module):
    def __init__(self, dropout: str = "module", norm: bool = True) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 16), nn.BatchNorm1d(16) if norm else nn.Identity(),
                                  nn.ReLU())
        self.kind = dropout
        self.drop = nn.Dropout(0.3 if dropout != "none" else 0.0)
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        h = self.body(x)
        if self.kind == "functional":
            h = F.dropout(h, 0.3, training=True)
        elif self.kind == "built":
            h = nn.Dropout(0.3)(h)
        else:
            h = self.drop(h)
        return self.head(h)


def _run(model, *, validate="eval", pseudo=False, mc_after=False, watch=True, epochs=3):
    """Train ``epochs`` epochs on a watched loader; validate after each; the validation
    outputs and the findings (``None`` unwatched)."""
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=16)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    session = vd.watch(model, loader=loader) if watch else None
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(epochs):
            model.train()
            for xb, yb in loader:
                if pseudo:  # a no-grad pass in train mode inside the step (not evaluation)
                    with torch.no_grad():
                        model(xb)
                opt.zero_grad()
                F.cross_entropy(model(xb), yb).backward()
                opt.step()
            if validate == "eval":
                model.eval()
            with torch.no_grad():
                outs.append(model(XV))
        if mc_after:  # Monte Carlo dropout once training is over: deliberate
            model.train()
            with torch.no_grad():
                outs += [model(XV) for _ in range(3)]
    found = session.findings() if session is not None else None
    if session is not None:
        session.close()
    return outs, found


def _mode_findings(found):
    return [f for f in found if f.code == "train-eval-mode"]


def test_validation_in_train_mode_is_named_and_its_twins_are_not():
    _, found = _run(Net(), validate="train")
    (f,) = _mode_findings(found)
    assert f.severity == "warning" and f.where == "Net" and "BatchNorm1d" in f.message
    assert _mode_findings(_run(Net(), validate="eval")[1]) == []
    # layers that compute the same in both modes: a no-grad pass in train mode is harmless
    assert _mode_findings(_run(Net("none", norm=False), validate="train")[1]) == []
    # a no-grad pass inside each step (pseudo-labels) and MC dropout after training
    assert _mode_findings(_run(Net(), pseudo=True, mc_after=True)[1]) == []


@pytest.mark.parametrize("kind", ["functional", "built"])
def test_dropout_that_eval_cannot_reach_is_named_at_its_module(kind):
    _, found = _run(Net(kind), validate="eval")
    (f,) = _mode_findings(found)
    assert f.where == "Net" and "training=True" in f.message and "p=0.3" in f.message
    assert vd.findings.evidence_target(f) == {"kind": "layer", "name": "Net", "indices": []}


def test_watching_between_epochs_changes_no_output_and_costs_no_training_step():
    torch.manual_seed(3)
    a = Net("functional")
    b = Net("functional")
    b.load_state_dict(a.state_dict())
    outs_a, _ = _run(a, validate="train", watch=False)
    outs_b, _ = _run(b, validate="train")
    assert all(torch.equal(p, q) for p, q in zip(outs_a, outs_b))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    model = Net()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=48)
    session = vd.watch(model, loader=loader)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for i, (xb, yb) in enumerate(loader):  # the optimizer counts: no root hook between samples
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        if i == 0:
            assert not session.modes.handles
    assert session.modes.handles  # the epoch ended: armed until training resumes
    model(X[:16]).sum().backward()
    assert not session.modes.handles
    session.close()


def test_a_transformer_is_not_probed_so_its_fast_path_stays():
    torch.manual_seed(0)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, 0.1, batch_first=True), 1,
                                  enable_nested_tensor=False)
    x = torch.randn(4, 5, 16)
    model.eval()
    with torch.no_grad():
        before = model(x)
    session = vd.watch(model)
    session.modes.arm()  # as at the end of an epoch
    with torch.no_grad():
        after = model(x)
    assert session.modes.probed == 0
    session.close()
    assert torch.equal(before, after)
