"""The live widget of :class:`~vizdebug.views.compare.CompareRuns`: the controls (metric,
group, filter, baseline) are answered by the kernel, which redraws the chart and table; the
table sorts in the browser (it works while the kernel is busy). The runs' diagnoses are
computed in a background thread and fill the table's findings columns as they come."""

from __future__ import annotations

import threading
import time
import weakref
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from ._base import CSS, live_esm

_STATIC = Path(__file__).with_name("static")
REDRAW_EVERY = 1.0  # seconds between table redraws while the diagnoses come in


@cache
def _js() -> str:
    return (_STATIC / "compare_widget.js").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def widget_class() -> type:
    """The anywidget class (built once, when a front end asks for it)."""
    import anywidget
    import traitlets

    class CompareWidget(anywidget.AnyWidget):
        _esm = live_esm(_js())
        _css = CSS  # the tables' and notes' look, as in the static twin
        fallback_id = traitlets.Unicode("").tag(sync=True)
        body_html = traitlets.Unicode("").tag(sync=True)
        status = traitlets.Unicode("").tag(sync=True)
        metrics = traitlets.List(traitlets.Unicode()).tag(sync=True)
        config_keys = traitlets.List(traitlets.Unicode()).tag(sync=True)
        runs = traitlets.List(traitlets.Unicode()).tag(sync=True)
        metric = traitlets.Unicode("").tag(sync=True)
        group_by = traitlets.Unicode("").tag(sync=True)
        query = traitlets.Unicode("").tag(sync=True)
        baseline = traitlets.Unicode("").tag(sync=True)

    return CompareWidget


def _redraw(view: Any, widget: Any) -> None:
    try:
        widget.body_html = f'<div class="vd-view">{view._body(with_findings=True)}</div>'
    except Exception as exc:  # a run file changed under us: say so, keep the widget
        widget.status = f"could not redraw: {type(exc).__name__}: {exc}"[:300]


def build_widget(view: Any) -> Any:
    """The widget of ``view``, wired both ways, with its diagnoses started."""
    keys = sorted({k for e in view.entries for k in e.config})
    widget = widget_class()(metrics=view.metrics, config_keys=keys,
                            runs=[e.name for e in view.entries], metric=view.metric,
                            group_by=view.group_by or "", query=view.query,
                            baseline=view.baseline or "")
    ref = weakref.ref(view)

    def changed(_: Any) -> None:
        target = ref()
        if target is None:
            return
        target.metric = widget.metric or target.metric
        target.group_by = widget.group_by or None
        target.query = widget.query
        target.baseline = widget.baseline or None
        _redraw(target, widget)

    widget.observe(changed, names=["metric", "group_by", "query", "baseline"])
    widget.body_html = f'<div class="vd-view">{view._body(with_findings=False)}</div>'
    threading.Thread(target=_diagnose, args=(ref, widget), daemon=True,
                     name="vizdebug-compare").start()
    return widget


def _diagnose(ref: weakref.ref, widget: Any) -> None:
    """Each run's findings, one at a time; the table is redrawn at most every second."""
    view = ref()
    names = [e.name for e in view.entries] if view is not None else []
    del view
    last = time.monotonic()
    for i, name in enumerate(names):
        view = ref()
        if view is None:
            return
        view.run_findings(name)
        widget.status = f"diagnosing runs: {i + 1} of {len(names)}"
        if time.monotonic() - last > REDRAW_EVERY:
            _redraw(view, widget)
            last = time.monotonic()
        del view
    view = ref()
    if view is not None:
        widget.status = f"{len(names)} runs diagnosed"
        _redraw(view, widget)
