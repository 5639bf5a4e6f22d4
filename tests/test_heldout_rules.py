"""The rules added for the held-out faults (tests/corpus/heldout_faults.py), each on the
smallest program or records that show the relation, with the working counterpart quiet."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import vizdebug as vd
from vizdebug.analysis.training.metrics import rule_accuracy_against_loss
from vizdebug.errors import VizdebugError
from vizdebug.records import TrainingRecords
from vizdebug.records.program import ProgramFacts


def _loud(findings) -> list[str]:
    return [f.code for f in findings if f.severity in ("warning", "error")]


# -- check_predictions on multi-label targets ------------------------------------------------
def test_multilabel_no_label_predicted_is_misleading():
    rng = np.random.default_rng(0)
    y = (rng.random((400, 6)) < 0.05).astype(int)
    found = vd.check_predictions(y, np.zeros_like(y))
    assert found.codes == ["misleading-accuracy"]
    assert "predicting no label" in found[0].message


def test_multilabel_good_predictions_and_one_hot_are_quiet():
    rng = np.random.default_rng(1)
    y = (rng.random((400, 6)) < 0.05).astype(int)
    noisy = np.where(rng.random(y.shape) < 0.02, 1 - y, y)
    assert vd.check_predictions(y, noisy).codes == []
    onehot = np.eye(3)[rng.integers(0, 3, 90)]
    assert vd.check_predictions(onehot, onehot).codes == []  # read as classes


def test_multilabel_shape_mismatch_names_both_shapes():
    with pytest.raises(VizdebugError, match=r"\(2, 2\).*\(2, 3\)"):
        vd.check_predictions([[0, 1], [1, 1]], [[0, 1, 1], [1, 1, 1]])


# -- an accuracy its own loss rules out -------------------------------------------------------
def _records(loss, acc, functions=("cross_entropy",)) -> TrainingRecords:
    steps = np.arange(1, len(loss) + 1) * 100
    return TrainingRecords(
        scalars={"loss": (steps, np.asarray(loss, float) + 0.05),
                 "val_loss": (steps, np.asarray(loss, float)),
                 "val_acc": (steps, np.asarray(acc, float))},
        program=ProgramFacts(loss_functions=list(functions)))


def test_accuracy_below_the_loss_bound_is_named():
    found = rule_accuracy_against_loss(_records([0.5, 0.25, 0.2], [0.1, 0.11, 0.1]))
    assert [f.code for f in found] == ["predictions-misaligned"]
    assert found[0].where == "val_acc"


@pytest.mark.parametrize("loss, acc, functions", [
    ([0.5, 0.25, 0.2], [0.85, 0.93, 0.95], ("cross_entropy",)),  # consistent
    ([0.5, 0.25, 0.2], [10.0, 11.0, 10.0], ("mse_loss",)),       # no cross-entropy
    ([0.69, 0.6, 0.55], [0.3, 0.3, 0.3], ("cross_entropy",)),    # the bound says nothing
    ([0.5, 0.25, 0.2], [85.0, 93.0, 95.0], ("nll_loss",)),       # a percentage, consistent
])
def test_accuracy_consistent_with_its_loss_is_quiet(loss, acc, functions):
    assert rule_accuracy_against_loss(_records(loss, acc, functions)) == []


# -- labels shuffled apart from table rows ----------------------------------------------------
def test_table_rows_with_shuffled_labels():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 400)
    x = rng.normal(size=(400, 10)).astype(np.float32) + np.eye(10, dtype=np.float32)[y] * 2
    assert "labels-shuffled" not in vd.check_dataset((x, y)).codes
    assert "labels-shuffled" in vd.check_dataset((x, rng.permutation(y))).codes


# -- a frozen BatchNorm whose eval() a later train() undid -----------------------------------
class _Frozen(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU())
        self.head = nn.Linear(8, 2)
        for p in self.body.parameters():
            p.requires_grad = False

    def forward(self, x):
        return self.head(self.body(x))


@pytest.mark.parametrize("set_eval", [True, False])
def test_frozen_batchnorm_eval_undone_by_train(set_eval):
    torch.manual_seed(0)
    model = _Frozen()
    if set_eval:
        model.body[1].eval()  # the program's freeze: statistics to stay
    opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
    session = vd.watch(model, every=1)
    for _ in range(12):
        model.train()
        x, y = torch.randn(16, 6) * 3 + 2, torch.randint(0, 2, (16,))
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        session.log(loss=loss)
    found = [f for f in session.findings() if f.code == "frozen-batchnorm-training"]
    session.close()
    assert [f.severity for f in found] == (["warning"] if set_eval else ["info"])


# -- embedded tokens on a Conv1d's channel axis -----------------------------------------------
class _TextConv(nn.Module):
    def __init__(self, permute: bool) -> None:
        super().__init__()
        self.permute = permute
        self.emb = nn.Embedding(30, 8)
        self.conv = nn.Conv1d(8 if permute else 12, 4, 2)
        self.fc = nn.Linear(4, 2)

    def forward(self, tokens):
        x = self.emb(tokens)
        x = x.permute(0, 2, 1) if self.permute else x
        return self.fc(self.conv(x).amax(2))


@pytest.mark.parametrize("permute", [False, True])
def test_conv1d_on_embedded_tokens(permute):
    torch.manual_seed(0)
    model = _TextConv(permute)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model, every=1)
    for _ in range(4):
        tokens, y = torch.randint(0, 30, (16, 12)), torch.randint(0, 2, (16,))
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens), y)
        loss.backward()
        opt.step()
        session.log(loss=loss)
    found = [f for f in session.findings() if f.code == "axis-order"]
    session.close()
    assert [f.where for f in found] == ([] if permute else ["conv"])


# -- a loss rebuilt as a new tensor -----------------------------------------------------------
def test_loss_rebuilt_from_stage_losses_gets_zero_gradients():
    torch.manual_seed(0)
    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model, every=1)
    for _ in range(4):
        x = torch.randn(8, 4)
        out = model(x)
        loss = torch.tensor([F.l1_loss(out, x), F.mse_loss(out, x)], requires_grad=True).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        session.log(loss=loss)
    codes = _loud(session.findings())
    session.close()
    assert "zero-gradients" in codes and "parameters-not-updated" not in codes
