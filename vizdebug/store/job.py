"""A stored ``torch.distributed`` job: rank 0's run with every other rank's beside it.

``vd.open_run`` of rank 0's file (or of the job's name without ``.sqlite``, a folder, or
another rank's file) gives a :class:`Job` when the run was one rank of several: a
:class:`~vizdebug.store.run.Run` of rank 0 whose ``ranks`` are every rank's run,
``scalars()`` the merged long form with ``rank``, ``findings()`` rank 0's diagnosis with
what only the job shows (a straggler, the first non-finite value with its rank, replicas
drifting apart) and what the other ranks found. ``vd.show_ranks(job)`` draws the merged
view (and ``vd.report(job, path)`` includes it). Rank files that appear later (a job
still starting) are picked up at the next read.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.ranks import RankData, RankTimes, Replicas, job_findings
from ..errors import VizdebugError
from ..findings import Finding, Findings
from .run import MAX_WORLD, Run
from .schema import DamagedRun, from_npy, is_run_file, rank_path

MAX_TENSORS = 4096
_KIND_WIDTH = {"rank_times": 5, "replicas": 2}


def job_of(path: Path) -> Path:
    """Rank 0's file of the job that ``path`` (any rank's file) belongs to.

    >>> job_of(Path("runs/exp1.rank3.sqlite")).name
    'exp1.sqlite'
    """
    stem, dot, rank = path.stem.rpartition(".rank")
    if dot and rank.isdigit() and stem:
        return path.with_name(f"{stem}{path.suffix}")
    return path


class Job(Run):
    """Rank 0's stored run with the runs of the other ranks (build it with ``open_run``).

    Examples
    --------
    >>> job = vd.open_run("runs/ddp.sqlite")    # doctest: +SKIP
    >>> sorted(job.ranks), job.scalars()["rank"].unique()   # doctest: +SKIP
    >>> vd.show_ranks(job)                      # doctest: +SKIP
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._others: dict[int, Run] = {}
        self._rank_cache: dict[int, tuple[Any, RankData]] = {}
        self.title = f"Stored job {path.name}"

    @property
    def world_size(self) -> int:
        return max(1, min(int(self.meta.get("world_size") or 1), MAX_WORLD))

    @property
    def ranks(self) -> dict[int, Run]:
        """Every rank's run whose file exists, by rank (rank 0 is this one)."""
        for k in range(1, self.world_size):
            if k not in self._others:
                other = rank_path(self.path, k)
                if other.exists() and is_run_file(other):
                    with contextlib.suppress(VizdebugError):
                        self._others[k] = Run(other)
        return {0: self, **dict(sorted(self._others.items()))}

    def rank_runs(self) -> list[Run]:
        """The runs of the other ranks (kept open between reads)."""
        return [run for k, run in self.ranks.items() if k != 0]

    @property
    def missing_ranks(self) -> list[int]:
        """Ranks of the job without a readable file (yet)."""
        return [k for k in range(self.world_size) if k not in self.ranks]

    # -- what each rank's tap stored -----------------------------------------------------------
    def rank_data(self) -> list[RankData]:
        """Each rank's records, timed steps and replica fingerprints (read again only when
        that rank's writer wrote since)."""
        out = []
        for k, run in self.ranks.items():
            key = run.version
            cached = self._rank_cache.get(k)
            if cached is None or cached[0] != key:
                times, prints = _tap_rows(run)
                cached = (key, RankData(k, run.records(), times, prints, run.path.name))
                self._rank_cache[k] = cached
            out.append(cached[1])
        return out

    def job_findings(self) -> list[Finding]:
        """What only the job as a whole shows: ``rank-straggler``, ``rank-nonfinite``,
        ``replica-drift``."""
        return job_findings(self.rank_data())

    def findings(self) -> Findings:
        """Rank 0's diagnosis, the job's own findings, and what another rank found that
        rank 0 did not (its ``where`` starting with its rank)."""
        job = self.job_findings()  # (first: what it finds damaged, each rank reports)
        own = super().findings()
        seen = {f.code for f in own}
        extra = []
        for k, run in self.ranks.items():
            for f in ([] if k == 0 else run.findings()):
                if f.code not in seen:
                    seen.add(f.code)
                    extra.append(_on_rank(f, k))
        return Findings([*job, *own, *extra])

    def __repr__(self) -> str:
        return (f"<vizdebug Job {self.path.name}: {len(self.ranks)} of {self.world_size} "
                f"ranks, {self.state}, last step {self.last_step}>")


def _on_rank(f: Finding, rank: int) -> Finding:
    from dataclasses import replace

    return replace(f, where=f"rank {rank}" + (f": {f.where}" if f.where else ""))


def _tap_rows(run: Run) -> tuple[RankTimes | None, Replicas | None]:
    """The rank tap's rows of one run file (None for a kind it does not hold); damage is
    noted on the run and leaves that kind out."""
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {k: [] for k in _KIND_WIDTH}
    try:
        rows = run._query("SELECT kind, steps, rows FROM samples WHERE kind IN "
                          "('rank_times', 'replicas') ORDER BY rowid", table="samples")
        for kind, steps_blob, rows_blob in rows:
            steps = from_npy(steps_blob, f"{kind} steps", "samples")
            block = from_npy(rows_blob, f"{kind} rows", "samples")
            width = _KIND_WIDTH[kind]
            if (steps.ndim != 1 or steps.dtype.kind not in "iu" or block.ndim != 3
                    or block.shape[0] != steps.size or block.shape[2] != width):
                raise DamagedRun("samples", f"the stored {kind} rows have shape {block.shape}")
            parts[kind].append((steps.astype(np.int64), block.astype(float)))
    except (DamagedRun, VizdebugError) as exc:
        run.damage.setdefault("samples", str(exc)[:300])
        return None, None
    times = None
    if parts["rank_times"]:
        steps = np.concatenate([s for s, _ in parts["rank_times"]])
        times = RankTimes(steps, np.concatenate([b[:, 0, :] for _, b in parts["rank_times"]]))
    return times, _replicas(run, parts["replicas"])


def _replicas(run: Run, parts: list[tuple[np.ndarray, np.ndarray]]) -> Replicas | None:
    paths = run.meta.get("replica_paths")
    if not parts or not isinstance(paths, list):
        return None
    paths = [str(p)[:300] for p in paths[:MAX_TENSORS]]
    width = len(paths)
    blocks = []
    for _, block in parts:
        padded = np.full((block.shape[0], width, 2), np.nan)
        n = min(width, block.shape[1])
        padded[:, :n] = block[:, :n]
        blocks.append(padded)
    return Replicas(paths, np.concatenate([s for s, _ in parts]), np.concatenate(blocks))
