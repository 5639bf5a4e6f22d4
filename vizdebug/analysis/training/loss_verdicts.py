"""Findings from what the loss checks observed on a sampled step.

:class:`~vizdebug.collect.checks.losses.LossWatch` records observations only: which loss
function, a summary of its input and target (shapes, ranges, the operation that made the
input), the function whose output was squashed twice, the shapes of the tensors a loss
depends on that nobody trains, a softmax over the batch axis whose output reaches the loss. Each kind of observation is named by ``detail["check"]``;
this module words the finding (message, severity, hint), so that a stored run's events
(JSON: tuples come back as lists, ``nan`` as a float) give the same findings as a live one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...findings import Finding
from .loss_checks import loss_problems, normalised_over_batch

__all__ = ["CUT_FROM_MODEL", "LOSS_CALL", "NORMALISED_AXIS", "NO_GRAPH", "SQUASHED_TWICE",
           "UNTRAINED_LEAVES", "loss_event_finding"]

# the observations LossWatch records (``detail["check"]``)
LOSS_CALL = "loss-call"                # detail["seen"]: the summary of one loss call
SQUASHED_TWICE = "squashed-twice"      # detail["source"]: softmax or sigmoid
NO_GRAPH = "loss-without-graph"        # backward() on a fresh leaf
UNTRAINED_LEAVES = "untrained-leaves"  # detail["count"], detail["shapes"]
# backward() on a graph whose leaves are all new tensors: none of the model's parameters
CUT_FROM_MODEL = "loss-cut-from-model"  # detail["count"], detail["shapes"]
# detail["function"] (softmax/log_softmax), "dim", "shape", "batch", "consumer"
NORMALISED_AXIS = "normalised-over-batch"
# detail["pad"], "label", "ignore_index", "share", "rows", "shape": targets at the input's padding
PADDING_COUNTED = "padding-counted"

Verdict = tuple[str, str, str]  # severity, message, hint


def loss_event_finding(ev: dict[str, Any]) -> Finding | None:
    """The finding of one loss-check event (a dict: ``vars(AnomalyEvent)`` or a stored
    event), or None when it is not one.

    Examples
    --------
    >>> from vizdebug.records import AnomalyEvent
    >>> ev = AnomalyEvent("loss-output-mismatch", 3, "loss (nll_loss)", "nll_loss",
    ...                   "log_softmax got softmax's output",
    ...                   {"check": "squashed-twice", "function": "log_softmax",
    ...                    "source": "softmax"})
    >>> loss_event_finding(ev).severity
    'warning'
    """
    detail = ev.detail or {}
    word = _VERDICTS.get(detail.get("check"))
    verdict = word(ev.kind, detail) if word is not None else None
    if verdict is None:
        return None
    severity, message, hint = verdict
    return Finding(ev.kind, severity, message, where=ev.module_path,
                   evidence={"step": ev.step, "function": detail.get("function")},
                   hint=hint)


def _loss_call(kind: str, detail: dict[str, Any]) -> Verdict | None:
    seen = dict(detail.get("seen") or {})
    for key in ("x_shape", "t_shape"):  # (lists once stored as JSON)
        seen[key] = tuple(seen.get(key) or ())
    try:
        problems = loss_problems(seen)
    except (KeyError, TypeError, ValueError):
        return None  # a summary this version cannot read
    return next(((sev, msg, hint) for code, sev, msg, hint in problems if code == kind), None)


def _squashed_twice(kind: str, detail: dict[str, Any]) -> Verdict:
    name, source = detail.get("function"), detail.get("source")
    return ("warning",
            f"{name} was applied to the output of {source}: the probabilities are squashed "
            f"twice (log_softmax(softmax(x)) is not log-probabilities of the model's scores)",
            "drop the extra softmax/sigmoid: pass raw scores to log_softmax or to the loss, "
            "which applies its own")


def _no_graph(kind: str, detail: dict[str, Any]) -> Verdict:
    return ("error",
            "backward() was called on a tensor without a graph (a new leaf): no parameter of "
            "the model gets a gradient from it",
            "the loss was rebuilt from a number (torch.tensor(loss.item(), "
            "requires_grad=True), .numpy(), .detach()): compute it with torch operations on "
            "the model's output")


def _cut_from_model(kind: str, detail: dict[str, Any]) -> Verdict:
    shapes = ", ".join(str(tuple(s)) for s in detail.get("shapes", []))
    return ("error",
            f"backward() was called on a loss whose graph reaches none of the model's "
            f"parameters: its only leaves are {detail.get('count')} new tensors that require "
            f"gradients (shapes {shapes}), so no parameter of the model gets a gradient",
            "the loss was rebuilt from values (torch.tensor([...], requires_grad=True) over "
            "per-term losses, .item(), .numpy()): combine the terms with torch operations "
            "(torch.stack(losses).sum(), sum(losses)) so the graph reaches the model")


def _untrained_leaves(kind: str, detail: dict[str, Any]) -> Verdict:
    shapes = ", ".join(str(tuple(s)) for s in detail.get("shapes", []))
    return ("warning",
            f"{detail.get('count')} tensors that require gradients feed the loss but are "
            f"neither parameters of the watched model nor held by its optimizer (shapes "
            f"{shapes})",
            "they get gradients but are never updated: keep sub-modules in nn.ModuleList/"
            "nn.ModuleDict (not a Python list or dict), wrap trainable tensors in "
            "nn.Parameter, and build the optimizer after every module exists")


def _normalised_axis(kind: str, detail: dict[str, Any]) -> Verdict | None:
    shape, dim, batch = tuple(detail.get("shape") or ()), detail.get("dim"), detail.get("batch")
    if not isinstance(dim, int) or not normalised_over_batch(shape, dim, batch):
        return None
    others = ", ".join(f"axis {i} ({n})" for i, n in enumerate(shape) if i != dim and n > 1)
    name = detail.get("function")
    return ("warning",
            f"{name} normalised axis {dim} of a {shape} tensor, whose {batch} entries are the "
            f"batch the model received, and its output reaches the loss (through "
            f"{detail.get('consumer')}): each sample's probabilities are shared with the rest "
            f"of the batch and do not sum to 1 over {others}",
            f"normalise over the class or mixture axis: {name}(x, dim=-1) (nn.Softmax(dim=1) "
            f"for an (N, C) output), not over the batch; dim=0 is right only for one sample "
            f"without a batch axis")


def _padding_counted(kind: str, detail: dict[str, Any]) -> Verdict:
    name, label, pad = detail.get("function"), detail.get("label"), detail.get("pad")
    return ("warning",
            f"{name} counts the padding: {detail.get('rows', 0):.0%} of the rows of the "
            f"model's token input end in runs of token {pad}, and the targets of shape "
            f"{tuple(detail.get('shape') or ())} end in runs of label {label} at the same "
            f"rows and lengths; ignore_index is {detail.get('ignore_index')}, so "
            f"{detail.get('share', 0):.0%} of the positions averaged into the loss hold no "
            f"token: the model learns to predict padding and the logged loss is mostly its",
            f"leave the padding out of the loss: {name}(..., ignore_index={label}) "
            f"(nn.CrossEntropyLoss(ignore_index={label})), or set the padded targets to "
            f"-100")


_VERDICTS: dict[str, Callable[[str, dict[str, Any]], Verdict | None]] = {
    LOSS_CALL: _loss_call, SQUASHED_TWICE: _squashed_twice, NO_GRAPH: _no_graph,
    UNTRAINED_LEAVES: _untrained_leaves, CUT_FROM_MODEL: _cut_from_model, NORMALISED_AXIS: _normalised_axis,
    PADDING_COUNTED: _padding_counted,
}
