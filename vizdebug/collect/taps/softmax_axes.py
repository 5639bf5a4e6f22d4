"""Softmaxes taken inside the model's forward, and the axis each normalised: read from the
autograd graph of a module's output at the first few training forwards (the hooks of
:class:`~.axes.AxisWatch`). A softmax over the axis that holds the batch, in attention
pooling or a gate, mixes the samples of a batch: each one's weights are shared with the
others. Only the ones whose shape and axis could be that are kept; the analysis compares
them with the loader's batch size (:mod:`vizdebug.analysis.training.axes`).

A softmax that *is* the model's output (behind reshapes only) reaches the loss and is the
loss check's to judge (``collect/checks/losses.py``); it is not reported here."""

from __future__ import annotations

from typing import Any

from ...analysis.training.loss_checks import normalised_over_batch
from ...records.program import AxisFacts
from ..checks.loss_rules import NORMALISERS, PASS_THROUGH, op_name

WALK_NODES = 96  # autograd nodes read back from one module output, at most
WALK_DEPTH = 12  # ... and how far back


def softmaxes_behind(output: Any, claimed: set[int]) -> list[tuple[Any, bool]]:
    """The softmax/log_softmax nodes within :data:`WALK_DEPTH` of ``output``'s graph that no
    earlier call claimed (each is claimed here, so the innermost module that finishes
    first owns it), with whether ``output`` is that softmax behind reshapes only."""
    root = getattr(output, "grad_fn", None)
    found: list[tuple[Any, bool]] = []
    frontier, seen = [(root, True)], set()
    for _depth in range(WALK_DEPTH):
        nxt = []
        for node, direct in frontier:
            if node is None or id(node) in seen or len(seen) >= WALK_NODES:
                continue
            seen.add(id(node))
            name = op_name(type(node).__name__)
            if name in NORMALISERS:
                if id(node) not in claimed:
                    claimed.add(id(node))
                    found.append((node, direct))
                continue  # what made its input is another softmax's business
            keep = direct and name in PASS_THROUGH
            nxt += [(n, keep) for n, _ in getattr(node, "next_functions", ())]
        frontier = nxt
    return found


def softmax_facts(path: str, output: Any, batch: int, claimed: set[int],
                  is_root: bool) -> list[AxisFacts]:
    """:class:`AxisFacts` of kind ``"softmax"`` for each new softmax behind ``output`` that
    normalised an axis of ``batch`` entries (the model input's first axis) while another
    axis holds more than one."""
    out = []
    for node, direct in softmaxes_behind(output, claimed):
        if direct and is_root:
            continue  # the model's output: the loss check's
        seen = _axis(node)
        if seen is not None and normalised_over_batch(seen[1], seen[0], batch):
            out.append(AxisFacts(path, op_name(type(node).__name__), "softmax", list(seen[1]),
                                 dim=seen[0]))
    return out


def _axis(node: Any) -> tuple[int, tuple[int, ...]] | None:
    """(axis, shape) a softmax node normalised, as autograd saved them (None if freed)."""
    dim = getattr(node, "_saved_dim", None)
    try:
        shape = tuple(node._saved_result.shape)
    except (RuntimeError, AttributeError):
        return None
    if not isinstance(dim, int) or not shape:
        return None
    dim = dim - (1 << 64) if dim >= 1 << 63 else dim  # (saved as unsigned: -1 wraps)
    return dim % len(shape), shape
