"""Does the model's output fit its loss, and do the targets fit both? Pure rules over the
summary of one loss call (:func:`vizdebug.collect.checks.loss_rules.summarize`).

Each rule is a fault people really write (ported in ``tests/corpus``): a softmax before
``CrossEntropyLoss``, probabilities or raw scores into ``NLLLoss``, ``BCELoss`` without
a sigmoid, ``BCEWithLogitsLoss`` after one, a softmax over one output unit, class ids
outside ``[0, C)``, BCE targets outside ``[0, 1]``, a sigmoid or ReLU output for targets
it cannot reach, ``(N, 1)`` against ``(N,)`` broadcast by a regression loss, and
(log-)probabilities normalised over the batch axis instead of the classes (a
``log_softmax(x, dim=0)``), whether they reach a class loss or a loss of the program's own.
"""

from __future__ import annotations

from typing import Any

CLASS_LOSSES = frozenset({"cross_entropy", "nll_loss"})
BINARY_LOSSES = frozenset({"binary_cross_entropy", "binary_cross_entropy_with_logits"})
REGRESSION_LOSSES = frozenset({"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"})
LOSS_FUNCTIONS = CLASS_LOSSES | BINARY_LOSSES | REGRESSION_LOSSES

PROB_TOL = 1e-3        # a row of probabilities sums to 1 within this
MIN_VALUES = 8         # value-based guesses need a batch of at least this many outputs
RELU_ZERO_SHARE = 0.05  # exact zeros that mark a ReLU output
# The operation that made a loss's input (``output_op`` of the summary: the autograd node
# behind the output, past reshapes and casts, or the torch function seen after forward).
UNIT_RANGE_OPS = frozenset({"sigmoid", "hardsigmoid", "softmax"})
NON_NEGATIVE_OPS = frozenset({"relu", "relu6", "hardtanh", "threshold", "clamp", "clampmin"})

Problem = tuple[str, str, str, str]  # code, severity, message, hint


def loss_problems(s: dict[str, Any]) -> list[Problem]:
    """Every problem of one loss call's summary ``s``.

    Examples
    --------
    >>> s = {"function": "cross_entropy", "x_shape": (4, 3), "t_shape": (4,), "t_int": True,
    ...      "x_min": 0.1, "x_max": 0.7, "x_zero_share": 0.0, "n_classes": 3,
    ...      "rowsum_dev": 0.0, "lse_dev": 1.2, "t_min": 0, "t_max": 2, "broadcast_numel": None}
    >>> [p[0] for p in loss_problems(s)]
    ['loss-output-mismatch']
    """
    name = s["function"]
    if "t_min" in s and not (abs(s["t_min"]) < float("inf") and abs(s["t_max"]) < float("inf")):
        return [("input-nonfinite", "error",
                 f"the targets given to {name} hold NaN or inf: the loss becomes NaN",
                 "missing target values: drop or impute those rows before training (a "
                 "NaN target makes the loss and then the weights NaN)")]
    if name in CLASS_LOSSES:
        return _class_output(s) + _class_targets(s)
    if name in BINARY_LOSSES:
        return _binary(s)
    return _regression(s)


def _is_probabilities(s: dict[str, Any]) -> bool:
    return s["x_min"] >= 0 and s["x_max"] <= 1 and s["rowsum_dev"] <= PROB_TOL


def _class_output(s: dict[str, Any]) -> list[Problem]:
    name, n = s["function"], s["n_classes"]
    if n == 1 and len(s["x_shape"]) >= 2:
        return [("loss-output-mismatch", "error",
                 f"{name} over one class (output {s['x_shape']}): the loss is always 0 and "
                 "nothing is learned",
                 "a binary task with one output unit needs BCEWithLogitsLoss (float targets "
                 "of shape (N, 1)); or give the last layer one unit per class")]
    many = _count(s["x_shape"]) >= MIN_VALUES
    over_batch = _over_batch(s) if many else None
    if over_batch is not None:
        return [over_batch]
    if name == "cross_entropy" and many and _is_probabilities(s):
        return [("loss-output-mismatch", "warning",
                 "cross_entropy was given probabilities (every row in [0, 1], summing to 1): "
                 "a softmax was applied before a loss that applies log_softmax itself",
                 "return raw logits from the model (drop the final Softmax) and keep "
                 "CrossEntropyLoss; apply softmax only for reporting probabilities")]
    if name == "cross_entropy" and many and s["x_min"] == 0 and s["x_zero_share"] >= RELU_ZERO_SHARE:
        return [("loss-output-mismatch", "warning",
                 f"cross_entropy was given non-negative scores with {s['x_zero_share']:.0%} "
                 "exact zeros: a ReLU on the output layer clips the logits at 0",
                 "remove the activation after the last Linear layer: logits must be free to "
                 "go negative")]
    if name == "cross_entropy" and many and s["x_max"] <= 0 and s["lse_dev"] <= PROB_TOL:
        return [("loss-output-mismatch", "info",
                 "cross_entropy was given log-probabilities (a log_softmax already applied): "
                 "harmless in value, since log_softmax of log-probabilities changes nothing",
                 "the model's final LogSoftmax is redundant before CrossEntropyLoss; keep one "
                 "of the two (LogSoftmax + NLLLoss, or raw scores + CrossEntropyLoss)")]
    if name == "nll_loss" and many and _is_probabilities(s):
        return [("loss-output-mismatch", "warning",
                 "nll_loss was given probabilities (rows in [0, 1] summing to 1), not "
                 "log-probabilities: the loss goes negative and training stalls",
                 "use log_softmax instead of softmax before NLLLoss, or pass raw logits to "
                 "CrossEntropyLoss")]
    if name == "nll_loss" and many and s["x_max"] > 1e-6:
        return [("loss-output-mismatch", "warning",
                 f"nll_loss was given raw scores (max {s['x_max']:.3g} > 0): NLLLoss expects "
                 "log-probabilities",
                 "apply log_softmax(dim=1) before NLLLoss, or use CrossEntropyLoss on the "
                 "raw scores")]
    return []


def _over_batch(s: dict[str, Any]) -> Problem | None:
    """Rows normalised over the batch axis (0) instead of the classes (1): every column's
    logsumexp is 0 (or its sum 1) while the rows' are not. A square input is skipped: in a
    contrastive (N, N) similarity both axes are the batch, and either normalisation is right."""
    shape, name = s["x_shape"], s["function"]
    if len(shape) < 2 or shape[0] < 2 or shape[0] == shape[1] or "lse0_dev" not in s:
        return None
    if s["lse0_dev"] <= PROB_TOL < s["lse_dev"]:
        kind, seen = "log-probabilities", (f"logsumexp over the batch is 0 (within "
                                           f"{s['lse0_dev']:.1g}), over the classes off by "
                                           f"up to {s['lse_dev']:.3g}")
    elif (s["x_min"] >= 0 and s["x_max"] <= 1
          and s["colsum_dev"] <= PROB_TOL < s["rowsum_dev"]):
        kind, seen = "probabilities", (f"the batch sums to 1 (within {s['colsum_dev']:.1g}), "
                                       f"each sample's {shape[1]} classes do not (off by up to "
                                       f"{s['rowsum_dev']:.3g})")
    else:
        return None
    return ("loss-output-mismatch", "warning",
            f"{name} was given {kind} normalised over the batch axis, not the classes (input "
            f"{shape}: {shape[0]} samples, {shape[1]} classes): {seen}. Each sample's score "
            "depends on the rest of its batch",
            "normalise over the class axis, dim=1 or dim=-1, not dim=0 (nn.LogSoftmax(dim=1) "
            "before NLLLoss); CrossEntropyLoss takes the raw scores and normalises them itself")


def batch_of(shape: tuple[int, ...] | None, loader_batch: int | None) -> int | None:
    """The batch the model received, from its first input's shape: the first axis, or the
    second where it holds the loader's batch and the first does not (a ``(seq, batch, ...)``
    input, as recurrent models take it).

    Examples
    --------
    >>> batch_of((64, 1, 8, 8), 64), batch_of((16, 8, 5), 8), batch_of((3, 4), 64)
    (64, 8, 3)
    """
    if not shape:
        return None
    if loader_batch and shape[0] != loader_batch and len(shape) >= 2 and shape[1] == loader_batch:
        return loader_batch
    return int(shape[0])


def normalised_over_batch(shape: tuple[int, ...], dim: int, batch: int | None) -> bool:
    """Whether a softmax over axis ``dim`` of a tensor of ``shape`` normalises over the batch:
    that axis is the only one as long as the batch the model received, and another axis (the
    classes, the mixture) has more than one entry. Two axes of the batch's size (a contrastive
    (N, N) similarity, attention whose sequence is as long as the batch) cannot say which one
    is the batch, so they say nothing.

    Examples
    --------
    >>> normalised_over_batch((32, 5), 0, 32), normalised_over_batch((32, 5), 1, 32)
    (True, False)
    >>> normalised_over_batch((32, 32), 0, 32), normalised_over_batch((32,), 0, 32)
    (False, False)
    """
    if batch is None or len(shape) < 2 or not 0 <= dim < len(shape) or shape[dim] != batch:
        return False
    others = [n for i, n in enumerate(shape) if i != dim]
    return batch not in others and max(others) > 1


def _class_targets(s: dict[str, Any]) -> list[Problem]:
    if "t_min" not in s:
        return []
    n, lo, hi = s["n_classes"], s["t_min"], s["t_max"]
    if s["t_int"] and (lo < 0 or hi >= n):
        return [("labels-out-of-range", "error",
                 f"{s['function']} got class ids from {lo:.0f} to {hi:.0f} for {n} classes "
                 f"(valid: 0 to {n - 1})",
                 "labels must be 0..C-1: subtract 1 from 1-based labels, remap the label "
                 "values (e.g. with a dict or LabelEncoder), or give the last layer one "
                 "unit per class")]
    if not s["t_int"] and (lo < 0 or hi > 1):
        return [("labels-out-of-range", "error",
                 f"{s['function']} got float targets from {lo:.3g} to {hi:.3g}: class "
                 "probabilities must lie in [0, 1]",
                 "pass class ids as a long tensor (target.long()), or proper probability "
                 "rows for soft labels")]
    return []


def _binary(s: dict[str, Any]) -> list[Problem]:
    found: list[Problem] = []
    name, lo, hi = s["function"], s["x_min"], s["x_max"]
    many = _count(s["x_shape"]) >= MIN_VALUES
    if lo == hi == 1.0 and many:
        found.append(("loss-output-mismatch", "error",
                      f"{name} was given an output that is 1 for every sample: a softmax over "
                      "one output unit is always 1",
                      "use sigmoid (or BCEWithLogitsLoss on the raw output) for one unit; "
                      "softmax needs one unit per class"))
    elif name == "binary_cross_entropy" and (lo < 0 or hi > 1):
        found.append(("loss-output-mismatch", "error",
                      f"binary_cross_entropy was given values from {lo:.3g} to {hi:.3g}: "
                      "BCELoss needs probabilities in [0, 1]",
                      "apply sigmoid first, or better use BCEWithLogitsLoss on the raw output"))
    elif name == "binary_cross_entropy_with_logits" and s.get("output_op") in UNIT_RANGE_OPS:
        # (the op, not the range: an untrained head's logits may all lie in [0, 1])
        found.append(("loss-output-mismatch", "warning",
                      f"binary_cross_entropy_with_logits was given the output of "
                      f"{s['output_op']} (values {lo:.3g} to {hi:.3g}): a sigmoid was applied "
                      "before a loss that applies it itself",
                      "drop the final sigmoid from the model (keep it for predictions only)"))
    if "t_min" in s and (s["t_min"] < 0 or s["t_max"] > 1):
        found.append(("labels-out-of-range", "error",
                      f"{name} got targets from {s['t_min']:.3g} to {s['t_max']:.3g}: binary "
                      "targets must lie in [0, 1]",
                      "map the labels to 0/1 (e.g. (y > 0).float() or y / y.max() for 0/255 "
                      "masks); for more than two classes use CrossEntropyLoss"))
    return found + _broadcast(s)


def _regression(s: dict[str, Any]) -> list[Problem]:
    found = _broadcast(s)
    if "t_min" not in s or _count(s["x_shape"]) < MIN_VALUES:
        return found
    # Only the operation that made the output says it is bounded: an untrained Linear
    # head's near-constant output also lies in [0, 1] at the first step (a plain
    # regression was accused from its range alone).
    op, lo, hi, t_lo, t_hi = s.get("output_op"), s["x_min"], s["x_max"], s["t_min"], s["t_max"]
    if op in UNIT_RANGE_OPS and lo >= 0 and hi <= 1 and (t_lo < -0.01 or t_hi > 1.01):
        found.append(("loss-output-mismatch", "warning",
                      f"{s['function']}: the output comes from {op}, so it stays in [0, 1], but "
                      f"the targets span {t_lo:.3g} to {t_hi:.3g}, which it cannot reach",
                      "drop the final sigmoid for regression (or scale the targets to [0, 1])"))
    elif op in NON_NEGATIVE_OPS and lo == 0 and s["x_zero_share"] >= RELU_ZERO_SHARE and t_lo < 0:
        found.append(("loss-output-mismatch", "warning",
                      f"{s['function']}: the output comes from {op}, so it is never negative "
                      f"({s['x_zero_share']:.0%} exact zeros), but targets go down to {t_lo:.3g}",
                      "remove the activation after the last layer"))
    return found


def _broadcast(s: dict[str, Any]) -> list[Problem]:
    total = s.get("broadcast_numel")
    x, t = s["x_shape"], s["t_shape"]
    if total is None or total <= max(_count(x), _count(t)):
        return []
    return [("target-shape-broadcast", "error",
             f"{s['function']} compares an output of shape {x} with targets of shape {t}: "
             f"they broadcast to {total} pairs, every output against every target",
             "make the shapes equal: output.squeeze(1) or target.view(-1, 1) (torch only "
             "warns about this)")]


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
