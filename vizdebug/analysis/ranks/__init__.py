"""The merged diagnosis of a ``torch.distributed`` job from its ranks' records: per-rank
curves and their spread, stragglers, the first non-finite value (named with its rank) and
replicas that drift apart. Pure numpy; the store reads the ranks
(:class:`vizdebug.store.job.Job`), the views draw what these functions return."""

from __future__ import annotations

from ...findings import Finding
from .data import RankData, RankTimes, Replicas, rank_spread
from .nonfinite import first_nonfinite, nonfinite_finding
from .replicas import replica_drift
from .timing import StragglerRow, straggler_findings, straggler_table

__all__ = ["RankData", "RankTimes", "Replicas", "StragglerRow", "first_nonfinite",
           "job_findings", "nonfinite_finding", "rank_spread", "replica_drift",
           "straggler_findings", "straggler_table"]


def job_findings(ranks: list[RankData]) -> list[Finding]:
    """The findings only the job as a whole shows (none for a single rank)."""
    if len(ranks) < 2:
        return []
    return [*nonfinite_finding(ranks), *straggler_findings(straggler_table(ranks)),
            *replica_drift(ranks)]
