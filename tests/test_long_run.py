"""Long runs (issue 24): the run file's min/max envelope, the bounded reads built on it
(``Run.scalars(..., points=)``, the first ``records()``), and files without it.

Every run here is written by a real Session into a real SQLite file; an "older file" is a
real file with the envelope table and its setting taken out (what a file of the previous
vizdebug holds), a crafted one is altered with sqlite3."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.store import envelope as env
from vizdebug.store import reader as store_reader

N = 60_000  # points of the long metric: above the reader's MAX_POINTS (20,000)


def _values(n: int = N) -> np.ndarray:
    rng = np.random.default_rng(0)
    y = np.cumsum(rng.normal(size=n)) * 0.01 + 5.0
    for at, value in ((12_345, 1e3), (23_456, -1e3), (27_777, np.nan), (29_000, np.inf)):
        if at < n:  # a spike, a dip, a NaN, an infinity
            y[at] = value
    return y


def _write(path: Path, n: int = N) -> Path:
    """``loss`` every step (several transactions of at most MAX_COMMIT points each: the
    envelope is merged across commits), a
    ``val_loss`` every 100 steps, and a few steps logged again out of order."""
    y = _values(n)
    with vd.watch(torch.nn.Linear(2, 1), store=path) as session:
        for step in range(n):
            session.log(step=step, loss=float(y[step]))
            if step % 100 == 0:
                session.log(val_loss=float(y[step]) + 1)
            if step == n // 2:
                session.log(step=7, loss=-5.0)  # back in time: an old bucket grows
            if step % 4000 == 3999:  # a write per 4,000 steps: a loop this tight would
                session.log_store.resolve()  # outpace the writer on a loaded machine
                session.store.tick()  # and drop points (as it should; not here)
    assert vd.open_run(path).meta.get("dropped_points", 0) == 0
    return path


def _rows(path: Path, name: str) -> np.ndarray:
    with sqlite3.connect(path) as conn:
        return np.array(conn.execute("SELECT step, value, time FROM scalars WHERE name=? "
                                     "ORDER BY step, rowid", (name,)).fetchall(), dtype=float)


def _strip(path: Path) -> Path:
    """The same run as an older vizdebug wrote it: no envelope, no setting."""
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE envelope")
        conn.execute("DELETE FROM meta WHERE key='envelope'")
    return path


@pytest.fixture(scope="module")
def long_run(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("long") / "run.sqlite")


def test_the_envelope_in_the_file_is_the_aggregate_of_its_rows(long_run):
    with sqlite3.connect(long_run) as conn:
        assert conn.execute("SELECT count(DISTINCT name) FROM envelope").fetchone()[0] == 2
        for name in ("loss", "val_loss"):
            rows = _rows(long_run, name)
            ref = env.levels_of(rows[:, 0].astype(np.int64), rows[:, 1], rows[:, 2])
            for level, (keys, agg) in enumerate(ref):
                got = np.array(conn.execute(
                    f"SELECT bucket, {', '.join(env.COLUMNS)} FROM envelope WHERE name=? AND "
                    "level=? ORDER BY bucket", (name, level)).fetchall(), dtype=float)
                assert np.array_equal(got[:, 0], keys), (name, level)
                # the sum of a bucket is added over commits: its order of additions differs
                assert np.allclose(got[:, 1:], agg, equal_nan=True, rtol=1e-12), (name, level)
    assert vd.open_run(long_run).meta["envelope"] == env.SPEC


def test_merge_keeps_each_buckets_extremes_first_nan_and_ends():
    steps = np.arange(10)
    values = np.array([3.0, np.nan, 1.0, 7.0, 2.0, np.nan, np.inf, 0.5, 4.0, 4.0])
    keys, rows = env.merge(steps // 5, env.unit_rows(steps, values, steps * 10.0))
    assert keys.tolist() == [0, 1]
    assert rows[:, env.N].tolist() == [5, 5] and rows[:, env.NANS].tolist() == [1, 1]
    assert rows[:, env.VMIN].tolist() == [1.0, 0.5] and rows[:, env.MIN_STEP].tolist() == [2, 7]
    assert rows[:, env.VMAX].tolist() == [7.0, np.inf] and rows[:, env.MAX_TIME].tolist() == [30, 60]
    assert rows[:, env.NAN_STEP].tolist() == [1, 5]
    assert rows[0, env.LO] == 3.0 and np.isnan(rows[1, env.LO])  # (the first point is NaN)
    assert rows[:, env.HI].tolist() == [2.0, 4.0] and rows[:, env.HI_STEP].tolist() == [4, 9]
    # merging the merged buckets again is the bucket of all ten
    _, whole = env.merge(np.zeros(2, np.int64), rows)
    _, direct = env.merge(np.zeros(10, np.int64), env.unit_rows(steps, values, steps * 10.0))
    assert np.array_equal(whole, direct, equal_nan=True)


@pytest.mark.parametrize("points", [100, 1000, 5000])
def test_a_bounded_read_keeps_the_extremes_and_the_first_nan(long_run, points):
    df = vd.open_run(long_run).scalars("loss", points=points)
    assert len(df) <= points * 1.1 + 2
    rows = _rows(long_run, "loss")
    assert df["value"].max() == np.inf and df["value"][np.isfinite(df["value"])].max() == 1e3
    assert df["value"].min() == -1e3 and 27_777 in df["step"][df["value"].isna()].tolist()
    real = {(int(s), v) for s, v in rows[:, :2] if np.isfinite(v)}
    got = {(int(s), v) for s, v in df[["step", "value"]].to_numpy() if np.isfinite(v)}
    assert got <= real  # real points only
    assert set(df.columns) == {"step", "name", "value", "time", "rank"}


def test_a_zoom_into_step_90_percent_gives_the_real_points(long_run):
    at = N * 9 // 10
    df = vd.open_run(long_run).scalars("loss", start=at - 200, stop=at + 200, points=1000)
    rows = _rows(long_run, "loss")
    sel = rows[(rows[:, 0] >= at - 200) & (rows[:, 0] <= at + 200)]
    assert df["step"].tolist() == sel[:, 0].astype(int).tolist()
    assert np.array_equal(df["value"].to_numpy(), sel[:, 1], equal_nan=True)


def test_every_point_of_a_range_and_of_the_run_as_before(long_run):
    run = vd.open_run(long_run)
    every = run.scalars()
    assert len(every) == len(_rows(long_run, "loss")) + len(_rows(long_run, "val_loss"))
    part = run.scalars(start=100, stop=299)
    assert sorted(part["name"].unique()) == ["loss", "val_loss"]
    assert len(part) == 200 + 2 and part["step"].between(100, 299).all()
    assert run.last_step == N - 1


def test_the_first_read_of_a_long_run_uses_the_envelope_and_keeps_the_extremes(long_run):
    run = vd.open_run(long_run)
    steps, values = run.records().scalars["loss"]
    assert steps.size <= store_reader.MAX_POINTS
    assert np.nanmax(values) == np.inf and np.nanmin(values) == -1e3
    assert 1e3 in values and 27_777 in steps[np.isnan(values)]
    assert list(run.records().scalars) == ["loss", "val_loss"]  # the order they came
    assert not run.damage and "nonfinite-loss" in run.findings().codes


def _steps(path: Path, read) -> int:
    """SQLite VM steps ``read(conn)`` takes on a read-only connection to ``path``."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    used = [0]

    def count() -> int:
        used[0] += 1
        return 0

    conn.set_progress_handler(count, 100)
    read(conn)
    conn.close()
    return used[0] * 100


def test_a_window_reads_a_share_of_what_the_rows_cost(long_run):
    whole = _steps(long_run, lambda c: c.execute(
        "SELECT step, value, time FROM scalars WHERE name='loss'").fetchall())
    window = _steps(long_run, lambda c: env.window(c, "loss", 0, N - 1, 1000, enveloped=True))
    zoom = _steps(long_run, lambda c: env.window(c, "loss", 50_000, 50_400, 1000,
                                                 enveloped=True))
    assert window < whole / 10 and zoom < whole / 10, (window, zoom, whole)


def test_an_older_file_without_the_envelope_reads_the_same(tmp_path):
    path = _strip(_write(tmp_path / "old.sqlite", 30_000))
    run = vd.open_run(path)
    assert "envelope" not in run.meta
    steps, values = run.records().scalars["loss"]
    assert steps.size <= store_reader.MAX_POINTS and np.nanmin(values) == -1e3
    df = run.scalars("loss", points=500)
    assert len(df) <= 552 and df["value"].min() == -1e3 and df["value"].max() == np.inf
    zoom = run.scalars("loss", start=20_000, stop=20_300, points=1000)
    assert zoom["step"].tolist() == list(range(20_000, 20_301))
    assert run.last_step == 29_999 and not run.damage


def test_a_crafted_envelope_is_damage_and_the_rows_are_read_instead(tmp_path):
    path = _write(tmp_path / "r.sqlite", 30_000)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE envelope SET vmin = 'x', n = 'many' WHERE level = 8")
    run = vd.open_run(path)
    steps, values = run.records().scalars["loss"]
    assert np.nanmin(values) == -1e3 and "envelope" in run.damage
    assert "collector-error" in run.findings().codes
    with pytest.raises(vd.VizdebugError, match=r"r\.sqlite"):
        run.scalars(points=100)


def test_an_envelope_replaced_by_an_endless_view_is_refused(tmp_path):
    path = _write(tmp_path / "r.sqlite", 200)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE envelope")
        conn.execute("CREATE VIEW envelope AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                     "SELECT x + 1 FROM c) SELECT x AS name FROM c")
    with pytest.raises(vd.VizdebugError, match="a view 'envelope'"):
        vd.open_run(path)


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"name": 3}, "takes a metric name"),
    ({"start": 1.5}, "takes a step number"),
    ({"start": True}, "takes a step number"),
    ({"start": 10, "stop": 5}, "stop is before start"),
    ({"points": "many"}, "number of points"),
    ({"points": 1}, "between 4 and"),
    ({"stop": 1 << 70}, "64-bit"),
])
def test_bad_arguments_are_named(long_run, kwargs, words):
    with pytest.raises(vd.VizdebugError, match=words) as info:
        vd.open_run(long_run).scalars(**kwargs)
    assert "Traceback" not in str(info.value)


def test_negative_steps_and_a_metric_asked_by_name(tmp_path):
    path = tmp_path / "neg.sqlite"
    with vd.watch(torch.nn.Linear(2, 1), store=path) as session:
        for step in range(-300, 300):
            session.log(step=step, loss=float(step))
    df = vd.open_run(path).scalars(["loss"], start=-100, stop=-1, points=1000)
    assert df["step"].tolist() == list(range(-100, 0))
    few = vd.open_run(path).scalars("loss", points=10)
    assert few["value"].min() == -300 and few["value"].max() == 299


def test_infinities_of_both_signs_in_one_bucket_warn_nothing():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the writer's thread must never print a warning)
        _, rows = env.merge(np.zeros(3, np.int64), env.unit_rows(
            np.arange(3), np.array([np.inf, -np.inf, 1.0]), np.zeros(3)))
        window = env.bucket_window("x", 0, 2, 3, rows, 10)
    assert np.isnan(rows[0, env.TOTAL]) and np.isnan(window.y[0])
    assert rows[0, env.VMIN] == -np.inf and rows[0, env.VMAX] == np.inf
