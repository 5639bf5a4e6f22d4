"""Checks a sampled step makes about the optimizer and the loss's graph: gradients left
from the previous step, tensors trained by nobody, a loss without a graph, NaN targets,
the learning rate of each group."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import vizdebug as vd


def _loop(model, opt, *, steps=60, zero="before", accumulate=1, every="auto", item=False,
          target=None):
    session = vd.watch(model, every=every)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(steps):
            x = torch.randn(32, 10)
            y = torch.randint(0, 3, (32,)) if target is None else target(i)
            out = model(x)
            loss = (nn.functional.cross_entropy(out, y) if target is None
                    else nn.functional.mse_loss(out.squeeze(1), y))
            if item:
                loss = torch.tensor(loss.item(), requires_grad=True)
            if zero == "before":
                opt.zero_grad()
            loss.backward()
            if (i + 1) % accumulate == 0:
                opt.step()
                if zero == "after":
                    opt.zero_grad()
            session.log(loss=loss)
    found = session.findings()
    session.close()
    return found


def _mlp(out: int = 3) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, out))


@pytest.mark.parametrize("every", [1, "auto"])
def test_a_missing_zero_grad_is_named_and_gradient_accumulation_is_not(every):
    model = _mlp()
    found = _loop(model, torch.optim.SGD(model.parameters(), 0.01), zero=None, every=every)
    assert "missing-zero-grad" in found.codes
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), 0.01)
    assert _loop(model, opt, zero="after", accumulate=3, every=every).codes == []


class PlainList(nn.Module):
    def __init__(self, registered: bool) -> None:
        super().__init__()
        self.inp, self.out = nn.Linear(10, 16), nn.Linear(16, 3)
        blocks = [nn.Linear(16, 16)]
        self.blocks = nn.ModuleList(blocks) if registered else blocks

    def forward(self, x):
        return self.out(self.blocks[0](self.inp(x).relu()).relu())


def test_modules_in_a_plain_list_are_named_unless_the_optimizer_holds_them():
    torch.manual_seed(0)
    model = PlainList(registered=False)
    found = _loop(model, torch.optim.Adam(model.parameters(), 1e-2))
    assert [(f.code, f.severity) for f in found] == [("parameters-not-updated", "warning")]
    torch.manual_seed(0)
    model = PlainList(registered=False)
    extra = list(model.blocks[0].parameters())
    assert _loop(model, torch.optim.Adam([*model.parameters(), *extra], 1e-2)) == []
    torch.manual_seed(0)
    model = PlainList(registered=True)
    assert _loop(model, torch.optim.Adam(model.parameters(), 1e-2)) == []


def test_a_loss_rebuilt_from_a_number_is_named():
    model = _mlp()
    found = _loop(model, torch.optim.Adam(model.parameters(), 1e-2), item=True)
    assert "zero-gradients" in found.codes
    assert found[found.codes.index("zero-gradients")].severity == "error"


def test_nan_targets_are_named_at_the_loss():
    model = _mlp(out=1)

    def target(i):
        y = torch.randn(32)
        y[3] = float("nan")
        return y

    found = _loop(model, torch.optim.Adam(model.parameters(), 1e-3), target=target, steps=5,
                  every=1)
    assert found.codes[0] == "input-nonfinite" and "mse_loss" in found[0].message


def test_the_learning_rate_of_each_group_is_traced_and_a_collapse_named(tmp_path):
    model = _mlp()
    opt = torch.optim.SGD([{"params": model[0].parameters()},
                           {"params": model[2].parameters(), "lr": 0.05}], lr=0.1)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.8)  # meant per epoch
    session = vd.watch(model, every=5, store=tmp_path / "run.vdrun")
    for _ in range(200):
        loss = nn.functional.cross_entropy(model(torch.randn(16, 10)), torch.randint(0, 3, (16,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()  # per batch: the rate is ~0 after 40 steps
        session.log(loss=loss)
    rec = session.records()
    assert set(rec.scalars) >= {"lr/group0", "lr/group1"}
    steps, lr = rec.scalars["lr/group1"]
    # each sample's rate is the scheduler's: 0.8 per step between two samples
    assert lr[1:] / lr[:-1] == pytest.approx(0.8 ** (steps[1:] - steps[:-1]))
    live = session.findings()
    assert "lr-schedule-collapse" in live.codes
    session.close()
    # the stored run holds the same trace and says the same
    stored = vd.open_run(tmp_path / "run.vdrun")
    for name in ("lr/group0", "lr/group1"):
        np.testing.assert_array_equal(stored.records().scalars[name][0], rec.scalars[name][0])
        np.testing.assert_allclose(stored.records().scalars[name][1], rec.scalars[name][1])
    # ... in its records, not among what the program logged (as live)
    assert set(stored.scalars()["name"]) == set(session.scalars()["name"]) == {"loss"}
    assert [f for f in stored.findings() if f.code == "lr-schedule-collapse"] == [
        f for f in live if f.code == "lr-schedule-collapse"]


@pytest.mark.parametrize(("layers", "expected"), [
    ([nn.Dropout(0.2)], ["train-eval-mode"]),
    ([], []),  # eval() changes nothing in a model without dropout or normalisation
])
def test_training_steps_taken_in_eval_mode_are_named_where_it_matters(layers, expected):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), *layers, nn.Linear(32, 3))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    session = vd.watch(model, every=1)
    for i in range(20):
        if i == 5:
            model.eval()  # a validate() that never switches back
        loss = nn.functional.cross_entropy(model(torch.randn(16, 10)), torch.randint(0, 3, (16,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert session.findings().codes == expected
    session.close()
