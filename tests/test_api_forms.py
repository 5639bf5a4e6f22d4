"""Issue 22: API guesses that failed unclearly, and two sessions on one DataLoader.

One form everywhere, and an error that names it: ``session.log(loss=...)`` (values by name),
``vd.watch(model, loader=...)``, ``findings()`` on a session and on a view alike.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd
from vizdebug.errors import VizdebugTypeError


@pytest.fixture
def session():
    s = vd.watch(torch.nn.Linear(3, 1))
    yield s
    s.close()


@pytest.mark.parametrize("args, expected", [
    ((torch.tensor(0.5),), r"log takes named values, e\.g\. session\.log\(loss=loss\)"),
    ((0.5,), r"log takes named values.*step must be an int or None, got float: 0\.5"),
    (("loss", 1.0), r"log takes named values: session\.log\(loss=1\.0\)"),
    (("val loss", 1.0), r"session\.log\(\*\*\{'val loss': 1\.0\}\)"),
    (({"loss": 1.0},), r"unpack the dict, session\.log\(\*\*\{'loss': 1\.0\}\)"),
])
def test_log_with_positional_values_names_the_form_that_works(session, args, expected):
    """``log(loss)`` said "step must be an int"; ``log("loss", 1.0)`` raised a TypeError
    naming the internal ``ScalarLog.log``."""
    with pytest.raises(VizdebugTypeError, match=expected):
        session.log(*args)
    assert session.scalars().empty  # nothing half-logged


def test_log_positional_step_still_works(session):
    session.log(7, loss=1.0)
    assert session.scalars()["step"].tolist() == [7]


def test_log_with_a_view_live_refuses_positional_values_the_same_way(session):
    session.add_view(type("View", (), {"refresh": lambda self, force=False: None,
                                       "due": lambda self: 0.0})())
    with pytest.raises(VizdebugTypeError, match=r"session\.log\(loss=1\.0\)"):
        session.log("loss", 1.0)


def test_findings_is_callable_on_views_as_on_sessions(session):
    """``drift.findings()`` raised "'Findings' object is not callable"."""
    rng = np.random.default_rng(0)
    drift = vd.compare_distributions(rng.normal(size=(200, 2)), rng.normal(1, 1, (200, 2)))
    assert drift.findings() is drift.findings
    assert drift.findings().codes == drift.findings.codes
    assert session.findings()() == session.findings()


def test_watch_with_a_positional_loader_names_the_form_that_works():
    """``vd.watch(model, loader)`` was Python's plain TypeError."""
    loader = DataLoader(TensorDataset(torch.rand(8, 3)), batch_size=4)
    model = torch.nn.Linear(3, 1)
    with pytest.raises(VizdebugTypeError, match=r"vd\.watch\(model, loader=train_loader\)"):
        vd.watch(model, loader)
    assert type(loader) is DataLoader and not model._forward_pre_hooks  # nothing attached


def test_log_accepts_a_one_element_numpy_matrix(session):
    """``log(x=np.matrix(...))`` raised numpy's "only 0-dimensional arrays ..."."""
    session.log(x=np.matrix([[2.5]]))
    assert session.scalars()["value"].tolist() == [2.5]
    with pytest.raises(VizdebugTypeError, match="reduce it first"):
        session.log(x=np.matrix([[1.0, 2.0]]))


def _train(model: torch.nn.Module, loader: DataLoader) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        loss = (model(x) - y).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_two_sessions_on_one_loader_count_only_their_own_batches():
    """The first session counted the second's batches too (16 where it trained 8), so its
    timing panel was wrong."""
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    m1, m2 = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
    first = vd.watch(m1, loader=loader)
    _train(m1, loader)
    second = vd.watch(m2, loader=loader)
    _train(m2, loader)
    _train(m2, loader)
    assert (first.tap.batches, second.tap.batches) == (8, 16)
    assert (first.tap.passes, second.tap.passes) == (1, 2)
    assert len(first.loader_record().wait) == 8
    first.close()
    _train(m2, loader)
    assert (first.tap.batches, second.tap.batches) == (8, 24)  # closed: counts nothing
    _train(m1, loader)  # m1's session is closed: the live one did not train on it
    assert second.tap.batches == 32  # (one live session: every pass is its own)
    second.close()
    assert type(loader) is DataLoader


def test_two_sessions_training_on_the_same_batches_both_count():
    """Two models trained on each batch (a GAN's two networks): both sessions count it."""
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
    m1, m2 = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)
    first, second = vd.watch(m1, loader=loader), vd.watch(m2, loader=loader)
    opts = [torch.optim.SGD(m.parameters(), lr=0.01) for m in (m1, m2)]
    for x, y in loader:
        for m, opt in zip((m1, m2), opts):
            loss = (m(x) - y).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert first.tap.batches == second.tap.batches == 4
    first.close()
    second.close()
