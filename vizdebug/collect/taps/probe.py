"""The probe set of a tracked layer (``Session.track_embeddings``), read once and bounded.

A probe is a tensor, an array, an ``(x, y)`` pair, a map-style Dataset or a DataLoader of at
most :data:`~vizdebug.records.MAX_PROBE` samples and :data:`MAX_PROBE_BYTES` of input. It is read once, when the layer is tracked,
with every global RNG (and a loader's generator) restored afterwards, so reading it changes
nothing the training loop draws. Its labels come from ``labels=`` or, when not given, from
the targets the probe carries; ``images=`` become small ``uint8`` thumbnails (at most
:data:`~vizdebug.records.MAX_THUMB_SIDE` pixels a side), stored once with the run.
torch is imported inside the functions.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.batch import split_batch, split_sample
from ...errors import VizdebugError, VizdebugTypeError, describe, short_repr
from ...records import MAX_PROBE, MAX_THUMB_SIDE, EmbeddingProbe

CHUNK = 256  # dataset items collated at a time
MAX_PROBE_BYTES = 1 << 30  # the probe's inputs are held for the whole run
MAX_LABEL_TEXT = 100  # characters kept of a label that is not a number


@dataclass
class Probe:
    """The probe's inputs (one tensor, where it was given: CPU for a Dataset or a loader),
    its labels and thumbnails."""

    inputs: Any
    labels: np.ndarray | list[str] | None
    thumbs: np.ndarray | None

    @property
    def n(self) -> int:
        return int(self.inputs.shape[0])

    def record(self, layer: str) -> EmbeddingProbe:
        return EmbeddingProbe(layer, self.n, self.labels, self.thumbs)


def find_layer(model: Any, name: Any) -> Any:
    """The submodule of ``model`` at path ``name`` (as ``model.named_modules()`` spells it),
    or an error listing the valid names, the closest first.

    >>> import torch
    >>> find_layer(torch.nn.Sequential(torch.nn.Linear(2, 2)), "0")
    Linear(in_features=2, out_features=2, bias=True)
    """
    if not isinstance(name, str):
        raise VizdebugTypeError(f"layer must be a module path such as 'fc1' or 'features.3', "
                                f"got {describe(name)}: {short_repr(name)}")
    modules = {n: m for n, m in model.named_modules() if n}
    if name in modules:
        return modules[name]
    close = difflib.get_close_matches(name, list(modules), n=5, cutoff=0.5)
    names = close + [n for n in modules if n not in close]
    shown = ", ".join(repr(n) for n in names[:30])
    more = f" and {len(names) - 30} more" if len(names) > 30 else ""
    lead = f"did you mean {close[0]!r}? " if close else ""
    raise VizdebugError(f"the model ({type(model).__name__}) has no module named {name!r}; "
                        f"{lead}valid names: {shown or 'none (it has no submodules)'}{more}")


def read_probe(probe: Any, labels: Any = None, images: Any = None) -> Probe:
    """The probe's inputs, labels and thumbnails, checked (see the module docstring)."""
    import torch

    with _all_rng_preserved(probe):
        inputs, targets = _read_inputs(probe)
    n = int(inputs.shape[0])
    if n == 0:
        raise VizdebugError(f"the probe ({describe(probe)}) holds no samples; pass a few "
                            "hundred held-out inputs")
    if not inputs.is_floating_point() and inputs.dtype not in (torch.long, torch.int):
        inputs = inputs.float()  # uint8 images and the like
    given = labels if labels is not None else targets
    return Probe(inputs, _labels(given, n, "labels" if labels is not None else "the probe's "
                                                                              "targets"),
                 _thumbnails(images, n))


def _all_rng_preserved(probe: Any) -> Any:
    from ...analysis.datasets.top_losses import _all_rng_preserved as preserved

    return preserved(probe)  # the global RNGs, and a DataLoader's generator


def _is_loader(obj: Any) -> bool:
    from torch.utils.data import DataLoader

    return isinstance(obj, DataLoader)


def _too_many(n: int | str, probe: Any) -> VizdebugError:
    return VizdebugError(
        f"the probe ({describe(probe)}) has {n} samples; at most {MAX_PROBE:,} are tracked "
        "(each due point runs the model over all of them): pass a subset, e.g. x[:2000] or "
        "torch.utils.data.Subset(dataset, range(2000))")


def _read_inputs(probe: Any) -> tuple[Any, Any]:
    """``(inputs tensor, targets or None)`` of any accepted probe."""
    import torch
    from torch.utils.data import Dataset, IterableDataset

    if isinstance(probe, tuple) and len(probe) == 2 and hasattr(probe[0], "shape"):
        x, y = _as_tensor(probe[0], probe), probe[1]
        return _bounded(x, probe), y
    if isinstance(probe, (torch.Tensor, np.ndarray)):
        return _bounded(_as_tensor(probe, probe), probe), None
    if _is_loader(probe) or isinstance(probe, IterableDataset):
        return _join(_loader_batches(probe), probe)
    if isinstance(probe, Dataset) and hasattr(probe, "__len__") or _map_like(probe):
        if len(probe) > MAX_PROBE:
            raise _too_many(f"{len(probe):,}", probe)
        return _join(_dataset_chunks(probe), probe)
    raise VizdebugTypeError(
        f"probe must be a tensor, an array, an (x, y) pair, a Dataset or a DataLoader of at "
        f"most {MAX_PROBE:,} samples; got {describe(probe)}: {short_repr(probe)}")


def _map_like(obj: Any) -> bool:
    return (hasattr(obj, "__getitem__") and hasattr(obj, "__len__")
            and not isinstance(obj, (list, str, bytes, Mapping)))


def _too_big(nbytes: int, probe: Any) -> VizdebugError:
    return VizdebugError(
        f"the probe ({describe(probe)}) takes {nbytes / 2**20:,.0f} MiB; it is held for the "
        f"whole run, so at most {MAX_PROBE_BYTES >> 20:,} MiB: pass fewer or smaller samples")


def _bounded(x: Any, probe: Any) -> Any:
    if x.ndim == 0:
        raise VizdebugError(f"the probe ({describe(probe)}) is a single number; pass a batch "
                            "of inputs with the samples along the first axis")
    if x.shape[0] > MAX_PROBE:
        raise _too_many(f"{x.shape[0]:,}", probe)
    if x.nbytes > MAX_PROBE_BYTES:
        raise _too_big(x.nbytes, probe)
    return x.detach()


def _as_tensor(x: Any, probe: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise VizdebugTypeError(f"the probe's inputs ({describe(probe)}) must be numbers, got "
                                f"dtype {arr.dtype}")
    return torch.as_tensor(arr.astype(np.float32) if arr.dtype == np.float64 else arr)


def _loader_batches(loader: Any) -> Iterator[Any]:
    from ...data.sources import own_pass  # (not loaded by `import vizdebug`)

    for batch in own_pass(loader):
        yield split_batch(batch)


def _dataset_chunks(dataset: Any) -> Iterator[Any]:
    from torch.utils.data import default_collate

    for start in range(0, len(dataset), CHUNK):
        items = [dataset[i] for i in range(start, min(start + CHUNK, len(dataset)))]
        bad = next((start + j for j, it in enumerate(items) if it is None), None)
        if bad is not None:
            raise VizdebugError(f"the probe's item {bad} is None; vd.check_dataset(probe) "
                                "lists them all")
        parts = [split_sample(it) for it in items]
        xs = default_collate([p.input for p in parts])
        ys = [p.target for p in parts]
        yield xs, (None if any(y is None for y in ys) else default_collate(ys))


def _join(parts: Iterator[Any], probe: Any) -> tuple[Any, Any]:
    """Concatenate ``(x, y)`` batches, refusing the probe as soon as it is too long."""
    import torch

    xs, ys, n, nbytes = [], [], 0, 0
    for x, y in parts:
        x = _as_tensor(x, probe)
        n += int(x.shape[0]) if x.ndim else 1
        nbytes += x.nbytes
        if n > MAX_PROBE:
            raise _too_many(f"more than {MAX_PROBE:,}", probe)
        if nbytes > MAX_PROBE_BYTES:
            raise _too_big(nbytes, probe)
        xs.append(x.detach())
        ys.append(y)
    if not xs:
        raise VizdebugError(f"the probe ({describe(probe)}) yielded no batches")
    return torch.cat(xs), _joined_targets(xs, ys)


def _joined_targets(xs: list[Any], ys: list[Any]) -> np.ndarray | None:
    """The batches' targets as one array, when each is one class per sample."""
    out = []
    for x, y in zip(xs, ys):
        arr = None if y is None else np.asarray(y.cpu() if hasattr(y, "cpu") else y)
        if arr is None or arr.shape != (len(x),):
            return None  # no targets, or not one label per sample (masks, one-hot rows)
        out.append(arr)
    return np.concatenate(out)


def _labels(values: Any, n: int, what: str) -> np.ndarray | list[str] | None:
    """One label per probe sample: numbers as an array, anything else as short strings."""
    if values is None:
        return None
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values, dtype=object) if isinstance(values, (list, tuple)) else np.asarray(values)
    if arr.ndim != 1 or len(arr) != n:
        raise VizdebugError(f"{what} ({describe(values)}) must hold one label per probe sample: "
                            f"the probe has {n}, got shape {arr.shape}")
    if arr.dtype.kind in "biu" or (arr.dtype.kind == "f" and np.isfinite(arr).all()):
        return arr.astype(np.int64) if arr.dtype.kind in "biu" else arr.astype(np.float64)
    if arr.dtype == object and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                   for v in arr):
        return arr.astype(np.int64)
    return [str(v)[:MAX_LABEL_TEXT] for v in arr.tolist()]


def _thumbnails(images: Any, n: int) -> np.ndarray | None:
    """``uint8`` thumbnails ``(n, h, w)`` (one channel) or ``(n, h, w, 3)``."""
    if images is None:
        return None
    from ...analysis.datasets.images import infer_scaling, pooled, to_display
    from ...data.batch import make_batch

    shape = getattr(images, "shape", ())
    layout = "NHW" if len(shape) == 3 and shape[0] == n else "auto"
    batch = make_batch(images, layout=layout, what="images")
    if batch.kind != "image" or len(batch) != n or batch.images is None:
        raise VizdebugError(f"images ({describe(images)}) must be {n} pictures of one size, "
                            "one per probe sample (N x H x W or N x C x H x W)")
    scaling = infer_scaling(batch.images)
    thumbs = [to_display(pooled(item, MAX_THUMB_SIDE), scaling) for item in batch.items]
    stacked = np.nan_to_num(np.stack(thumbs))  # N x C x h x w in [0, 1]
    out = (np.clip(stacked, 0, 1) * 255 + 0.5).astype(np.uint8)
    if out.shape[1] == 1:
        return out[:, 0]
    return out[:, :3].transpose(0, 2, 3, 1) if out.shape[1] >= 3 else out[:, 0]
