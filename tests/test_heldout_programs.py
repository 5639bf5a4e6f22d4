"""The causes of the false alarms the held-out working programs (tests/corpus/public_d.py)
showed before any rule was changed for them, each checked where it was fixed."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import vizdebug as vd
from vizdebug.analysis.training.diagnose import rule_exploding
from vizdebug.records import TrainingRecords


def _loss(values) -> TrainingRecords:
    values = np.asarray(values, dtype=float)
    return TrainingRecords(scalars={"loss": (np.arange(values.size), values)})


def test_a_loss_large_from_its_start_that_falls_is_not_exploding():
    """The tutorials' summed MSE over 2000 points (3.9e6 -> 1.1e3) and d2l's MSE on
    prices in dollars (1.2e10 -> 7e8): their scale, not a blow-up."""
    assert rule_exploding(_loss(np.geomspace(3.9e6, 1.1e3, 400))) == []
    noisy = np.geomspace(1.2e10, 7e8, 400) * (1 + 0.3 * np.sin(np.arange(400)))
    assert rule_exploding(_loss(noisy)) == []


def test_a_loss_that_grows_into_the_huge_range_still_is():
    rising = _loss(np.r_[np.linspace(2.3, 2.0, 50), np.geomspace(2.0, 3e5, 50)])
    assert [f.severity for f in rule_exploding(rising)] == ["error"]  # as before
    # from a huge start, growing 100x above it
    grown = _loss(np.r_[np.full(50, 2e5), np.geomspace(2e5, 5e7, 50)])
    found = rule_exploding(grown)
    assert found and found[0].code == "exploding-gradients"


class _SparseFirst(nn.Module):
    """A GCN layer's shape: the features arrive as a sparse tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.kernel = nn.Parameter(torch.randn(12, 3) * 0.1)

    def forward(self, features, adj):
        return torch.spmm(adj, torch.mm(features, self.kernel))


def test_a_sparse_input_is_watched_without_a_collector_error():
    torch.manual_seed(0)
    dense = (torch.rand(20, 12) < 0.2).float()
    features, adj = dense.to_sparse(), torch.eye(20).to_sparse()
    model = _SparseFirst()
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    target = torch.randint(0, 3, (20,))
    session = vd.watch(model, every=1)
    for _ in range(30):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(features, adj), target)
        loss.backward()
        opt.step()
        session.log(loss=loss)
    found = session.findings()
    session.close()
    assert "collector-error" not in found.codes, [f.message for f in found]


def _spiky(n: int = 300) -> np.ndarray:
    """A falling loss whose every 6th batch sits 2.5x higher (mixup's batches mixed
    near 0.5 against those near 0 or 1)."""
    y = np.linspace(1.2, 0.6, n)
    y[::6] *= 2.5
    return y


def test_spikes_with_probability_targets_are_info_and_without_them_a_warning():
    from vizdebug.analysis.training.curves import rule_unstable
    from vizdebug.records import ProgramFacts

    hard = TrainingRecords(scalars={"loss": (np.arange(300), _spiky())},
                           program=ProgramFacts(loader_batch_size=32))
    assert [f.severity for f in rule_unstable(hard)] == ["warning"]
    soft = TrainingRecords(scalars={"loss": (np.arange(300), _spiky())},
                           program=ProgramFacts(loader_batch_size=32, soft_targets=True))
    assert [f.severity for f in rule_unstable(soft)] == ["info"]


def test_the_loss_check_sees_probability_targets():
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model, every=1)
    for _ in range(5):
        x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
        target = 0.7 * nn.functional.one_hot(y, 3).float() + 0.1  # mixed, rows sum to 1
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        opt.step()
        session.log(loss=loss)
    facts = session.records().program
    session.close()
    assert facts.soft_targets
    assert _round_trips(facts)


def _round_trips(facts) -> bool:
    from vizdebug.records import ProgramFacts

    return ProgramFacts.from_json(facts.to_json()).soft_targets == facts.soft_targets
