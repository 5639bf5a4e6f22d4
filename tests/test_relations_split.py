"""check_split's relations between rows: oversampled rows (SMOTE, noisy copies), windows
that overlap across the split, test times inside the training period, row ids that
follow the target, groups on both sides; and quiet on splits made the right way."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification
from sklearn.model_selection import GroupShuffleSplit, TimeSeriesSplit, train_test_split

import vizdebug as vd
from vizdebug.errors import VizdebugError, VizdebugTypeError

from .corpus.relations_split import _smote

NEW = {"split-near-duplicates", "split-overlap", "split-time-leak", "split-group-leak"}


def loud(found) -> list[str]:
    return [f.code for f in found.at_least("warning")]


def _table(name: str, seed: int = 0):
    if name == "make_classification":
        return make_classification(1500, 12, weights=[0.85], random_state=seed)
    return {"breast_cancer": load_breast_cancer, "wine": load_wine,
            "digits": load_digits}[name](return_X_y=True)


# -- honest splits stay quiet --------------------------------------------------------------
@pytest.mark.parametrize("name", ["breast_cancer", "wine", "digits", "make_classification"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_honest_random_split_of_a_real_table_is_clean(name, seed, dtype):
    x, y = _table(name, seed)
    xtr, xte, ytr, yte = train_test_split(x.astype(dtype), y, random_state=seed)
    assert loud(vd.check_split(xtr, xte, y_train=ytr, y_test=yte)) == []


# -- oversampling before the split ---------------------------------------------------------
@pytest.mark.parametrize("name", ["breast_cancer", "make_classification"])
def test_smote_before_the_split_is_named_and_after_it_is_not(name):
    x, y = _table(name)
    xs, ys = _smote(x.astype(np.float32), y)
    xtr, xte, ytr, yte = train_test_split(xs, ys, random_state=0)
    found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte).at_least("warning")
    assert [f.code for f in found] == ["split-near-duplicates"]
    assert found[0].evidence["relation"] == "interpolated"
    assert found[0].where.startswith("test rows") and "SMOTE" in found[0].message
    assert "split first" in found[0].hint
    xtr, xte, ytr, yte = train_test_split(x.astype(np.float32), y, random_state=0)
    xr, yr = _smote(xtr, ytr)  # the fix: the training split only
    assert loud(vd.check_split(xr, xte, y_train=yr, y_test=yte)) == []


def test_interpolation_survives_scaling_after_smote_in_float64():
    x, y = _table("make_classification")
    xs, ys = _smote((x * 50 + 1000).astype(np.float32), y)
    z = (xs - xs.mean(0)) / xs.std(0)  # float64 now: float32's rounding stays
    xtr, xte, ytr, yte = train_test_split(z, ys, random_state=0)
    assert "split-near-duplicates" in loud(vd.check_split(xtr, xte, y_train=ytr, y_test=yte))


def test_whole_number_rows_between_two_others_are_not_interpolations():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (2000, 3)).astype(float) + rng.integers(0, 2, (2000, 1)) * 4
    xtr, xte = train_test_split(np.unique(x, axis=0).repeat(1, 0), random_state=0)
    assert "split-near-duplicates" not in loud(vd.check_split(xtr, xte))


def test_test_rows_that_are_noisy_copies_of_training_rows_are_named():
    x, _ = _table("make_classification")
    xtr, xte = train_test_split(x, random_state=0)
    copies = xtr[:200] + np.random.default_rng(0).normal(0, 0.01, (200, x.shape[1]))
    found = vd.check_split(xtr, np.concatenate([xte, copies])).at_least("warning")
    assert [f.code for f in found] == ["split-near-duplicates"]
    assert found[0].evidence["relation"] == "near copies"
    flagged = set(found[0].evidence["test_indices"])
    assert len(flagged & set(range(len(xte), len(xte) + 200))) >= 190


# -- overlapping windows -------------------------------------------------------------------
def _series_windows(length: int = 24, channels: int = 1):
    rng = np.random.default_rng(0)
    t = np.arange(2500)[:, None]
    series = np.sin(t / 8.0 + np.arange(channels)) + rng.normal(0, 0.1, (2500, channels))
    x = np.stack([series[s:s + length] for s in range(2500 - length)])
    return (x[..., 0] if channels == 1 else x), series[length:, 0]


@pytest.mark.parametrize("channels", [1, 3])
def test_shuffled_overlapping_windows_are_named(channels):
    x, y = _series_windows(channels=channels)
    xtr, xte, ytr, yte = train_test_split(x, y, random_state=0)
    found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte).at_least("warning")
    assert [f.code for f in found] == ["split-overlap"]
    assert found[0].evidence["share"] > 0.9 and found[0].evidence["window"] == 24
    assert "TimeSeriesSplit" in found[0].hint


def test_windows_split_in_time_order_overlap_only_at_the_boundary():
    x, y = _series_windows()
    cut = int(0.75 * len(x))
    found = vd.check_split(x[:cut], x[cut:], y_train=y[:cut], y_test=y[cut:])
    assert loud(found) == [] and all(f.evidence["share"] < 0.05 for f in found)
    for tr, te in TimeSeriesSplit(4, gap=24).split(x):
        assert vd.check_split(x[tr], x[te], y_train=y[tr], y_test=y[te]) == []


# -- time ----------------------------------------------------------------------------------
def _dated(n: int = 1200, follows: bool = True):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"date": pd.date_range("2021-01-01", periods=n, freq="h"),
                          "a": rng.normal(size=n), "b": rng.normal(size=n)})
    y = np.cumsum(rng.normal(size=n)) if follows else rng.normal(size=n)
    return frame, y


def test_a_shuffled_forecast_split_is_named_and_a_time_ordered_one_is_not():
    frame, y = _dated()
    xtr, xte, ytr, yte = train_test_split(frame, y, random_state=0)
    for kwargs in ({"time": "date"}, {}):  # given, or found as the frames' datetime column
        found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte, **kwargs)
        assert loud(found) == ["split-time-leak"] and found[0].where == "date"
    for tr, te in TimeSeriesSplit(3).split(frame):
        assert vd.check_split(frame.iloc[tr], frame.iloc[te], y_train=y[tr], y_test=y[te],
                              time="date") == []


def test_a_date_on_an_iid_table_is_at_most_info():
    frame, y = _dated(follows=False)
    xtr, xte, ytr, yte = train_test_split(frame, y, random_state=0)
    found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte)
    assert loud(found) == [] and [f.code for f in found] == ["split-time-leak"]


def test_times_given_as_arrays():
    x = np.random.default_rng(0).normal(size=(400, 3))
    t = np.arange(400.0)
    assert loud(vd.check_split(x[:300], x[300:], time=(t[:300], t[300:]))) == []
    found = vd.check_split(x[100:], x[:100], time=(t[100:], t[:100]))
    assert loud(found) == ["split-time-leak"] and found[0].evidence["share"] == 1.0


# -- identifiers ---------------------------------------------------------------------------
def _runs(n: int = 1500, seed: int = 0):
    """Rows exported in runs of one label, numbered in export order."""
    rng = np.random.default_rng(seed)
    label = (np.sin(np.arange(n) / 90) > 0).astype(int)
    label = np.where(rng.random(n) < 0.25, 1 - label, label)
    x = pd.DataFrame(rng.normal(size=(n, 4)) + label[:, None] * 0.3, columns=list("abcd"))
    return x.assign(record=np.arange(n) * 3 + 1000), label


def test_an_id_that_follows_the_label_in_part_is_named():
    x, y = _runs()
    xtr, xte, ytr, yte = train_test_split(x, y, random_state=0)
    found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte).at_least("warning")
    assert [(f.code, f.where) for f in found] == [("split-target-leak", "record")]
    assert 0.6 < found[0].evidence["scores"][0] < 0.99
    assert found[0].evidence["chance"] < 0.6 and "drop the id" in found[0].hint
    xtr, xte = xtr.drop(columns="record"), xte.drop(columns="record")
    assert loud(vd.check_split(xtr, xte, y_train=ytr, y_test=yte)) == []


@pytest.mark.parametrize("seed", range(4))
def test_uninformative_ids_and_few_valued_categories_stay_quiet(seed):
    x, y = load_breast_cancer(return_X_y=True, as_frame=True)
    rng = np.random.default_rng(seed)
    x = x.assign(id=np.arange(len(x)), site=rng.integers(0, 3, len(x)))  # rows not sorted
    xtr, xte, ytr, yte = train_test_split(x, y, random_state=seed)
    assert loud(vd.check_split(xtr, xte, y_train=ytr, y_test=yte)) == []
    xtr, xte = xtr.drop(columns="id"), xte.drop(columns="id")  # numbered after the shuffle
    renumbered = [part.reset_index(drop=True).reset_index() for part in (xtr, xte)]
    assert loud(vd.check_split(*renumbered, y_train=ytr.to_numpy(), y_test=yte.to_numpy())) == []


# -- groups --------------------------------------------------------------------------------
def _patients(n: int = 900):
    rng = np.random.default_rng(0)
    patient = rng.integers(0, 80, n)
    x = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    return x.assign(patient_id=patient), patient, rng.integers(0, 2, n)


def test_groups_on_both_sides_are_named_given_or_evident():
    x, patient, y = _patients()
    tr, te = np.arange(600), np.arange(600, 900)
    found = vd.check_split(x.iloc[tr], x.iloc[te], groups=(patient[tr], patient[te]))
    assert loud(found) == ["split-group-leak"] and found[0].where == "groups"
    assert found[0].evidence["test_indices"][:3] == [0, 1, 2]
    assert "GroupShuffleSplit" in found[0].hint
    found = vd.check_split(x.iloc[tr], x.iloc[te], y_train=y[tr], y_test=y[te])
    assert loud(found) == ["split-group-leak"] and found[0].where == "patient_id"
    assert loud(vd.check_split(x.iloc[tr], x.iloc[te], groups="patient_id")) == [
        "split-group-leak"]


def test_a_group_split_is_clean_and_categories_are_not_groups():
    x, patient, y = _patients()
    tr, te = next(GroupShuffleSplit(1, test_size=0.3, random_state=0).split(x, y, patient))
    assert vd.check_split(x.iloc[tr], x.iloc[te], groups=(patient[tr], patient[te])) == []
    assert vd.check_split(x.iloc[tr], x.iloc[te], y_train=y[tr], y_test=y[te]) == []
    x = x.drop(columns="patient_id").assign(group=patient % 3, age_group=patient % 40)
    assert vd.check_split(x.iloc[:600], x.iloc[600:]) == []


# -- arguments -----------------------------------------------------------------------------
def test_the_signature_stays_backward_compatible():
    params = inspect.signature(vd.check_split).parameters
    assert list(params)[:5] == ["train", "test", "y_train", "y_test", "sample"]
    assert params["time"].default is None and params["groups"].default is None


frame = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) % 3})


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"groups": 5}, VizdebugTypeError, "groups must be a column name"),
    ({"groups": True}, VizdebugTypeError, "groups must be"),
    ({"time": ("x",)}, VizdebugTypeError, "time must be"),
    ({"groups": "nope"}, VizdebugError, "not a column of train"),
    ({"groups": ([1, 2], list(range(10)))}, VizdebugError, "one value per row"),
    ({"time": (["a"] * 10, ["b"] * 10)}, VizdebugError, "must hold times"),
    ({"groups": ([[1]] * 10, [[2]] * 10)}, VizdebugError, "groups"),
])
def test_bad_time_and_groups_get_a_clear_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        vd.check_split(frame, frame, **kwargs)


def test_a_column_name_needs_dataframes():
    with pytest.raises(VizdebugError, match="is not a DataFrame"):
        vd.check_split(np.zeros((10, 2)), np.zeros((10, 2)), groups="patient")
