from __future__ import annotations

import numpy as np
import pytest

from vizdebug.data.layout import infer_layout, to_nchw
from vizdebug.errors import VizdebugError


@pytest.mark.parametrize(("shape", "layout"), [
    ((64, 3, 32, 32), "NCHW"), ((64, 1, 28, 28), "NCHW"), ((8, 4, 16, 16), "NCHW"),
    ((64, 32, 32, 3), "NHWC"), ((2, 224, 224, 1), "NHWC"),
    ((64, 8, 8), "NHW"), ((3, 32, 32), "CHW"), ((32, 32, 3), "HWC"), ((28, 28), "HW"),
])
def test_infer_layout(shape, layout):
    assert infer_layout(shape).layout == layout


def test_ambiguous_shape_prefers_torch_convention_and_says_so():
    guess = infer_layout((5, 3, 3, 3))
    assert guess.layout == "NCHW" and guess.ambiguous


@pytest.mark.parametrize("shape", [(2, 8, 16, 16), (1, 2, 3, 4, 5), (7,)])
def test_impossible_shapes_get_clear_errors(shape):
    with pytest.raises(VizdebugError, match=r"shape|dimensions|1-D"):
        infer_layout(shape)


@pytest.mark.parametrize(("layout", "shape"), [
    ("NCHW", (2, 3, 5, 7)), ("NHWC", (2, 5, 7, 3)), ("NHW", (2, 5, 7)),
    ("CHW", (3, 5, 7)), ("HWC", (5, 7, 3)), ("HW", (5, 7)),
])
def test_to_nchw_puts_pixels_in_place(layout, shape):
    x = np.arange(np.prod(shape)).reshape(shape)
    out = to_nchw(x, layout)
    assert out.shape[2:] == (5, 7)
    if layout == "NHWC":
        assert out[1, 2, 4, 6] == x[1, 4, 6, 2]
    if layout == "HWC":
        assert out[0, 1, 3, 5] == x[3, 5, 1]


def test_to_nchw_rejects_wrong_rank_and_channels():
    with pytest.raises(VizdebugError, match="needs a 4-D"):
        to_nchw(np.zeros((3, 4, 4)), "NCHW")
    with pytest.raises(VizdebugError, match="channels"):
        to_nchw(np.zeros((2, 5, 4, 4)), "NCHW")
