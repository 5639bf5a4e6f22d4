from __future__ import annotations

import numpy as np
import pytest

from vizdebug.analysis.images import channel_stats, image_flags, infer_scaling, to_display
from vizdebug.errors import VizdebugError


def _flags(img, scaling=None):
    sc = scaling or infer_scaling(img[None])
    return image_flags(img, to_display(img, sc), sc)


@pytest.mark.parametrize(("make", "kind"), [
    (lambda r: (r.random((4, 3, 8, 8)) * 255).astype(np.uint8), "0-255"),
    (lambda r: r.random((4, 3, 8, 8)), "0-1"),
    (lambda r: r.random((4, 3, 8, 8)) * 255, "0-255"),
    (lambda r: r.random((4, 3, 8, 8)) * 2 - 1, "-1-1"),
    (lambda r: r.standard_normal((4, 3, 8, 8)), "minmax"),
    (lambda r: r.random((4, 1, 8, 8)) > 0.5, "bool"),
])
def test_scaling_kinds(make, kind):
    assert infer_scaling(make(np.random.default_rng(0))).kind == kind


def test_given_mean_std_unnormalise_exactly():
    rng = np.random.default_rng(1)
    raw = rng.random((2, 3, 6, 6))
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    normed = (raw - mean[:, None, None]) / std[:, None, None]
    sc = infer_scaling(normed, mean, std)
    assert sc.kind == "mean-std" and sc.absolute
    np.testing.assert_allclose(to_display(normed[0], sc), raw[0], atol=1e-5)


def test_mean_std_validation():
    x = np.zeros((1, 3, 4, 4))
    with pytest.raises(VizdebugError, match="2 values but the images have 3"):
        infer_scaling(x, [0, 0], [1, 1])
    with pytest.raises(VizdebugError, match="together"):
        infer_scaling(x, mean=[0.5])
    with pytest.raises(VizdebugError, match="positive"):
        infer_scaling(x, 0.5, 0.0)


def test_real_digits_are_never_flagged(digits, digits_std):
    for x in (digits[0], digits_std[0], digits[0] / 16):
        sc = infer_scaling(x)
        flagged = [i for i in range(len(x)) if image_flags(x[i], to_display(x[i], sc), sc)]
        assert flagged == []


def test_blank_saturated_nonfinite_flags():
    rng = np.random.default_rng(0)
    photo = rng.random((3, 32, 32))
    assert _flags(photo) == []
    assert _flags(np.full((3, 32, 32), 0.3)) == ["blank"]
    assert _flags(np.clip(photo * 4, 0, 1)) == ["saturated"]
    bad = photo.copy()
    bad[0, 1, 1] = np.nan
    assert _flags(bad) == ["non-finite"]
    assert _flags(np.full((1, 4, 4), np.nan)) == ["non-finite"]


def test_display_keeps_nan_and_never_mutates():
    x = np.ones((1, 1, 4, 4), dtype=np.float32)
    x[0, 0, 0, 0] = np.inf
    before = x.copy()
    d = to_display(x[0], infer_scaling(x))
    assert np.isnan(d[0, 0, 0]) and np.array_equal(x, before)


def test_channel_stats_counts_nonfinite():
    x = np.zeros((2, 2, 3, 3))
    x[0, 1, 0, 0] = np.nan
    x[1, 1, 0, 0] = 5
    stats = channel_stats(x)
    assert stats[0]["non_finite"] == 0 and stats[1]["non_finite"] == 1
    assert stats[1]["max"] == 5
