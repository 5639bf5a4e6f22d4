"""Stragglers: the rank the others wait for.

In a synchronous job (DDP) every rank's step takes as long as the slowest rank's: the
others wait for it in the collectives, the buffer broadcast at the start of the forward
pass and the gradient all-reduce that ends the backward pass. So step times alone name no
one. What differs is *where* a rank spends its step: the straggler waits least. At each
step timed on every rank, a rank's wait is how much longer it spent inside the two
collective windows (wrapper forward start to wrapped-module forward start; backward start
to step end) than the rank that spent least there; the time it held the others up is the
median of the others' waits less its own. A rank is a straggler when, over the timed steps
after the warm-up, it held the others up by a median of at least :data:`STRAGGLER_SHARE`
of the median step, and waited least at :data:`LEAST_SHARE` of the steps or more.

What this cannot see: a rank whose *backward* pass is slower (its extra time and the
others' wait fall in the same window).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...findings import Finding
from .data import RankData

WARMUP = 0.1            # of the timed steps left out at the start (at least 2)
MIN_STEPS = 6           # timed steps, common to all ranks, after the warm-up
STRAGGLER_SHARE = 0.25  # of the median step the others wait, at the median
LEAST_SHARE = 0.75      # of the steps at which the straggler waits least
MIN_HELD = 0.001        # seconds: below this nobody is held up, whatever the share


@dataclass(frozen=True)
class StragglerRow:
    """One rank's timing over the steps timed on every rank (seconds; ``score`` is the
    time it held the others up as a share of the median step)."""

    rank: int
    steps: int
    step_time: float
    wait: float
    held: float
    score: float
    least_share: float
    straggler: bool


def _common(ranks: list[RankData]) -> tuple[np.ndarray, list[np.ndarray]] | None:
    """The steps timed on every rank (each fully), and each rank's marks at them."""
    timed = [r.times for r in ranks]
    if any(t is None or not t.steps.size for t in timed):
        return None
    ok = [t.steps[np.isfinite(t.marks).all(axis=1)] for t in timed]
    steps = ok[0]
    for s in ok[1:]:
        steps = np.intersect1d(steps, s)
    skip = max(2, int(np.ceil(WARMUP * steps.size)))
    steps = steps[skip:]
    if steps.size < MIN_STEPS:
        return None
    rows = []
    for t in timed:
        # the last row of a step wins (a step timed twice would be a damaged file)
        where = {int(s): i for i, s in enumerate(t.steps.tolist())}
        rows.append(t.marks[[where[int(s)] for s in steps]])
    return steps, rows


def straggler_table(ranks: list[RankData]) -> list[StragglerRow]:
    """Per rank: timed steps, median step time, median wait, median time it held the
    others up, its score, and whether it is the straggler ([] without common timed steps).

    Examples
    --------
    >>> straggler_table([])
    []
    """
    common = _common(ranks) if len(ranks) >= 2 else None
    if common is None:
        return []
    steps, rows = common
    marks = np.stack(rows)  # (ranks, steps, 5)
    step_time = marks[:, :, 4] - marks[:, :, 0]
    broadcast = marks[:, :, 2] - marks[:, :, 1]
    reduce = marks[:, :, 4] - marks[:, :, 3]
    wait = (broadcast - broadcast.min(axis=0)) + (reduce - reduce.min(axis=0))
    n = len(ranks)
    others = np.stack([np.median(np.delete(wait, r, axis=0), axis=0) for r in range(n)])
    held = others - wait
    median_step = float(np.median(step_time))
    least = np.argmin(wait, axis=0)
    out = []
    for r, data in enumerate(ranks):
        h = float(np.median(held[r]))
        score = h / median_step if median_step > 0 else 0.0
        share = float(np.mean(least == r))
        out.append(StragglerRow(
            data.rank, int(steps.size), float(np.median(step_time[r])),
            float(np.median(wait[r])), h, score, share,
            score >= STRAGGLER_SHARE and share >= LEAST_SHARE and h >= MIN_HELD))
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def straggler_findings(table: list[StragglerRow]) -> list[Finding]:
    """``rank-straggler`` for each rank the table marks."""
    out = []
    for row in table:
        if not row.straggler:
            continue
        out.append(Finding(
            "rank-straggler", "warning",
            f"rank {row.rank} holds the other ranks up: at {row.steps} steps timed on every "
            f"rank they waited a median {_ms(row.held)} for it ({row.score:.0%} of the median "
            f"step of {_ms(row.step_time)}); it waited least at "
            f"{row.least_share:.0%} of them",
            where=f"rank {row.rank}",
            evidence={"rank": row.rank, "score": row.score, "held_s": row.held,
                      "step_s": row.step_time, "steps": row.steps,
                      "least_share": row.least_share},
            hint="Every step of a synchronous job (DDP) lasts as long as its slowest rank's: "
                 "the others wait for it at each all-reduce and buffer broadcast. Look at "
                 "what differs on that rank: its data loading (num_workers, a slower disk, a "
                 "larger shard or longer sequences), other work on its device or CPU cores "
                 "(another job, a profiler, logging or checkpointing only there), a slower or "
                 "throttled GPU, or uneven batch sizes."))
    return out
