"""Hypothesis strategies for what users pass to vizdebug: batches, datasets, frames, log
values and parameters, sound and broken alike (used by ``test_properties.py``)."""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from vizdebug.data.batch import IMAGE_KEYS, LABEL_KEYS
from vizdebug.data.layout import LAYOUTS

NP_DTYPES = [np.uint8, np.bool_, np.float16, np.float32, np.float64, np.int8, np.int64,
             np.uint16, np.uint64, np.int32, np.complex64, np.longdouble]
IMAGE_SHAPES = [(4, 1, 8, 8), (4, 3, 8, 8), (2, 8, 8, 3), (3, 8, 8), (8, 8), (8, 8, 4),
                (4, 1, 200), (2, 1, 1, 9), (2, 1, 9, 1), (1, 1, 1, 1), (3, 3, 3, 3), (2, 5, 6, 7)]
WEIRD = [None, "x", b"\x00", 3, -1.5, float("nan"), True, object(), {1, 2}, [], (), {},
         Fraction(1, 3), 10**400, complex(1, 2), range(3)]


def _values(dtype: Any) -> st.SearchStrategy:
    kind = np.dtype(dtype).kind
    if kind == "f":
        return st.floats(allow_nan=True, allow_infinity=True,
                         width=min(64, np.dtype(dtype).itemsize * 8))
    return None  # hypothesis' default elements for the dtype


@st.composite
def arrays(draw: st.DrawFn, shapes: Any = None) -> np.ndarray:
    """Numpy arrays of image-like or arbitrary shapes and any dtype, odd values included."""
    dtype = draw(st.sampled_from(NP_DTYPES))
    shape = draw(st.sampled_from(IMAGE_SHAPES) | hnp.array_shapes(
        min_dims=0, max_dims=5, min_side=0, max_side=6)) if shapes is None else shapes
    if draw(st.booleans()) or np.prod(shape) > 400:
        fill = draw(_values(dtype) or hnp.from_dtype(np.dtype(dtype)))
        arr = np.full(shape, fill, dtype=dtype)
        if arr.size and np.dtype(dtype).kind in "fiu":
            arr = arr + np.arange(arr.size, dtype=dtype).reshape(shape) % 7
        return np.asarray(arr)
    return np.asarray(draw(hnp.arrays(dtype, shape, elements=_values(dtype))))


TORCH_OF = {np.uint8: torch.uint8, np.bool_: torch.bool, np.float16: torch.float16,
            np.float32: torch.float32, np.float64: torch.float64, np.int8: torch.int8,
            np.int64: torch.int64, np.complex64: torch.complex64}


@st.composite
def tensors(draw: st.DrawFn) -> torch.Tensor:
    """Tensors as pipelines produce them, and as they should not: meta, sparse, views with
    negative bits, bfloat16, requiring grad, channels-last."""
    arr = draw(arrays())
    if arr.dtype.type not in TORCH_OF:
        arr = arr.astype(np.float32)
    t = torch.from_numpy(arr.copy())
    kind = draw(st.sampled_from(["plain", "meta", "sparse", "neg", "bf16", "grad", "cl",
                                 "noncontig"]))
    if kind == "meta":
        return torch.empty(t.shape, dtype=t.dtype, device="meta")
    if kind == "sparse" and t.dim() >= 1 and t.dtype != torch.bool:
        return t.to_sparse()
    if kind == "neg" and t.is_floating_point():
        return t._neg_view()
    if kind == "bf16" and t.is_floating_point():
        return t.to(torch.bfloat16)
    if kind == "grad" and t.is_floating_point():
        return t.clone().requires_grad_(True) * 1
    if kind == "cl" and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if kind == "noncontig" and t.dim() >= 2:
        return t.transpose(-1, -2)
    return t


PIL_MODES = ["1", "L", "P", "RGB", "RGBA", "LA", "La", "RGBa", "PA", "I", "F", "I;16", "CMYK",
             "YCbCr", "HSV", "LAB"]


@st.composite
def pil_images(draw: st.DrawFn) -> Image.Image:
    mode = draw(st.sampled_from(PIL_MODES))
    size = (draw(st.integers(1, 12)), draw(st.integers(1, 12)))
    return Image.new(mode, size, color=draw(st.integers(0, 255)) if mode != "F" else 0.5)


def labels(n: int) -> st.SearchStrategy:
    """Targets for a batch of ``n``: class ids, strings, one-hot, multi-hot, masks,
    regression values, the wrong length, junk."""
    return st.one_of(
        st.none(),
        st.lists(st.integers(-2, 5), min_size=n, max_size=n),
        st.lists(st.text(max_size=4), min_size=n, max_size=n),
        st.just(np.eye(3, dtype=np.float32)[np.arange(n) % 3]),
        st.just((np.arange(n * 3).reshape(n, 3) % 2).astype(np.int64)),
        st.just(torch.randint(0, 3, (n, 8, 8))),
        st.just(torch.rand(n, 1, 8, 8)),
        arrays(shapes=(n,)),
        arrays(),
        st.sampled_from(WEIRD),
    )


def frames() -> st.SearchStrategy:
    """DataFrames with repeated, numeric or odd column names and mixed dtypes."""
    names = st.one_of(st.text(max_size=4), st.integers(), st.just("a"))
    column = st.sampled_from(["float", "int", "str", "cat", "date", "nullable", "obj"])

    @st.composite
    def build(draw: st.DrawFn) -> pd.DataFrame:
        cols = draw(st.lists(st.tuples(names, column), min_size=0, max_size=4))
        rows = draw(st.integers(0, 6))
        data = {f"c{i}": _column(kind, rows, draw) for i, (_, kind) in enumerate(cols)}
        frame = pd.DataFrame(data, index=range(rows))
        frame.columns = [name for name, _ in cols]
        return frame

    return build()


def _column(kind: str, rows: int, draw: st.DrawFn) -> Any:
    floats = draw(st.lists(st.floats(allow_nan=True), min_size=rows, max_size=rows))
    return {
        "float": floats,
        "int": list(range(rows)),
        "str": [str(v) for v in floats],
        "cat": pd.Categorical(["a", "b"] * (rows // 2) + ["a"] * (rows % 2)),
        "date": pd.date_range("2020-01-01", periods=rows),
        "nullable": pd.array([None if i % 2 else i for i in range(rows)], dtype="Int64"),
        "obj": [[i] for i in range(rows)],
    }[kind]


SOUND_SHAPES = [(4, 1, 8, 8), (4, 3, 8, 8), (3, 8, 8, 3), (5, 8, 8), (3, 8, 8), (8, 8, 3),
                (4, 1, 200), (2, 1, 1, 30), (6, 1, 12, 5)]
SOUND_DTYPES = [np.float32, np.float64, np.uint8, np.float16, np.bool_]


@st.composite
def sound_batches(draw: st.DrawFn) -> Any:
    """A batch as a working pipeline hands it over: image data of a usual shape and dtype
    (odd values allowed), with targets of the same length or none."""
    shape = draw(st.sampled_from(SOUND_SHAPES))
    arr = draw(arrays(shapes=shape).filter(lambda a: a.dtype.type in SOUND_DTYPES)
               | st.builds(lambda a: a.astype(np.float32), arrays(shapes=shape)))
    x = torch.from_numpy(arr.copy()) if draw(st.booleans()) and arr.dtype != np.float16 else arr
    if shape in ((3, 8, 8), (8, 8, 3)):  # one image: alone, or with one label
        return draw(st.sampled_from([x, (x, 3), (x, "cat"), {"image": x, "label": 1}]))
    n = shape[0]
    y = draw(st.one_of(st.lists(st.integers(0, 5), min_size=n, max_size=n),
                       st.lists(st.sampled_from(["cat", "dog", "<b>x</b>"]), min_size=n,
                                max_size=n),
                       st.just(torch.eye(3)[torch.arange(n) % 3]),
                       st.just(np.arange(n * 3).reshape(n, 3) % 2),
                       st.just(torch.randint(0, 3, (n, *shape[-2:]))) if len(shape) == 4
                       else st.just(np.arange(n))))
    form = draw(st.sampled_from(["bare", "tuple", "list", "dict"]))
    return {"bare": x, "tuple": (x, y), "list": [x, y], "dict": {"image": x, "label": y}}[form]


@st.composite
def batches(draw: st.DrawFn) -> Any:
    """One batch in any of the forms a user may hand over, broken ones included."""
    if draw(st.booleans()):
        return draw(sound_batches())
    x = draw(st.one_of(arrays(), tensors(), pil_images(), frames(),
                       st.lists(arrays(shapes=(8, 8)) | pil_images() | st.none(), max_size=4),
                       st.sampled_from(WEIRD)))
    n = int(getattr(x, "shape", [4])[0]) if getattr(x, "shape", None) else 4
    y = draw(labels(n))
    form = draw(st.sampled_from(["bare", "tuple", "list", "dict", "dict-first", "nested",
                                 "odd-keys", "triple"]))
    key_x, key_y = draw(st.sampled_from(IMAGE_KEYS)), draw(st.sampled_from(LABEL_KEYS))
    return {
        "bare": lambda: x, "tuple": lambda: (x, y), "list": lambda: [x, y],
        "dict": lambda: {key_x: x, key_y: y}, "dict-first": lambda: {key_y: y, key_x: x},
        "nested": lambda: {key_x: {"inner": x}, key_y: y},
        "odd-keys": lambda: {"a": x, "b": y}, "triple": lambda: (x, y, "meta"),
    }[form]()


class ListDataset(torch.utils.data.Dataset):
    """A map-style dataset over given items; an item that is an exception is raised."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        item = self.items[i]
        if isinstance(item, Exception):
            raise item
        return item


def items() -> st.SearchStrategy:
    """One dataset item: (x, y), a lone x, None, a dict, or a failing read."""
    x = st.one_of(arrays(), tensors(), pil_images(), st.sampled_from(WEIRD))
    y = st.one_of(st.integers(-1, 3), st.floats(allow_nan=True), st.text(max_size=3),
                  st.none(), arrays(), st.just(torch.randint(0, 3, (8, 8))))
    return st.one_of(st.tuples(x, y), x, st.fixed_dictionaries({"image": x, "label": y}),
                     st.just(KeyError("missing file")), st.just(None))


@st.composite
def datasets(draw: st.DrawFn) -> Any:
    """What check_dataset and show_batch get: lists, map-style datasets, (X, y) pairs,
    DataLoaders, iterables, junk."""
    rows = draw(st.lists(items(), min_size=0, max_size=5))
    kind = draw(st.sampled_from(["list", "dataset", "pair", "loader", "iter", "weird",
                                 "count"]))
    if kind == "dataset":
        return ListDataset(rows)
    if kind == "pair":
        return (draw(arrays()), draw(arrays()))
    if kind == "loader":
        return torch.utils.data.DataLoader(ListDataset(rows), batch_size=2,
                                           collate_fn=lambda b: b)
    if kind == "iter":
        return iter(rows)
    if kind == "weird":
        return draw(st.sampled_from(WEIRD))
    if kind == "count":
        return itertools.count()
    return rows


def params() -> st.SearchStrategy:
    """Keyword arguments of show_batch/check_batch, sound and not."""
    numbers = st.one_of(st.none(), st.floats(allow_nan=True), st.integers(-3, 3),
                        st.lists(st.floats(-2, 2), max_size=4), st.sampled_from(WEIRD))
    sound = st.fixed_dictionaries({}, optional={
        "n": st.integers(1, 10), "classes": st.lists(st.text(max_size=5), max_size=4),
        "mean": st.just(0.5), "std": st.just(0.25)})
    return sound | st.fixed_dictionaries({}, optional={
        "n": st.one_of(st.none(), st.integers(-2, 300), st.sampled_from(WEIRD)),
        "classes": st.one_of(st.none(), st.lists(st.text(max_size=5), max_size=4),
                             st.dictionaries(st.integers(-1, 4), st.text(max_size=5)),
                             st.sampled_from(WEIRD)),
        "mean": numbers, "std": numbers,
        "layout": st.sampled_from(["auto", "table", *LAYOUTS, "nchw", "", 5, None]),
    })


def log_values() -> st.SearchStrategy:
    """What ends up in ``session.log(name=value)``."""
    return st.one_of(
        st.floats(allow_nan=True), st.integers(), st.booleans(),
        st.integers(min_value=2**1000, max_value=2**1100),
        st.builds(np.float32, st.floats(width=32)), st.builds(np.int64, st.integers(-2**63, 2**63 - 1)),
        arrays(shapes=(1,)), arrays(shapes=()), arrays(shapes=(2,)),
        st.sampled_from([torch.tensor(0.5), torch.tensor([1.5]), torch.tensor(2, dtype=torch.int64),
                         torch.tensor(1 + 2j), torch.empty((), device="meta"),
                         torch.tensor([1.0]).to_sparse(), torch.tensor(0.5, dtype=torch.bfloat16),
                         torch.rand(3), torch.tensor(0.5, requires_grad=True) * 2]),
        st.sampled_from(WEIRD),
    )


def steps() -> st.SearchStrategy:
    return st.one_of(st.none(), st.integers(-2**64, 2**64), st.integers(0, 1000),
                     st.builds(np.int64, st.integers(0, 10**6)), st.sampled_from(WEIRD))
