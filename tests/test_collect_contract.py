"""The collector contract (collect/contract.py): each collector gives the typed records it
added since a cursor; Session.records() and the store feed are folds over them."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd
from vizdebug.collect.contract import Collector, fold
from vizdebug.collect.session.folds import collectors, run_settings
from vizdebug.records import RunDelta, records_from_delta


def _setup(every=2):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    data = TensorDataset(torch.randn(96, 6), torch.randint(0, 3, (96,)))
    loader = DataLoader(data, batch_size=16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return model, loader, opt, vd.watch(model, loader=loader, every=every)


def _epoch(model, loader, opt, session):
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        session.log(loss=loss)


def test_every_collector_implements_the_contract():
    model, loader, opt, session = _setup()
    _epoch(model, loader, opt, session)
    parts = [*collectors(session), ("system", session.system)]
    assert {name for name, _ in parts} >= {"scalars", "samples", "lr", "events", "errors",
                                           "loader", "program", "system"}
    for name, collector in parts:
        assert isinstance(collector, Collector), name
        delta, cursor = collector.records_since(None)
        assert isinstance(delta, RunDelta)
        again, _ = collector.records_since(cursor)
        # nothing new since the cursor: no appended part, no changed snapshot
        assert not again.samples and not again.system and again.events is None, name
        assert again.errors is None and again.loader is None and again.program is None, name
    session.close()


def test_deltas_from_cursors_add_up_to_the_fold_from_the_start():
    model, loader, opt, session = _setup()
    cursors: dict = {"scalars": 0}  # (the scalar log pushes to a sink: not folded here)
    total = RunDelta()
    for _ in range(3):
        _epoch(model, loader, opt, session)
        session.hooks.flush()
        total = total.absorb(fold([*collectors(session), ("system", session.system)], cursors))
    session.close()
    whole = fold(collectors(session), {})
    records = session.records()
    for kind, steps, rows in (("activations", records.act_steps, records.activations),
                              ("grads", records.grad_steps, records.grads)):
        blocks = [(s, r) for k, s, r in total.samples if k == kind]
        assert len(blocks) == 3  # one per write, each only what was new
        np.testing.assert_array_equal(np.concatenate([s for s, _ in blocks]), steps)
        np.testing.assert_array_equal(np.concatenate([r for _, r in blocks]), rows)
    assert total.events == whole.events and total.errors == whole.errors
    assert total.program == whole.program and total.loader.batches == 18
    assert len(records.act_steps) >= 6 and (np.diff(records.act_steps) > 0).all()
    lr = [c for c in total.scalars if c[1] and c[1][0].startswith("lr/")]
    assert sum(len(c[0]) for c in lr) == len(records.scalars["lr/group0"][0])


def test_records_are_the_fold_read_through_records_from_delta():
    model, loader, opt, session = _setup(every=1)
    _epoch(model, loader, opt, session)
    session.close()
    records = session.records()
    again = records_from_delta(fold(collectors(session), {}), run_settings(session))
    assert list(records.scalars) == list(again.scalars) == ["loss", "lr/group0"]
    for name in records.scalars:
        for a, b in zip(records.scalars[name], again.scalars[name]):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(records.activations, again.activations)
    np.testing.assert_array_equal(records.grads, again.grads)
    assert records.program == again.program == session.program.facts()
    assert records.loader.batches == 6 and records.module_paths == ["0", "1", "2"]
    assert records.every == 1 and records.errors == []


def test_a_logged_learning_rate_replaces_the_optimizers_trace():
    model, loader, opt, session = _setup(every=1)
    assert "lr" in dict(collectors(session))
    session.log(lr=0.1)
    assert "lr" not in dict(collectors(session))
    session.close()
