"""Smoothing and downsampling keep what matters: spikes, NaNs, the ends of the curve."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vizdebug.analysis.curves import (
    bucket_max,
    downsample,
    ema_smooth,
    minmax_indices,
    rolling_median,
)
from vizdebug.errors import VizdebugError


def test_ema_matches_tensorboard_debiased_formula():
    y = np.array([1.0, 2.0, 3.0])
    w = 0.5
    expected = [1.0, (0.25 * 1 + 0.5 * 2) / 0.75, (0.125 + 0.5 + 1.5) / 0.875]
    # TensorBoard: acc = w*acc + (1-w)*v, divided by 1 - w**(i+1)
    assert ema_smooth(y, w) == pytest.approx(expected)


def test_ema_keeps_nan_visible_and_does_not_poison_what_follows():
    out = ema_smooth([1.0, np.nan, 3.0, np.inf, 5.0], 0.9)
    assert np.isnan(out[1]) and np.isinf(out[3])
    assert np.isfinite(out[[0, 2, 4]]).all()


def test_ema_weight_zero_is_identity_and_input_untouched():
    y = np.array([3.0, 1.0, 2.0])
    assert ema_smooth(y, 0.0).tolist() == [3.0, 1.0, 2.0]
    ema_smooth(y, 0.9)
    assert y.tolist() == [3.0, 1.0, 2.0]


@pytest.mark.parametrize("weight", [-0.1, 1.0, 2])
def test_ema_rejects_bad_weight(weight):
    with pytest.raises(VizdebugError, match="weight"):
        ema_smooth([1.0], weight)


def test_downsample_keeps_single_spike_and_single_nan_in_a_million():
    y = np.random.default_rng(0).normal(1.0, 0.01, 1_000_000)
    y[123_457] = 50.0
    y[654_321] = np.nan
    y[777_777] = -40.0
    x, ys = downsample(np.arange(y.size), y, max_points=2000)
    assert len(x) <= 2002
    assert 123_457 in x and 654_321 in x and 777_777 in x
    assert np.nanmax(ys) == 50.0 and np.nanmin(ys) == -40.0
    assert x[0] == 0 and x[-1] == y.size - 1


def test_downsample_short_curve_unchanged():
    x, y = downsample([0, 1, 2], [3.0, 4.0, 5.0], max_points=100)
    assert x.tolist() == [0, 1, 2] and y.tolist() == [3.0, 4.0, 5.0]


def test_downsample_errors_name_the_shapes():
    with pytest.raises(VizdebugError, match="same length, got 3 and 2"):
        downsample([0, 1, 2], [1.0, 2.0])
    with pytest.raises(VizdebugError, match="one-dimensional"):
        downsample(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(VizdebugError, match="at least 4"):
        minmax_indices([1.0], 2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=3000),
       st.integers(min_value=4, max_value=400))
def test_minmax_indices_properties(values, budget):
    y = np.asarray(values, dtype=float)
    idx = minmax_indices(y, budget)
    assert np.all(np.diff(idx) > 0)  # sorted, unique
    assert idx[0] == 0 and idx[-1] == y.size - 1
    assert idx.size <= max(y.size if y.size <= budget else 0, budget + 2)
    finite = y[np.isfinite(y)]
    if finite.size:
        kept = y[idx][np.isfinite(y[idx])]
        assert kept.max() == finite.max() and kept.min() == finite.min()
    if (~np.isfinite(y)).any():
        assert (~np.isfinite(y[idx])).any()


def test_bucket_max_keeps_spike_and_nan_per_row():
    m = np.zeros((2, 1000))
    m[0, 500] = 7.0
    m[1, 10] = np.nan
    starts, reduced = bucket_max(m, 50)
    assert reduced.shape == (2, 50) and starts.size == 50
    assert reduced[0].max() == 7.0
    assert np.isnan(reduced[1]).sum() == 1


def test_rolling_median_ignores_nonfinite():
    out = rolling_median([1.0, np.nan, 3.0, 100.0, np.inf], 3)
    assert out.tolist() == [1.0, 1.0, 2.0, 51.5, 51.5]
