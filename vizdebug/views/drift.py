"""The drift explorer: ranked per-feature tests, overlays and sliders that answer in the browser.

Everything statistical comes from :func:`vizdebug.analysis.drift.compare.analyze_drift`
(time window and buckets included, in memory or streamed); this module only draws the
:class:`~vizdebug.analysis.drift.compare.DriftResult` it returns. The interactive part is a
small script drawing from the precomputed sketches: no plotly.js on the page, no kernel
round trip, so sliders keep working while the kernel trains. Its charts are chart specs
(:mod:`.chart_spec`) drawn by the dashboard's uPlot charts; the static twin draws the same
specs with :mod:`._figure_svg` (:mod:`._drift_figure`). The same script runs in the live
widget (anywidget) and in static HTML; it is the charts' files and three of its own joined
in order (``drift_stats.js``: the browser's approximate statistics, ``drift_plots.js``: the
specs, ``drift.js``: the app), because an anywidget ESM is one module string.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import uuid
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.drift.compare import DriftOptions, DriftResult, analyze_drift
from ..analysis.drift.findings import format_p
from ..findings import findings_html
from ._base import View, live_esm, once_per_page, script_json
from ._display import shown_where_called
from ._drift_figure import overlay_figure
from ._plotly_export import plotly_go
from .view_frames import drift_figure, drift_frame, pick_feature

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.drift.stats import FeatureDrift
    from ..findings import Findings

# in load order: the dashboard's charts (ticks, helpers, frame, uPlot and the uPlot chart;
# not chart_view.js: the drift charts have no export bar), then the explorer's own
_JS_FILES = ("static/chart_ticks.js", "static/chart_core.js", "static/chart_panel.js",
             "static/vendor/uPlot-1.6.32.iife.min.js", "static/chart_uplot.js",
             "static/chart_uplot_view.js", "drift_stats.js", "drift_plots.js", "drift.js")
_CSS_FILE = "static/vendor/uPlot-1.6.32.min.css"
# a page draws the most drifted features only: 10,000 columns drawn in full made a 52.7 MB
# page in 15 s; the statistics of every column stay in .table and .findings
DRAWN_FEATURES = 50
SHOWN_FINDINGS = 40


@cache
def _js_source() -> str:
    """The browser app: its scripts joined in load order (one classic script / one ESM)."""
    here = Path(__file__).parent
    css = json.dumps((here / _CSS_FILE).read_text(encoding="utf-8"))
    return "\n".join([f"const VD_UPLOT_CSS = {css};",
                      *((here / name).read_text(encoding="utf-8") for name in _JS_FILES)])


@cache
def _saved_app() -> tuple[str, str]:
    """A saved page's explorer (the charts, uPlot and the drift app) in one function's
    scope, as (a script block, its entry point's name): a report of several drift views
    keeps the block once (``once_per_page``: uPlot and the app ~100 KB once, not per
    view), and a copy that stays (fragments joined by hand) defines nothing twice."""
    code = _js_source()
    key = "drift" + hashlib.sha1(code.encode("utf-8")).hexdigest()[:10]  # one per version
    block = (f"<script>if(!window.vd_{key})(function(){{\n{code}\n"
             f"window.vd_{key} = {{ vdDriftMount: vdDriftMount }};\n}})();</script>")
    return once_per_page(key, block), f"vd_{key}"


def _to_json(data: Any) -> str:
    """JSON safe to place inside ``<script>``, non-finite numbers as null."""
    return script_json(_finite(data))


def _finite(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else (None if math.isnan(x) else (1e308 if x > 0 else -1e308))
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


class DriftView(View):
    """Per-feature drift between a reference and a current data set.

    Build it with :func:`compare_distributions` (or ``DriftView(analyze_drift(...))``: the
    view stores the :class:`DriftResult` and draws it). ``table`` is ranked by drift,
    ``findings`` holds ``feature-drift`` findings; in a notebook it shows the table, an
    overlay of the selected feature and sliders (bins, significance, effect threshold, time
    window, what-if shift/scale) that redraw in the browser.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> view = compare_distributions({"x": rng.normal(size=300)}, {"x": rng.normal(1, size=300)})
    >>> bool(view.table.loc[0, "drifted"])
    True
    """

    title = "vizdebug: drift"

    def __init__(self, result: DriftResult) -> None:
        self.result = result

    @property
    def results(self) -> list[FeatureDrift]:
        """Per-feature outcomes, most drifted first, each with the sketch the view draws."""
        return self.result.features

    @property
    def alpha(self) -> float:
        """Significance level of the corrected p-values."""
        return self.result.options.alpha

    @property
    def effect_threshold(self) -> float:
        """Smallest effect called drift."""
        return self.result.options.effect_threshold

    @property
    def correction(self) -> str:
        """How p-values were corrected for testing many features."""
        return self.result.options.correction

    @property
    def table(self) -> pd.DataFrame:
        """Features ranked by drift: ``feature``, ``kind``, ``test``, ``statistic``, ``p_value``, ``drifted``, ..."""
        return self.result.table.copy()

    @property
    def findings(self) -> Findings:
        """``feature-drift`` findings with numbers and a hint."""
        return self.result.findings

    @property
    def drifted(self) -> list[str]:
        """Names of the drifted features, most drifted first."""
        return self.result.drifted

    def to_frame(self, feature: str | None = None) -> pd.DataFrame:
        """One feature's overlay as numbers (``None``: the most drifted feature): per bin
        ``bin_low``, ``bin_high`` (or per ``category``), ``ref_count``, ``cur_count``,
        ``ref_share``, ``cur_share``. ``table`` has the tests' numbers of every feature."""
        return drift_frame(pick_feature(self.results, feature))

    def figure(self, feature: str | None = None) -> Any:
        """One feature's overlay as a ``plotly.graph_objects.Figure`` (from
        :meth:`to_frame`); needs plotly.

        Examples
        --------
        >>> view.figure("age").write_html("age.html")   # doctest: +SKIP
        """
        plotly_go()
        r = pick_feature(self.results, feature)
        return drift_figure(r, drift_frame(r))

    def __repr__(self) -> str:
        n, drifted = len(self.results), [r for r in self.results if r.drifted]
        top = ", ".join(f"{r.feature} ({r.effect_metric} {r.effect_size:.3g})" for r in drifted[:10])
        more = f", ... and {len(drifted) - 10:,} more" if len(drifted) > 10 else ""
        return f"DriftView: {len(drifted)} of {n} features drifted" + (f": {top}{more}" if top else "")

    def data(self) -> dict[str, Any]:
        """Everything the browser needs, JSON-ready: settings, ranked features and their sketches."""
        feats = []
        for r in self.results[:DRAWN_FEATURES]:
            row = {c: getattr(r, c) for c in (
                "feature", "kind", "test", "statistic", "p_value", "p_adjusted", "effect_metric",
                "effect_size", "psi", "drifted", "n_ref", "n_cur", "missing_ref", "missing_cur",
                "unseen_share", "ref_summary", "cur_summary", "note")}
            row["sketch"] = r.sketch
            feats.append(row)
        axis = self.result.time
        time = None if axis is None else {
            "edges": [float(e) for e in axis.edges], "is_datetime": axis.is_datetime, "name": axis.name}
        tested = sum(1 for r in self.results if r.p_value == r.p_value)
        return {"alpha": self.alpha, "effect_threshold": self.effect_threshold,
                "correction": self.correction, "features": feats, "time": time,
                "total": len(self.results), "tested": tested, "more_note": self._more_note()}

    def _more_note(self) -> str:
        """What a page that draws only the first features says about the rest ('' if none)."""
        rest = len(self.results) - DRAWN_FEATURES
        if rest <= 0:
            return ""
        return (f"… and {rest:,} more columns, all listed in .table and .findings "
                f"(the page draws the {DRAWN_FEATURES} most drifted)")

    def _static_html(self) -> str:
        # unique across kernel sessions: saved outputs of an earlier run share the page
        div_id = f"vd-drift-{uuid.uuid4().hex[:12]}"
        return (
            f"<h3>{html.escape(repr(self).split(':')[0])}: {len(self.drifted)} of "
            f"{len(self.results)} features drifted</h3>"
            f"{self._findings_html()}"
            f'<div id="{div_id}" class="vd-drift-app">{self._table_html()}{self._static_overlays()}</div>'
            f'<script type="application/json" id="{div_id}-data">{_to_json(self.data())}</script>'
            f"{_saved_app()[0]}<script>(function(){{var app=window.{_saved_app()[1]};"
            f"if(!app)return;var el=document.getElementById('{div_id}');"
            f"var d=JSON.parse(document.getElementById('{div_id}-data').textContent);"
            f"app.vdDriftMount(el,d,null);}})();</script>"
        )

    def _table_html(self) -> str:
        """The ranked table as plain HTML (what shows where scripts do not run)."""
        df = self.table.iloc[:DRAWN_FEATURES]
        cols = ["feature", "kind", "test", "statistic", "p_adjusted", "effect_metric", "effect_size", "psi", "drifted"]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(row[c], c))}</td>" for c in cols) + "</tr>"
            for _, row in df.iterrows()
        )
        note = self._more_note()
        more = f'<tr><td colspan="{len(cols)}" class="vd-note">{html.escape(note)}</td></tr>' if note else ""
        return f'<table class="vd-table vd-drift-table"><tr>{head}</tr>{body}{more}</table>'

    def _findings_html(self) -> str:
        """The findings, the first ``SHOWN_FINDINGS`` of them where there are more."""
        found = list(self.findings)
        if len(found) <= SHOWN_FINDINGS:
            return self.findings.to_html()
        note = (f"… and {len(found) - SHOWN_FINDINGS:,} more findings, all listed in "
                f".findings")
        return findings_html(found[:SHOWN_FINDINGS]) + f'<div class="vd-note">{html.escape(note)}</div>'

    def _static_overlays(self, limit: int = 3) -> str:
        """Overlays of the most drifted features, drawn here for pages without scripts."""
        figures = [
            overlay_figure(r.feature, r.kind, r.sketch,
                           f"({r.effect_metric} {r.effect_size:.3g}{', drifted' if r.drifted else ''})")
            for r in self.results[:limit]
        ]
        return f'<div class="vd-static-plots">{"".join(figures)}</div>'

    def _build_widget(self) -> Any:
        return _widget_class()(data=self.data(), selected=self.results[0].feature if self.results else "",
                               alpha=self.alpha, effect_threshold=self.effect_threshold)


def _cell(v: Any, column: str = "") -> str:
    if column.startswith("p_") and isinstance(v, float) and math.isfinite(v):
        return format_p(v)  # the one rule for p-values, as the browser's fmtP and findings
    if isinstance(v, float):
        return f"{v:.3g}" if math.isfinite(v) else ("–" if math.isnan(v) else str(v))
    return str(v)


@cache
def _widget_class() -> type:
    import anywidget
    import traitlets

    class DriftWidget(anywidget.AnyWidget):
        """The live drift explorer; slider positions are mirrored into traits."""

        _esm = live_esm(_js_source() + "\nexport default { render({ model, el }) { "
                        "vdDriftMount(el, model.get('data'), model); } };\n")
        data = traitlets.Dict().tag(sync=True)
        fallback_id = traitlets.Unicode("").tag(sync=True)  # the static twin to hide
        selected = traitlets.Unicode("").tag(sync=True)
        alpha = traitlets.Float(0.05).tag(sync=True)
        effect_threshold = traitlets.Float(0.1).tag(sync=True)
        bins = traitlets.Int(30).tag(sync=True)
        window = traitlets.List([]).tag(sync=True)
        shift = traitlets.Float(0.0).tag(sync=True)
        scale = traitlets.Float(1.0).tag(sync=True)

        def __init__(self, **kwargs: Any) -> None:
            kwargs["data"] = _finite(kwargs.get("data", {}))
            super().__init__(**kwargs)

    return DriftWidget


def compare_distributions(
    reference: Any, current: Any, *, features: list[str] | None = None, time: Any = None,
    categorical: list[str] | None = None, kinds: dict[str, str] | None = None,
    alpha: float = 0.05, effect_threshold: float = 0.1, correction: str = "holm",
    window: tuple[Any, Any] | None = None, time_buckets: int = 24, progress: bool | None = None,
) -> DriftView:
    """Compare each feature's distribution between ``reference`` and ``current``.

    Parameters
    ----------
    reference, current : DataFrame, dict of arrays, 2-d ndarray or tensor, or a Parquet
        path / pyarrow dataset (streamed in record batches into sketches), or a Dask or
        Spark DataFrame (sketched per partition on its cluster, merged here: the numbers of
        the Parquet path; ``pip install vizdebug[dask]`` / ``vizdebug[spark]``).
    features : the columns to compare (default: all shared columns).
    time : the name of a time column of ``current`` (in memory also an array with one value
        per current row): the view gets a time-window slider and a drift-over-time strip.
        Streamed Parquet needs a column name; its rows are windowed while streaming.
    categorical : columns to treat as categories; ``kinds`` overrides any feature's kind
        (``numeric``, ``categorical``, ``boolean``, ``datetime``).
    alpha, correction : significance after correcting for many features (``holm``,
        ``bonferroni``, ``bh`` or ``none``).
    effect_threshold : the smallest effect called drift (normed Wasserstein for numbers,
        Jensen-Shannon distance for categories).
    window : ``(start, end)`` of ``time`` to keep from the current data (either may be None);
        ``start <= time < end``, in memory and streamed alike.
    time_buckets : how many equal-width time buckets the slider moves over.
    progress : data streamed for more than 2 s shows its progress; False turns that off
        (so does ``VIZDEBUG_PROGRESS=0``).

    Returns
    -------
    DriftView

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> ref = pd.DataFrame({"a": rng.normal(size=1000), "b": rng.choice(list("xyz"), 1000)})
    >>> cur = pd.DataFrame({"a": rng.normal(0.5, size=1000), "b": rng.choice(list("xyz"), 1000)})
    >>> compare_distributions(ref, cur).drifted
    ['a']
    """
    options = DriftOptions(features=features, categorical=categorical, kinds=kinds, alpha=alpha,
                           effect_threshold=effect_threshold, correction=correction, time=time,
                           window=window, time_buckets=time_buckets)
    return shown_where_called(DriftView(analyze_drift(reference, current, options,
                                                      progress=progress)))
