"""The training profile: what vizdebug understood about a program before any verdict
(collect/taps/program.py collects the facts, analysis/training/profile.py reads them)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

import vizdebug as vd
from vizdebug.analysis.training.profile import build_profile, profile_of
from vizdebug.records import ProgramFacts, TrainingRecords


def _data(n: int = 64, classes: int = 2):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, 4, generator=g), torch.randint(0, classes, (n,), generator=g)


def test_a_gan_loop_is_two_optimizers_and_a_game():
    """DCGAN's loop, small: D steps on real and detached fake, then G steps; G is watched."""
    torch.manual_seed(0)
    g_net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 4), nn.Tanh())
    d_net = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())
    opt_g = torch.optim.Adam(g_net.parameters(), 2e-3)
    opt_d = torch.optim.Adam(d_net.parameters(), 2e-3)
    bce = nn.BCELoss()
    real = torch.tanh(torch.randn(256, 4))
    with vd.watch(g_net, every=1) as session:
        for i in range(0, 256, 32):
            x = real[i:i + 32]
            d_net.zero_grad()
            fake = g_net(torch.randn(32, 2))
            err_d = bce(d_net(x), torch.ones(32, 1)) + bce(d_net(fake.detach()), torch.zeros(32, 1))
            err_d.backward()
            opt_d.step()
            g_net.zero_grad()
            err_g = bce(d_net(fake), torch.ones(32, 1))
            err_g.backward()
            opt_g.step()
            session.log(loss_D=err_d, loss_G=err_g)
        profile = profile_of(session.records())
        codes = session.findings().codes
    # D's tensors feed G's loss, but D's own optimizer trains them: nothing is untrained
    assert "parameters-not-updated" not in codes
    assert profile.optimizers == 2 and profile.model_optimizers == 1
    assert profile.other_optimizers == 1  # D's optimizer holds none of G's tensors
    assert profile.game_losses == ("loss_D", "loss_G") and profile.game
    assert profile.batch_size == 32 and not profile.per_sample
    assert any("game" in line for line in profile.lines())


def test_lbfgs_closure_weighted_sampler_and_frozen_norms_are_seen():
    x, y = _data()
    sampler = WeightedRandomSampler(torch.ones(64), 64, generator=torch.Generator().manual_seed(0))
    loader = DataLoader(TensorDataset(x, y), batch_size=16, sampler=sampler)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    for p in model[1].parameters():
        p.requires_grad_(False)
    opt = torch.optim.LBFGS([p for p in model.parameters() if p.requires_grad], max_iter=3)
    with vd.watch(model, loader=loader, every=1) as session:
        for xb, yb in loader:
            def closure(xb=xb, yb=yb):
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(xb), yb)
                loss.backward()
                return loss
            session.log(loss=opt.step(closure))
        profile = profile_of(session.records())
    assert profile.closure and profile.optimizer_names == ("LBFGS",)
    assert profile.sampler == "WeightedRandomSampler" and profile.rebalanced
    assert profile.frozen == ("1.weight", "1.bias")
    assert profile.frozen_norms_training == ("1",)  # left in train(): statistics still move
    assert profile.first_layer_normalised  # Linear -> BatchNorm1d


def test_per_sample_steps_and_hand_written_updates():
    """The char-RNN tutorial's idiom: one sample per step, the update written by hand."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x, y = _data(20)
    with vd.watch(model, every=1) as session:
        for i in range(20):
            model.zero_grad()
            loss = nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1])
            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p.add_(p.grad, alpha=-0.05)
            session.log(loss=loss)
        profile = profile_of(session.records())
    assert profile.per_sample and profile.batch_size == 1
    assert profile.optimizers == 0 and profile.hand_updates
    assert "weights updated by hand" in profile.lines()[0]


def test_lazy_modules_and_inputs_that_require_grad():
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 1))
    model(torch.randn(2, 4))  # the usual dry run before building the optimizer
    opt = torch.optim.SGD(model.parameters(), 0.01)
    with vd.watch(model, every=1) as session:
        for _ in range(3):
            x = torch.randn(8, 4, requires_grad=True)  # e.g. a gradient penalty's input
            opt.zero_grad()
            out = model(x)
            grad = torch.autograd.grad(out.sum(), x, create_graph=True)[0]
            loss = out.pow(2).mean() + grad.pow(2).mean()
            loss.backward()
            opt.step()
            session.log(loss=loss)
        profile = profile_of(session.records())
        codes = session.findings().codes
    assert profile.input_requires_grad
    assert "parameters-not-updated" not in codes  # the input is not a parameter


def test_the_profile_is_stored_read_back_and_shown(tmp_path):
    x, y = _data()
    loader = DataLoader(TensorDataset(x, y), batch_size=8)
    model = nn.Sequential(nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), 0.1)
    path = tmp_path / "run.sqlite"
    with vd.watch(model, loader=loader, every=1, store=path) as session:
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        live = session.records().program
    run = vd.open_run(path)
    assert run.records().program == live
    found = run.findings()
    assert found.profile and found.profile == session.findings().profile
    html = found.to_html()
    assert "What vizdebug understood about this run" in html and "SGD" in html
    report = tmp_path / "r.html"
    vd.report(run, report)
    assert "What vizdebug understood about this run" in report.read_text()


def test_profile_lines_are_escaped_and_old_runs_say_so():
    facts = ProgramFacts(frozen=["<script>alert(1)</script>"])
    found = vd.Findings([], profile=build_profile(TrainingRecords(program=facts)).lines())
    assert "<script>" not in found.to_html() and "&lt;script&gt;" in found.to_html()
    old = build_profile(TrainingRecords())  # a run stored before the facts existed
    assert "older vizdebug" in old.lines()[0] and not old.facts_known


@pytest.mark.parametrize("damaged", [{"optimizers": [{"cls": "Adam"}]}, {"batch_sizes": ["x"]},
                                     {"optimizers": "nope"}])
def test_damaged_program_facts_do_not_break_reading(tmp_path, damaged):
    import json
    import sqlite3

    model = nn.Linear(3, 1)
    path = tmp_path / "run.sqlite"
    with vd.watch(model, store=path) as session:
        session.log(loss=1.0)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT OR REPLACE INTO blobs (name, kind, data) VALUES ('program', 'json', ?)",
                     (json.dumps(damaged),))
    run = vd.open_run(path)
    assert run.records().program is None
    assert isinstance(run.findings(), vd.Findings)


def test_profile_of_is_built_once_per_records():
    rec = TrainingRecords(scalars={"loss": (np.arange(3), np.ones(3))})
    assert profile_of(rec) is profile_of(rec)
    assert profile_of(rec).train_losses == ("loss",)


def test_a_penalty_forward_before_the_others_is_known_too():
    """WGAN-GP with the penalty's forward first: D(interpolates), then D(real), D(fake)."""
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.Adam(critic.parameters(), 1e-3)
    with vd.watch(critic, every=1) as session:
        for _ in range(4):
            real, fake = torch.randn(16, 4), torch.randn(16, 4)
            alpha = torch.rand(16, 1)
            mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
            grad = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)[0]
            penalty = ((grad.norm(2, dim=1) - 1) ** 2).mean()
            opt.zero_grad()
            loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
            loss.backward()
            opt.step()
            session.log(loss=loss)
        assert "parameters-not-updated" not in session.findings().codes


def test_forwards_inside_paused_are_not_the_programs_axis_order():
    """A side experiment in session.paused() feeding (batch, time, feature) to a
    batch_first=False LSTM is not what the training loop does."""
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4)
    loader = DataLoader(TensorDataset(torch.randn(64, 5, 3)), batch_size=16)
    with vd.watch(lstm, loader=loader, every=1) as session:
        with session.paused():
            for (x,) in loader:
                lstm(x)  # (16, 5, 3): time on axis 1, the wrong order, but paused
        for (x,) in loader:
            out, _ = lstm(x.transpose(0, 1))  # (5, 16, 3): what the loop really feeds
            out.mean().backward()
            session.log(loss=out.mean())
        assert "axis-order" not in session.findings().codes
        assert session.records().program.axes
