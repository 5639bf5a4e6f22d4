"""Pages of a batch source: a DataLoader, a Dataset, an iterable of batches, or one batch.

Each source yields canonical :class:`~vizdebug.data.batch.Batch` pages of at most ``n``
items; loading errors from the user's pipeline come back as clear errors that keep the
original exception chained.
"""

from __future__ import annotations

import contextlib
import copy
import random
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..errors import VizdebugError, VizdebugTypeError, describe, short_repr
from .arrays import dense, is_arraylike, is_nested, is_pil
from .batch import Batch, item_count, make_batch, unpack
from .layout import infer_layout
from .parts import dataset_length

MAX_PER_PAGE = 256
DEFAULT_PER_PAGE = 64


def _is_dataloader(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.utils.data.DataLoader)


def _is_map_dataset(obj: Any) -> bool:
    if isinstance(obj, (list, tuple, np.ndarray, str, bytes, Mapping)) or is_arraylike(obj):
        return False
    if type(obj).__name__ == "DataFrame":
        return False
    return hasattr(obj, "__getitem__") and hasattr(obj, "__len__")


class PageSource:
    """Hands out pages one at a time; ``exhausted`` once the source has no more."""

    description = "batch"

    def __init__(self, n: int | None, layout: str) -> None:
        self.n = check_n(n)
        self.layout = layout
        self.exhausted = False
        self.pages_read = 0

    def next_page(self) -> Batch | None:
        raise NotImplementedError


def check_n(n: int | None) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise VizdebugTypeError(f"n must be a whole number of images per page, got {n!r}")
    if not 1 <= n <= MAX_PER_PAGE:
        raise VizdebugError(
            f"n={n}: a page shows 1 to {MAX_PER_PAGE} images; page through the rest with next()"
        )
    return int(n)


class SlicedSource(PageSource):
    """One batch (arrays, tensors, (x, y), dict, list of images) cut into pages of n."""

    def __init__(self, x: Any, y: Any, n: int | None, layout: str, description: str,
                 note: str = "") -> None:
        super().__init__(n, layout)
        self.x, self.y, self.description, self.note = x, y, description, note
        self.total = _length(x)
        self.start = 0

    def next_page(self) -> Batch | None:
        if self.start >= self.total:
            self.exhausted = True
            return None
        per = self.n or DEFAULT_PER_PAGE
        stop = min(self.start + per, self.total)
        batch = make_batch(_take(self.x, self.start, stop), _take(self.y, self.start, stop),
                           layout=self.layout)
        batch.indices = list(range(self.start, stop))
        batch.info += [self.note] if self.note else []
        self.start = stop
        self.exhausted = self.start >= self.total
        self.pages_read += 1
        return batch


def _length(x: Any) -> int:
    """Items in ``x``; a lone image or scalar counts as one."""
    n = item_count(x)
    return 1 if n is None else n


def _take(x: Any, start: int, stop: int) -> Any:
    if x is None:
        return None
    try:
        return x.iloc[start:stop] if type(x).__name__ == "DataFrame" else x[start:stop]
    except Exception as exc:  # a tensor torch cannot slice (an uninitialised qint32), ...
        raise VizdebugTypeError(f"cannot take items {start}..{stop - 1} of {describe(x)}: "
                                f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _is_single_image(x: Any, layout: str) -> bool:
    if is_pil(x):
        return True
    if not is_arraylike(x):
        return False
    shape = tuple(x.shape)
    if layout in ("CHW", "HWC", "HW"):
        return True
    if layout != "auto":
        return False
    if len(shape) == 2:
        return str(getattr(x, "dtype", "")).replace("torch.", "") in ("uint8", "bool")
    return len(shape) == 3 and infer_layout(shape).layout in ("CHW", "HWC")


class IterSource(PageSource):
    """Batches drawn one by one from a DataLoader or any iterable of batches."""

    def __init__(self, iterable: Any, n: int | None, layout: str, description: str) -> None:
        super().__init__(n, layout)
        self.iterable, self.description = iterable, description
        self._it: Iterator | None = None

    def next_page(self) -> Batch | None:
        try:
            with preserved_rng(self.iterable):
                if self._it is None:
                    self._it = iter(own_pass(self.iterable))
                raw = next(self._it)
        except StopIteration:
            self.exhausted = True
            return None
        except Exception as exc:
            raise _loading_error(exc, self.pages_read, self.description) from exc
        what = f"batch {self.pages_read} of the {self.description}"
        x, y = unpack(raw, what=what)
        x, y, _ = batch_items(x, y, self.layout, what)
        total = _length(x)
        per = self.n or min(total, DEFAULT_PER_PAGE)
        batch = make_batch(_take(x, 0, per), _take(y, 0, per), layout=self.layout,
                           what=f"batch {self.pages_read}")
        if total > per:
            batch.info.append(f"showing {per} of the batch's {total} items")
        self.pages_read += 1
        return batch


def own_pass(loader: Any) -> Any:
    """The loader to draw from without touching the user's epoch.

    A DataLoader with ``persistent_workers=True`` keeps one iterator and *resets* it on
    every ``iter()``: looking at a batch mid-epoch would restart the user's epoch (80
    samples instead of 64, 16 of them twice). A shallow copy without that iterator gets
    its own workers, which end with its pass.
    """
    if not (_is_dataloader(loader) and getattr(loader, "_iterator", None) is not None):
        return loader
    clone = copy.copy(loader)  # through __dict__: DataLoader forbids setting these later
    clone.__dict__.update(_iterator=None, persistent_workers=False)
    return clone


@contextlib.contextmanager
def preserved_rng(loader: Any) -> Iterator[None]:
    """Restore the global RNGs (and a DataLoader's generator) after drawing a batch.

    Looking at a batch must not change what the training loop draws next: a DataLoader
    seeds its sampler and workers from torch's global RNG or its own generator, and
    transforms in the main process often use numpy's or Python's global RNG. RNG objects
    private to a transform cannot be reached and still advance.
    """
    torch = sys.modules.get("torch")
    gen = getattr(loader, "generator", None)
    saved = (random.getstate(), np.random.get_state(),
             torch.get_rng_state() if torch is not None else None,
             gen.get_state() if gen is not None else None)
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        if saved[2] is not None:
            torch.set_rng_state(saved[2])
        if saved[3] is not None:
            gen.set_state(saved[3])


def _loading_error(exc: Exception, k: int, description: str) -> VizdebugError:
    text = f"{type(exc).__name__}: {exc}"
    hint = ""
    if "NoneType" in text:
        hint = (" A sample is None: a Dataset.__getitem__ or transform returned nothing. "
                "vd.check_dataset(loader.dataset) names the indices.")
    return VizdebugError(f"loading batch {k} from the {description} failed with {text[:300]}.{hint}")


class DatasetSource(PageSource):
    """A map-style Dataset read item by item, so a None sample shows as a flagged cell."""

    def __init__(self, dataset: Any, n: int | None, layout: str) -> None:
        super().__init__(n, layout)
        self.dataset = dataset
        self.description = f"{type(dataset).__name__} of {dataset_length(dataset)} items"
        self.start = 0

    def next_page(self) -> Batch | None:
        total = dataset_length(self.dataset)
        if self.start >= total:
            self.exhausted = True
            return None
        stop = min(self.start + (self.n or DEFAULT_PER_PAGE), total)
        xs, ys = [], []
        for i in range(self.start, stop):
            x, y = self._item(i)
            xs.append(x)
            ys.append(y)
        labels = _page_labels(ys)
        batch = make_batch(xs, labels, layout=self.layout, what="dataset page")
        batch.indices = list(range(self.start, stop))
        self.start = stop
        self.exhausted = stop >= total
        self.pages_read += 1
        return batch

    def _item(self, i: int) -> tuple[Any, Any]:
        try:
            item = self.dataset[i]
        except Exception as exc:
            raise VizdebugError(
                f"dataset[{i}] raised {type(exc).__name__}: {str(exc)[:300]}; "
                "vd.check_dataset(dataset) lists every failing index"
            ) from exc
        return (None, None) if item is None else unpack(item, what=f"dataset[{i}]", sample=True)


def _page_labels(ys: list[Any]) -> list[Any] | None:
    """One page's targets: ``None`` where an item has none is captioned "None"; targets
    with an axis (masks, multi-hot rows) are all shown or none (one may be missing)."""
    if all(y is None for y in ys):
        return None
    if any(getattr(y, "ndim", 0) or is_pil(y) for y in ys):
        return None if any(y is None for y in ys) else ys
    return [("None" if y is None else y) for y in ys]


def page_source(source: Any, n: int | None = None, layout: str = "auto") -> PageSource:
    """The right :class:`PageSource` for whatever ``source`` is."""
    if source is None:
        raise VizdebugTypeError(
            "show_batch got None; pass a DataLoader, a Dataset, a batch (tensor, ndarray, "
            "(x, y) tuple or dict) or a list of images"
        )
    if isinstance(source, (str, bytes)):
        raise VizdebugTypeError(
            f"show_batch got a string ({str(source)[:60]!r}); pass image data, not a path "
            "(open files with PIL.Image.open first)"
        )
    if _is_dataloader(source):
        return IterSource(source, n, layout, "DataLoader")
    if _is_map_dataset(source):
        return DatasetSource(source, n, layout)
    if isinstance(source, (list, tuple)) and _is_list_of_batches(source):
        return IterSource(source, n, layout, f"list of {len(source)} batches")
    if isinstance(source, (Mapping, tuple, list)) or is_arraylike(source) \
            or type(source).__name__ == "DataFrame":
        return _sliced(source, n, layout)
    if hasattr(source, "__iter__") or hasattr(source, "__next__"):
        return IterSource(source, n, layout, type(source).__name__)
    raise VizdebugTypeError(
        f"show_batch cannot read a {describe(source)}; pass a DataLoader, a Dataset, an "
        "iterable of batches, a tensor/ndarray, an (x, y) tuple, a dict batch or a list of images"
    )


def _sliced(source: Any, n: int | None, layout: str) -> SlicedSource:
    if isinstance(source, (list, tuple)) and source and all(
        isinstance(s, (tuple, Mapping)) for s in source
    ):
        pairs = [unpack(s, what=f"item {i}", sample=True) for i, s in enumerate(source)]
        xs = [p[0] for p in pairs]
        ys = None if all(p[1] is None for p in pairs) else [p[1] for p in pairs]
        return SlicedSource(xs, ys, n, layout, f"list of {len(source)} samples")
    x, y = unpack(source)
    x, y, note = batch_items(x, y, layout, "show_batch's input")
    return SlicedSource(x, y, n, layout, describe(x), note)


def batch_items(x: Any, y: Any, layout: str, what: str) -> tuple[Any, Any, str]:
    """``(inputs, targets, note)`` ready to be sliced into pages: a lone image becomes a
    list of one (``note`` says how an ambiguous one was read); targets that cannot be cut
    per item (a dict of boxes, a scalar beside a batch) are left out; anything that is not
    image or table data is refused by name."""
    x, y = dense(x), dense(y)
    if not (is_arraylike(x) or isinstance(x, (list, tuple)) or _is_frame(x)):
        keys = f" with keys {list(x)[:8]}" if isinstance(x, Mapping) else ""
        raise VizdebugTypeError(
            f"{what} is {describe(x)}{keys}: {short_repr(x, 80)}; show_batch draws a tensor, an array, "
            "a PIL image, a DataFrame or a list of those (for a nested dict, pass the inner "
            "array, e.g. batch['image']['pixels'])"
        )
    if getattr(x, "ndim", None) == 0:
        raise VizdebugError(
            f"{what} is a single number ({describe(x)}), not an image or a batch; pass an "
            "array of shape (N, C, H, W), (N, H, W, C), (N, H, W) or one image"
        )
    if isinstance(x, (list, tuple)) and not x:
        raise VizdebugError(f"{what} is an empty list: there is nothing to show")
    if _is_single_image(x, layout):
        return [x], (None if y is None else [y]), _reading_note(x, layout)
    if y is not None and not (_has_axis(y) or isinstance(y, (list, tuple)) or _is_frame(y)):
        y = None  # a scalar or a dict of boxes: no per-item caption
    return x, y, ""


def _has_axis(obj: Any) -> bool:
    return is_arraylike(obj) and not is_pil(obj) and len(obj.shape) >= 1


def _is_frame(obj: Any) -> bool:
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "columns")


def _reading_note(x: Any, layout: str) -> str:
    """How one 3-D image was read when another reading was possible."""
    if layout != "auto" or is_pil(x) or len(x.shape) != 3:
        return ""
    guess = infer_layout(tuple(x.shape))
    return f"layout {guess.layout}: {guess.reason}" if guess.ambiguous else ""


def _is_list_of_batches(seq: list | tuple) -> bool:
    """True for a list of (x, y)/dict batches whose inputs hold many images each."""
    if not seq or not all(isinstance(s, (tuple, list, Mapping)) for s in seq):
        return False
    if isinstance(seq, tuple) and len(seq) == 2 and is_arraylike(seq[0]):
        return False  # an (x, y) pair
    first = unpack(seq[0])[0] if not isinstance(seq[0], list) else seq[0]
    if is_nested(first):  # a nested tensor's shape cannot be read: its items are images
        return first.dim() == 4
    shape = getattr(first, "shape", None)
    return shape is not None and len(shape) == 4
