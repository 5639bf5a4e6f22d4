"""The merged view of a ``torch.distributed`` job: every rank's curve of one metric with
the band they span, the straggler table, and the job's findings.

It draws what :mod:`vizdebug.analysis.ranks` computes from the ranks' records and shows
the same picture wherever it is displayed (a static SVG through the one Python chart
renderer, :mod:`vizdebug.views._figure_svg`); ``vd.report`` of a job includes it.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

import numpy as np

from ..analysis.ranks import RankData, StragglerRow, job_findings, rank_spread, straggler_table
from ..errors import VizdebugError, VizdebugTypeError, describe
from ..findings import Findings, findings_html
from ._base import View
from ._compare_figure import band_traces, colour
from ._figure_svg import figure_svg
from .chart_spec import clean

MAX_RANK_LINES = 16  # ranks drawn one line each (the band covers them all)
FOLLOW_INTERVAL = 2.0  # seconds between two reads of a running job's files
FOLLOW_QUIET = 60.0    # seconds with every file closed (or unchanged) before it stops
FOLLOW_FAILURES = 5    # reads failing in a row before it stops


def default_metric(ranks: list[RankData]) -> str | None:
    """The training loss when logged, else the first metric any rank logged."""
    for data in ranks:
        loss = data.records.train_loss()
        if loss is not None:
            return loss[0]
    names = [n for d in ranks for n in d.records.scalars]
    return names[0] if names else None


def rank_figure(ranks: list[RankData], metric: str) -> dict[str, Any]:
    """One line per rank of ``metric`` and the min-max band over ranks (a figure dict)."""
    curves = {d.rank: d.records.scalars[metric] for d in ranks if metric in d.records.scalars}
    spread = rank_spread(curves, label=f"{len(curves)} ranks")
    traces = band_traces([spread]) if spread is not None else []
    traces = traces[:1]  # the band; the ranks' own lines instead of its mean
    for i, (rank, (steps, values)) in enumerate(list(curves.items())[:MAX_RANK_LINES]):
        traces.append({"type": "scatter", "mode": "lines", "name": f"rank {rank}",
                       "x": np.asarray(steps).tolist(), "y": clean(values),
                       "line": {"color": colour(i), "width": 1.2}, "opacity": 0.9})
    layout: dict[str, Any] = {
        "height": 340, "margin": {"l": 64, "r": 150, "t": 34, "b": 40},
        "title": {"text": f"{metric} on each rank, and their range"},
        "xaxis": {"title": {"text": "step"}}, "yaxis": {"title": {"text": metric}}}
    first = _first_nonfinite(curves)
    if first is not None:  # where the lines stop, and why: a marked step, said in words
        step, ranks = first
        on = ", ".join(map(str, ranks[:8])) + (" ..." if len(ranks) > 8 else "")
        layout["shapes"] = [{"type": "line", "xref": "x", "yref": "paper", "x0": step,
                             "x1": step, "y0": 0, "y1": 1}]
        layout["annotations"] = [{
            "text": f"non-finite from step {step} (rank{'s' if len(ranks) > 1 else ''} {on})",
            "x": 1.0, "y": 1.0, "xref": "paper", "yref": "paper", "xanchor": "right",
            "showarrow": False, "font": {"size": 11, "color": "#b00020"}}]
    return {"data": traces, "layout": layout}


def _first_nonfinite(curves: dict[int, tuple[Any, Any]]) -> tuple[int, list[int]] | None:
    """The first step at which a rank's value is NaN or infinite, and the ranks with a
    non-finite value at that step (None when every value is finite)."""
    at: dict[int, int] = {}
    for rank, (steps, values) in curves.items():
        bad = ~np.isfinite(np.asarray(values, dtype=float))
        if bad.any():
            at[rank] = int(np.asarray(steps)[bad].min())
    if not at:
        return None
    step = min(at.values())
    return step, sorted(k for k, v in at.items() if v == step)


def straggler_html(rows: list[StragglerRow]) -> str:
    """The straggler table (a note when no steps were timed on every rank). A rank that
    waited for the others held nobody up: 0 ms there (its wait is in its own column; the
    signed difference is the score)."""
    if not rows:
        return ("<p class='vd-note'>No steps were timed on every rank yet (the ranks' "
                "timing needs a few dozen steps of each).</p>")
    head = "".join(f"<th>{h}</th>" for h in ("rank", "timed steps", "median step",
                                              "median wait", "held others up", "score",
                                              "waited least", ""))
    body = "".join(
        f"<tr><td>{r.rank}</td><td>{r.steps}</td><td>{r.step_time * 1e3:.3g} ms</td>"
        f"<td>{r.wait * 1e3:.3g} ms</td><td>{max(r.held, 0.0) * 1e3:.3g} ms</td>"
        f"<td>{r.score:.2f}</td>"
        f"<td>{r.least_share:.0%}</td><td>{'straggler' if r.straggler else ''}</td></tr>"
        for r in rows)
    return (f'<table class="vd-table vd-rank-table"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


class RanksView(View):
    """Every rank of a job in one picture. Build it with :func:`show_ranks` or
    :meth:`from_ranks`."""

    title = "vizdebug ranks"

    def __init__(self, ranks: list[RankData], metric: str | None, *, world_size: int,
                 source: Any = None, findings: Findings | None = None) -> None:
        self.ranks = ranks
        self.metric = metric
        self.world_size = world_size
        self.source = source  # a Job, read again by refresh()
        self._findings = findings

    @classmethod
    def from_ranks(cls, ranks: list[RankData], metric: str | None = None, *,
                   world_size: int | None = None) -> RanksView:
        """The view of ranks already read (``metric``: the training loss by default)."""
        metric = _checked_metric(ranks, metric)
        return cls(ranks, metric, world_size=world_size or len(ranks))

    @classmethod
    def from_job(cls, job: Any, metric: str | None = None) -> RanksView:
        """The view of a stored job (:class:`~vizdebug.store.job.Job`)."""
        ranks = job.rank_data()
        view = cls(ranks, _checked_metric(ranks, metric), world_size=job.world_size, source=job)
        return view

    def refresh(self) -> RanksView:
        """Read the job's files again (ranks still running, ranks that appeared)."""
        if self.source is not None:
            self.ranks = self.source.rank_data()
            self._findings = None
            if self.metric is None:
                self.metric = default_metric(self.ranks)
        return self

    def running(self) -> bool:
        """Whether a rank of the job is still written (or has no file yet)."""
        job = self.source
        if job is None:
            return False
        return bool(job.missing_ranks) or any(not run.closed for run in job.ranks.values())

    def _show(self) -> None:
        super()._show()
        if self.running():  # rank 0's notebook: the picture follows every rank's file
            self.follow()

    def follow(self, interval: float = FOLLOW_INTERVAL) -> RanksView:
        """Read the ranks' files again every ``interval`` seconds and redraw the displayed
        view, from a daemon thread, until every rank's run has closed (or nothing changed
        for :data:`FOLLOW_QUIET` seconds)."""
        ref = weakref.ref(self)
        threading.Thread(target=_follow, args=(ref, interval), daemon=True,
                         name="vizdebug-ranks-follow").start()
        return self

    @property
    def findings(self) -> Findings:
        """What only the job as a whole shows (straggler, first non-finite, drift)."""
        if self._findings is None:
            self._findings = Findings(job_findings(self.ranks))
        return self._findings

    @property
    def stragglers(self) -> list[StragglerRow]:
        return straggler_table(self.ranks)

    def figure(self) -> dict[str, Any]:
        """The chart as a figure dict (plotly-shaped)."""
        return rank_figure(self.ranks, self.metric) if self.metric else {"data": [], "layout": {}}

    def _static_html(self) -> str:
        seen = [d.rank for d in self.ranks]
        missing = [k for k in range(self.world_size) if k not in seen]
        head = (f"<h3>{len(seen)} of {self.world_size} ranks"
                + (f" (no file yet for rank {', '.join(map(str, missing[:16]))})" if missing else "")
                + "</h3>")
        chart = figure_svg(self.figure()) if self.metric else "<p class='vd-note'>nothing logged yet</p>"
        return (head + chart + "<h4>Step timing by rank</h4>" + straggler_html(self.stragglers)
                + "<h4>Across ranks</h4>"
                + findings_html(self.findings, "No finding across ranks: no straggler, no "
                                               "non-finite value, replicas identical."))

    def __repr__(self) -> str:
        return (f"<RanksView {len(self.ranks)} of {self.world_size} ranks, metric "
                f"{self.metric!r}, {len(self.findings)} findings>")


def _follow(ref: weakref.ref, interval: float) -> None:
    """The loop of :meth:`RanksView.follow` (holds the view weakly between reads).

    A read that fails (a rank's file caught while its writer creates it) is tried again
    at the next interval; only :data:`FOLLOW_FAILURES` failures in a row stop it."""
    last, quiet_since, failures = None, time.monotonic(), 0
    while True:
        time.sleep(interval)
        view = ref()
        if view is None:
            return
        try:
            versions = [run.version for run in view.source.ranks.values()]
            if versions != last:
                view.refresh()
                view.update_twin(force=True)
                # the versions read before the redraw: a rank that changed during it is
                # read again at the next interval
                last, quiet_since = versions, time.monotonic()
            # stops once every rank closed and nothing was written since the last read
            # (a rank that closed during the redraw gets one more)
            done = ((not view.running()
                     and [run.version for run in view.source.ranks.values()] == last)
                    or time.monotonic() - quiet_since > FOLLOW_QUIET)
            failures = 0
        except Exception:  # never raises into the notebook: tries again, then gives up
            failures += 1
            done = failures >= FOLLOW_FAILURES
        del view
        if done:
            return


def _checked_metric(ranks: list[RankData], metric: str | None) -> str | None:
    if metric is None:
        return default_metric(ranks)
    if not isinstance(metric, str):
        raise VizdebugTypeError(f"metric must be a metric name (a str), got {describe(metric)}")
    names = sorted({n for d in ranks for n in d.records.scalars})
    if metric not in names:
        shown = ", ".join(repr(n) for n in names[:12]) or "none"
        raise VizdebugError(f"no rank logged {metric[:80]!r}; logged: {shown}")
    return metric


def _job_of(source: Any) -> Any:
    """The stored job behind ``source``: a Job, a path, or a live Session with a store."""
    import os

    from ..store.opening import open_run

    if callable(getattr(source, "rank_data", None)):
        return source
    store = getattr(source, "store", None)
    if store is not None and getattr(store, "path", None) is not None:
        source = store.path  # a live session of rank 0: the files of every rank
    elif isinstance(source, bool) or not isinstance(source, (str, os.PathLike)):
        raise VizdebugTypeError(
            f"show_ranks() takes a stored job (vd.open_run of rank 0's file), its path, or "
            f"a session watching with store=..., got {describe(source)}")
    job = open_run(source)
    if not callable(getattr(job, "rank_data", None)):
        raise VizdebugError(
            f"{str(job.path)!r} is the run of a single process (world size "
            f"{job.meta.get('world_size', 1)}, rank {job.meta.get('rank', 0)}); show_ranks() "
            "needs rank 0's file of a torch.distributed job")
    return job


def show_ranks(source: Any, metric: str | None = None) -> RanksView:
    """The merged view of a ``torch.distributed`` job: each rank's curve of ``metric``
    (the training loss by default) with the band they span, the straggler table and what
    only the job shows (a straggler, the first non-finite value with its rank, replicas
    drifting apart).

    ``source`` is rank 0's run file (or the job's name, or its folder), a job from
    ``vd.open_run``, or rank 0's live session (watching with ``store=``): the other
    ranks' files are read as they are written (``.refresh()`` reads them again).

    Examples
    --------
    >>> vd.show_ranks("runs/ddp.sqlite")   # doctest: +SKIP
    """
    return RanksView.from_job(_job_of(source), metric=metric)
