"""Property-based tests over the input kinds of issue 25 and their neighbours: nested and
jagged tensors, every torch dtype (float8, float4, bits, uint16, complex, bool, quantized),
0-d and empty tensors, non-contiguous, expanded and strided views, recursive and very deep
lists and dicts, objects whose ``__len__``/``__getitem__``/``__iter__`` raise or lie,
generators, numpy object/structured/masked arrays and ``np.matrix``, pandas categorical and
extension dtypes. Whatever reaches ``show_batch``, ``check_batch``, ``check_dataset``,
``check_split``, ``check_predictions`` or ``show_top_losses``, only a VizdebugError (or
VizdebugTypeError), with a message, may escape, and no call on these small inputs takes
more than ``LIMIT_S``."""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vizdebug as vd
from vizdebug.errors import VizdebugError

from .test_properties import time_limit

pytestmark = pytest.mark.filterwarnings("ignore")
LIMIT_S = 10
SETTINGS = settings(max_examples=120, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

TORCH_DTYPES = sorted({d for d in vars(torch).values() if isinstance(d, torch.dtype)}, key=str)


def clear(call, *args, **kwargs) -> Any:
    """``call(*args, **kwargs)``: its result, or the VizdebugError it raised (with a
    message); anything else, or a call past ``LIMIT_S``, fails the example."""
    with time_limit(LIMIT_S):
        try:
            return call(*args, **kwargs)
        except VizdebugError as exc:
            assert len(str(exc)) > 10, f"{type(exc).__name__} without a message"
            return exc


# -- tensors ---------------------------------------------------------------------------------
def _of_dtype(base: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``base`` as ``dtype`` where torch converts to it, else its bytes viewed as it, else
    an uninitialised tensor of it (packed and placeholder dtypes have no conversion)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (lambda: base.to(dtype),
                     lambda: base.to(torch.uint8).view(dtype),
                     lambda: torch.empty(base.shape, dtype=dtype)):
            with contextlib.suppress(Exception):
                return make()
    return base


@functools.cache
def _jagged() -> torch.Tensor:
    # built once, when first drawn (its first construction imports much of torch)
    return torch.nested.nested_tensor([torch.rand(2, 5), torch.rand(3, 5)], layout=torch.jagged)


def _nested(shapes: list[tuple[int, ...]]) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([torch.rand(s) for s in shapes])


SHAPES = [(4, 1, 8, 8), (4, 3, 8, 8), (2, 8, 8, 3), (3, 8, 8), (8, 8), (4, 5), (4,), (),
          (0,), (0, 1, 8, 8), (4, 0), (1, 1, 1, 1)]


@st.composite
def tensors(draw: st.DrawFn) -> torch.Tensor:
    """Tensors of every dtype and shape, and views of them as pipelines make them."""
    shape = draw(st.sampled_from(SHAPES))
    base = torch.rand(shape) * draw(st.sampled_from([1.0, 255.0, -3.0, 1e30]))
    t = _of_dtype(base, draw(st.sampled_from(TORCH_DTYPES)))
    view = draw(st.sampled_from(["plain", "transposed", "expanded", "strided", "sliced",
                                 "channels-last", "nested", "nested-same", "jagged"]))
    with contextlib.suppress(Exception):  # a view this dtype or shape has no: the plain one
        if view == "transposed" and t.dim() >= 2:
            return t.transpose(0, -1)
        if view == "expanded" and t.dim() >= 1:
            return t[:1].expand(6, *t.shape[1:]) if t.shape[0] else t
        if view == "strided" and t.dim() >= 1:
            return t.as_strided((3, *t.shape[1:]), (0, *t.stride()[1:]))
        if view == "sliced" and t.dim() >= 2:
            return t[::2, ..., ::2]
        if view == "channels-last" and t.dim() == 4:
            return t.contiguous(memory_format=torch.channels_last)
    if view == "nested":
        return _nested(draw(st.sampled_from([[(1, 8, 8), (1, 6, 6)], [(3, 8, 8), (3, 4, 9)],
                                             [(2,), (3,), (1,)], [(5, 2), (2, 5)]])))
    if view == "nested-same":
        return _nested([(1, 8, 8)] * 3)
    if view == "jagged":
        return _jagged()
    return t


# -- containers that are odd ------------------------------------------------------------------
def _recursive_list() -> list:
    loop: list = [np.zeros((8, 8))]
    loop.append(loop)
    return loop


def _recursive_dict() -> dict:
    loop: dict = {"label": 1}
    loop["image"] = loop
    return loop


def _deep(levels: int, dict_form: bool) -> Any:
    out: Any = np.zeros((2, 2))
    for _ in range(levels):
        out = {"image": out} if dict_form else [out]
    return out


class LyingDataset:
    """A map-style dataset whose ``__len__`` or ``__getitem__`` raises or lies."""

    def __init__(self, length: Any, items: list[Any], fail_at: int | None) -> None:
        self.length, self.items, self.fail_at = length, items, fail_at

    def __len__(self) -> Any:
        if isinstance(self.length, Exception):
            raise self.length
        return self.length

    def __repr__(self) -> str:
        return f"LyingDataset({self.length!r}, {self.items!r:.300}, fail_at={self.fail_at})"

    def __getitem__(self, i: int) -> Any:
        if i == self.fail_at:
            raise RuntimeError(f"item {i} is broken")
        return self.items[i % len(self.items)]


class LyingIterable:
    """An iterable whose ``__iter__`` raises, or whose length says more than it yields."""

    def __init__(self, raises: bool, items: list[Any]) -> None:
        self.raises, self.items = raises, items

    def __len__(self) -> int:
        return len(self.items) + 5

    def __repr__(self) -> str:
        return f"LyingIterable(raises={self.raises}, items={self.items!r:.300})"

    def __iter__(self):
        if self.raises:
            raise OSError("the shard is gone")
        return iter(self.items)


def numpy_oddities() -> st.SearchStrategy:
    grid = np.random.default_rng(0).random((4, 1, 8, 8))
    return st.sampled_from([
        np.array([np.zeros(3), None], dtype=object),
        np.array([np.zeros((8, 8)), np.zeros((8, 8))], dtype=object),
        np.array([[1, "a"], [2, "b"]], dtype=object),
        np.zeros((4, 8), dtype=[("a", "f4"), ("b", "i4")]),
        np.zeros(4, dtype=[("pixels", "f4", (8, 8))]),
        np.ma.masked_array(grid, mask=grid > 0.5),
        np.ma.masked_array(np.random.default_rng(1).random((4, 3)), mask=[[1, 0, 0]] * 4),
        np.matrix(np.random.default_rng(2).random((4, 3))),
        np.matrix(np.zeros((8, 8), dtype=np.uint8)),
        np.array(["2020-01-01"] * 4, dtype="datetime64[D]"),
        np.zeros((4, 3), dtype="m8[s]"),
        np.zeros((4, 3), dtype="V4"),
        np.zeros((4, 1, 8, 8), dtype=np.float16),
        np.broadcast_to(np.arange(8.0), (4, 1, 8, 8)),
        np.zeros((4, 1, 8, 8))[:, :, ::2, ::-1],
    ])


def frames() -> st.SearchStrategy:
    n = 4
    columns = {
        "cat": pd.Categorical(["a", "b", "a", "b"]),
        "cat-num": pd.Categorical([1, 2, 1, 3]),
        "Int64": pd.array([1, None, 3, 4], dtype="Int64"),
        "boolean": pd.array([True, None, False, True], dtype="boolean"),
        "string": pd.array(["a", None, "c", "d"], dtype="string"),
        "Float64": pd.array([1.5, None, 2.0, np.nan], dtype="Float64"),
        "period": pd.period_range("2020", periods=n, freq="M"),
        "interval": pd.interval_range(0, n),
        "sparse": pd.arrays.SparseArray([0.0, 1.0, 0.0, np.nan]),
        "tz": pd.date_range("2020", periods=n, tz="UTC"),
        "complex": np.array([1 + 2j] * n),
        "huge-int": [10**30, 1, 2, 3],
        "uint64": np.array([2**64 - 1, 0, 1, 2], dtype=np.uint64),
        "inf": [np.inf, -np.inf, np.nan, 1e308],
        "lists": [[1], [2, 3], [], None],
        "float": np.linspace(0, 1, n),
    }
    with contextlib.suppress(ImportError):
        import pyarrow  # noqa: F401

        columns["arrow-int"] = pd.array([1, 2, None, 4], dtype="int64[pyarrow]")

    @st.composite
    def build(draw: st.DrawFn) -> pd.DataFrame:
        names = draw(st.lists(st.sampled_from(sorted(columns)), min_size=1, max_size=4))
        frame = pd.DataFrame({f"c{i}": columns[k] for i, k in enumerate(names)})
        frame.columns = names  # repeated names stay repeated
        return frame

    return build()


def leaves() -> st.SearchStrategy:
    """One input of any of the issue's kinds."""
    return st.one_of(
        tensors(), numpy_oddities(), frames(),
        st.builds(_recursive_list), st.builds(_recursive_dict),
        st.builds(_deep, st.sampled_from([40, 3000]), st.booleans()),
        st.sampled_from([[[1, 2], [3]], [None, None], [True, False], range(5), {1, 2}]),
    )


@st.composite
def inputs(draw: st.DrawFn) -> Any:
    """An input alone, in a batch form, as a dataset or iterable, or as a generator."""
    x = draw(leaves())
    form = draw(st.sampled_from(["bare", "pair", "dict", "samples", "dataset", "iterable",
                                 "generator"]))
    if form == "pair":
        return (x, draw(leaves() | st.just(torch.arange(4))))
    if form == "dict":
        return {"image": x, "label": draw(leaves() | st.just([0, 1, 0, 1]))}
    if form == "samples":
        return [(x, 0), (x, 1)]
    if form == "dataset":
        length = draw(st.sampled_from([2, 0, -1, 2.5, 10**6, RuntimeError("no len")]))
        return LyingDataset(length, [(x, 0), (x, 1)], draw(st.sampled_from([None, 0, 1])))
    if form == "iterable":
        return LyingIterable(draw(st.booleans()), [(x, torch.arange(2))])
    if form == "generator":
        return (item for item in [x, x])
    return x


def predictions() -> st.SearchStrategy:
    return st.one_of(tensors(), numpy_oddities(), leaves(),
                     st.sampled_from([[0, 1, 0, 1], np.arange(4), torch.arange(4) % 2,
                                      pd.Series(pd.Categorical([0, 1, 0, 1])),
                                      pd.array([0, 1, None, 1], dtype="Int64")]))


# -- the properties ----------------------------------------------------------------------------
@SETTINGS
@given(data=inputs(), n=st.sampled_from([None, 1, 3]))
def test_show_batch_draws_or_refuses_clearly(data, n):
    view = clear(vd.show_batch, data, n=n)
    if not isinstance(view, VizdebugError):
        assert "vd-batch" in view.to_html() and repr(view)
        clear(view.next)


@SETTINGS
@given(data=inputs())
def test_check_batch_and_check_dataset_find_or_refuse_clearly(data):
    for call in (vd.check_batch, vd.check_dataset):
        found = clear(call, data)
        if not isinstance(found, VizdebugError):
            assert isinstance(found.codes, list) and found.to_html() is not None


@SETTINGS
@given(train=inputs(), test=inputs())
def test_check_split_answers_or_refuses_clearly(train, test):
    found = clear(vd.check_split, train, test)
    if not isinstance(found, VizdebugError):
        assert isinstance(found.codes, list)


@SETTINGS
@given(y_true=predictions(), y_pred=predictions())
def test_check_predictions_answers_or_refuses_clearly(y_true, y_pred):
    found = clear(vd.check_predictions, y_true, y_pred)
    if not isinstance(found, VizdebugError):
        assert isinstance(found.codes, list)


MODEL = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(3))
MODEL(torch.rand(2, 1, 8, 8))  # materialised: the odd input is the data, not the model


@settings(SETTINGS, max_examples=60)
@given(data=inputs())
def test_show_top_losses_ranks_or_refuses_clearly(data):
    view = clear(vd.show_top_losses, MODEL, data, torch.nn.CrossEntropyLoss(), k=2)
    if not isinstance(view, VizdebugError):
        assert view.to_html()
