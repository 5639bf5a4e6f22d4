"""Any array-like batch becomes a picture or a clear error (never a raw traceback)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

import vizdebug as vd
from vizdebug.data.batch import make_batch, unpack
from vizdebug.errors import VizdebugError

DTYPES = [np.uint8, np.bool_, np.float16, np.float32, np.float64, np.int32, np.int64, np.int8]


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no numpy overflow noise on odd data
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hnp.arrays(dtype=st.sampled_from(DTYPES),
                  shape=hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=9),
                  elements=None))
def test_any_array_becomes_a_picture_or_a_clear_error(arr):
    try:
        view = vd.show_batch(arr)
    except (VizdebugError, TypeError, ValueError) as exc:
        assert type(exc).__module__.startswith("vizdebug"), f"raw {type(exc).__name__}: {exc}"
        assert str(exc)
        return
    html = view.to_html()
    assert "vd-batch" in html
    assert view.pages[0].n_items >= 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=3), st.integers(-3, 3),
                          st.floats(allow_nan=True)), min_size=0, max_size=6))
def test_python_lists_of_junk_get_clear_answers(items):
    try:
        vd.show_batch(items)
    except (VizdebugError, TypeError, ValueError) as exc:
        assert type(exc).__module__.startswith("vizdebug"), f"raw {type(exc).__name__}: {exc}"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.uint8,
                                   torch.bool, torch.int64])
def test_tensor_dtypes(dtype):
    x = (torch.rand(4, 3, 10, 10) * (255 if dtype in (torch.uint8, torch.int64) else 1))
    view = vd.show_batch(x.to(dtype))
    assert view.pages[0].n_items == 4


@pytest.mark.parametrize(("x", "layout", "n"), [
    (np.random.rand(6, 3, 12, 12), "NCHW", 6), (np.random.rand(6, 12, 12, 3), "NHWC", 6),
    (np.random.rand(6, 12, 12), "NHW", 6), (np.random.rand(3, 12, 12), "CHW", 1),
    (np.random.rand(12, 12, 4), "HWC", 1), ((np.random.rand(12, 12) * 255).astype(np.uint8), "HW", 1),
])
def test_every_layout_shows(x, layout, n):
    view = vd.show_batch(x)
    assert view.pages[0].n_items == n
    assert layout in view.to_html()


def test_dict_and_tuple_batches_and_label_keys():
    x = torch.rand(5, 1, 8, 8)
    for key in ("image", "img", "pixel_values", "x"):
        for lkey in ("label", "labels", "target", "y"):
            xx, yy = unpack({key: x, lkey: torch.arange(5)})
            assert xx is x and yy.tolist() == [0, 1, 2, 3, 4]
    assert unpack((x, torch.arange(5), "meta"))[1].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(VizdebugError, match="none of them names the inputs"):
        unpack({"pic": x})


def test_pil_images_and_ragged_lists():
    imgs = [Image.new("RGB", (20, 10), (255, 0, 0)), Image.new("L", (8, 8), 128),
            np.random.rand(3, 16, 16)]
    view = vd.show_batch(imgs)
    assert view.pages[0].n_items == 3
    assert "shape-inconsistent" in view.findings.codes


def test_none_inside_a_batch():
    from vizdebug.data.arrays import to_numpy

    with pytest.raises(VizdebugError, match=r"batch\[1\] is None"):
        to_numpy([np.zeros((8, 8)), None], "batch")
    view = vd.show_batch([np.random.rand(8, 8), None, np.random.rand(8, 8)])
    assert view.findings.codes[0] == "input-none"
    assert 'data-flags="none"' in view.to_html()


@pytest.mark.parametrize(("bad", "pattern"), [
    (None, "got None"), ("images/cat.png", "string"), ([], "empty"),
    (np.zeros((0, 3, 8, 8)), "empty"), (np.zeros((2, 3, 4, 8, 8)), "5-D"),
    (np.array(["a", "b"]), "strings"), ({"foo": 1}, "none of them names"),
    (np.array([1 + 2j]), "complex"), (object(), "cannot read"),
    (np.zeros((4, 10, 8, 8)), "channel axis"),
])
def test_bad_input_named_clearly(bad, pattern):
    with pytest.raises((VizdebugError, TypeError), match=pattern):
        vd.show_batch(bad)


def test_labels_must_match_inputs_and_one_hot_is_decoded():
    with pytest.raises(VizdebugError, match="3 inputs but 2 labels"):
        make_batch(np.random.rand(3, 1, 8, 8), [0, 1])
    b = make_batch(np.random.rand(3, 1, 8, 8), np.eye(3)[[2, 0, 1]])
    assert b.labels == [2, 0, 1]


def test_n_bounds():
    with pytest.raises(VizdebugError, match="1 to 256"):
        vd.show_batch(np.random.rand(4, 1, 8, 8), n=1000)
    with pytest.raises(TypeError, match="whole number"):
        vd.show_batch(np.random.rand(4, 1, 8, 8), n=2.5)
    view = vd.show_batch(np.random.rand(300, 1, 8, 8), n=256)
    assert view.pages[0].n_items == 256 and view.more
    assert view.next().pages[1].n_items == 44 and not view.more


def test_tabular_batches_show_as_tables():
    import pandas as pd

    frame = pd.DataFrame({"age": [1.0, np.nan, 3.0], "<b>name</b>": ["a", "b", "c"]})
    view = vd.show_batch(frame)
    html = view.to_html()
    assert "vd-tabular" in html and "&lt;b&gt;name&lt;/b&gt;" in html
    assert "<b>name</b>" not in html
    assert vd.show_batch(np.random.rand(10, 4)).pages[0].html.count("<tr>") == 10 + 1 + 4 + 1


# -- issue 10: inputs that used to raise raw internal errors --------------------------------

def _meta():
    return torch.empty(4, 3, 8, 8, device="meta")


@pytest.mark.parametrize("make, pattern", [
    (lambda: {"image": {"pixels": torch.rand(4, 3, 8, 8)}}, "dict with keys \\['pixels'\\]"),
    (lambda: _meta(), "meta device"),
])
def test_unreadable_inputs_are_named(make, pattern):
    with pytest.raises(VizdebugError, match=pattern):
        vd.show_batch(make())
    with pytest.raises(VizdebugError, match=pattern.split("\\[")[0].split(" with")[0]):
        vd.check_batch(make())


def test_an_iterable_of_numbers_is_not_a_batch():
    import itertools

    with pytest.raises(vd.errors.VizdebugTypeError, match="batch 0 of the count is int"):
        vd.show_batch(itertools.count())
    with pytest.raises(vd.errors.VizdebugTypeError, match="batch 0 of the set is int"):
        vd.show_batch({1, 2})


@pytest.mark.parametrize("make", [
    lambda x: x.to_sparse(),
    lambda x: x._neg_view(),
    lambda x: torch.conj(x),
])
def test_sparse_and_view_bit_tensors_read_as_their_values(make):
    x = torch.rand(4, 1, 8, 8)
    view = vd.show_batch(make(x))
    assert view.pages[0].n_items == 4
    plain = make(x).to_dense() if make(x).is_sparse else make(x).resolve_neg().resolve_conj()
    assert vd.check_batch(make(x)).codes == vd.check_batch(plain.clone()).codes


@pytest.mark.parametrize("mode", ["La", "LA", "RGBa", "PA", "CMYK", "I;16B", "YCbCr"])
def test_pil_images_of_every_mode_are_drawn(mode):
    img = Image.new(mode, (8, 6))
    assert vd.show_batch(img).pages[0].n_items == 1
    assert vd.show_batch([img, img]).pages[0].n_items == 2


def test_three_channel_image_says_which_reading_was_chosen():
    view = vd.show_batch(np.random.rand(3, 32, 32))
    head = view.pages[0].html.split('class="vd-head"')[1].split("</div>")[0]
    assert "read as one RGB image" in head and "layout=&#x27;NHW&#x27;" in head
    grey = vd.show_batch(np.random.rand(3, 32, 32), layout="NHW")
    assert grey.pages[0].n_items == 3
    assert "read as one" not in vd.show_batch(np.random.rand(1, 32, 32)).pages[0].html
