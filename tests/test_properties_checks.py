"""Property-based tests over the entry points test_properties.py leaves out: check_split,
check_predictions / show_predictions, compare_distributions on odd frames, set_seed. Only
VizdebugError / VizdebugTypeError (with a message) may escape."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vizdebug as vd
from vizdebug.errors import VizdebugError

from .input_strategies import batches, frames

pytestmark = pytest.mark.filterwarnings("ignore")
SETTINGS = settings(max_examples=60, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def clear(call, *args, **kwargs):
    try:
        return call(*args, **kwargs)
    except VizdebugError as exc:  # VizdebugTypeError is one too
        assert len(str(exc)) > 10
        return exc


labels = st.one_of(
    st.lists(st.integers(-2, 5), max_size=30),
    st.lists(st.sampled_from(["cat", "dog", "<b>x</b>"]), max_size=30),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=30),
    st.builds(lambda n, c: np.random.default_rng(n).random((n, c)), st.integers(0, 20),
              st.integers(1, 4)),
    st.builds(lambda n: torch.randint(0, 3, (n,)), st.integers(0, 20)),
    st.sampled_from([None, 3, "abc", [[1, 2], [3]], {"a": 1}, np.zeros((2, 2, 2))]),
)


@SETTINGS
@given(y_true=labels, y_pred=labels, named=st.booleans())
def test_check_and_show_predictions_answer_or_refuse_clearly(y_true, y_pred, named):
    result = clear(vd.check_predictions, y_true, y_pred, labels=[0, 1, 2] if named else None)
    if not isinstance(result, VizdebugError):
        view = clear(vd.show_predictions, y_true, y_pred, labels=[0, 1, 2] if named else None)
        assert isinstance(view, VizdebugError) or "<b>x</b>" not in view.to_html()


splits = st.one_of(frames(), batches(),
                   st.builds(lambda n, d: np.random.default_rng(d).normal(size=(n, d)),
                             st.integers(0, 40), st.integers(1, 5)))


@SETTINGS
@given(train=splits, test=splits, with_y=st.booleans())
def test_check_split_answers_or_refuses_clearly(train, test, with_y):
    y = (lambda data: np.arange(len(data)) % 2) if with_y else (lambda data: None)
    try:
        y_train, y_test = y(train), y(test)
    except TypeError:
        y_train = y_test = None
    clear(vd.check_split, train, test, y_train=y_train, y_test=y_test)


keys = st.one_of(
    st.none(), st.sampled_from(["a", "date", "patient_id", "", "<b>x</b>"]),
    st.integers(-2, 3), st.booleans(), st.floats(allow_nan=True),
    st.tuples(st.lists(st.integers(0, 4), max_size=40), st.lists(st.integers(0, 4), max_size=40)),
    st.tuples(st.lists(st.sampled_from(["p1", "p2", "2021-01-01", "x"]), max_size=40),
              st.lists(st.sampled_from(["p1", "p3", "2021-02-01"]), max_size=40)),
    st.tuples(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40),
              st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40)),
    st.tuples(st.just([[1, 2]] * 3), st.just(np.zeros((3, 2)))),
    st.lists(st.integers(0, 3), max_size=3),
)


@SETTINGS
@given(train=splits, test=splits, time=keys, groups=keys)
def test_check_split_time_and_groups_answer_or_refuse_clearly(train, test, time, groups):
    clear(vd.check_split, train, test, time=time, groups=groups)


def _per_row(kind: str, n: int, seed: int):
    rng = np.random.default_rng(seed)
    if kind == "ints":
        return rng.integers(0, 5, n)
    if kind == "names":
        return [f"p{v}" for v in rng.integers(0, 5, n)]
    if kind == "floats":
        return np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n))
    if kind == "dates":
        return pd.to_datetime(rng.integers(0, 10**9, n), unit="s").to_series()
    return torch.arange(n) % 3


@SETTINGS
@given(n_train=st.integers(1, 60), n_test=st.integers(1, 30), d=st.integers(1, 6),
       kinds=st.tuples(*[st.sampled_from(["ints", "names", "floats", "dates", "tensor"])] * 4),
       seed=st.integers(0, 5), with_y=st.booleans())
def test_check_split_per_row_keys_answer_or_refuse_clearly(n_train, n_test, d, kinds, seed,
                                                           with_y):
    rng = np.random.default_rng(seed)
    train, test = rng.normal(size=(n_train, d)), rng.normal(size=(n_test, d))
    time = (_per_row(kinds[0], n_train, seed), _per_row(kinds[1], n_test, seed + 1))
    groups = (_per_row(kinds[2], n_train, seed), _per_row(kinds[3], n_test, seed + 1))
    y = {"y_train": rng.integers(0, 2, n_train), "y_test": rng.integers(0, 2, n_test)}
    clear(vd.check_split, train, test, time=time, groups=groups, **(y if with_y else {}))


@SETTINGS
@given(ref=frames(), cur=frames(), buckets=st.one_of(st.integers(-2, 2000), st.floats()),
       features=st.one_of(st.none(), st.text(max_size=3), st.lists(st.text(max_size=2))))
def test_compare_distributions_answers_or_refuses_clearly(ref, cur, buckets, features):
    clear(vd.compare_distributions, ref, cur, time_buckets=buckets, features=features)


@SETTINGS
@given(seed=st.one_of(st.integers(-5, 2**33), st.floats(), st.text(max_size=3), st.none()))
def test_set_seed_seeds_or_refuses_clearly(seed):
    before = torch.are_deterministic_algorithms_enabled()
    try:
        clear(vd.set_seed, seed, deterministic=False)
    finally:
        torch.use_deterministic_algorithms(before)
