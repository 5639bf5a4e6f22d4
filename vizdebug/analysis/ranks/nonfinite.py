"""The first non-finite value of a job, named with its rank and step.

In a DDP job a NaN does not stay where it starts: the rank whose loss (or activation, or
input) went NaN sends NaN gradients into the all-reduce, and every rank's weights are NaN
after that step. Each rank's own diagnosis then reports a non-finite loss; the question is
which rank was first. Within one step, an input batch comes before an activation, an
activation before the loss and the loss before a gradient (the all-reduced gradients of
the other ranks are a consequence, not a cause).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...findings import Finding
from ...records import EVAL_PREFIXES, TrainingRecords
from ..training.params import absent_grads
from .data import RankData

PHASES = ("input batch", "activation", "loss", "gradient")


@dataclass(frozen=True, order=True)
class FirstNonfinite:
    """Where one rank first saw a non-finite value: ``(step, phase)`` orders them."""

    step: int
    phase: int
    where: str

    @property
    def what(self) -> str:
        return PHASES[self.phase]


def _loss_names(rec: TrainingRecords) -> list[str]:
    return [n for n in rec.scalars if "loss" in n and not n.startswith(EVAL_PREFIXES)]


def first_nonfinite(rec: TrainingRecords) -> FirstNonfinite | None:
    """The earliest non-finite value of one rank's records, or None.

    Examples
    --------
    >>> rec = TrainingRecords(scalars={"loss": (np.arange(3), np.array([1.0, np.nan, 2.0]))})
    >>> first_nonfinite(rec)
    FirstNonfinite(step=1, phase=2, where='loss')
    """
    found = [FirstNonfinite(int(s), 0, "the loader's batch")
             for s in rec.loader.nonfinite_batches[:1]]
    found += [FirstNonfinite(int(ev.step), 1, ev.module_path) for ev in rec.events
              if ev.kind == "nonfinite-activation"]
    for name in _loss_names(rec):
        steps, values = rec.scalars[name]
        bad = ~np.isfinite(np.asarray(values, float))
        if bad.any():
            found.append(FirstNonfinite(int(steps[np.argmax(bad)]), 2, name))
    if rec.grads.size:
        norms = rec.grad("grad_norm")
        bad_rows = ~np.isfinite(norms) & ~absent_grads(rec)  # (no gradient: not a NaN)
        if bad_rows.any():
            i, j = np.argwhere(bad_rows)[0]
            where = rec.param_paths[j] if j < len(rec.param_paths) else f"parameter {j}"
            found.append(FirstNonfinite(int(rec.grad_steps[i]), 3, where))
    return min(found) if found else None


def _ranks_text(ranks: list[int]) -> str:
    return (f"rank {ranks[0]}" if len(ranks) == 1
            else "ranks " + ", ".join(str(r) for r in ranks))


def nonfinite_finding(ranks: list[RankData]) -> list[Finding]:
    """``rank-nonfinite``: which rank saw the job's first NaN/inf, at which step, in what
    (none when every value was finite)."""
    firsts = {d.rank: f for d in ranks if (f := first_nonfinite(d.records)) is not None}
    if not firsts:
        return []
    first = min(firsts.values(), key=lambda f: (f.step, f.phase))
    origin = sorted(r for r, f in firsts.items() if (f.step, f.phase) == (first.step, first.phase))
    later = sorted((f.step, r) for r, f in firsts.items() if r not in origin)
    clean = sorted(d.rank for d in ranks if d.rank not in firsts)
    after = "; ".join(f"rank {r} at step {s}" for s, r in later[:8])
    every = len(origin) == len(ranks)
    message = (f"the first non-finite value of the job: the {first.what} {first.where!r} on "
               f"{'every rank' if every else _ranks_text(origin)} at step {first.step}"
               + (f"; then {after}" if after else "")
               + (f"; {_ranks_text(clean)} stayed finite" if clean else ""))
    hint = ("Start from that rank and step: its batch (each rank reads its own shard), its "
            "loss, the module named. In DDP a NaN on one rank reaches every rank through the "
            "gradient all-reduce at the same step, so the other ranks' NaNs are a "
            "consequence." if not every else
            "Every rank went non-finite at the same step and place: a cause the ranks share "
            "(the learning rate, the model, the loss), not one rank's data.")
    return [Finding("rank-nonfinite", "error", message,
                    where=f"rank {origin[0]}: {first.where}" if not every else first.where,
                    evidence={"ranks": origin, "step": first.step, "kind": first.what,
                              "first_step_by_rank": {str(r): f.step
                                                     for r, f in sorted(firsts.items())}},
                    hint=hint)]
