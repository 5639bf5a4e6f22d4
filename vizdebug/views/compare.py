"""``vd.compare_runs``: many stored runs side by side — their curves overlaid (or as a mean
and min-max band per group of a config key), a runs table with settings, final and best
values and findings by severity, and what a run found that a pinned baseline did not.

Every run given is shown (none is sampled away) and every curve keeps its extremes (see
:mod:`vizdebug.views._compare_figure`). Curves are read first and drawn at once; the
findings need each run's diagnosis, which a live view computes in a background thread and
fills in as it goes (a static render computes them before it draws).
"""

from __future__ import annotations

import html
import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..analysis.runs import band, group_label, groups, matches, new_findings, rank
from ..errors import VizdebugError, VizdebugTypeError
from ..findings import Finding, Findings
from ..progress import Progress
from ..records.runs import RunEntry
from ..store.many import BUCKETS, FINDINGS_UP_TO_MB, default_metric, read_entry, run_paths
from . import _compare_figure as fig
from ._base import View
from ._display import shown_where_called
from ._figure_svg import figure_svg
from ._plotly_export import plotly_go
from .view_frames import compare_figure, compare_frame


def _run_findings(path: Path, up_to_mb: float) -> Findings | None:
    """A run's findings, or None when it is too large or cannot be read."""
    from ..store.opening import open_run

    try:
        if os.path.getsize(path) > up_to_mb * 1e6:
            return None
        return open_run(path).findings()
    except (VizdebugError, OSError):
        return None


class CompareRuns(View):
    """Many runs on one chart and one table. Build it with :func:`compare_runs`.

    Examples
    --------
    >>> view = vd.compare_runs("runs/", group_by="lr")   # doctest: +SKIP
    >>> view.table().head()                              # doctest: +SKIP
    """

    title = "vizdebug: runs compared"

    def __init__(self, entries: list[RunEntry], metric: str, *, group_by: str | None = None,
                 baseline: str | None = None, query: str = "", sort: str = "best",
                 findings_up_to_mb: float = FINDINGS_UP_TO_MB) -> None:
        self.entries = entries
        self.metric, self.group_by, self.baseline = metric, group_by, baseline
        self.query, self.sort = query, sort
        self._up_to = findings_up_to_mb
        self._findings: dict[str, Findings | None] = {}
        self._lock = threading.Lock()
        self.colours = {e.name: fig.colour(i) for i, e in enumerate(entries)}

    # -- what is shown -----------------------------------------------------------------------
    @property
    def shown(self) -> list[RunEntry]:
        """The runs that pass the filter, best first on the metric."""
        return rank([e for e in self.entries if matches(e, self.query)], self.metric, self.sort)

    @property
    def metrics(self) -> list[str]:
        """Every metric some run logged."""
        return list(dict.fromkeys(m for e in self.entries for m in e.metrics))

    def _ensure_metric(self, metric: str) -> None:
        """Read ``metric``'s curves for the runs that logged it and were not read yet."""
        missing = [i for i, e in enumerate(self.entries)
                   if metric in e.metrics and metric not in e.curves]
        for i in missing:
            entry = read_entry(self.entries[i].path, [metric])
            self.entries[i].curves.update(entry.curves)

    def to_frame(self) -> Any:
        """The chart's numbers as a ``pandas.DataFrame``: ``run``, ``step``, ``low``,
        ``high``, ``mean`` (each shown run's buckets; grouped, each group's mean and range).

        Examples
        --------
        >>> view.to_frame().to_csv("runs.csv")   # doctest: +SKIP
        """
        self._ensure_metric(self.metric)
        shown = self.shown
        return compare_frame(shown, self.metric, self._bands(shown))

    def figure(self) -> Any:
        """The chart as a ``plotly.graph_objects.Figure`` built from :meth:`to_frame` (a
        mean line within its min-max band per run or group); needs plotly.

        Examples
        --------
        >>> view.figure().write_html("runs.html")   # doctest: +SKIP
        """
        plotly_go()
        return compare_figure(self.to_frame(), self.metric)

    def _bands(self, shown: list[RunEntry]) -> list[Any]:
        if not self.group_by:
            return []
        return [b for label, members in groups(shown, self.group_by).items()
                if (b := band(label, members, self.metric)) is not None]

    def _figure(self, shown: list[RunEntry]) -> dict[str, Any]:
        bands = self._bands(shown)
        return fig.figure(shown, self.metric, bands=bands, colours=self._colours(shown),
                          baseline=self.baseline)

    def _colours(self, shown: list[RunEntry]) -> dict[str, str]:
        """Each run's colour: its own, or its group's when grouped (the band's colour)."""
        if not self.group_by:
            return self.colours
        labels = list(groups(shown, self.group_by))
        return {e.name: fig.colour(labels.index(group_label(e, self.group_by)))
                if group_label(e, self.group_by) in labels else "#888" for e in self.entries}

    # -- findings ----------------------------------------------------------------------------
    def run_findings(self, name: str) -> Findings | None:
        """The findings of the run called ``name`` (None when too large to diagnose)."""
        with self._lock:
            if name not in self._findings:
                entry = next((e for e in self.entries if e.name == name), None)
                if entry is None:
                    raise VizdebugError(f"no run called {name!r}; the runs are "
                                        f"{[e.name for e in self.entries][:10]}")
                self._findings[name] = _run_findings(entry.path, self._up_to)
            return self._findings[name]

    def diagnose_all(self, progress: bool | None = None) -> None:
        """Compute every run's findings now (a static render does this before drawing)."""
        with Progress("diagnosing runs", total=len(self.entries), unit="runs",
                      progress=progress) as bar:
            for entry in self.entries:
                self.run_findings(entry.name)
                bar.update()

    def _new(self, name: str) -> list[Finding] | None:
        if self.baseline is None or name == self.baseline:
            return None
        mine, base = self._findings.get(name), self._findings.get(self.baseline)
        return None if mine is None or base is None else new_findings(mine, base)

    @property
    def findings(self) -> Findings:
        """Each run's warnings and errors that the baseline does not have (every run's
        warnings and errors when there is no baseline), ``where`` prefixed by the run."""
        self.diagnose_all()
        out = []
        for entry in self.shown:
            found = self._new(entry.name) if self.baseline else (
                (self._findings.get(entry.name) or Findings()).at_least("warning"))
            for f in found or ():
                where = f"{entry.name}: {f.where}" if f.where else entry.name
                out.append(Finding(f.code, f.severity, f.message, where, f.evidence, f.hint))
        return Findings(out)

    # -- the table ---------------------------------------------------------------------------
    def _rows(self, shown: list[RunEntry]) -> list[dict[str, Any]]:
        keys, _ = fig.varying_keys(shown) if shown else ([], {})
        counts = {e.name: (f.counts() if (f := self._findings.get(e.name)) is not None
                           else None) for e in shown}
        new = {e.name: (len(n) if (n := self._new(e.name)) is not None else None)
               for e in shown}
        return fig.table_rows(shown, self.metric, keys, counts, new)

    def table(self) -> Any:
        """The runs table as a ``pandas.DataFrame`` (one row per shown run)."""
        import pandas as pd

        self._ensure_metric(self.metric)
        return pd.DataFrame(self._rows(self.shown))

    def _shared_note(self, shown: list[RunEntry]) -> str:
        _, same = fig.varying_keys(shown) if shown else ([], {})
        if not same:
            return ""
        text = ", ".join(f"{k}={v}" for k, v in list(same.items())[:12])
        return f'<p class="vd-note">same in every run: {html.escape(text)}</p>'

    def _findings_html(self) -> str:
        found = self.findings
        if not found:
            what = "new vs the baseline" if self.baseline else "in any run"
            return f'<p class="vd-note">no warnings or errors {what}</p>'
        head = (f"new vs baseline {html.escape(self.baseline)}" if self.baseline
                else "warnings and errors")
        return f"<h4>{head}</h4>{found.to_html()}"

    # -- rendering ---------------------------------------------------------------------------
    def _body(self, with_findings: bool) -> str:
        self._ensure_metric(self.metric)
        shown = self.shown  # (filtered and ranked once for the whole picture)
        unread = [e for e in self.entries if e.state == "unreadable"]
        note = "".join(f'<p class="vd-note">unreadable: {html.escape(str(e.path))}: '
                       f'{html.escape(e.note or "")}</p>' for e in unread[:10])
        group = f", grouped by {html.escape(self.group_by)}" if self.group_by else ""
        head = (f"<h3>{len(shown)} of {len(self.entries)} runs{group}: "
                f"{html.escape(self.metric)}</h3>")
        return (head + figure_svg(self._figure(shown)) + self._shared_note(shown)
                + fig.table_html(self._rows(shown), self._colours(shown), self.baseline)
                + (self._findings_html() if with_findings else "") + note)

    def _static_html(self) -> str:
        self.diagnose_all()
        return self._body(with_findings=True)

    def _build_widget(self) -> Any:
        from .compare_widget import build_widget

        return build_widget(self)

    def __repr__(self) -> str:
        return (f"<CompareRuns {len(self.entries)} runs, metric {self.metric!r}"
                f"{', group_by ' + repr(self.group_by) if self.group_by else ''}>")


def _default_metric(entries: Sequence[RunEntry]) -> str:
    names = list(dict.fromkeys(m for e in entries for m in e.metrics))
    metric = default_metric(names)
    if metric is None:
        raise VizdebugError("none of these runs logged a metric; log one with "
                            "session.log(step=..., loss=...)")
    return metric


def compare_runs(runs: Any, metric: str | None = None, *, group_by: str | None = None,
                 baseline: str | None = None, filter: str = "", sort: str = "best",
                 recursive: bool = True) -> CompareRuns:
    """Overlay the curves of many stored runs, with a runs table and their findings.

    Parameters
    ----------
    runs
        A folder of runs (what ``store=`` wrote; sub-folders too), run files, opened runs
        (:func:`open_run`), or a list of those.
    metric
        The metric to draw and rank by (default: the training loss).
    group_by
        A ``config=`` key: each of its values becomes a mean line with a min-max band
        over its runs (the seeds of one setting).
    baseline
        A run's name: drawn in black, and each other run's findings are diffed against it.
    filter
        Terms that must all hold: ``key=value`` (a config setting, ``state=``, ``name=``)
        or words in a run's name or settings, e.g. ``"lr=0.1 state=closed"``.
    sort
        ``"best"`` or ``"final"``: the table's order on ``metric``.

    Examples
    --------
    >>> vd.compare_runs("runs/", group_by="lr", baseline="seed0-lr0.01")  # doctest: +SKIP
    """
    if sort not in ("best", "final"):
        raise VizdebugError(f"sort={sort!r}; use sort='best' or sort='final'")
    if not isinstance(filter, str):
        raise VizdebugTypeError(f"filter must be text like 'lr=0.1', got {type(filter).__name__}")
    paths = run_paths(runs, recursive=recursive)
    if not paths:
        raise VizdebugError(f"no vizdebug runs in {str(runs)[:200]!r}; runs are the .sqlite "
                            f"files that vd.watch(..., store='runs/name') writes")
    first = read_entries(paths, "default" if metric is None else [metric])
    metric = metric or _default_metric(first)
    if baseline is not None and baseline not in {e.name for e in first}:
        raise VizdebugError(f"baseline={baseline!r} is not one of the runs: "
                            f"{[e.name for e in first][:10]}")
    _unique_names(first)
    view = CompareRuns(first, metric, group_by=group_by, baseline=baseline, query=filter,
                       sort=sort)
    view._ensure_metric(metric)
    return shown_where_called(view)


def read_entries(paths: Sequence[Path], metrics: Any) -> list[RunEntry]:
    """``read_entry`` of each path, in order, on a few threads (SQLite releases the GIL
    while it aggregates, so the reads overlap on every core)."""
    from concurrent.futures import ThreadPoolExecutor

    if len(paths) < 8:
        return [read_entry(p, metrics, BUCKETS) for p in paths]
    with ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2)) as pool:
        return list(pool.map(lambda p: read_entry(p, metrics, BUCKETS), paths))


def _unique_names(entries: list[RunEntry]) -> None:
    """Two runs of the same file name in different folders get their folder in front."""
    seen = Counter(e.name for e in entries)
    for e in entries:
        if seen[e.name] > 1:
            e.name = f"{e.path.parent.name}/{e.name}"
