"""compare_distributions: bad window bounds and kinds, arrow tables, nested columns and
awkward Parquet folders give a picture or a VizdebugError, never a raw traceback; wide
inputs draw a bounded page (issue 25)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vizdebug as vd
from vizdebug.errors import VizdebugError
from vizdebug.views.drift import DRAWN_FEATURES

RNG = np.random.default_rng(0)


def frames(n: int = 300) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    ref = pd.DataFrame({"x": RNG.normal(size=n), "t": np.arange(float(n))})
    cur = pd.DataFrame({"x": RNG.normal(size=n), "t": np.arange(float(n))})
    dated = cur.assign(t=pd.date_range("2024-01-01", periods=n, freq="h"))
    return ref, cur, dated


@pytest.mark.parametrize("window", [("a", "b"), ("2024-01-01", "2024-02-01"), (None, "9"),
                                    (np.datetime64("2024-01-01"), None), (True, None)])
def test_numeric_time_with_a_non_number_bound_is_refused(window):
    ref, cur, _ = frames()
    with pytest.raises(VizdebugError, match="window (start|end) .* the time column holds numbers"):
        vd.compare_distributions(ref, cur, time="t", window=window)


@pytest.mark.parametrize("window", [("a", None), (None, "not a date"), ("", None), (1.5, None)])
def test_datetime_time_with_a_non_date_bound_is_refused(window):
    ref, _, dated = frames()
    with pytest.raises(VizdebugError, match="is not a date or time.*holds datetimes"):
        vd.compare_distributions(ref, dated, time="t", window=window)


def test_datetime_window_still_works_with_strings_and_aware_timestamps():
    ref, _, dated = frames()
    view = vd.compare_distributions(ref, dated, time="t",
                                    window=("2024-01-02", pd.Timestamp("2024-01-05", tz="Europe/Paris")))
    assert view.table.loc[0, "n_cur"] < 300


@pytest.mark.parametrize("kinds", [["a"], "numeric", {"x": 3}, ("x", "numeric")])
def test_kinds_that_are_not_a_mapping_of_names_are_refused(kinds):
    ref, cur, _ = frames()
    with pytest.raises(VizdebugError, match="kinds must be a dict"):
        vd.compare_distributions(ref, cur, kinds=kinds)


def test_a_pyarrow_table_is_accepted_on_either_side():
    ref, cur, _ = frames()
    both = vd.compare_distributions(pa.Table.from_pandas(ref), pa.Table.from_pandas(cur))
    mixed = vd.compare_distributions(pa.Table.from_pandas(ref), cur)
    batch = vd.compare_distributions(pa.RecordBatch.from_pandas(ref), cur)
    assert list(both.table.feature) == list(mixed.table.feature) == list(batch.table.feature)
    assert set(both.table.feature) == {"x", "t"}


def nested_table(n: int = 100) -> pa.Table:
    return pa.table({"tags": pa.array([[1, 2], [3]] * (n // 2)),
                     "point": pa.array([{"a": 1, "b": 2.0}] * n),
                     "y": pa.array(RNG.normal(size=n))})


def test_list_and_struct_columns_are_reported_not_compared(tmp_path):
    table = nested_table()
    pq.write_table(table, tmp_path / "n.parquet")
    for src in (table, tmp_path / "n.parquet"):
        view = vd.compare_distributions(src, src)
        rows = view.table.set_index("feature")
        assert rows.loc["tags", "test"] == "none" and "nested values" in rows.loc["tags", "note"]
        assert rows.loc["point", "test"] == "none" and rows.loc["y", "test"] == "ks (binned)"
        assert "not compared" in str(view.findings) and view._repr_mimebundle_()


def test_a_kind_the_arrow_type_cannot_take_is_refused(tmp_path):
    table = pa.table({"s": pa.array(["a", "b"] * 50), "y": pa.array(RNG.normal(size=100))})
    with pytest.raises(VizdebugError, match="kinds=\\{'s': 'numeric'\\}.*string"):
        vd.compare_distributions(table, table, kinds={"s": "numeric"})
    with pytest.raises(VizdebugError, match="kind given for 'nope'"):
        vd.compare_distributions(table, table, kinds={"nope": "numeric"})


def test_a_folder_with_a_stray_file_reads_its_parquet_files(tmp_path):
    pq.write_table(pa.table({"x": RNG.normal(size=100)}), tmp_path / "part-0.parquet")
    pq.write_table(pa.table({"x": RNG.normal(size=100)}), tmp_path / "part-1.parquet")
    (tmp_path / "README.txt").write_text("written by the export job")
    (tmp_path / "_SUCCESS").write_text("")
    view = vd.compare_distributions(tmp_path, tmp_path)
    assert view.table.loc[0, "n_ref"] == 200


def test_a_folder_whose_files_disagree_is_refused_by_column_and_file(tmp_path):
    pq.write_table(pa.table({"x": RNG.normal(size=100)}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": pa.array(["high"] * 100)}), tmp_path / "b.parquet")
    with pytest.raises(VizdebugError, match="conflicting schemas: column 'x' is double in "
                                            "a.parquet but string in b.parquet"):
        vd.compare_distributions(tmp_path, tmp_path)


def test_integer_and_float_files_are_widened(tmp_path):
    pq.write_table(pa.table({"x": RNG.normal(size=100)}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": pa.array(np.arange(100))}), tmp_path / "b.parquet")
    assert vd.compare_distributions(tmp_path, tmp_path).table.loc[0, "n_ref"] == 200


def test_a_damaged_parquet_file_in_a_folder_is_refused(tmp_path):
    pq.write_table(pa.table({"x": RNG.normal(size=100)}), tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(VizdebugError, match="cannot read .* as Parquet"):
        vd.compare_distributions(tmp_path, tmp_path)


def test_wide_input_is_ranked_and_paged_with_every_column_kept():
    n_cols = 2000
    ref = pd.DataFrame(RNG.normal(size=(200, n_cols)), columns=[f"c{j}" for j in range(n_cols)])
    cur = ref + (np.arange(n_cols) % 100 == 7) * 2.0 + RNG.normal(0, 0.01, ref.shape)
    view = vd.compare_distributions(ref, cur)
    assert len(view.table) == n_cols and len(view.drifted) == 20
    started = time.perf_counter()
    page = view._repr_mimebundle_()["text/html"]
    assert time.perf_counter() - started < 5
    assert len(page) < 1_500_000  # 2,000 columns drawn in full made 10.7 MB
    data = view.data()
    assert len(data["features"]) == DRAWN_FEATURES and data["total"] == n_cols
    assert [f["feature"] for f in data["features"][:20]] == view.drifted  # ranked: drifted first
    assert f"… and {n_cols - DRAWN_FEATURES:,} more columns, all listed in .table and .findings" in page
    assert "c7" in page and "c1999" not in page.split("more columns")[0].split("vd-drift-table")[1]


def test_many_findings_are_capped_on_the_page_but_kept():
    n_cols = 300
    ref = pd.DataFrame(RNG.normal(size=(200, n_cols)), columns=[f"c{j}" for j in range(n_cols)])
    view = vd.compare_distributions(ref, ref + 3.0)
    assert len(view.findings) > 300 and len(view.drifted) == n_cols
    page = view._repr_mimebundle_()["text/html"]
    assert "more findings, all listed in .findings" in page
    assert len(repr(view)) < 1000


def test_arrow_input_with_a_column_name_used_twice_is_refused_by_name():
    """Found by the property sweep in CI: arrow keeps two columns called '1', and asking
    the schema for '1' raised pyarrow's KeyError."""
    ref = pa.table({"1": pa.array([1.0, 2.0, 3.0])})
    cur = pa.Table.from_arrays([pa.array([1.0, 2.0]), pa.array([3.0, 4.0])], names=["1", "1"])
    with pytest.raises(VizdebugError, match="used more than once"):
        vd.compare_distributions(ref, cur)
