from __future__ import annotations

import numpy as np
import pytest

from vizdebug.analysis.datasets.images import channel_stats, image_flags, infer_scaling, to_display
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


def _crops(images: np.ndarray, pad: int, rng: np.random.Generator) -> np.ndarray:
    """The notebook's RandomCrop: zero-pad by ``pad``, cut an 8x8 window at random."""
    out = np.empty_like(images)
    for k, img in enumerate(images):
        i, j = rng.integers(0, 2 * pad + 1, 2)
        out[k] = np.pad(img, pad)[i:i + 8, j:j + 8]
    return out


def test_nearly_blank_crops_are_flagged_and_real_crops_are_not(digits):
    """A crop that kept 1-4 lit pixels of a digit shows nothing to learn from; every whole
    digit and every crop shifted by up to 2 pixels lights 11 or more."""
    rng = np.random.default_rng(5)
    images = digits[0][:, 0] / 16.0
    for pad in (1, 2):
        crops = _crops(images, pad, rng)[:, None]
        sc = infer_scaling(crops)
        assert not any(image_flags(c, to_display(c, sc), sc) for c in crops)
    crops = _crops(np.repeat(images[:300], 4, axis=0), 8, rng)[:, None]
    sc = infer_scaling(crops)
    lit = (crops[:, 0] > 0.1).reshape(len(crops), -1).sum(axis=1)
    flagged = np.array(["blank" in image_flags(c, to_display(c, sc), sc) for c in crops])
    few = (lit >= 1) & (lit <= 4)
    assert few.sum() > 50  # the case is common with pad=8
    assert flagged[few].all() and not flagged[lit > 4].any()
    assert flagged[crops.reshape(len(crops), -1).max(axis=1) == 0].all()  # empty: as before
    few = np.zeros((1, 8, 8))
    few[0, 3, 3:5] = [1.0, 0.6]
    assert _flags(few, infer_scaling(np.stack([few, np.ones_like(few)]))) == ["blank"]
    tiny = np.zeros((1, 4, 4))
    tiny[0, 0, :2] = 1.0  # 2 of 16 pixels: too small to call
    assert _flags(tiny, infer_scaling(np.stack([tiny, np.ones_like(tiny)]))) == []
