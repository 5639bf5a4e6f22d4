"""The merged view of a distributed job, below the processes: the rank rules on planted
arrays (a straggler's waits, a NaN's order across ranks, a replica that differs), the rank
tap on a real model in this process (its schedule, its hooks gone after each armed step,
training unchanged), and a job of two rank files written here (the rank is injected:
``distributed_rank`` is patched, the one mock; tests/test_ranks_jobs.py runs the real
gloo processes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import vizdebug as vd
from vizdebug.analysis.ranks import (
    RankData,
    RankTimes,
    Replicas,
    first_nonfinite,
    job_findings,
    rank_spread,
    straggler_table,
)
from vizdebug.collect.taps.ranks import RankTap, fingerprint_step
from vizdebug.records import AnomalyEvent, TrainingRecords
from vizdebug.store.job import Job, job_of


def _times(n: int, rng: np.random.Generator, own: float = 0.0, waits: float = 0.0,
           noise: float = 0.002) -> RankTimes:
    """Marks of ``n`` steps: ``own`` extra seconds before the forward pass, ``waits``
    seconds spent waiting in the all-reduce window, noise everywhere."""
    rows, t = [], 0.0
    for _ in range(n):
        pre = 0.001 + own + rng.uniform(0, noise)
        fwd0, fwd = 0.0005 + rng.uniform(0, noise), 0.002 + rng.uniform(0, noise)
        post = 0.003 + waits + rng.uniform(0, noise)
        start = t
        marks = [start, start + pre, start + pre + fwd0, start + pre + fwd0 + fwd]
        t = marks[-1] + post
        rows.append([*marks, t])
    return RankTimes(np.arange(0, 4 * n, 4), np.array(rows))


def _rank(rank: int, **parts) -> RankData:
    return RankData(rank, parts.pop("records", TrainingRecords()), **parts)


def test_the_rank_the_others_wait_for_is_the_straggler():
    rng = np.random.default_rng(0)
    ranks = [_rank(0, times=_times(20, rng, waits=0.03)), _rank(1, times=_times(20, rng, own=0.03)),
             _rank(2, times=_times(20, rng, waits=0.03)), _rank(3, times=_times(20, rng, waits=0.03))]
    table = straggler_table(ranks)
    assert [r.straggler for r in table] == [False, True, False, False]
    assert table[1].held == pytest.approx(0.03, abs=0.004) and table[1].least_share >= 0.9
    found = job_findings(ranks)
    assert [f.code for f in found] == ["rank-straggler"] and found[0].where == "rank 1"
    assert "rank 1 holds the other ranks up" in found[0].message


def test_equal_ranks_with_noise_name_no_straggler():
    for seed in range(20):  # noise as large as the steps: still nobody, whatever the seed
        rng = np.random.default_rng(seed)
        ranks = [_rank(k, times=_times(12, rng, noise=0.006)) for k in range(4)]
        assert not any(r.straggler for r in straggler_table(ranks)), seed
        assert job_findings(ranks) == []


def test_too_few_common_timed_steps_give_no_table():
    rng = np.random.default_rng(1)
    assert straggler_table([_rank(0, times=_times(5, rng)), _rank(1, times=_times(5, rng))]) == []
    assert straggler_table([_rank(0, times=_times(30, rng)), _rank(1)]) == []


def _loss(values) -> TrainingRecords:
    v = np.asarray(values, float)
    return TrainingRecords(scalars={"loss": (np.arange(v.size), v)})


def test_the_first_nonfinite_value_is_named_with_its_rank_and_step():
    nan = float("nan")
    ranks = [_rank(0, records=_loss([1, 1, 1, nan, nan])),
             _rank(1, records=_loss([1, 1, nan, nan, nan])),
             _rank(2, records=_loss([1, 1, 1, 1, 1]))]
    (f,) = job_findings(ranks)
    assert f.code == "rank-nonfinite" and f.severity == "error" and f.where == "rank 1: loss"
    assert "on rank 1 at step 2" in f.message and "then rank 0 at step 3" in f.message
    assert "rank 2 stayed finite" in f.message
    assert f.evidence["first_step_by_rank"] == {"0": 3, "1": 2}


def test_the_ranks_chart_marks_where_a_curve_turns_nonfinite():
    """The lines stop at a NaN; the chart says where and on which rank (a dashed line at
    that step and the words), and a job that stayed finite gets neither."""
    nan, inf = float("nan"), float("inf")
    ranks = [_rank(0, records=_loss([3, 2, 1, nan, nan])),
             _rank(1, records=_loss([3, 2, inf, nan, nan])),
             _rank(2, records=_loss([3, 2, 1, 1, 1]))]
    html = vd.RanksView.from_ranks(ranks).to_html()
    assert ">non-finite from step 2 (rank 1)</text>" in html
    assert html.count("stroke-dasharray") == 1
    ranks[0] = _rank(0, records=_loss([3, 2, nan, nan, nan]))
    assert "non-finite from step 2 (ranks 0, 1)" in vd.RanksView.from_ranks(ranks).to_html()
    quiet = vd.RanksView.from_ranks([_rank(k, records=_loss([3, 2, 1])) for k in range(2)])
    assert "non-finite from" not in quiet.to_html() and "dasharray" not in quiet.to_html()


def test_an_activation_comes_before_the_loss_of_its_step():
    ev = AnomalyEvent("nonfinite-activation", 4, "net.2", "ReLU", "NaN out of net.2")
    rec = _loss([1, 1, 1, 1, float("nan")])
    rec.events.append(ev)
    first = first_nonfinite(rec)
    assert (first.step, first.what, first.where) == (4, "activation", "net.2")
    (f,) = job_findings([_rank(0, records=_loss([1.0] * 4 + [float("nan")])), _rank(1, records=rec)])
    assert "the activation 'net.2' on rank 1 at step 4" in f.message


def test_every_rank_at_once_is_said_so():
    nan = float("nan")
    (f,) = job_findings([_rank(k, records=_loss([1, nan])) for k in range(2)])
    assert "on every rank at step 1" in f.message and "the ranks share" in f.hint


def _prints(values: np.ndarray, paths=("w", "b", "bn.running_mean")) -> Replicas:
    return Replicas(list(paths), np.array([0, 1, 2, 4, 8]), values)


def test_identical_replicas_are_quiet_and_a_differing_buffer_is_named():
    rng = np.random.default_rng(2)
    same = rng.normal(size=(5, 3, 2))
    assert job_findings([_rank(0, replicas=_prints(same)), _rank(1, replicas=_prints(same.copy()))]) == []
    other = same.copy()
    other[2:, 2, :] *= 1.01  # rank 1's running mean parts from step 2 on
    (f,) = job_findings([_rank(0, replicas=_prints(same)), _rank(1, replicas=_prints(same.copy())),
                         _rank(2, replicas=_prints(other))])
    assert f.code == "replica-drift" and f.where == "bn.running_mean"
    assert "on rank 2" in f.message and "first at step 2" in f.message
    assert "still at the last" in f.message and "SyncBatchNorm" in f.hint
    assert f.evidence["ranks"] == [2]


def test_a_differing_parameter_gets_the_parameter_hint_and_tiny_noise_is_not_drift():
    rng = np.random.default_rng(3)
    same = rng.normal(size=(5, 3, 2))
    noisy = same * (1 + 1e-9)
    assert job_findings([_rank(0, replicas=_prints(same)), _rank(1, replicas=_prints(noisy))]) == []
    other = same.copy()
    other[4, 0, 0] += 1.0
    (f,) = job_findings([_rank(0, replicas=_prints(same)), _rank(1, replicas=_prints(other))])
    assert f.where == "w" and "no_sync" in f.hint and "first at step 8" in f.message


def test_spread_over_ranks():
    band = rank_spread({0: (np.array([0, 1, 2]), np.array([1.0, np.nan, 3.0])),
                        1: (np.array([1, 2, 3]), np.array([2.0, 5.0, 4.0]))})
    assert band.step.tolist() == [0, 1, 2, 3]
    assert band.low.tolist() == [1.0, 2.0, 3.0, 4.0] and band.high.tolist() == [1.0, 2.0, 5.0, 4.0]


def test_fingerprint_schedule_and_job_name():
    assert [s for s in range(130) if fingerprint_step(s)] == [0, 1, 2, 4, 8, 16, 32, 64, 100]
    assert job_of(__import__("pathlib").Path("a/exp.rank12.sqlite")).name == "exp.sqlite"
    assert job_of(__import__("pathlib").Path("a/exp.sqlite")).name == "exp.sqlite"


def _train(steps: int, tap: bool) -> tuple[list[torch.Tensor], list]:
    from torch.nn.modules import module as hooks

    from vizdebug.collect.hooks.clock import StepClock

    before = len(hooks._global_forward_pre_hooks)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    clock = StepClock({id(p) for p in model.parameters()}, lambda: None)
    handed, errors = [], []
    rank_tap = RankTap(model, clock, handed.append, lambda w, e: errors.append(e)) if tap else None
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(16, 4, generator=g)
        clock.forward(training=True)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank_tap is not None:  # armed for the next step only when it is timed or printed
            assert len(hooks._global_forward_pre_hooks) - before in (0, 1)
    if rank_tap is not None:
        rank_tap.remove()
        assert len(hooks._global_forward_pre_hooks) == len(hooks._global_forward_hooks) == before
    clock.unhook()
    assert errors == []
    return [p.detach().clone() for p in model.state_dict().values()], handed


def test_the_rank_tap_times_and_fingerprints_and_leaves_training_as_it_was():
    plain, _ = _train(20, tap=False)
    watched, handed = _train(20, tap=True)
    assert all(torch.equal(a, b) for a, b in zip(plain, watched))  # bitwise the same
    samples = {}
    for delta in handed:  # (in chunks: every 64 rows or 2 s)
        for kind, steps, rows in delta.samples:
            old = samples.get(kind)
            samples[kind] = (steps, rows) if old is None else (
                np.concatenate([old[0], steps]), np.concatenate([old[1], rows]))
    steps, rows = samples["rank_times"]
    assert steps.tolist() == [0, 4, 8, 12, 16] and rows.shape == (5, 1, 5)
    marks = rows[1:, 0]
    assert np.isfinite(marks).all() and (np.diff(marks, axis=1) >= 0).all()
    steps, rows = samples["replicas"]
    assert steps.tolist() == [0, 1, 2, 4, 8, 16]
    paths = next(d.meta["replica_paths"] for d in handed if d.meta)
    assert paths[:2] == ["0.weight", "0.bias"] and "1.running_mean" in paths
    assert rows.shape == (6, len(paths), 2)
    first = paths.index("0.weight")  # the norm at step 0 is the initial weight's
    torch.manual_seed(0)
    w0 = nn.Linear(4, 8).weight
    assert rows[0, first, 0] == pytest.approx(float(w0.detach().double().norm()))


@pytest.fixture
def two_rank_files(tmp_path, monkeypatch):
    """Rank 0 and rank 1 of a two-process job, written one after the other in this
    process, rank 1's loss NaN from step 7 and its BatchNorm fed other data."""
    import vizdebug.collect.session.core as core
    import vizdebug.collect.session.feed as feed

    path = tmp_path / "job.sqlite"
    for rank in (0, 1):
        monkeypatch.setattr(core, "distributed_rank", lambda r=rank: (r, 2))
        monkeypatch.setattr(feed, "distributed_rank", lambda r=rank: (r, 2))
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(5)
        with vd.watch(model, store=path) as session:
            for step in range(12):
                x = torch.randn(16, 4, generator=g) + 2.0 * rank
                loss = model(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                session.log(loss=float("nan") if rank == 1 and step >= 7 else loss)
    return path


def test_a_job_opens_with_every_rank_merged(two_rank_files):
    job = vd.open_run(two_rank_files)
    assert isinstance(job, Job) and sorted(job.ranks) == [0, 1] and job.missing_ranks == []
    again = vd.open_run(str(two_rank_files)[: -len(".sqlite")])  # the job's name
    assert isinstance(again, Job) and again.path == job.path
    df = job.scalars()
    assert sorted(df["rank"].unique()) == [0, 1] and len(df) == 24
    codes = job.findings().codes
    assert "rank-nonfinite" in codes and "replica-drift" in codes
    nonfinite = next(f for f in job.findings() if f.code == "rank-nonfinite")
    assert nonfinite.where == "rank 1: loss" and "at step 7" in nonfinite.message
    drift = next(f for f in job.findings() if f.code == "replica-drift")
    assert "on rank 1" in drift.message  # (each "rank" trained alone: everything parts)
    other = [f for f in job.findings() if f.code == "nonfinite-loss"]
    assert other and other[0].where.startswith("rank 1")  # rank 1's own diagnosis, tagged


def test_the_ranks_view_and_the_report_of_a_job(two_rank_files, tmp_path):
    job = vd.open_run(two_rank_files)
    view = vd.show_ranks(job)
    html = view.to_html()
    assert "2 of 2 ranks" in html and "<svg" in html and "rank 1" in html
    assert "replica-drift" in html or "replicas differ" in html
    fig = view.figure()
    assert [t.get("name") for t in fig["data"]][1:] == ["rank 0", "rank 1"]
    out = vd.report(job, tmp_path / "job.html")
    page = out.read_text()
    assert "Step timing by rank" in page and "first non-finite value of the job" in page
    with pytest.raises(vd.VizdebugError, match="no rank logged '<b>'"):
        vd.show_ranks(job, metric="<b>")


class _Handle:
    """Stands in for the notebook's display handle: keeps what the view redraws."""

    def __init__(self) -> None:
        self.updates: list[str] = []

    def update(self, bundle, raw=True) -> None:
        self.updates.append(bundle["text/html"])


def test_rank_zeros_live_view_follows_the_other_ranks_files(tmp_path, monkeypatch):
    """Rank 0's session is still training when its view is shown; rank 1's file appears
    and grows afterwards: the view redraws with both, and stops following once every
    rank's run has closed.

    (It was flaky: the follower may read rank 1's file just after it is created, before
    its first step is stored; that redraw says "2 of 2 ranks" with rank 0's curve alone,
    and the test took it for the last one. It now waits for rank 1's curve, and the last
    redraw, made after every rank closed, must hold both.)"""
    import threading
    import time

    import vizdebug.collect.session.core as core
    import vizdebug.collect.session.feed as feed

    def as_rank(rank: int) -> None:
        monkeypatch.setattr(core, "distributed_rank", lambda: (rank, 2))
        monkeypatch.setattr(feed, "distributed_rank", lambda: (rank, 2))

    def train(session, model, steps: int) -> None:
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(steps):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)

    path = tmp_path / "live.sqlite"
    as_rank(0)
    model0 = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    with vd.watch(model0, store=path) as rank0:
        train(rank0, model0, 5)
        view = vd.show_ranks(rank0)
        assert "1 of 2 ranks" in view.to_html() and "no file yet for rank 1" in view.to_html()
        assert view.running()
        view._twin = handle = _Handle()
        view.follow(interval=0.05)
        as_rank(1)
        model1 = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
        with vd.watch(model1, store=path) as rank1:
            train(rank1, model1, 5)
        train(rank0, model0, 3)
    def both(html: str) -> bool:  # both ranks counted, and rank 1's curve in the legend
        return "2 of 2 ranks" in html and ">rank 1<" in html and ">rank 0<" in html

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(both(u) for u in handle.updates):
        time.sleep(0.05)
    assert any(both(u) for u in handle.updates), handle.updates[-1:]
    while time.monotonic() < deadline and any(
            t.name == "vizdebug-ranks-follow" for t in threading.enumerate()):
        time.sleep(0.05)
    assert not view.running() and len(view.ranks) == 2
    assert not any(t.name == "vizdebug-ranks-follow" for t in threading.enumerate())
    assert both(handle.updates[-1])  # the last redraw is of the finished job
    assert [len(d.records.scalars["loss"][0]) for d in view.ranks] == [8, 5]


@pytest.mark.parametrize("name", ["vizdebug.analysis.ranks.data", "vizdebug.analysis.ranks.timing",
                                  "vizdebug.analysis.ranks.nonfinite",
                                  "vizdebug.collect.taps.ranks", "vizdebug.store.job"])
def test_docstring_examples_of_the_rank_modules(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_show_ranks_meets_bad_input_with_clear_errors(tmp_path):
    with pytest.raises(vd.VizdebugTypeError, match="show_ranks.. takes a stored job"):
        vd.show_ranks(123)
    with pytest.raises(vd.VizdebugError, match="no run file"):
        vd.show_ranks(tmp_path / "nope.sqlite")
    path = tmp_path / "one.sqlite"
    model = nn.Linear(2, 1)
    with vd.watch(model, store=path) as session:
        session.log(loss=1.0)
    with pytest.raises(vd.VizdebugError, match="run of a single process"):
        vd.show_ranks(path)
    ranks = [_rank(0, records=_loss([1.0, 2.0]))]
    with pytest.raises(vd.VizdebugTypeError, match="metric must be a metric name"):
        vd.RanksView.from_ranks(ranks, metric=3)


def test_user_strings_in_the_ranks_view_are_escaped():
    evil = "<img src=x onerror=alert(1)>"
    rec = TrainingRecords(scalars={f"{evil}loss": (np.arange(3), np.array([1.0, 2.0, 3.0]))})
    other = TrainingRecords(scalars={f"{evil}loss": (np.arange(3), np.array([1.0, 2.0, 4.0]))})
    same = np.ones((5, 1, 2))
    moved = same.copy()
    moved[3:] *= 2
    ranks = [_rank(0, records=rec, replicas=_prints(same, paths=(evil,))),
             _rank(1, records=other, replicas=_prints(moved, paths=(evil,)))]
    html = vd.RanksView.from_ranks(ranks).to_html()
    assert evil not in html and "&lt;img src=x" in html
    assert "replica-drift" in [f.code for f in vd.RanksView.from_ranks(ranks).findings]


def test_a_damaged_rank_file_is_reported_not_raised(two_rank_files):
    import sqlite3

    other = two_rank_files.with_name("job.rank1.sqlite")
    with sqlite3.connect(other) as conn:
        conn.execute("INSERT INTO samples (kind, first_step, last_step, steps, rows) "
                     "VALUES ('rank_times', 0, 0, ?, ?)", (b"not npy", b"\x93NUMPY junk"))
    job = vd.open_run(two_rank_files)
    found = job.findings()
    damaged = [f for f in found if f.code == "collector-error"]
    assert damaged and damaged[0].where.startswith("rank 1") and "samples" in damaged[0].where
    assert job.rank_data()[1].times is None  # that rank's timing left out, the rest read
    assert "rank-nonfinite" in found.codes
