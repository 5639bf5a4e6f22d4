"""compare_distributions over Dask (and Spark) DataFrames, on a real local cluster.

The streamed path (Parquet read here) and the engine path (partitions sketched on the
workers, merged here) sample the same rows by position, so their tables and sketches are
equal: counts and the binned KS exactly, moments up to float summation order. Against the
exact in-memory (pandas) path the binned KS statistic is a lower bound short by at most a
few fine-bin masses, as the Parquet path documents.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import vizdebug as vd
from vizdebug.analysis.drift import sampling, streaming
from vizdebug.errors import VizdebugError, VizdebugTypeError

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

N = 20_000
EXACT = ["feature", "kind", "test", "statistic", "p_value", "p_adjusted", "psi", "drifted", "n_ref",
         "n_cur", "missing_ref", "missing_cur", "unseen_share", "ref_summary", "cur_summary"]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    with cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture
def small_batches(monkeypatch):
    """Sample 3,000 rows a side and read 1,500-row batches: the sample and the batches
    then cut the data differently from the partitions."""
    monkeypatch.setattr(sampling, "SAMPLE_ROWS", 3000)
    monkeypatch.setattr(streaming, "BATCH_ROWS", 1500)


def _frame(seed: int, shift: float, n: int = N) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(shift, 1, n)
    x[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({
        "x": x, "y": rng.lognormal(0, 0.5, n), "c": rng.choice(list("abcde"), n),
        "b": rng.random(n) < 0.3 + shift / 5, "k": rng.integers(0, 1000, n),
        "t": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 10**6, n), unit="s"),
    })


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dask-drift")
    ref, cur = _frame(0, 0.0), _frame(1, 0.3)
    ref.to_parquet(folder / "ref.parquet")
    (folder / "cur").mkdir()
    for i, part in enumerate(np.array_split(np.arange(N), 3)):  # a folder of three files
        cur.iloc[part].to_parquet(folder / "cur" / f"part-{i}.parquet")
    return ref, cur, folder


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    a, b = a.set_index("feature").sort_index(), b.set_index("feature").sort_index()
    pd.testing.assert_frame_equal(a[[c for c in EXACT[1:]]], b[[c for c in EXACT[1:]]], check_exact=True)
    np.testing.assert_allclose(a.effect_size, b.effect_size, rtol=1e-9)


def _sketches(view) -> dict:
    return {r.feature: r.sketch for r in view.results}


def _same_sketches(a, b) -> None:
    sa, sb = _sketches(a), _sketches(b)
    assert sa.keys() == sb.keys()
    for name in sa:
        for key in sa[name]:
            if key in ("ref_mean", "ref_std"):  # sums of floats, in another order
                assert sa[name][key] == pytest.approx(sb[name][key], rel=1e-12)
            else:
                assert sa[name][key] == sb[name][key], (name, key)


def test_dask_frames_give_the_parquet_paths_numbers(client, data, small_batches):
    ref, cur, folder = data
    streamed = vd.compare_distributions(folder / "ref.parquet", folder / "cur", progress=False)
    on_dask = vd.compare_distributions(dd.from_pandas(ref, npartitions=3), dd.from_pandas(cur, npartitions=5),
                                       progress=False)
    _same(on_dask.table, streamed.table)
    _same_sketches(on_dask, streamed)
    assert on_dask.drifted == streamed.drifted and "x" in on_dask.drifted
    assert set(on_dask.table.test) == {"ks (binned)", "chi2"}
    html = on_dask._repr_mimebundle_()["text/html"]
    assert "vd-drift-app" in html and "features drifted" in html


def test_dask_read_parquet_and_a_mixed_pair_agree(client, data, small_batches):
    ref, cur, folder = data
    streamed = vd.compare_distributions(folder / "ref.parquet", folder / "cur", progress=False)
    read = vd.compare_distributions(dd.read_parquet(folder / "ref.parquet"), dd.read_parquet(folder / "cur"),
                                    progress=False)
    mixed = vd.compare_distributions(dd.from_pandas(ref, npartitions=2), folder / "cur", progress=False)
    _same(read.table, streamed.table)
    _same(mixed.table, streamed.table)


def test_dask_is_within_the_binned_bound_of_the_exact_pandas_path(client, data):
    ref, cur, _ = data
    exact = vd.compare_distributions(ref, cur, kinds={"k": "numeric"}).table.set_index("feature")
    on_dask = vd.compare_distributions(dd.from_pandas(ref, npartitions=4), dd.from_pandas(cur, npartitions=4),
                                       progress=False).table.set_index("feature")
    for name in ("x", "y", "k", "t"):  # KS: binned is a lower bound, short by a few fine-bin masses
        gap = exact.statistic[name] - on_dask.statistic[name]
        assert 0 <= gap <= 3 / streaming.FINE_BINS, (name, gap)
        assert on_dask.effect_size[name] == pytest.approx(exact.effect_size[name], rel=0.02, abs=2e-3)
    for name in ("c", "b"):  # counted exactly on both paths
        assert on_dask.statistic[name] == pytest.approx(exact.statistic[name], rel=1e-9)
        assert on_dask.p_value[name] == pytest.approx(exact.p_value[name], rel=1e-6)
    assert on_dask.n_ref.to_dict() == exact.n_ref.to_dict()
    assert sorted(on_dask.index[on_dask.drifted]) == sorted(exact.index[exact.drifted])


def test_a_time_window_on_a_dask_side_equals_the_parquet_one(client, data, small_batches):
    ref, cur, folder = data
    window = ("2024-01-03", "2024-01-09")
    streamed = vd.compare_distributions(folder / "ref.parquet", folder / "cur", time="t", window=window,
                                        time_buckets=6, progress=False)
    on_dask = vd.compare_distributions(dd.from_pandas(ref, npartitions=3), dd.from_pandas(cur, npartitions=4),
                                       time="t", window=window, time_buckets=6, progress=False)
    _same(on_dask.table, streamed.table)
    _same_sketches(on_dask, streamed)  # bucket_hist and bucket_counts included
    assert "bucket_hist" in _sketches(on_dask)["x"] and "bucket_counts" in _sketches(on_dask)["c"]
    assert list(on_dask.result.time.edges) == list(streamed.result.time.edges)


def test_dask_columns_named_by_numbers_are_compared_by_their_names(client):
    rng = np.random.default_rng(3)
    ref, cur = pd.DataFrame(rng.normal(size=(500, 2))), pd.DataFrame(rng.normal(1, 1, size=(500, 2)))
    view = vd.compare_distributions(dd.from_pandas(ref, npartitions=2), cur, progress=False)
    assert sorted(view.drifted) == ["0", "1"]


def test_bad_dask_input_is_named(client, data):
    ref, cur, _ = data
    dref = dd.from_pandas(ref, npartitions=2)
    with pytest.raises(VizdebugTypeError, match=r"reference data is a Dask Series.*to_frame\(\)"):
        vd.compare_distributions(dref["x"], cur)
    with pytest.raises(VizdebugError, match="current Dask DataFrame has no rows"):
        vd.compare_distributions(dref, dd.from_pandas(cur.iloc[:0], npartitions=1))
    with pytest.raises(VizdebugError, match="current Dask DataFrame has no columns"):
        vd.compare_distributions(dref, dd.from_pandas(pd.DataFrame(index=range(5)), npartitions=1))
    with pytest.raises(VizdebugError, match=r"feature 'z' is missing from the reference data; its columns"):
        vd.compare_distributions(dref, cur, features=["z"])
    with pytest.raises(VizdebugError, match="share no column names"):
        vd.compare_distributions(dref, dd.from_pandas(cur.rename(columns=str.upper), npartitions=2))


def test_compare_distributions_never_imports_an_engine_it_was_not_given(tmp_path):
    pd.DataFrame({"x": np.arange(50.0)}).to_parquet(tmp_path / "r.parquet")
    code = ("import sys, numpy as np, vizdebug as vd\n"
            f"vd.compare_distributions({str(tmp_path / 'r.parquet')!r}, {{'x': np.arange(10.0, 60.0)}})\n"
            "vd.compare_distributions({'x': np.arange(9.0)}, {'x': np.arange(9.0)})\n"
            "print([m for m in ('dask', 'distributed', 'pyspark') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["sampling", "partials", "sides", "engines"])
def test_docstring_examples_of_the_engine_modules(name):
    import doctest
    import importlib

    module = importlib.import_module(f"vizdebug.analysis.drift.{name}")
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_doctest_of_frames():
    import doctest

    import vizdebug.data.frames as frames

    assert doctest.testmod(frames).attempted and doctest.testmod(frames).failed == 0


def test_the_sample_is_the_same_rows_however_the_side_is_cut():
    keys = sampling.row_keys(0, 10_000, seed=3)
    assert len(np.unique(keys)) == len(keys)  # a bijection: no two rows share a key
    below = sampling.sample_below(10_000, target=1000)
    whole = sampling.chosen(0, 10_000, 3, below)
    parts = np.concatenate([sampling.chosen(a, b - a, 3, below) for a, b in ((0, 17), (17, 4000), (4000, 10_000))])
    assert np.array_equal(whole, parts) and 850 < whole.sum() < 1150
    assert sampling.chosen(0, 10, 3, sampling.sample_below(10)) is None  # a small side: every row


def test_partial_sketches_round_trip_as_bytes_without_pickle():
    from vizdebug.analysis.drift.partials import side_from_bytes, side_to_bytes
    from vizdebug.analysis.drift.sides import NumericStream, StreamSide

    side = StreamSide(None, {"x": "numeric", "c": "categorical"})
    side.nums["x"] = NumericStream(n=3, missing=1, total=6.0, total_sq=14.0, lo=1.0, hi=3.0,
                                   samples=[np.array([1.0]), np.array([2.0, 3.0])], fine=np.array([1, 2]),
                                   display=np.array([3]), buckets=np.array([[1, 2], [0, 0]]))
    side.counts["c"] = Counter({"a": 2, "é<b>": 1})
    side.missing["c"] += 4
    side.bucket_counts["c"] = np.array([[2, 1]])
    back = side_from_bytes(side_to_bytes(side))
    x = back.nums["x"]
    assert (x.n, x.missing, x.total, x.total_sq, x.lo, x.hi) == (3, 1, 6.0, 14.0, 1.0, 3.0)
    assert np.concatenate(x.samples).tolist() == [1.0, 2.0, 3.0] and x.buckets.tolist() == [[1, 2], [0, 0]]
    assert back.counts == {"c": {"a": 2, "é<b>": 1}} and back.missing["c"] == 4
    assert back.bucket_counts["c"].tolist() == [[2, 1]]


def _java() -> str | None:
    java = shutil.which("java") or (os.environ.get("JAVA_HOME") and os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    return java if java and os.path.exists(java) else None


@pytest.mark.slow
def test_spark_frames_give_the_parquet_paths_numbers(tmp_path, small_batches):
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install vizdebug[spark])")
    if _java() is None:
        pytest.skip("PySpark needs a Java runtime (JVM), and no `java` is on PATH or in JAVA_HOME")
    from pyspark.sql import SparkSession

    ref, cur = _frame(0, 0.0, n=4000), _frame(1, 0.3, n=4000)  # small: each Spark job costs seconds
    ref.to_parquet(tmp_path / "ref.parquet")
    cur.to_parquet(tmp_path / "cur.parquet")
    spark = (SparkSession.builder.master("local[2]").appName("vizdebug-drift-test")
             .config("spark.driver.host", "127.0.0.1").config("spark.ui.enabled", "false")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true")
             .config("spark.sql.session.timeZone", "UTC").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    try:
        # (from pandas, so the rows keep their order: Spark packs a folder's files into
        # partitions by size, and a side read in another order samples other rows)
        sref, scur = spark.createDataFrame(ref), spark.createDataFrame(cur)
        assert sref.rdd.getNumPartitions() > 1
        streamed = vd.compare_distributions(tmp_path / "ref.parquet", tmp_path / "cur.parquet", progress=False)
        on_spark = vd.compare_distributions(sref, scur, progress=False)
        _same(on_spark.table, streamed.table)
        with pytest.raises(VizdebugTypeError, match=r"current data is a Spark RDD.*createDataFrame"):
            vd.compare_distributions(ref, scur.rdd)
    finally:
        spark.stop()
