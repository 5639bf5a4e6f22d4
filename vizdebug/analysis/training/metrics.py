"""A logged accuracy that the logged loss rules out: ``predictions-misaligned``.

For a classifier trained with cross-entropy (``cross_entropy``, ``nll_loss``, or binary
cross-entropy, as the loss check saw the program call them), a wrong prediction gives the
true class a probability of at most one half (another class has at least as much), so it
costs at least ln 2 in the mean cross-entropy; a right one costs at least 0. The mean loss
``L`` of a set of predictions therefore bounds their accuracy from below:
``accuracy >= 1 - L / ln 2``. A validation accuracy far below the bound its own
validation loss sets cannot come from the predictions that gave that loss: the accuracy
compared predictions with targets in another order (a shuffled validation loader whose
predictions are scored against the unshuffled labels, predictions gathered in another
order). The bound holds with label smoothing (it raises the loss); class weights may move
accuracy a little below it, hence the margin.
"""

from __future__ import annotations

import math

import numpy as np

from ...findings import Finding
from ...findings import fmt_number as _f
from ...records import TrainingRecords
from ...records.training import EVAL_PREFIXES

CROSS_ENTROPY = frozenset({"cross_entropy", "nll_loss", "binary_cross_entropy",
                           "binary_cross_entropy_with_logits"})
# the accuracy lies this far below the bound before the two are called inconsistent
MARGIN = 0.25
# ... and the bound says at least this much (a loss near ln 2 bounds nothing)
MIN_BOUND = 0.5


def rule_accuracy_against_loss(rec: TrainingRecords) -> list[Finding]:
    """``predictions-misaligned`` (warning) when the last validation accuracy logged lies
    more than :data:`MARGIN` below ``1 - val_loss / ln 2`` at the same step, and most of
    the earlier pairs whose bound says anything do too."""
    facts = rec.program
    if facts is None or not facts.loss_functions or not set(facts.loss_functions) <= CROSS_ENTROPY:
        return []
    pair = _val_pair(rec)
    if pair is None:
        return []
    loss_name, acc_name, steps, loss, acc = pair
    bound = 1 - loss / math.log(2)
    telling = bound >= MIN_BOUND
    below = telling & (acc < bound - MARGIN)
    if not below[-1] or below.sum() * 2 < telling.sum():
        return []
    last = -1
    return [Finding(
        "predictions-misaligned", "warning",
        f"{acc_name} {acc[last]:.1%} at step {int(steps[last])} is ruled out by {loss_name} "
        f"{_f(loss[last])} at the same step: with a cross-entropy loss "
        f"({', '.join(facts.loss_functions[:3])}) each wrong prediction costs at least ln 2 = "
        f"0.693, so a mean loss of {_f(loss[last])} means at least {bound[last]:.1%} of the "
        f"predictions are right ({int(below.sum())} of {len(steps)} validation points lie this "
        "far below their bound): the accuracy compared predictions with targets in another "
        "order",
        where=acc_name,
        evidence={"steps": steps.tolist()[-50:], "val_loss": loss.tolist()[-50:],
                  "accuracy": acc.tolist()[-50:], "bound": bound.tolist()[-50:],
                  "loss_functions": list(facts.loss_functions[:8])},
        hint="score the predictions against the targets of the same batches: a validation "
             "DataLoader with shuffle=True reorders the samples (skorch: "
             "iterator_valid__shuffle=False), so collect (prediction, target) pairs from the "
             "loader together, or keep shuffle=False for validation and prediction")]


def _val_pair(rec: TrainingRecords):
    """The validation loss and an accuracy logged at the same steps (accuracy as a share)."""
    val = rec.val_loss()
    names = [n for n in rec.scalars if n.startswith(EVAL_PREFIXES) and "acc" in n
             and "bal" not in n and "top" not in n]
    if val is None or not names:
        return None
    loss_name, loss_steps, loss_values = val
    acc_steps, acc_values = rec.scalars[names[0]]
    common, li, ai = np.intersect1d(loss_steps, acc_steps, return_indices=True)
    if common.size == 0:
        return None
    loss, acc = loss_values[li].astype(float), acc_values[ai].astype(float)
    keep = np.isfinite(loss) & np.isfinite(acc) & (loss >= 0)
    if not keep.any() or not keep[-1]:
        return None
    loss, acc, common = loss[keep], acc[keep], common[keep]
    if acc.max() > 1.0 + 1e-9:
        if acc.max() > 100.0 or acc.min() < 0:
            return None
        acc = acc / 100.0  # a percentage
    return loss_name, names[0], common, loss, acc
