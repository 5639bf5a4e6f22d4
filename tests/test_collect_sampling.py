"""Which steps get sampled: every n-th, or 'auto' within a time budget."""

from __future__ import annotations

import pytest
import torch

import vizdebug as vd
from vizdebug.collect.hooks.sampling import MAX_GAP, StepSampler, check_every
from vizdebug.errors import VizdebugError


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def drive(sampler: StepSampler, clock: Clock, steps: int, plain: float, cost: float) -> list[int]:
    """Steps take ``plain`` seconds, plus ``cost`` (charged to the collectors) when sampled."""
    sampled, pending = [], False
    for step in range(steps):
        if pending:  # the sample closes at the start of the next step, as in ModelHooks
            sampler.sample_done(step)
            pending = False
        if sampler.start_step(step):
            sampled.append(step)
            sampler.charge(cost)
            clock.t += cost
            pending = True
        clock.t += plain
    return sampled


def test_auto_spaces_samples_to_fit_the_budget():
    clock = Clock()
    sampler = StepSampler("auto", budget=0.015, clock=clock)
    sampled = drive(sampler, clock, 400, plain=0.010, cost=0.003)
    assert sampled[0] == 0
    # 3 ms per sample / (1.5% of 10 ms) = 20 steps between samples, once the gap may be
    # as long as half the steps so far (early steps are sampled more densely)
    assert sampler.gap == 20
    assert sampled[:5] == [0, 10, 20, 30, 45]
    gaps = [b - a for a, b in zip(sampled, sampled[1:]) if a >= 45]
    assert set(gaps) == {20}
    overhead = 0.003 * len(sampled) / (0.010 * 400)
    assert overhead < 0.02


def test_auto_samples_often_when_steps_are_long_and_caps_the_gap():
    clock = Clock()
    dense = StepSampler("auto", clock=clock)
    drive(dense, clock, 50, plain=1.0, cost=0.001)
    assert dense.gap == 1
    clock = Clock()
    sparse = StepSampler("auto", clock=clock)
    sampled = drive(sparse, clock, 1000, plain=0.001, cost=0.5)
    assert sparse.gap == MAX_GAP
    assert sampled[:4] == [0, 10, 20, 30]  # early: at most half the steps so far apart
    assert sampled[-1] - sampled[-2] == MAX_GAP


def drive_timed(sampler: StepSampler, clock: Clock, steps: int, plain: float, extra: float,
                charged: float = 0.0, paused: float = 0.0) -> list[int]:
    """As ModelHooks drives it: a sampled step begins (``begin_sample``), takes ``extra``
    seconds more than a plain one (``charged`` of them inside the collectors), and may be
    paused for ``paused`` seconds (``Session.paused``)."""
    sampled, pending = [], False
    for step in range(steps):
        if pending:
            sampler.sample_done(step)
            pending = False
        if sampler.start_step(step):
            sampler.begin_sample()
            sampled.append(step)
            sampler.charge(charged)
            clock.t += extra + paused
            sampler.exclude(paused)
            pending = True
        clock.t += plain
    return sampled


def test_auto_counts_what_a_sampled_step_really_took():
    """Time outside the collectors' own functions (torch's hook machinery, caches) counts:
    a sampled step 4 ms longer than a plain one costs 4 ms, though 1 ms was charged."""
    clock = Clock()
    sampler = StepSampler("auto", budget=0.01, clock=clock)
    sampled = drive_timed(sampler, clock, 2000, plain=0.010, extra=0.004, charged=0.001)
    assert sampler.sample_cost == pytest.approx(0.004)
    assert sampler.step_time == pytest.approx(0.010)
    assert sampler.gap == 40  # 4 ms / (1% of 10 ms); 10 if only the charged 1 ms counted
    overhead = 0.004 * len(sampled) / (0.010 * 2000)
    assert 0.008 < overhead < 0.012


def test_auto_leaves_paused_time_out():
    """Time the collectors were paused (Session.paused) is neither a plain step nor part
    of a sample: 1 s paused inside each sampled window changes nothing."""
    clock = Clock()
    sampler = StepSampler("auto", budget=0.01, clock=clock)
    drive_timed(sampler, clock, 600, plain=0.010, extra=0.004, paused=1.0)
    assert sampler.sample_cost == pytest.approx(0.004, rel=1e-3)
    assert sampler.step_time == pytest.approx(0.010, rel=1e-3)
    assert sampler.gap == 40


def test_fixed_every_is_deterministic():
    sampler = StepSampler(4)
    assert [s for s in range(10) if sampler.start_step(s)] == [0, 4, 8]


@pytest.mark.parametrize("bad", ["often", 0, -3, 2.5, True, None])
def test_check_every_names_what_works(bad):
    with pytest.raises(VizdebugError, match="positive int .* or 'auto'"):
        check_every(bad)


def test_watch_defaults_to_auto_and_samples_step_zero():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with vd.watch(model) as session:
        for _ in range(60):
            opt.zero_grad()
            model(torch.randn(16, 8)).pow(2).mean().backward()
            opt.step()
    steps = session.records().act_steps.tolist()
    sampler = session.hooks.sampler
    assert session.every == "auto" and steps[0] == 0
    assert 1 <= sampler.gap <= MAX_GAP and sampler.step_time > 0 and sampler.spent > 0
    # later samples follow the chosen gaps (a tiny model: its steps are cheap, so few)
    assert all(b - a >= 1 for a, b in zip(steps, steps[1:]))
