"""Stored runs: ``watch(model, store=path)`` writes a real SQLite file, ``open_run`` reads it
(in this process, from another process while the run goes on, after the writer was killed)."""

from __future__ import annotations

import gc
import io
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.store import writer as store_writer
from vizdebug.store.run import STALE_AFTER
from vizdebug.store.schema import is_run_file

from .digits_runs import RunConfig, start_store_child, train

ROOT = Path(__file__).resolve().parents[1]


def _watched(path, **kw):
    return lambda model, loader: vd.watch(model, loader=loader, store=path, **kw)


def _tiny_loop(session, model, steps=5):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = model(torch.randn(8, 3)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        session.log(loss=loss)


def test_round_trip_equals_the_live_session(tmp_path):
    path = tmp_path / "run.sqlite"
    cfg = RunConfig(epochs=2, n_train=512)
    _, session = train(cfg, _watched(path, every=1))
    session.close()
    run = vd.open_run(path)
    assert run.state == "closed" and not run.failed
    live, stored = session.scalars(), run.scalars()
    assert list(live.columns) == list(stored.columns) == ["step", "name", "value", "time", "rank"]
    assert live[["step", "name"]].equals(stored[["step", "name"]])
    np.testing.assert_array_equal(live["value"].to_numpy(), stored["value"].to_numpy())
    a, b = session.records(), run.records()
    assert a.module_paths == b.module_paths and a.param_paths == b.param_paths
    np.testing.assert_array_equal(a.act_steps, b.act_steps)
    np.testing.assert_array_equal(a.activations, b.activations)  # float32 on disk: exact
    np.testing.assert_array_equal(a.grads, b.grads)
    assert a.loader.batches == b.loader.batches
    np.testing.assert_array_equal(a.loader.batch_stats, b.loader.batch_stats)
    assert run.findings().codes == session.findings().codes == []
    x, y = run.captured_batches()[-1]
    assert x.shape[1:] == (1, 8, 8) and y.shape == (x.shape[0],) and y.dtype == np.int64
    assert vd.show_batch((x, y)).to_html().count("<img") == x.shape[0]
    assert run.system.array().shape[1] == 4


def test_a_bugged_run_gives_the_same_findings_from_disk(tmp_path):
    path = tmp_path / "nan.sqlite"
    cfg = RunConfig(epochs=2, n_train=512, nan_batch=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the anomaly warning (tested elsewhere)
        _, session = train(cfg, _watched(path, every=1))
        session.close()
    codes = session.findings().codes
    assert "nonfinite-activation" in codes
    assert vd.open_run(path).findings().codes == codes
    where = {f.code: f.where for f in vd.open_run(path).findings()}
    assert where["nonfinite-activation"] == {f.code: f.where for f in session.findings()}[
        "nonfinite-activation"]


def test_nan_and_inf_values_survive(tmp_path):
    path = tmp_path / "r.sqlite"
    model = torch.nn.Linear(3, 1)
    with vd.watch(model, store=path) as session:
        for v in (1.0, float("nan"), float("inf"), -float("inf"), torch.tensor(2.5)):
            session.log(loss=v)
    values = vd.open_run(path).scalars()["value"].tolist()
    assert values[0] == 1.0 and np.isnan(values[1]) and values[2:] == [np.inf, -np.inf, 2.5]


def test_report_of_a_run_escapes_user_strings(tmp_path):
    path = tmp_path / "r.sqlite"
    evil = "<img src=x onerror=alert(1)>"
    model = torch.nn.Linear(3, 1)
    with vd.watch(model, store=path) as session:
        for i in range(4):
            session.log(**{"loss": 1.0 / (i + 1), evil: float(i)})
    out = vd.report(vd.open_run(path), tmp_path / "r.html")
    page = out.read_text()
    assert evil not in page
    assert "Training dashboard" in page


def test_rewatch_replaces_the_earlier_run_and_closes_it_first(tmp_path):
    path = tmp_path / "r.sqlite"
    model = torch.nn.Linear(3, 1)
    first = vd.watch(model, store=path)
    _tiny_loop(first, model, steps=7)
    second = vd.watch(model, store=path)  # a re-run cell
    assert first.closed and first.store.closed
    _tiny_loop(second, model, steps=2)
    second.close()
    assert vd.open_run(path).last_step == 1


def test_store_argument_errors(tmp_path):
    model = torch.nn.Linear(3, 1)
    with pytest.raises(TypeError, match="file path"):
        vd.watch(model, store=123)
    with pytest.raises(ValueError, match="empty path"):
        vd.watch(model, store="")
    other = tmp_path / "notes.txt"
    other.write_text("keep me")
    with pytest.raises(ValueError, match="not a vizdebug run; refusing"):
        vd.watch(model, store=other)
    assert other.read_text() == "keep me"
    # a refused store leaves the model without hooks
    assert not model._forward_hooks and not model._forward_pre_hooks


def test_a_folder_gets_one_new_file_per_run(tmp_path):
    model = torch.nn.Linear(3, 1)
    with vd.watch(model, store=f"{tmp_path}/runs/") as session:  # a new folder
        _tiny_loop(session, model, steps=3)
    files = list((tmp_path / "runs").glob("*.sqlite"))
    assert len(files) == 1 and is_run_file(files[0])
    with vd.watch(model, store=tmp_path / "runs") as session:  # an existing folder
        _tiny_loop(session, model, steps=2)
    files = sorted((tmp_path / "runs").glob("*.sqlite"), key=lambda f: f.stat().st_mtime)
    assert len(files) == 2
    assert vd.open_run(tmp_path / "runs").path == files[-1]


def test_open_run_errors(tmp_path):
    with pytest.raises(ValueError, match="no run file"):
        vd.open_run(tmp_path / "missing.sqlite")
    with pytest.raises(ValueError, match="no vizdebug run"):
        vd.open_run(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all")
    with pytest.raises(ValueError, match="not a vizdebug run file"):
        vd.open_run(junk)
    other_db = tmp_path / "other.sqlite"
    sqlite3.connect(other_db).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(ValueError, match="not a vizdebug run file"):
        vd.open_run(other_db)
    with pytest.raises(TypeError, match="path of a run file"):
        vd.open_run(None)


class _Boom:
    """Unpickling this would create a marker file: loading must never unpickle."""

    marker = ""

    def __reduce__(self):
        return (Path.write_text, (Path(self.marker), "pwned"))


def test_stored_runs_load_without_pickle(tmp_path):
    path = tmp_path / "r.sqlite"
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    with vd.watch(model, store=path, every=1) as session:
        _tiny_loop(session, model, steps=3)
    marker = tmp_path / "pwned.txt"
    boom = _Boom()
    boom.marker = str(marker)
    buf = io.BytesIO()
    np.save(buf, np.array([boom], dtype=object), allow_pickle=True)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE samples SET rows=? WHERE kind='activations'", (buf.getvalue(),))
    run = vd.open_run(path)  # the rest of the run is shown, the damage is named
    assert run.records().act_steps.size == 0 and len(run.records().scalars["loss"][0]) == 3
    damage = [f for f in run.findings() if f.code == "collector-error"]
    assert damage and "damaged or not a plain numeric array" in damage[0].message
    assert "table samples" in damage[0].where and str(path) in damage[0].where
    assert not marker.exists()
    raw = path.read_bytes()
    assert b"\x80\x04\x95" not in raw.replace(buf.getvalue(), b"")  # no pickle elsewhere


def test_a_failing_write_becomes_a_finding_and_training_goes_on(tmp_path, monkeypatch):
    path = tmp_path / "r.sqlite"
    calls = {"n": 0}
    original = store_writer.RunWriter._write_scalars

    def flaky(self, conn):
        calls["n"] += 1
        if calls["n"] == 1:
            raise sqlite3.OperationalError("disk I/O error (injected)")
        return original(self, conn)

    monkeypatch.setattr(store_writer.RunWriter, "_write_scalars", flaky)
    model = torch.nn.Linear(3, 1)
    session = vd.watch(model, store=path)
    _tiny_loop(session, model, steps=3)
    session.close()
    found = [f for f in session.findings() if f.code == "collector-error"]
    assert found and "the run store" in found[0].message + str(found[0].where)
    assert vd.open_run(path).state == "closed"


def test_the_scalar_queue_is_bounded():
    w = store_writer.RunWriter.__new__(store_writer.RunWriter)
    w._queue = store_writer.deque(maxlen=8)
    w.dropped = 0
    for i in range(20):
        w.sink(np.array([i]), ("loss",), np.array([1.0]), np.array([0.0]))
    assert len(w._queue) == 8 and w.dropped == 12


def test_training_with_a_store_is_bitwise_identical(tmp_path):
    cfg = RunConfig(epochs=1, n_train=384)
    plain, _ = train(cfg)
    watched, session = train(cfg, _watched(tmp_path / "r.sqlite", every=1))
    session.close()
    for a, b in zip(plain.state_dict().values(), watched.state_dict().values()):
        assert torch.equal(a, b)


def _wait_for(predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_another_process_follows_a_run_and_reads_it_after_a_kill(tmp_path):
    path = tmp_path / "live.sqlite"
    child = start_store_child(path, every=1, interval=0.2, pause=0.01)
    try:
        run = _wait_for(lambda: is_run_file(path) and vd.open_run(path))
        _wait_for(lambda: run.last_step >= 10)
        assert run.state == "running" and not run.closed
        first = run.last_step
        version = run.version
        assert "running" in run.dashboard(live=False).to_html()
        _wait_for(lambda: run.version != version and run.last_step > first)
        assert run.records().act_steps.size > 0
        # follows the file from its own thread, with no reference kept by the caller
        widget = vd.open_run(path).dashboard()._build_widget()
        gc.collect()
        start = widget.revision
        _wait_for(lambda: widget.revision >= start + 2)
        assert "running" in widget.status
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    killed_at = vd.open_run(path).last_step
    assert killed_at > first
    run = vd.open_run(path)
    _wait_for(lambda: run.state == "interrupted", timeout=STALE_AFTER * 0.2 + 5)
    assert run.closed and "no write since" in run.failed
    _wait_for(lambda: "interrupted: no write since" in widget.status)
    codes = run.findings().codes
    assert "run-interrupted" in codes
    assert run.scalars()["step"].max() == killed_at


DIST_CHILD = textwrap.dedent("""
    import os, sys, torch, torch.distributed as dist, vizdebug as vd
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    with vd.watch(model, store=sys.argv[1]) as session:
        for step in range(6):
            x = torch.randn(8, 4, generator=g)
            loss = (model(x) - 1).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
            session.log(loss=loss)
    dist.destroy_process_group()
""")


def test_each_rank_of_a_gloo_job_is_stored_and_read_together(tmp_path):
    path = tmp_path / "ddp.sqlite"
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, "-c", DIST_CHILD, str(path)], env=env,
                                      cwd=ROOT))
    for p in procs:
        assert p.wait(timeout=120) == 0
    run = vd.open_run(path)
    assert run.meta["world_size"] == 2 and run.meta["rank"] == 0
    assert [r.meta["rank"] for r in run.rank_runs()] == [1]
    df = run.scalars()
    assert sorted(df["rank"].unique().tolist()) == [0, 1]
    per_rank = df.pivot_table(index="step", columns="rank", values="value")
    assert per_rank.shape == (6, 2)
    assert not np.allclose(per_rank[0], per_rank[1])  # each rank saw its own batches


def test_a_long_series_reads_bounded_with_its_spikes_and_nans(tmp_path, monkeypatch):
    from vizdebug.store import reader

    monkeypatch.setattr(reader, "MAX_POINTS", 200)
    path = tmp_path / "long.sqlite"
    values = np.sin(np.arange(5000) / 50.0)
    values[1234] = 40.0      # one spike
    values[3000:3003] = np.nan
    with vd.watch(torch.nn.Linear(2, 2), store=path) as session:
        for v in values:
            session.log(loss=float(v))
    run = vd.open_run(path)
    steps, got = run.records().scalars["loss"]
    assert steps.size <= 200 + 20 and np.all(np.diff(steps) > 0)
    assert 1234 in steps.tolist() and got[steps.tolist().index(1234)] == 40.0
    assert set(steps[np.isnan(got)].tolist()) & {3000, 3001, 3002}  # the NaNs stay visible
    assert np.nanmin(got) == np.min(values[np.isfinite(values)])
    assert len(run.scalars()) == 5000  # scalars() still has every point


def test_a_run_that_raised_is_stored_as_failed_with_the_reason(tmp_path):
    path = tmp_path / "failed.sqlite"
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
    x = torch.randn(4, 3)
    x[0, 0] = float("nan")
    with pytest.raises(vd.AnomalyError), vd.watch(model, store=path, on_anomaly="raise") as s:
        s.log(loss=1.0)
        model(x)
    run = vd.open_run(path)
    assert run.state == "failed" and run.closed
    assert "WatchAnomaly" in run.failed and "'0' (Linear)" in run.failed
    assert "nonfinite-activation" in run.findings().codes


def test_loader_worker_processes_never_touch_the_run_file(tmp_path):
    path = tmp_path / "workers.sqlite"
    cfg = RunConfig(epochs=1, n_train=512)
    from .digits_runs import build

    model, loader, _, opt = build(cfg)
    loader = torch.utils.data.DataLoader(loader.dataset, batch_size=64, num_workers=2)
    with vd.watch(model, loader=loader, store=path) as session:
        for _ in range(2):  # two epochs: worker processes start and exit twice
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                session.log(loss=loss)
        assert vd.open_run(path).state == "running"
    run = vd.open_run(path)
    assert run.state == "closed" and len(run.scalars()) == 16
    assert run.records().loader.batches == 16


def test_a_reader_takes_only_what_was_written_since_and_matches_a_fresh_read(tmp_path):
    path = tmp_path / "inc.sqlite"
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    session = vd.watch(model, store=path, every=2)
    follower = vd.open_run(path)
    for round_ in range(3):
        _tiny_loop(session, model, steps=5)
        session.log(val_loss=float(round_))
        session.store.tick()
        rec = follower.records()
        assert rec.scalars["loss"][0].tolist() == list(range(5 * (round_ + 1)))
    first_rowid = follower._reader.scalar_rowid
    session.close()
    follower.records()
    assert follower._reader.scalar_rowid == first_rowid  # nothing new: nothing re-read
    fresh = vd.open_run(path).records()
    rec = follower.records()
    for name in fresh.scalars:
        np.testing.assert_array_equal(rec.scalars[name][1], fresh.scalars[name][1])
    np.testing.assert_array_equal(rec.act_steps, fresh.act_steps)
    np.testing.assert_array_equal(rec.activations, fresh.activations)


def test_a_follower_starts_over_when_a_new_run_replaces_the_file(tmp_path):
    path = tmp_path / "again.sqlite"
    model = torch.nn.Linear(3, 1)
    with vd.watch(model, store=path) as first:
        _tiny_loop(first, model, steps=8)
    follower = vd.open_run(path)
    assert follower.records().scalars["loss"][0].size == 8
    with vd.watch(model, store=path) as second:  # the cell is run again
        _tiny_loop(second, model, steps=3)
    assert follower.records().scalars["loss"][0].tolist() == [0, 1, 2]
