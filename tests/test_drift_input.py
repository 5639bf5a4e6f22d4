"""compare_distributions on awkward input: kinds, missing values, bad columns, time windows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vizdebug import VizdebugError
from vizdebug.data.tables import infer_kind
from vizdebug.views.drift import compare_distributions


def _row(view, name: str) -> pd.Series:
    t = view.table
    return t[t.feature == name].iloc[0]


def test_kinds_are_inferred_and_overridable() -> None:
    rng = np.random.default_rng(0)
    n = 500
    df = pd.DataFrame({
        "x": rng.normal(size=n), "i": rng.integers(0, 1000, n), "level": rng.integers(0, 3, n),
        "flag": rng.random(n) < 0.5, "s": rng.choice(["a", "b"], n),
        "cat": pd.Categorical(rng.choice(["u", "v"], n)),
        "when": pd.date_range("2024-01-01", periods=n, freq="h"),
    })
    view = compare_distributions(df, df.copy())
    kinds = dict(zip(view.table.feature, view.table.kind))
    assert kinds == {"x": "numeric", "i": "numeric", "level": "categorical", "flag": "boolean",
                     "s": "categorical", "cat": "categorical", "when": "datetime"}
    assert not view.table.drifted.any() and not view.findings.warnings
    forced = compare_distributions(df, df.copy(), kinds={"level": "numeric"}, categorical=["i"])
    assert dict(zip(forced.table.feature, forced.table.kind))["level"] == "numeric"
    assert dict(zip(forced.table.feature, forced.table.kind))["i"] == "categorical"


def test_inputs_ndarray_dict_tensor_series() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    b[:, 2] += 2
    for ref, cur in [(a, b), (torch.from_numpy(a), torch.from_numpy(b)),
                     ({"0": a[:, 0], "1": a[:, 1], "2": a[:, 2]}, {"0": b[:, 0], "1": b[:, 1], "2": b[:, 2]})]:
        assert compare_distributions(ref, cur).drifted == ["2"]
    assert compare_distributions(pd.Series(a[:, 2], name="s"), pd.Series(b[:, 2], name="s")).drifted == ["s"]


def test_missing_values_and_unseen_categories_are_reported() -> None:
    rng = np.random.default_rng(2)
    ref = pd.DataFrame({"x": rng.normal(size=1000), "c": rng.choice(list("ab"), 1000)})
    cur = ref.copy()
    cur.loc[:299, "x"] = np.nan
    cur.loc[:99, "c"] = "zzz"
    view = compare_distributions(ref, cur)
    assert _row(view, "x").missing_cur == pytest.approx(0.3)
    assert _row(view, "c").unseen_share == pytest.approx(0.1)
    messages = " ".join(f.message for f in view.findings)
    assert "missing values went from 0.0%" in messages and "'zzz'" in messages


def test_mismatched_columns_compare_the_shared_ones_and_say_so() -> None:
    view = compare_distributions({"a": [1.0, 2, 3], "b": [1.0, 2, 3]}, {"a": [1.0, 2, 3], "c": [1, 2]})
    assert list(view.table.feature) == ["a"]
    assert any("only in the reference" in f.message and "'b'" in f.message for f in view.findings)
    with pytest.raises(VizdebugError, match="share no column names"):
        compare_distributions({"a": [1.0]}, {"b": [1.0]})
    with pytest.raises(VizdebugError, match="'zz' is not a column of the reference"):
        compare_distributions({"a": [1.0]}, {"a": [1.0]}, features=["zz"])


def test_all_nan_constant_and_one_row_columns_give_sensible_rows() -> None:
    ref = {"nan": [np.nan] * 50, "const": [3.0] * 50, "x": np.linspace(0, 1, 50)}
    cur = {"nan": [np.nan] * 40, "const": [3.0] * 40, "x": np.linspace(0, 1, 40)}
    view = compare_distributions(ref, cur)
    assert _row(view, "nan").test == "none" and not _row(view, "nan").drifted
    assert "no values in the reference and the current data" in _row(view, "nan").note
    assert any(f.where == "nan" and f.severity == "info" for f in view.findings)
    assert _row(view, "const").statistic == 0 and _row(view, "const").effect_size == 0
    one = compare_distributions({"x": [5.0]}, {"x": [6.0]})
    assert one.table.loc[0, "p_value"] == 1.0 and not one.table.loc[0, "drifted"]
    moved = compare_distributions({"k": [1.0] * 300}, {"k": [2.0] * 300})
    assert moved.drifted == ["k"]
    view.to_html()
    one.to_html()


def test_identifier_columns_are_not_compared_and_cost_little() -> None:
    import time

    rng = np.random.default_rng(9)
    n = 300_000
    ref = {"id": np.char.add("u", rng.integers(0, 10**9, n).astype(str)), "x": rng.normal(size=n)}
    cur = {"id": np.char.add("v", rng.integers(0, 10**9, n).astype(str)), "x": rng.normal(size=n)}
    t = time.perf_counter()
    view = compare_distributions(ref, cur)
    assert time.perf_counter() - t < 5
    row = _row(view, "id")
    assert row.test == "none" and not row.drifted and "identifier-like" in row.note
    info = [f for f in view.findings if f.where == "id"]
    assert [f.severity for f in info] == ["info"] and "not compared" in info[0].message
    assert not view.findings.warnings


def test_mixed_types_and_non_numeric_as_numeric_name_the_column_and_the_fix() -> None:
    with pytest.raises(TypeError, match=r"'m' of the reference data mixes value types.*pd.to_numeric"):
        compare_distributions({"m": np.array([1, "a", 2.5], dtype=object)}, {"m": [1.0, 2.0, 3.0]})
    with pytest.raises(VizdebugError, match=r"'t' was treated as numeric.*'abc'.*categorical=\['t'\]"):
        compare_distributions({"t": ["1", "abc"]}, {"t": [1.0, 2.0]}, kinds={"t": "numeric"})
    with pytest.raises(VizdebugError, match="'q' holds categorical and numeric"):
        compare_distributions({"q": ["a", "b"]}, {"q": [1.0, 2.0]})
    with pytest.raises(VizdebugError, match="rows x features"):
        compare_distributions(np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="pass a pandas DataFrame"):
        compare_distributions(42, 43)


def test_object_column_of_numbers_and_none_is_numeric() -> None:
    col = np.array([1, 2.5, None, 4] * 50, dtype=object)
    assert infer_kind(col, col, "x") == "numeric"
    view = compare_distributions({"x": col}, {"x": col})
    assert view.table.loc[0, "missing_ref"] == pytest.approx(0.25)


def _sensor(n: int, start_drift: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(3)
    ref = pd.DataFrame({"temp": rng.normal(20, 1, n), "mode": rng.choice(["a", "b"], n)})
    ts = pd.date_range("2025-01-01", periods=n, freq="min")
    frac = np.arange(n) / n
    temp = rng.normal(20, 1, n) + np.where(frac >= start_drift, 2.0, 0.0)
    mode = np.where((frac >= start_drift) & (rng.random(n) < 0.5), "c", rng.choice(["a", "b"], n))
    return ref, pd.DataFrame({"ts": ts, "temp": temp, "mode": mode})


def test_time_window_shows_when_drift_starts() -> None:
    ref, cur = _sensor(4800, 0.75)
    view = compare_distributions(ref, cur, time="ts", time_buckets=8)
    assert "ts" not in set(view.table.feature)
    assert set(view.drifted) == {"temp", "mode"}
    sk = next(r.sketch for r in view.results if r.feature == "temp")
    buckets = np.array(sk["bucket_hist"])
    assert buckets.shape == (8, 120) and buckets.sum(axis=0).tolist() == sk["cur_hist"]
    early = compare_distributions(ref, cur, time="ts", window=(None, "2025-01-03 12:00"))
    late = compare_distributions(ref, cur, time="ts", window=(cur.ts.iloc[4000], None))
    assert early.drifted == [] and set(late.drifted) == {"temp", "mode"}
    assert early.table.n_cur.max() == 3600  # 2.5 days of minutes


def test_time_as_array_and_bad_time() -> None:
    ref, cur = _sensor(600, 0.5)
    view = compare_distributions(ref, cur.drop(columns="ts"), time=np.arange(600.0), window=(0, 300))
    assert view.table.n_cur.max() == 300
    with pytest.raises(VizdebugError, match="'nope' is not a column"):
        compare_distributions(ref, cur, time="nope")
    with pytest.raises(VizdebugError, match="time has 3 values"):
        compare_distributions(ref, cur, time=[1, 2, 3])
    with pytest.raises(VizdebugError, match="keeps no current rows"):
        compare_distributions(ref, cur, time="ts", window=("2030-01-01", None))


def test_parquet_time_window_gives_the_in_memory_table(tmp_path) -> None:
    pytest.importorskip("pyarrow")
    ref, cur = _sensor(9600, 0.75)
    ref.to_parquet(tmp_path / "ref.parquet", row_group_size=2000)
    cur.to_parquet(tmp_path / "cur.parquet", row_group_size=1500)  # windows cut across row groups
    for window in [(None, "2025-01-06 12:00"), (cur.ts.iloc[7000], None), ("2025-01-04", "2025-01-07 03:10")]:
        streamed = compare_distributions(tmp_path / "ref.parquet", tmp_path / "cur.parquet", time="ts",
                                         window=window, time_buckets=6)
        memory = compare_distributions(ref, cur, time="ts", window=window, time_buckets=6)
        s, m = streamed.table.set_index("feature"), memory.table.set_index("feature")
        assert list(s.index) == list(m.index) and "ts" not in s.index
        assert s.drifted.to_dict() == m.drifted.to_dict() and s.n_cur.to_dict() == m.n_cur.to_dict()
        assert s.statistic["temp"] == pytest.approx(m.statistic["temp"], abs=0.005)  # binned KS
        assert s.effect_size["temp"] == pytest.approx(m.effect_size["temp"], rel=0.02, abs=0.002)
        assert s.statistic["mode"] == pytest.approx(m.statistic["mode"], rel=1e-9)
        assert streamed.data()["time"] == memory.data()["time"]  # the same slider over the same buckets
        for r in streamed.results:
            per_bucket = np.array(r.sketch.get("bucket_hist", r.sketch.get("bucket_counts")))
            assert per_bucket.shape[0] == 6
            assert per_bucket.sum(axis=0).tolist() == r.sketch.get("cur_hist", r.sketch.get("cur_counts"))
    early = compare_distributions(tmp_path / "ref.parquet", tmp_path / "cur.parquet", time="ts",
                                  window=(None, "2025-01-05 12:00"))  # drift starts on day 5
    assert early.drifted == [] and set(compare_distributions(
        tmp_path / "ref.parquet", tmp_path / "cur.parquet", time="ts").drifted) == {"temp", "mode"}


def test_parquet_time_arguments_are_used_or_refused(tmp_path) -> None:
    pytest.importorskip("pyarrow")
    ref, cur = _sensor(600, 0.5)
    ref.to_parquet(tmp_path / "ref.parquet")
    cur.to_parquet(tmp_path / "cur.parquet")
    paths = (tmp_path / "ref.parquet", tmp_path / "cur.parquet")
    with pytest.raises(VizdebugError, match="time= must name a column"):
        compare_distributions(*paths, time=np.arange(600.0))
    with pytest.raises(VizdebugError, match="'nope' is not a column"):
        compare_distributions(*paths, time="nope")
    with pytest.raises(VizdebugError, match="keeps no current rows.*2025-01-01"):
        compare_distributions(*paths, time="ts", window=("2030-01-01", None))
    with pytest.raises(VizdebugError, match="window=.*needs time="):
        compare_distributions(*paths, window=(0, 1))
    mixed = compare_distributions(ref, paths[1], time="ts", window=(None, "2025-01-01 05:00"))
    assert mixed.table.n_cur.max() == 300


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                          st.integers(-10, 10), st.text(max_size=3), st.booleans()), min_size=1, max_size=30))
def test_any_column_gives_a_result_or_a_clear_error(values: list) -> None:
    col = np.array(values, dtype=object)
    try:
        view = compare_distributions({"v": col}, {"v": col[::-1].copy()})
    except VizdebugError as exc:
        assert "'v'" in str(exc)
        return
    assert len(view.table) == 1
    view.to_html()


def test_columns_that_read_the_same_stay_two_columns():
    """The int 1 and the string "1" used to collapse into one feature (the drifted one lost)."""
    rng = np.random.default_rng(0)
    ref = pd.DataFrame({1: rng.normal(size=400), "1": rng.normal(size=400)})
    cur = pd.DataFrame({1: rng.normal(size=400), "1": rng.normal(3, 1, size=400)})
    table = compare_distributions(ref, cur).table.set_index("feature")
    assert set(table.index) == {"1", "1 (int)"}
    assert bool(table.loc["1", "drifted"]) and not bool(table.loc["1 (int)", "drifted"])


@pytest.mark.parametrize("buckets", [10**6, 0, 2.5, "3", True])
def test_time_buckets_are_bounded(buckets):
    with pytest.raises(VizdebugError, match="time_buckets must be a whole number from 1 to 1000"):
        compare_distributions({"x": [1.0, 2.0]}, {"x": [1.0, 3.0]}, time_buckets=buckets)


def test_one_feature_name_alpha_and_a_broken_parquet_file(tmp_path):
    table = compare_distributions({"xt": [1.0, 2.0, 3.0], "x": [1.0, 2, 3]},
                                  {"xt": [1.0, 2.0, 4.0], "x": [1.0, 5, 3]}, features="xt").table
    assert table["feature"].tolist() == ["xt"]  # a string is one name, not its characters
    with pytest.raises(VizdebugError, match="alpha must be a number, got 'a'"):
        compare_distributions({"x": [1.0, 2.0]}, {"x": [1.0, 2.0]}, alpha="a")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + b"garbage" * 10)
    with pytest.raises(VizdebugError, match="as Parquet"):
        compare_distributions(str(bad), str(bad))
