"""Replicas that drift apart: the same tensor holding different values on different ranks.

DDP keeps its replicas identical: the parameters start from rank 0's (broadcast when the
model is wrapped) and every rank applies the same all-reduced gradients; the buffers are
broadcast from rank 0 at each forward pass. The collector fingerprints every parameter and
buffer (norm and sum) where that holds, at the same steps on every rank, so a difference
there is a real one: a BatchNorm whose running statistics DDP does not broadcast
(``broadcast_buffers=False``) learning each rank's own data, a parameter DDP does not own
(outside the wrapped module, frozen then changed by hand, in ``_ddp_params_and_buffers_to_ignore``),
a rank that skips the all-reduce (``no_sync`` left on), a model built on each rank from a
different seed and never broadcast. Two fingerprints count as different above a relative
:data:`TOLERANCE` (identical replicas give identical bits; the margin covers a sum taken
with another thread count).
"""

from __future__ import annotations

import numpy as np

from ...findings import Finding
from .data import RankData

TOLERANCE = 1e-5
MAX_NAMED = 5  # tensors named in the message


def _aligned(ranks: list[RankData]) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """The tensors every rank fingerprinted, the steps they share, and the values
    ``(ranks, steps, tensors, 2)``."""
    prints = [r.replicas for r in ranks]
    if any(p is None or not p.steps.size for p in prints):
        return None
    paths = [p for p in prints[0].paths if all(p in q.paths for q in prints[1:])]
    steps = prints[0].steps
    for p in prints[1:]:
        steps = np.intersect1d(steps, p.steps)
    if not paths or not steps.size:
        return None
    stack = []
    for p in prints:
        row = {int(s): i for i, s in enumerate(p.steps.tolist())}
        cols = [p.paths.index(name) for name in paths]
        stack.append(p.values[[row[int(s)] for s in steps]][:, cols])
    return paths, steps, np.stack(stack)


def drift_matrix(values: np.ndarray) -> np.ndarray:
    """``(ranks, steps, tensors)``: each rank's relative difference from rank 0's
    fingerprint (norm and sum, the larger; NaN where either is missing)."""
    ref = values[:1]
    scale = np.maximum(np.abs(ref[..., 0]), np.abs(ref[..., 1])) + 1e-12
    with np.errstate(all="ignore"):
        diff = np.abs(values - ref).max(axis=-1) / scale
    both = np.isfinite(values).all(axis=-1) & np.isfinite(ref).all(axis=-1)
    return np.where(both, diff, np.nan)


def replica_drift(ranks: list[RankData]) -> list[Finding]:
    """``replica-drift`` when a parameter or buffer differs between ranks at a step
    fingerprinted on all of them."""
    aligned = _aligned(ranks) if len(ranks) >= 2 else None
    if aligned is None:
        return []
    paths, steps, values = aligned
    diff = drift_matrix(values)
    apart = np.nan_to_num(diff, nan=0.0) > TOLERANCE  # (ranks, steps, tensors)
    if not apart.any():
        return []
    by_step = apart.any(axis=(0, 2))
    first = int(np.argmax(by_step))
    tensors = np.flatnonzero(apart.any(axis=(0, 1)))
    order = tensors[np.argsort([-np.nanmax(diff[:, :, t]) for t in tensors])]
    odd = [ranks[i].rank for i in np.flatnonzero(apart.any(axis=(1, 2)))]
    named = ", ".join(f"{paths[t]!r} (up to {np.nanmax(diff[:, :, t]):.2g} apart)"
                      for t in order[:MAX_NAMED])
    more = f" and {len(order) - MAX_NAMED} more" if len(order) > MAX_NAMED else ""
    buffers = all(_is_buffer(paths[t]) for t in order)
    who = (f"rank {odd[0]}" if len(odd) == 1 else "ranks " + ", ".join(map(str, odd)))
    last = bool(by_step[-1])
    return [Finding(
        "replica-drift", "warning",
        f"the replicas differ: {len(order)} of {len(paths)} tensors on {who} are not "
        f"rank {ranks[0].rank}'s, first at step {int(steps[first])} ({int(by_step.sum())} of "
        f"{steps.size} steps fingerprinted on every rank"
        f"{', still at the last' if last else ', not at the last'}): {named}{more}",
        where=paths[int(order[0])],
        evidence={"ranks": odd, "first_step": int(steps[first]),
                  "tensors": [paths[t] for t in order[:50]],
                  "max_relative": float(np.nanmax(diff))},
        hint=(_BUFFER_HINT if buffers else _PARAM_HINT))]


def _is_buffer(path: str) -> bool:
    return path.rsplit(".", 1)[-1] in ("running_mean", "running_var", "num_batches_tracked")


_BUFFER_HINT = (
    "Only normalisation statistics differ: each rank's BatchNorm learns its own data because "
    "DDP does not broadcast buffers (broadcast_buffers=False / forward_sync_buffers=False). "
    "The checkpoint of rank 0 then evaluates with rank 0's statistics only. Use "
    "torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) before wrapping, or let DDP "
    "broadcast buffers.")
_PARAM_HINT = (
    "DDP keeps parameters identical only when every rank applies the same all-reduced "
    "gradients to the same starting weights. Look for a parameter DDP does not own (outside "
    "the wrapped module, requires_grad=False but changed, listed in "
    "_ddp_params_and_buffers_to_ignore), a step taken inside no_sync() on some ranks only, "
    "a rank that skips a step or the all-reduce, or a model built from a different seed "
    "per rank and not wrapped in DDP.")
