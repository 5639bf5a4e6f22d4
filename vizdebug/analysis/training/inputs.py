"""What the model makes of its inputs: unnormalised data judged where the model is known.

``check_batch`` sees only the data: inputs in 0..255 or columns in their own units are a
fact about the batch, not yet a fault (a ``forward`` may divide by 255 itself, a norm layer
after the first layer absorbs any scale). The fault is the relation: the loader's batches
are off unit scale *and* the first layer with weights turns them into outputs far off unit
scale at the first sampled step (before training moved anything) *and* no norm layer reads
its output. A default-initialised ``Linear``/``Conv`` maps unit-scale inputs to outputs of
standard deviation below about 1, so an output standard deviation of ``FIRST_LAYER_STD``
means inputs several times off that scale.
"""

from __future__ import annotations

import numpy as np

from ...findings import Finding
from ...findings import fmt_number as _f
from ...records import ACTIVATION_FIELDS, BATCH_FIELDS, TrainingRecords
from .profile import first_weight_layer, profile_of

INPUT_ABS = 5.0        # the loader's batches reach |x| of this (as check_batch's threshold)
FIRST_LAYER_STD = 5.0  # the first weight layer's outputs at the first sample: std this high


def rule_input_scale(rec: TrainingRecords) -> list[Finding]:
    """``input-not-normalized`` when off-scale inputs reach a first layer that nothing
    normalises (see the module docstring)."""
    scale = _loader_scale(rec)
    index = first_weight_layer(rec)
    if scale is None or index is None or profile_of(rec).first_layer_normalised:
        return []
    std = float(rec.activations[0, index, ACTIVATION_FIELDS.index("std")])
    if scale < INPUT_ABS or not std > FIRST_LAYER_STD:
        return []
    path = rec.module_paths[index]
    return [Finding(
        "input-not-normalized", "warning",
        f"the inputs reach the first layer {path!r} unnormalised: the loader's batches reach "
        f"|x| = {_f(scale)}, and its outputs had a standard deviation of {_f(std)} at the "
        "first sampled step (about 1 or less for unit-scale inputs); no norm layer follows it",
        where=path, evidence={"input_abs": scale, "first_layer_std": std},
        hint="scale the inputs: divide by the data's maximum (e.g. 255) or standardise with the "
             "training mean/std (transforms.Normalize, StandardScaler fitted on the training "
             "split); a Normalize dropped from the pipeline does this",
    )]


def _loader_scale(rec: TrainingRecords) -> float | None:
    """The median over sampled batches of their largest |x|, for float inputs only (token
    ids and class indices are not scales)."""
    stats = np.asarray(rec.loader.batch_stats, dtype=float)
    if not any("float" in str(d) for d in rec.loader.dtypes) or len(stats) == 0:
        return None
    lo, hi = stats[:, BATCH_FIELDS.index("min")], stats[:, BATCH_FIELDS.index("max")]
    peak = np.maximum(np.abs(lo), np.abs(hi))
    peak = peak[np.isfinite(peak)]
    return float(np.median(peak)) if peak.size else None


ROW_MEAN = 0.01   # every row's mean within this of 0 ...
ROW_STD = 0.02    # ... and its standard deviation within this of 1: rows standardised
COLUMN_SPREAD = 0.25  # while no feature varies across the batch by this share of the whole


def rule_rows_standardised(rec: TrainingRecords) -> list[Finding]:
    """``input-not-normalized`` when the z-score ran along the features: every row of the
    (N, F) input has mean 0 and std 1 across its features, and every feature is nearly
    constant across the batch (its values differ from the others' by their level only)."""
    reads = np.asarray(rec.program.input_rows if rec.program else [], dtype=float)
    if reads.ndim != 2 or len(reads) == 0:
        return []
    mean, std, spread = np.median(reads, axis=0)
    if not (mean < ROW_MEAN and std < ROW_STD and spread < COLUMN_SPREAD):
        return []
    return [Finding(
        "input-not-normalized", "warning",
        f"each input row was standardised across its features (row means within "
        f"{_f(mean)} of 0, standard deviations within {_f(std)} of 1), and no feature varies "
        f"across the batch by more than {spread:.0%} of the batch's whole spread: the "
        "z-score ran along the features, so each feature is left nearly constant and what "
        "told the samples apart (each feature's own level and variation) is gone",
        evidence={"row_mean": float(mean), "row_std_to_1": float(std),
                  "column_spread": float(spread)},
        hint="standardise each feature over the samples: (x - x.mean(0)) / x.std(0), "
             "scipy.stats.zscore(x, axis=0), or StandardScaler fitted on the training split; "
             "not over each row (axis=1)",
    )]
