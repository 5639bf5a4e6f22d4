"""Item-by-item scan of a dataset, so every finding can name its indices."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..._env import is_tensor
from ...data.arrays import is_nested, to_numpy
from ...data.batch import Batch, make_batch
from ...data.parts import dataset_length, input_members, unpack
from ...errors import VizdebugError, VizdebugTypeError, describe, short_repr
from ...findings import Finding, Findings, fmt_indices
from ...progress import Progress
from .images import infer_scaling
from .input_checks import image_findings, image_flags_for, label_balance, of_members
from .relations import RelationSample
from .sampling import handled_imbalance


@dataclass
class _Scan:
    xs: dict[int, list[np.ndarray]] = field(default_factory=dict)  # one array per input
    labels: dict[int, Any] = field(default_factory=dict)
    nones: list[int] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)
    signatures: dict[int, tuple] = field(default_factory=dict)
    was_tensor: bool = False
    relations: RelationSample = field(default_factory=RelationSample)


def _resolve(dataset: Any) -> Any:
    if dataset is None:
        raise VizdebugTypeError("check_dataset got None; pass a Dataset, a DataLoader or a list")
    inner = getattr(dataset, "dataset", None)
    if inner is not None and hasattr(dataset, "batch_size"):
        return inner  # a DataLoader: scan the samples it draws from
    if isinstance(dataset, tuple) and len(dataset) == 2 and hasattr(dataset[0], "__len__"):
        xs, ys = _positional(dataset[0], "X"), _positional(dataset[1], "y")
        n_x = dataset_length(xs, "the inputs of (X, y)")
        n_y = dataset_length(ys, "the labels of (X, y)")
        if n_x != n_y:
            raise VizdebugError(f"inputs have {n_x} rows but labels {n_y}; they must match")
        return _Paired(xs, ys)
    dataset = _positional(dataset, "the dataset")
    if not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")):
        raise VizdebugTypeError(
            f"check_dataset needs something indexable with a length (a map-style Dataset, a "
            f"list, an array, an (X, y) tuple or a DataLoader over one); got {describe(dataset)}"
        )
    return dataset


def _positional(obj: Any, what: str) -> Any:
    """A pandas DataFrame or Series as an array read by position (``frame[i]`` is a
    column, ``series[i]`` a label lookup: after ``train_test_split`` not the i-th row): a
    frame's numeric and boolean columns, a series' values. Anything else as it is."""
    if type(obj).__module__.split(".")[0] != "pandas":
        return obj
    if hasattr(obj, "columns"):
        numeric = obj.select_dtypes(include=["number", "bool"])
        if numeric.shape[1] == 0:
            raise VizdebugError(
                f"{what} is a DataFrame without numeric columns ({list(map(str, obj.columns))[:8]}); "
                "check_dataset reads numbers: encode the columns first, or pass (X, y)")
        return numeric.to_numpy(dtype=np.float64)
    return obj.to_numpy() if hasattr(obj, "to_numpy") else obj


class _Paired:
    def __init__(self, xs: Any, ys: Any) -> None:
        self.xs, self.ys = xs, ys

    def __len__(self) -> int:
        return len(self.xs)

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        return self.xs[i], self.ys[i]


def _indices(n: int, sample: int | None, seed: int) -> list[int]:
    if sample is None or n <= sample:
        return list(range(n))
    return sorted(np.random.default_rng(seed).choice(n, size=sample, replace=False).tolist())


def _check_sample(sample: Any, seed: Any) -> None:
    for name, value, low in (("sample", sample, 1), ("seed", seed, 0)):
        if value is None and name == "sample":
            continue  # every item
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise VizdebugTypeError(
                f"{name} must be a whole number{' or None (every item)' if low else ''}, "
                f"got {describe(value)}: {short_repr(value)}")
        if value < low:
            raise VizdebugError(f"{name} must be {'a positive number' if low else 'at least 0'}, got {value}")


def _read(ds: Any, i: int, scan: _Scan) -> None:
    try:
        item = ds[i]
    except Exception as exc:  # the user's __getitem__ failing is a finding, not our crash
        scan.errors[i] = f"{type(exc).__name__}: {exc}"
        return
    x, y = unpack(item, what=f"dataset[{i}]", sample=True) if item is not None else (None, None)
    if x is None:
        scan.nones.append(i)
        return
    if isinstance(x, (list, tuple)) and any(v is None for v in x):
        scan.nones.append(i)
        return
    members = input_members(x)  # siamese/triplet items: each input on its own
    try:
        arrays = [to_numpy(m, f"dataset[{i}]") for m in members]
    except VizdebugError as exc:
        scan.errors[i] = str(exc)
        return
    scan.was_tensor |= type(members[0]).__module__.startswith("torch")
    scan.xs[i] = arrays
    scan.signatures[i] = tuple((a.shape, str(a.dtype)) for a in arrays)
    label = _label_value(y) if y is not None else None
    if isinstance(label, (int, float, str, np.integer, np.floating)):
        scan.labels[i] = label  # class ids; masks, multi-hot rows, target images have none
    if len(arrays) == 1:
        scan.relations.add(i, arrays[0], y, scan.labels.get(i))


def _label_value(y: Any) -> Any:
    """One item's label as a Python scalar where it is one: a 0-d or one-element tensor or
    array becomes its value, a one-hot row its class id; anything else stays as it is."""
    if is_nested(y) or (is_tensor(y) and y.numel() <= 1000):
        try:  # through numpy: a nested or packed (bits8) tensor has no .item()
            return _label_value(to_numpy(y, "a label"))
        except VizdebugError:
            return y
    shape = getattr(y, "shape", None)
    if shape is None or not hasattr(y, "reshape"):
        return y
    flat = y.reshape(-1)
    if len(flat) == 1:  # (an object array's entry is the object itself, maybe an array)
        return flat[0].item() if isinstance(flat[0], np.generic) else flat[0]
    if len(shape) == 1 and len(flat) <= 1000:
        try:
            values = to_numpy(flat, "a label")
        except VizdebugError:
            return y
        if values.dtype.kind in "biuf" and np.isin(values, (0, 1)).all() and values.sum() == 1:
            return int(values.argmax())  # a one-hot target row
    return y


def scan_dataset(dataset: Any, *, sample: int | None = 1000, seed: int = 0,
                 progress: bool | None = None) -> Findings:
    """See :func:`vizdebug.check_dataset`."""
    _check_sample(sample, seed)
    ds = _resolve(dataset)
    n = dataset_length(ds)
    if n == 0:
        raise VizdebugError("the dataset is empty (len 0): nothing to check")
    idx = _indices(n, sample, seed)
    scan = _Scan()
    with Progress("check_dataset", total=len(idx), progress=progress) as bar:
        for i in idx:
            _read(ds, i, scan)
            bar.update()
    counted = _shape_findings(scan)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        counted += _content_findings(scan) + scan.relations.findings()
    if len(idx) < n:
        counted = [_in_a_sample(f, len(idx), n) for f in counted]
    balance = handled_imbalance(label_balance(list(scan.labels.values())), dataset, scan.labels)
    found = Findings(_none_and_error_findings(scan, len(idx), n) + counted + balance)
    found.title = (f"Dataset check (check_dataset): {len(idx):,} of {n:,} items "  # type: ignore[attr-defined]
                   f"of a {type(dataset).__name__}")
    return found


def _in_a_sample(f: Finding, read: int, total: int) -> Finding:
    """A count from a sample says so: the rest of the dataset may hold more."""
    if "indices" not in f.evidence:
        return f
    note = (f" (counted in {read:,} sampled items; the dataset has {total:,}, more may be: "
            "sample=None reads them all)")
    return replace(f, message=f.message + note,
                   evidence={**f.evidence, "sampled": read, "dataset_size": total})


def _of(count: int, read: int, total: int) -> str:
    """``7 of 1,000 sampled items are``: how many of what was read, and of how many."""
    verb = "is" if count == 1 else "are"
    return f"{count:,} of {read:,} {'sampled ' if read < total else ''}items {verb}"


def _none_and_error_findings(scan: _Scan, n: int, total: int) -> list[Finding]:
    out = []
    more = f" (the dataset has {total:,}; more may be)" if n < total else ""
    if scan.nones:
        out.append(Finding(
            "input-none", "error",
            f"{_of(len(scan.nones), n, total)} None{more}: indices {fmt_indices(scan.nones)}",
            where=fmt_indices(scan.nones), evidence={"indices": scan.nones[:256]},
            hint="__getitem__ or a transform has a path that returns nothing (a missing "
                 "`return`, a failed file read swallowed by try/except); the default collate "
                 "will crash on these",
        ))
    if scan.errors:
        bad = sorted(scan.errors)
        out.append(Finding(
            "dataset-error", "error",
            f"{len(bad):,} of {n:,} {'sampled ' if more else ''}items raised or are not "
            f"arrays{more}; first, dataset[{bad[0]}]: "
            f"{scan.errors[bad[0]][:200]}",
            where=fmt_indices(bad), evidence={"indices": bad[:256]},
            hint="fix __getitem__ for these indices (corrupt files, out-of-range labels)",
        ))
    return out


def _shape_findings(scan: _Scan) -> list[Finding]:
    if not scan.signatures:
        return []
    counts = Counter(scan.signatures.values())
    common, _ = counts.most_common(1)[0]
    odd = sorted(i for i, s in scan.signatures.items() if s != common)
    if not odd:
        return []
    others = sorted({_signature_text(s) for s in counts if s != common})
    return [Finding(
        "shape-inconsistent", "warning",
        f"{len(odd)} of {len(scan.signatures)} items differ from the usual shape/dtype "
        f"{_signature_text(common)}: {', '.join(others[:5])}; indices {fmt_indices(odd)}",
        where=fmt_indices(odd), evidence={"indices": odd[:256], "usual": _signature_text(common)},
        hint="a transform that is skipped for some items (e.g. Resize only on a branch), mixed "
             "grey/RGB files (convert('RGB')), or float64 from numpy beside float32 tensors",
    )]


def _signature_text(signature: tuple) -> str:
    """``(8, 8) float32``; the inputs of a siamese/triplet item joined by ``+``."""
    return " + ".join(f"{shape} {dtype}" for shape, dtype in signature)


def _content_findings(scan: _Scan) -> list[Finding]:
    """Image checks (NaN, blank, scale, layout) on the items of the usual shape, input by
    input for items of parallel inputs."""
    if not scan.signatures:
        return []
    common = Counter(scan.signatures.values()).most_common(1)[0][0]
    keep = [i for i, s in scan.signatures.items() if s == common]
    scan.xs = {i: scan.xs[i] for i in keep}  # the odd ones are let go before the copies
    if len(common) == 1:
        return _member_findings(_stack(scan, keep, 0), keep, scan.was_tensor)
    return of_members([_member_findings(_stack(scan, keep, k), keep, scan.was_tensor)
                       for k in range(len(common))])


def _member_findings(stacked: np.ndarray, keep: list[int], was_tensor: bool) -> list[Finding]:
    if stacked.ndim <= 2 or stacked.dtype.kind not in "biuf":
        return _table_nonfinite(stacked.reshape(len(keep), -1), keep)
    try:
        canon = make_batch(stacked, layout="auto", items=len(keep))
    except VizdebugError:
        canon = None
    if canon is None or canon.images is None:
        return _table_nonfinite(stacked.reshape(len(keep), -1), keep)
    canon = Batch(kind="image", items=canon.items, images=canon.images, layout=canon.layout,
                  was_tensor=was_tensor, indices=keep)
    scaling = infer_scaling(canon.images)
    return image_findings(canon, image_flags_for(canon, scaling), scaling)


def _stack(scan: _Scan, keep: list[int], member: int) -> np.ndarray:
    """Input ``member`` of the items of one shape in one array, each item let go as it is
    copied (a sample of 1000 224 px images is 600 MB: it must not be held twice)."""
    first = scan.xs[keep[0]][member]
    out = np.empty((len(keep), *first.shape), dtype=first.dtype)
    for k, i in enumerate(keep):
        out[k], scan.xs[i][member] = scan.xs[i][member], None
    return out


def _table_nonfinite(values: np.ndarray, keep: list[int]) -> list[Finding]:
    if values.dtype.kind != "f":
        return []
    bad = [keep[k] for k in np.flatnonzero(~np.isfinite(values.reshape(len(keep), -1)).all(1))]
    if not bad:
        return []
    return [Finding("input-nonfinite", "error",
                    f"{len(bad)} of {len(keep)} items hold NaN/Inf: indices {fmt_indices(bad)}",
                    where=fmt_indices(bad), evidence={"indices": bad[:256]},
                    hint="impute or drop missing values, or fix the transform that divides by 0")]


def check_dataset(dataset: Any, *, sample: int | None = 1000, seed: int = 0,
                  progress: bool | None = None) -> Findings:
    """Scan up to ``sample`` items of a dataset (``None``: every item), naming the indices
    of every problem. A scan that takes more than 2 s shows its progress (``progress=False``
    or ``VIZDEBUG_PROGRESS=0`` turns that off); Ctrl-C stops it.

    Examples
    --------
    >>> import numpy as np
    >>> data = [(np.random.rand(1, 8, 8), 0), (None, 1)]
    >>> check_dataset(data).codes
    ['input-none']
    """
    return scan_dataset(dataset, sample=sample, seed=seed, progress=progress)
