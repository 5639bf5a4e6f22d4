"""The live training dashboard: curves, gradient/activation health, data timing, findings.

One anywidget draws five small panels, each its own SVG chart drawn in the browser
(``static/chart_*.js``) from a plotly-shaped dict (``_dashboard_figure``), the same dict
the static twin draws in Python (``_figure_svg``). A refresh sends only what changed
(``_dashboard_delta``: the new points of each trace, the changed heatmap columns), and the
browser redraws only the panels it touched, zoom kept. A daemon thread refreshes the
figure from the session: only when something new was collected, never more than a few
times a second, and with an interval that keeps the kernel time spent on the view under
2% (``budget``). So it updates while a loop runs in the same cell and while training runs
in another thread."""

from __future__ import annotations

import hashlib
import html
import json
import threading
import time
import uuid
import weakref
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ..analysis.training.diagnose import diagnose
from ..findings import Findings, findings_html, fold, worst_severity
from ..records import TrainingRecords, TrainingSource
from ._base import TWIN_INTERVAL, View, live_esm, once_per_page, script_json
from ._dashboard_delta import DeltaEncoder
from ._dashboard_figure import PANELS, dashboard_panels, twin_figure
from ._dashboard_zoom import answer_zoom
from ._figure_svg import figure_svg
from .epochs_table import epochs_html
from .panel_frames import source_figure, source_frame
from .panels_static import panels_html

_STATIC = Path(__file__).with_name("static")
_HALF = ("grads", "health", "timing", "system")  # two to a row
_WRAP = "display:flex;flex-wrap:wrap;gap:8px;max-width:1000px"
MIN_INTERVAL = 0.3
BUDGET = 0.02


#: the charts' scripts in load order: the ticks and number formats (shared with the drift
#: explorer), the pure helpers, the panels, the view
CHART_FILES = ("chart_ticks.js", "chart_core.js", "chart_panel.js", "chart_view.js")
#: the line panels (curves, timing, system) on uPlot (vendored, pinned; ``var uPlot`` is
#: module-local in the ESM, function-local on a saved page), after the files above
UPLOT_FILES = ("vendor/uPlot-1.6.32.iife.min.js", "chart_uplot.js", "chart_uplot_view.js")
UPLOT_CSS = "vendor/uPlot-1.6.32.min.css"


@cache
def _charts_js() -> str:
    # the charts' parts, for the live module and (scoped) for a saved page's script
    return "\n".join((_STATIC / name).read_text(encoding="utf-8") for name in CHART_FILES)


@cache
def _saved_charts() -> tuple[str, str]:
    """A saved page's charts (the curves' smoothing, ours, uPlot and the line panels on
    it) in one function's scope, as (a style and script block, its entry point's name): a
    report keeps the block once (``once_per_page``: uPlot's 51 KB once), and a copy that
    stays (fragments joined by hand) is idle, its consts in a scope of their own."""
    read = lambda name: (_STATIC / name).read_text(encoding="utf-8")  # noqa: E731
    code = "\n".join(map(read, ("dashboard_state.js", *CHART_FILES, *UPLOT_FILES)))
    key = hashlib.sha1(code.encode("utf-8")).hexdigest()[:10]  # one per vizdebug version
    block = (f"<style>{read(UPLOT_CSS)}</style><script>if(!window.vdCharts_{key})(function(){{"
             f"\n{code}\nwindow.vdCharts_{key} = {{ vdDrawStatic }};\n}})();</script>")
    return once_per_page(key, block), f"vdCharts_{key}"


def _static_script(div_id: str, spec: str) -> str:  # one dashboard's call, after the block
    entry = _saved_charts()[1]
    return f"if(window.{entry})window.{entry}.vdDrawStatic('{div_id}',{spec});"


@cache
def _esm() -> str:
    # an anywidget ESM is one module string: the pure state code, the charts (ours, then
    # uPlot and the line panels on it, with uPlot's style as a string), then the view
    read = lambda name: (_STATIC / name).read_text(encoding="utf-8")  # noqa: E731
    css = json.dumps(read(UPLOT_CSS))
    return "\n".join((read("dashboard_state.js"), _charts_js(), *map(read, UPLOT_FILES),
                      f"const VD_UPLOT_CSS = {css};", read("dashboard_widget.js")))


def _widget_class() -> type:
    import anywidget
    import traitlets

    class DashboardWidget(anywidget.AnyWidget):
        _esm = live_esm(_esm())
        fallback_id = traitlets.Unicode("").tag(sync=True)  # the static twin to hide
        snapshot = traitlets.Dict().tag(sync=True)  # {"rev", "panels"}: sent rarely
        delta = traitlets.Dict().tag(sync=True)  # what changed since the snapshot
        badge = traitlets.Dict().tag(sync=True)  # the worst finding, for the status line
        findings_html = traitlets.Unicode().tag(sync=True)
        status = traitlets.Unicode().tag(sync=True)
        revision = traitlets.Int(0).tag(sync=True)

    return DashboardWidget


_WIDGET_CLASS: type | None = None
_FOLLOWING: set = set()  # live views whose source keeps no reference to them (stored runs)


def _live(panels: dict[str, Any]) -> dict[str, Any]:
    """The panels as the widget gets them: the smoothed curves are left empty (the
    browser smooths the raw ones itself, with the user's slider)."""
    curves = panels["curves"]
    data = [dict(t, y=[]) if (t.get("meta") or {}).get("smooth") else t for t in curves["data"]]
    return dict(panels, curves=dict(curves, data=data))


def worst_finding(findings: Findings) -> dict[str, Any]:
    """The status line's badge: the worst cause's severity (a cause is as severe as the
    worst finding it explains), code and message, how many more causes there are (their
    consequences are not counted) and how many findings it explains, or ``{}`` when there
    is nothing to flag."""
    flagged = [(cause, more) for cause, more in fold(findings)
               if worst_severity([cause, *more]) in ("error", "warning")]
    if not flagged:
        return {}
    worst, more = flagged[0]  # fold() gives the worst group first
    plural = "s" if len(more) != 1 else ""
    title = str(worst) + (f"\n(+ {len(more)} consequence{plural} folded under it)" if more else "")
    return {"severity": worst_severity([worst, *more]), "code": worst.code, "title": title,
            "more": len(flagged) - 1, "explains": len(more)}


def _status(source: TrainingSource, rec: TrainingRecords) -> str:
    # the logged metrics' steps (the optimizer's traced learning rates are noted as each
    # step starts, one step ahead of the last logged point)
    steps = [int(s.max()) + 1 for name, (s, _) in rec.scalars.items()
             if s.size and not name.startswith("lr/group")]
    step = max(steps) if steps else 0
    state = source.state
    if source.failed:
        state = f"{state}: {source.failed}"
    return f"step {step} · {state} · {len(rec.module_paths)} modules watched"


class Dashboard(View):
    """A live view of a training session (build it with ``session.dashboard()``).

    Examples
    --------
    >>> dash = session.dashboard()      # doctest: +SKIP
    >>> dash                            # doctest: +SKIP
    """

    title = "vizdebug training dashboard"

    def __init__(self, source: TrainingSource, *, live: bool = True,
                 min_interval: float = MIN_INTERVAL, budget: float = BUDGET,
                 clock: Any = time.thread_time) -> None:
        self.source = source
        self.live = live
        self.min_interval = min_interval
        self.budget = budget
        self.clock = clock
        self.kernel_seconds = 0.0  # CPU time of the refreshing thread spent on the view
        self.refreshes = 0
        self._last_version: Any = None
        self._last_at = -1e9
        self._last_cost = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._findings = Findings()
        self._encoder = DeltaEncoder()
        self._more: tuple[float, str] = (-1e9, "")  # the extra panels' HTML, and when

    @classmethod
    def from_session(cls, session: TrainingSource, **options: Any) -> Dashboard:
        """A dashboard over ``session`` (or any object with ``records()`` and ``version``)."""
        return cls(session, **options)

    # -- content ----------------------------------------------------------------------------
    def _content(self, flush: bool) -> tuple[dict[str, Any], str, str]:
        """The panels (``{name: {"data", "layout"}}``), the findings' HTML, the status."""
        rec = self.source.records(flush=flush)
        system = getattr(getattr(self.source, "system", None), "array", lambda: np.empty((0, 4)))()
        self._findings = diagnose(rec) + self.source.state_findings()
        panels = dashboard_panels(rec, system)
        # the per-epoch table rides with the findings' HTML: the live widget's HTML area,
        # the static twin and the saved page all show it, no script needed
        found = findings_html(self._findings) + epochs_html(rec) + self._more_panels(rec)
        return panels, found, _status(self.source, rec)

    def _more_panels(self, rec: TrainingRecords) -> str:
        """The layer and optimizer panels (:mod:`.panels_static`), redrawn at most every
        ``TWIN_INTERVAL`` seconds while the source runs (tens of ms each: the twin's pace)."""
        at, cached = self._more
        if self.source.closed or time.monotonic() - at >= TWIN_INTERVAL:
            cached = panels_html(rec, self.source)
            self._more = (time.monotonic(), cached)
        return cached

    @property
    def findings(self) -> Findings:
        """The findings shown at the last refresh."""
        return self._findings

    def to_frame(self, panel: str = "curves") -> Any:
        """The numbers of one panel as a ``pandas.DataFrame``, read now (``curves``,
        ``grads``, ``health``, ``timing``, ``system``, ``epochs``, ``activations``,
        ``parameters``, ``optimizer``: see :mod:`vizdebug.views.panel_frames`).

        Examples
        --------
        >>> dash.to_frame("epochs").to_csv("epochs.csv")   # doctest: +SKIP
        """
        return source_frame(self.source, panel)

    def figure(self, panel: str | None = None) -> Any:
        """One panel as a ``plotly.graph_objects.Figure`` built from :meth:`to_frame`
        (``None``: every panel with data, a row each); needs plotly.

        Examples
        --------
        >>> dash.figure("curves").update_yaxes(type="log").write_html("loss.html")  # doctest: +SKIP
        """
        return source_figure(self.source, panel)

    def _static_html(self) -> str:
        """The page version (reports, ``save``): the live widget's charts drawn by a script
        over the twin's pictures (what a page that runs no script shows)."""
        panels, found, status = self._content(flush=not self.source.closed)
        # unique on any page: id(self) repeats once a view is collected (a report renders
        # each session through a short-lived dashboard), and an nbconvert page holds the
        # outputs of earlier kernels
        div_id = f"vd-dash-{uuid.uuid4().hex[:12]}"
        spec = script_json({name: panels[name] for name in PANELS})
        return (f'<div class="vd-dashboard"><h3>Training dashboard</h3><p class="vd-note">'
                f'{html.escape(status)}</p>{found}<div id="{div_id}" class="vd-saved-charts" style='
                f'"display:flex;flex-direction:column;gap:4px">{self._pictures(panels)}</div>'
                f"{_saved_charts()[0]}<script>{_static_script(div_id, spec)}</script></div>")

    @staticmethod
    def _pictures(panels: dict[str, Any]) -> str:  # as the kernel draws them: SVG, no script
        pictures = "".join(
            f'<div style="flex:1 1 {45 if name in _HALF else 100}%;min-width:320px">'
            f"{figure_svg(twin_figure(panels[name]), width=560 if name in _HALF else 1000)}</div>"
            for name in PANELS)
        return f'<div class="vd-twin-charts" style="{_WRAP}">{pictures}</div>'

    def _twin_html(self, content: tuple[dict[str, Any], str, str] | None = None) -> str:
        """The static twin: the same content as a light SVG picture (no plotly.js)."""
        panels, found, status = content or self._content(flush=not self.source.closed)
        return (f'<div class="vd-dashboard vd-dashboard-static"><h3>Training dashboard</h3>'
                f'<p class="vd-note vd-twin-status">{html.escape(status)}</p>{found}'
                f"{self._pictures(panels)}</div>")

    def _sync_twin(self, content: tuple[dict[str, Any], str, str], force: bool) -> None:
        """After a push: the static twin too, when due (see ``View.update_twin``)."""
        if self._twin is not None and (force or time.monotonic() - self._twin_at >= TWIN_INTERVAL):
            self.update_twin(True, self._twin_html(content))

    # -- live widget ------------------------------------------------------------------------
    def _build_widget(self) -> Any:
        global _WIDGET_CLASS
        if _WIDGET_CLASS is None:
            _WIDGET_CLASS = _widget_class()
        widget = _WIDGET_CLASS()
        self._widget = widget
        widget.on_msg(self._on_message)  # the page's zoom asks for a step range
        # The session keeps the view: `display(session.dashboard())` holds no other
        # reference, and the view is what pushes new data (from log() and its thread).
        add_view = getattr(self.source, "add_view", None)
        if add_view is not None:
            add_view(self)
        self.refresh(force=True)
        if self.live:
            self.start()
        return widget

    def _on_message(self, widget: Any, content: Any, buffers: Any = None) -> None:
        """A zoom from the page: send the curves of its step range at its resolution
        (``_dashboard_zoom``: the protocol; any other message is not ours)."""
        if isinstance(content, dict) and content.get("kind") == "zoom":
            widget.send(answer_zoom(self.source, content))

    def refresh(self, force: bool = False) -> bool:
        """Push new data to the widget if any arrived and the throttle allows; True if it did.

        Called by the refresh thread and, through ``Session.log``, by the training loop
        itself: a message sent from the thread that runs the cell reaches the page at once,
        while ipykernel may hold back those of a thread started by the running cell.
        """
        widget = self._widget
        if widget is None:
            return False
        if not force and time.monotonic() - self._last_at < self.next_interval():
            return False
        if not self._lock.acquire(blocking=force):  # the other caller is on it
            return False
        try:
            return self._push(widget, force)
        finally:
            self._lock.release()

    def due(self) -> float:
        """``time.monotonic()`` at which the next refresh may happen."""
        return self._last_at + self.next_interval()

    def _push(self, widget: Any, force: bool) -> bool:
        if not force and self._version() == self._last_version:
            return False
        start = self.clock()
        panels, found, status = self._content(flush=False)
        version = self._version()  # after reading: reading resolves pending values
        snapshot, delta = self._encoder.encode(_live(panels), renew=bool(version[1]))
        with widget.hold_sync():
            if snapshot is not None:
                widget.snapshot = snapshot
            widget.delta = delta
            widget.badge = worst_finding(self._findings)
            widget.findings_html = found
            widget.status = status
            widget.revision = widget.revision + 1
        self._last_version = version
        self._sync_twin((panels, found, status), force)
        cost = self.clock() - start
        self.kernel_seconds += cost
        # the first refresh pays one-time costs (modules imported on first use: 0.6 s here
        # against 5 ms for a later one), which must not set the throttle for the whole run
        self._last_cost = cost if self.refreshes else min(cost, self.budget)
        self.refreshes += 1
        self._last_at = time.monotonic()
        return True

    def _version(self) -> Any:
        return (self.source.version, self.source.closed, self.source.failed)

    def next_interval(self) -> float:
        """Seconds to wait before the next refresh: at least ``min_interval``, and long
        enough that the last refresh's cost stays within ``budget`` of the time."""
        cost = self._last_cost
        # aim at half the budget: costs vary from one refresh to the next
        return max(self.min_interval, 2 * cost / self.budget)

    def start(self) -> None:
        """Start the refresh thread (once).

        A view over a source that nobody else holds (``vd.open_run(path).dashboard()`` as
        a cell's last line) is kept alive until its source closes, so it keeps following.
        """
        if getattr(self.source, "add_view", None) is None:
            _FOLLOWING.add(self)
        if self._thread is None:
            self._thread = threading.Thread(target=_refresh_loop, args=(weakref.ref(self),),
                                            name="vizdebug-dashboard", daemon=True)
            self._thread.start()

    def __repr__(self) -> str:
        return f"<vizdebug Dashboard over {self.source!r}>"


def _refresh_loop(ref: weakref.ref) -> None:
    """Refresh until the view is gone or its source closed (then once more, and stop).

    While the training loop calls ``log()``, the loop's own thread refreshes the view
    (its messages reach the page at once); this thread covers the gaps: a loop that does
    not log, evaluation, the system panel, the final state.
    """
    while True:
        view = ref()
        if view is None:
            return
        interval = view.next_interval()
        closed = view.source.closed
        logging = time.monotonic() - getattr(view.source, "last_log_at", -1e9) < 2 * interval
        try:
            if closed or not logging:
                view.refresh(force=closed)
        except Exception as exc:  # a broken refresh must not kill the kernel thread
            view._widget.status = f"dashboard refresh failed: {type(exc).__name__}: {exc}"
            _FOLLOWING.discard(view)
            return
        if closed:
            _FOLLOWING.discard(view)
            return
        source = view.source
        del view
        _wait(interval, source)


def _wait(interval: float, source: Any) -> None:
    """Sleep ``interval`` seconds, but wake within half a second when ``source`` closes:
    the last state (closed, failed, interrupted) must not wait for a long throttle."""
    end = time.monotonic() + interval
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(0.5, left))
        if source.closed:
            return
