"""Rules about parameters: exactly-zero gradients, parameters that never change, and
absent gradients that must not read as non-finite."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

import vizdebug as vd
from vizdebug.analysis.training.diagnose import diagnose, rule_exploding
from vizdebug.analysis.training.params import rule_parameters_not_updated, rule_zero_gradients
from vizdebug.records import TrainingRecords


def _records(grads: np.ndarray, paths=("a.weight", "b.weight")) -> TrainingRecords:
    return TrainingRecords(grad_steps=np.arange(grads.shape[0]), grads=grads,
                           param_paths=list(paths), param_numel=[10] * len(paths))


def test_all_gradients_exactly_zero_is_an_error_and_one_zero_layer_is_not():
    grads = np.zeros((6, 2, 3))
    grads[:, :, 1] = 1.0
    assert rule_zero_gradients(_records(grads))[0].code == "zero-gradients"
    grads[:, 1, 0] = 0.5
    assert rule_zero_gradients(_records(grads)) == []


def test_parameters_with_gradients_that_never_move_are_named():
    grads = np.ones((6, 2, 3))
    grads[:, 0, 2] = 0.0  # a.weight: gradient, no update
    found = rule_parameters_not_updated(_records(grads))
    assert [(f.code, f.severity, f.where) for f in found] == [
        ("parameters-not-updated", "warning", "a.weight")]
    grads[:, 1, 2] = 0.0
    assert rule_parameters_not_updated(_records(grads))[0].severity == "error"


def test_an_absent_gradient_is_not_a_nonfinite_one():
    """A head used on some steps only has no gradient on the others: NaN in both its
    gradient and weight norm. That used to read as 'gradient norm became NaN/inf'."""
    grads = np.ones((6, 2, 3))
    grads[::2, 1, :2] = np.nan
    assert rule_exploding(_records(grads)) == []
    assert [f.code for f in diagnose(_records(grads))] == []
    grads[3, 0, 0] = np.inf  # a real one still counts
    assert rule_exploding(_records(grads))[0].severity == "error"


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.heads = [nn.Linear(8, 2)]  # a plain list: not registered, not optimised
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.out(h) + self.heads[0](h)


def test_a_module_kept_in_a_plain_list_is_named_after_a_real_run():
    torch.manual_seed(0)
    model = TwoHeads()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.extra = nn.Linear(8, 2)  # added after the optimizer was built

    def forward(x):
        h = torch.relu(model.body(x))
        return model.out(h) + model.extra(h)

    with vd.watch(model, every=1) as session:
        for _ in range(12):
            x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
            loss = nn.functional.cross_entropy(forward(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
    found = [f for f in session.findings() if f.code == "parameters-not-updated"]
    assert found and found[0].severity == "warning"
    assert found[0].evidence["parameters"] == ["extra.weight", "extra.bias"]


def test_a_learning_rate_that_collapses_early_is_named_and_annealing_is_not():
    from vizdebug.analysis.training.curves import rule_lr_collapse

    steps = np.arange(1000)
    per_batch = 0.1 * 0.9 ** steps  # ExponentialLR(gamma=0.9) stepped every batch
    found = rule_lr_collapse(TrainingRecords(scalars={"lr": (steps, per_batch)}))
    assert found[0].code == "lr-schedule-collapse" and found[0].evidence["step"] == 66
    cosine = 0.05 * (1 + np.cos(np.pi * steps / 999))  # reaches 0 only at the very end
    assert rule_lr_collapse(TrainingRecords(scalars={"lr": (steps, cosine)})) == []
    warmup = np.minimum(1.0, (steps + 1) / 50) * 1e-3  # starts near 0, then rises
    assert rule_lr_collapse(TrainingRecords(scalars={"lr/group0": (steps, warmup)})) == []
