"""Checks on what the model receives: batches and datasets, as Findings.

``check_batch`` looks at one batch; ``check_dataset`` samples a dataset item by item so
that it can name the offending indices (None, NaN, odd shapes, labels out of balance).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ...data.arrays import to_numpy, unnest
from ...data.batch import Batch, make_batch
from ...data.parts import input_members, unpack
from ...data.targets import LabelSet
from ...errors import VizdebugError, describe
from ...findings import Finding, Findings, fmt_indices
from .images import (
    NOT_NORMALIZED_ABS,
    Scaling,
    abs_p99,
    finite_summary,
    image_flags,
    infer_scaling,
    pooled,
    to_display,
)
from .relations import batch_relations
from .thumbs import thumbnails

FLAG_SIDE = 128  # flags are judged on images pooled to about this size (fast, same verdict)

IMBALANCE_WARN = 10.0  # largest / smallest class count
IMBALANCE_INFO = 3.0
ONE_CLASS_MIN = 20
TABLE_SCALE_RATIO = 1e3   # continuous columns this many times apart in scale
TABLE_SCALE_MIN = 100.0   # ... with the largest at least this large  # sampled labels that must all agree before a one-class dataset is named
SAME_LABEL_MIN_BATCH = 16


def check_batch(batch: Any, *, mean=None, std=None, layout: str = "auto") -> Findings:
    """Check one batch as the model receives it: layout, scale, NaN, None, blank images.

    Examples
    --------
    >>> import numpy as np
    >>> check_batch(np.zeros((8, 1, 8, 8))).codes
    ['blank-images']
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # huge values: inf stats
        return _check_batch(batch, mean, std, layout)


def _check_batch(batch: Any, mean, std, layout: str) -> Findings:
    x, y = unpack(batch)
    members = input_members(x)
    if len(members) == 1:
        return Findings([*_input_findings(x, y, mean, std, layout), *target_findings(y),
                         *batch_relations(x, y, layout)])
    # siamese/triplet inputs: each member is a batch the model receives (labels once)
    per_member = [_input_findings(m, y if k == 0 else None, mean, std, layout)
                  for k, m in enumerate(members)]
    return Findings([*of_members(per_member), *target_findings(y)])


def _input_findings(x: Any, y: Any, mean, std, layout: str) -> list[Finding]:
    canon = make_batch(x, y, layout=layout)
    if canon.kind == "table":
        return table_findings(canon)
    scaling = infer_scaling(canon.images, mean, std) if canon.images is not None else None
    return image_findings(canon, image_flags_for(canon, scaling, mean, std), scaling)


def of_members(per_member: list[list[Finding]]) -> list[Finding]:
    """The findings of each of several parallel inputs: one finding per code, the first
    input's, naming the others that have it alike (``label-imbalance`` is about the
    targets, not an input, and stays as it is)."""
    n, found, inputs = len(per_member), {}, {}
    for k, findings in enumerate(per_member):
        for f in findings:
            found.setdefault(f.code, f)
            inputs.setdefault(f.code, []).append(k)
    out = []
    for code, f in found.items():
        if code == "label-imbalance":
            out.append(f)
            continue
        ks = inputs[code]
        also = ", ".join(str(k + 1) for k in ks[1:])
        alike = f" (input {also} alike)" if also else ""
        out.append(replace(f, message=f"input {ks[0] + 1} of {n}{alike}: {f.message}",
                           evidence={**f.evidence, "inputs": ks}))
    return out


def target_findings(y: Any) -> list[Finding]:
    """``input-nonfinite`` when numeric targets (regression values, target images) hold
    NaN/Inf: the loss becomes NaN at the first such batch."""
    y = unnest(y)  # a nested tensor's ``shape`` cannot be read: its parts are a list
    if y is None or not hasattr(y, "shape") or getattr(y, "ndim", 0) == 0:
        return []
    try:
        arr = to_numpy(y, "targets")
    except VizdebugError:
        return []
    if arr.dtype.kind != "f":
        return []
    bad = np.flatnonzero(~np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)).tolist()
    if not bad:
        return []
    return [Finding(
        "input-nonfinite", "error",
        f"{len(bad)} of {arr.shape[0]} targets hold NaN/Inf (targets {describe(y)})",
        where=fmt_indices(bad), evidence={"indices": bad[:256], "part": "target"},
        hint="missing target values: drop or impute those rows before training (a NaN target "
             "makes the loss NaN)")]


def image_flags_for(canon: Batch, scaling: Scaling | None, mean=None, std=None,
                    side: int = FLAG_SIDE) -> list[list[str]]:
    """Flags for every item of an image batch (``["none"]`` for a missing sample)."""
    return displays_and_flags(canon, scaling, mean, std, side)[1]


def displays_and_flags(canon: Batch, scaling: Scaling | None, mean=None, std=None,
                       side: int = FLAG_SIDE) -> tuple[list, list[list[str]]]:
    """Each item on the display scale (pooled to about ``side`` px) and its flags."""
    displays, flags = [], []
    for item in canon.items:
        if item is None:
            displays.append(None)
            flags.append(["none"])
            continue
        sc = scaling or infer_scaling(item[None], mean, std)
        shown = to_display(pooled(item, side), sc)
        displays.append((shown, sc))
        flags.append(image_flags(item, shown, sc))
    return displays, flags


def image_findings(canon: Batch, flags: list[list[str]], scaling: Scaling | None) -> list[Finding]:
    """Findings for an image batch whose per-item flags are already known."""
    n = len(canon.items)
    found: list[Finding] = []
    for flag in ("none", "non-finite", "blank", "saturated"):
        found += _flag_finding(canon, flags, flag, n, scaling)
    found += _layout_findings(canon)
    if canon.images is not None:
        found += _scale_findings(canon)
    found += _same_label_finding(canon.labels)
    if canon.notes:
        found.append(Finding("shape-inconsistent", "info", "; ".join(canon.notes),
                             hint="a model needs one input shape: resize or pad in the transform"))
    return found


_FLAG_TEXT = {
    "none": ("input-none", "error", "is None", "are None",
             "a Dataset.__getitem__ or transform returned None (a branch without `return`); "
             "vd.check_dataset(dataset) scans for every such index"),
    "non-finite": ("input-nonfinite", "error", "contains NaN/Inf", "contain NaN/Inf",
                   "a division by a zero std in normalisation, log of 0, or corrupt files; "
                   "find the samples with vd.check_dataset and fix the transform"),
    "blank": ("blank-images", "warning", "is blank (near-constant)", "are blank (near-constant)",
              "an augmentation left nothing to see: a random crop or erasing that cut the "
              "object out, or a brightness/contrast jitter that is too strong; narrow its range"),
    "saturated": ("saturated-images", "warning", "is saturated (over half the pixels at the "
                  "top of the range)", "are saturated (over half the pixels at the top of the "
                  "range)", "values were clipped: a brightness jitter too strong, or data "
                  "already in 0-255 scaled again; check the transform order"),
}


def _flag_finding(canon: Batch, flags: list[list[str]], flag: str, n: int,
                  scaling: Scaling | None) -> list[Finding]:
    positions = [k for k, f in enumerate(flags) if flag in f]
    if not positions:
        return []
    hit = [canon.index_of(k) for k in positions]
    code, severity, one, many, hint = _FLAG_TEXT[flag]
    verb = one if len(hit) == 1 else many
    msg = f"{len(hit)} of {n} images {verb}"
    evidence = {"indices": hit[:256], "count": len(hit), "of": n}
    pictures = thumbnails(canon.items, positions, scaling)
    if pictures:
        evidence["thumbnails"] = pictures
    return [Finding(code, severity, msg, where=fmt_indices(hit), evidence=evidence, hint=hint)]


def _layout_findings(canon: Batch) -> list[Finding]:
    if canon.layout != "NHWC":
        return []
    shape = tuple(canon.images.shape[i] for i in (0, 2, 3, 1))
    who = "a torch tensor" if canon.was_tensor else "an array"
    # A fact about the data, not yet a fault: a model may permute its input itself. What
    # the first convolution receives is checked where the model is known (vd.watch).
    return [Finding(
        "layout-channels-last", "info",
        f"{who} of shape {shape} has its {shape[3]} channels on the last axis (NHWC); "
        f"PyTorch convolutions read axis 1 ({shape[1]}) as channels",
        evidence={"shape": list(shape)},
        hint="fine if the model permutes it itself (x.permute(0, 3, 1, 2)); otherwise convert "
             "before the model (ToTensor() does it). vd.watch(model) checks what the first "
             "convolution receives",
    )]


def _scale_findings(canon: Batch) -> list[Finding]:
    x = canon.images
    # Facts about the data: whether they hurt depends on the model (a forward that divides
    # by 255, a norm layer after the first one); vd.watch judges what the first layer gets.
    if x.dtype.kind in "biu" and x.dtype != np.bool_:
        return [Finding(
            "input-not-normalized", "info",
            f"inputs are integers (dtype {x.dtype}, range {x.min()}..{x.max()})",
            evidence={"dtype": str(x.dtype)},
            hint="convert to float and scale: x.float() / 255, then Normalize(mean, std)",
        )]
    if x.dtype.kind != "f":
        return []
    p99 = abs_p99(x)
    if p99 <= NOT_NORMALIZED_ABS:
        return []
    lo, hi, mean, std = finite_summary(x)
    return [Finding(
        "input-not-normalized", "info",
        f"inputs are not normalised: values {lo:.4g}..{hi:.4g}, mean "
        f"{mean:.4g}, std {std:.4g} (99% of |x| below {p99:.4g}; networks "
        "train best with inputs around 0 and unit scale)",
        evidence={"abs_p99": p99, "min": lo, "max": hi},
        hint="divide by the data's maximum (e.g. 255) or standardise with the training mean/std "
             "(transforms.Normalize); fine if the model normalises them itself (a norm layer "
             "after its first layer); vd.watch(model) checks what the first layer makes of them",
    )]


def _same_label_finding(labels: list | None) -> list[Finding]:
    if not labels or len(labels) < SAME_LABEL_MIN_BATCH or isinstance(labels[0], LabelSet):
        return []  # multi-label rows may well share their set
    counts = Counter(map(label_key, labels))
    label, top = counts.most_common(1)[0]
    if top != len(labels):
        return []
    return [Finding(
        "label-imbalance", "warning",
        f"all {len(labels)} labels in this batch are {label!r}",
        evidence={"label": str(label), "count": top},
        hint="the loader does not shuffle data sorted by class: pass shuffle=True to the "
             "training DataLoader (or a sampler that mixes classes)",
    )]


def _is_regression(labels: list[Any]) -> bool:
    floats = [v for v in labels if isinstance(v, float)]
    # a non-finite value is no class either (and round() of an infinity raises)
    return any(not math.isfinite(v) or v != round(v) for v in floats)


def _one_class_finding(label: Any, n: int) -> Finding:
    return Finding(
        "label-imbalance", "warning", f"every one of the {n} sampled labels is {label!r}",
        evidence={"label": str(label), "count": n, "classes": 1},
        hint="a classifier cannot learn from one class: check the step that builds the "
             "labels (an integer division or a /255 meant for the images, the wrong column, "
             "a filter that kept one class)")


def label_key(v: Any) -> Any:
    """A label as the class it counts for (``1.0`` is class ``1``, a tensor its text)."""
    if isinstance(v, float) and v.is_integer():
        return int(v)  # 0.0/1.0 targets of a binary loss are the classes 0 and 1
    return v if isinstance(v, (int, str, bool)) else str(v)


def table_findings(canon: Batch) -> list[Finding]:
    """Non-finite values per column of a tabular batch; a batch of sequences is judged
    per feature (its rows are sequences, each feature a column over all their steps).
    Linear in the cells: a table may have a million columns, and only the names a
    finding quotes are read."""
    frame = canon.table
    numeric = frame.select_dtypes("number")
    values = np.ascontiguousarray(numeric.to_numpy(dtype=np.float64, na_value=np.nan))
    columns, names = _per_feature(canon, values, numeric.columns)
    bad = np.flatnonzero((~np.isfinite(columns)).any(axis=0))
    if not bad.size:
        return [*_column_scale_finding(columns, names), *_same_label_finding(canon.labels)]
    bad_cols = [str(names[j]) for j in bad[:50].tolist()]
    rows = np.flatnonzero((~np.isfinite(values)).any(1)).tolist()
    noun = "rows" if canon.sequence is None else "sequences"
    more = f" and {bad.size - 10:,} more" if bad.size > 10 else ""
    return [Finding(
        "input-nonfinite", "error",
        f"{len(rows)} of {len(frame)} {noun} hold NaN/Inf, in columns "
        f"{', '.join(bad_cols[:10])}{more}",
        where=fmt_indices(rows), evidence={"rows": rows[:256], "columns": bad_cols},
        hint="impute or drop missing values before the model (SimpleImputer, dropna)",
    ), *_same_label_finding(canon.labels)]


def _per_feature(canon: Batch, values: np.ndarray, names: Sequence[Any]
                 ) -> tuple[np.ndarray, Sequence[Any]]:
    """The columns statistics are taken over: a table's own, or for a batch of sequences
    each feature over every step of every sequence."""
    if canon.sequence is None:
        return values, names
    features = canon.sequence[1]
    return values.reshape(-1, features), [f"f{j}" for j in range(features)]


def _column_scale_finding(values: np.ndarray, names: Sequence[Any]) -> list[Finding]:
    """``input-not-normalized`` for a table whose continuous columns live on scales that
    differ by ``TABLE_SCALE_RATIO`` or more (binary and constant columns left out): the
    large columns dominate the first layer and the small ones are all but ignored."""
    if values.shape[0] < 4 or values.shape[1] < 2:
        return []
    ordered = np.sort(values, axis=0)  # (every value is finite here)
    distinct = 1 + (ordered[1:] != ordered[:-1]).sum(axis=0)
    scales = np.percentile(np.abs(values), 95, axis=0)
    kept = np.flatnonzero((distinct > 2) & (scales > 0))
    if kept.size < 2:
        return []
    big, small = kept[np.argmax(scales[kept])], kept[np.argmin(scales[kept])]
    ratio = float(scales[big] / scales[small])
    if ratio < TABLE_SCALE_RATIO or scales[big] < TABLE_SCALE_MIN:
        return []
    shown = {str(names[j]): float(scales[j]) for j in kept[:100].tolist()}
    return [Finding(
        "input-not-normalized", "warning",
        f"columns differ in scale by {ratio:.2g}x: {str(names[big])!r} reaches "
        f"{scales[big]:.3g}, {str(names[small])!r} only {scales[small]:.3g} (95th percentile "
        "of |value|)",
        where=str(names[big]), evidence={"scales": shown, "ratio": ratio},
        hint="standardise the columns (StandardScaler fitted on the training split, or "
             "MinMaxScaler) before a neural network: its first layer sees raw units")]


def label_balance(labels: list[Any]) -> list[Finding]:
    """``label-imbalance`` when the largest class outnumbers the smallest by 3x (info) or
    10x, or when every sampled label is the same. Regression targets (floats that are not
    whole numbers) have no classes and are left alone."""
    if not labels or _is_regression(labels):
        return []
    counts = Counter(map(label_key, labels))
    if len(counts) == 1 and len(labels) >= ONE_CLASS_MIN:
        return [_one_class_finding(next(iter(counts)), len(labels))]
    if len(counts) < 2 or len(counts) > 1000:
        return []
    (big, n_big), (small, n_small) = counts.most_common()[0], counts.most_common()[-1]
    ratio = n_big / n_small
    if ratio < IMBALANCE_INFO:
        return []
    severity = "warning" if ratio >= IMBALANCE_WARN else "info"
    return [Finding(
        "label-imbalance", severity,
        f"classes are imbalanced: {big!r} has {n_big} samples, {small!r} only {n_small} "
        f"({ratio:.1f}x) among {len(labels)} sampled",
        evidence={"counts": {str(k): v for k, v in counts.most_common(50)}, "ratio": ratio},
        hint="accuracy will flatter the model: report balanced accuracy / per-class recall, "
             "and consider class weights or a WeightedRandomSampler",
    )]
