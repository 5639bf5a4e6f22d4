"""The optimizer-settings panel: learning rate, momentum and weight decay per parameter
group, read by the hyper tap at sampled steps of a real loop, never in the user's way."""

from __future__ import annotations

import numpy as np
import pytest

import vizdebug as vd
from vizdebug.collect.taps.hyper import HyperTap, group_settings

torch = pytest.importorskip("torch")


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))


def _loop(model, opt, sched=None, steps=12, session=None, used=None):
    torch.manual_seed(1)
    for step in range(steps):
        x = torch.randn(8, 4)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        if used is not None:  # the settings this step's update is made with
            used[step] = [(g["lr"], g.get("momentum"), g["weight_decay"]) for g in opt.param_groups]
        opt.step()
        if sched is not None:
            sched.step()
        if session is not None:
            session.log(loss=loss.detach())


def test_each_groups_settings_are_those_its_update_was_made_with():
    model = _model()
    opt = torch.optim.SGD([{"params": model[0].parameters(), "weight_decay": 1e-3},
                           {"params": model[2].parameters(), "lr": 0.05, "momentum": 0.5}],
                          lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.9 ** s)  # moves every step
    used: dict[int, list] = {}
    with vd.watch(model, every=3) as session:
        _loop(model, opt, sched, session=session, used=used)
    frame = session.to_frame("optimizer")
    assert len(frame) and set(frame["group"]) == {0, 1}
    for row in frame.itertuples():
        lr, momentum, decay = used[row.step][row.group]
        assert (row.lr, row.momentum, row.weight_decay) == pytest.approx((lr, momentum, decay))
    assert frame["step"].nunique() >= 4  # the sampled steps, not only the first
    assert frame[frame["group"] == 0]["lr"].is_monotonic_decreasing


def test_adam_momentum_is_its_first_beta_and_a_plain_optimizer_has_none():
    assert group_settings({"lr": 1e-3, "betas": (0.8, 0.99), "weight_decay": 0.0}) == (
        1e-3, 0.8, 0.0)
    lr, momentum, decay = group_settings({"lr": "warmup", "weight_decay": None})
    assert np.isnan(lr) and np.isnan(momentum) and np.isnan(decay)
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.8, 0.99))
    with vd.watch(model, every=2) as session:
        _loop(model, opt, steps=4, session=session)
    assert set(session.to_frame("optimizer")["momentum"]) == {0.8}


def test_a_failing_read_is_reported_and_never_reaches_the_users_step():
    tap = HyperTap(lambda: 0, lambda: True, lambda: (_ for _ in ()).throw(RuntimeError("x")))
    errors = []
    tap.on_error = lambda where, exc: errors.append((where, str(exc)))
    tap.on_step()  # no exception
    assert errors == [("the optimizer settings tap", "x")] and not tap.trace


def test_training_is_bitwise_identical_with_the_tap_on():
    def run(watched):
        model = _model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        sched = torch.optim.lr_scheduler.StepLR(opt, 3, 0.5)
        if watched:
            with vd.watch(model, every=1) as session:
                _loop(model, opt, sched, session=session)
            assert len(session.to_frame("optimizer")) == 12
        else:
            _loop(model, opt, sched)
        return [p.detach().clone() for p in model.parameters()]

    for a, b in zip(run(False), run(True)):
        assert torch.equal(a, b)


def test_the_figure_holds_the_frame():
    pytest.importorskip("plotly")
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with vd.watch(model, every=1) as session:
        _loop(model, opt, steps=5, session=session)
    frame = session.to_frame("optimizer")
    fig = session.figure("optimizer")
    lr = next(t for t in fig.data if t.yaxis == "y")
    np.testing.assert_array_equal(np.asarray(lr.x), frame["step"].to_numpy())
    np.testing.assert_array_equal(np.asarray(lr.y), frame["lr"].to_numpy())
