"""The chart spec: one chart as the views build it, documented once.

The dashboard's panels (:mod:`._dashboard_figure`), a stored run's dashboard, the
compare-runs chart (:mod:`._compare_figure`), the drift explorer's overlays and its
drift-over-time strip (:mod:`._drift_figure` here, ``drift_plots.js`` in the browser, where
the sliders rebuild them) and the embedding timeline's quality curve are built as these
dicts; the live chart (``static/chart_uplot*.js`` on uPlot) and the static renderer
(:mod:`._figure_svg`) both draw them, so
what each reads is written here and nowhere else. The keys are a small subset of plotly's
figure schema (a ``figure()`` can hand a chart to plotly as it is); a key outside it is
refused by the JSON schema beside this module, ``chart_spec.schema.json``, which the tests
hold every chart the views produce to (``tests/test_chart_spec.py``), and which lists
what each key means.

Text in a spec (``name``, titles, notes) is already escaped for HTML (plotly's
pseudo-HTML: ``<b>``, ``<br>``, ``<span style='color:...'>`` and escaped text); numbers
that are missing or not finite are ``null`` (a break in a line, a blank cell). Ticks and
number formats (``tickformat``: ``"~g"`` or ``".0%"``) are :mod:`._ticks` in Python and
``static/chart_ticks.js`` in the browser.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypedDict

import numpy as np

__all__ = ["SCHEMA_PATH", "Annotation", "Axis", "BarTrace", "ChartSpec", "HeatmapTrace",
           "Layout", "ScatterTrace", "Shape", "clean", "schema"]


def clean(values: Any) -> list[float | None]:
    """Numbers as a spec holds them: floats, NaN and inf as ``None`` (a gap in a line, a
    blank cell). The one home of that rule for every chart the views build.

    >>> clean([1, float("nan"), float("inf"), 2.5])
    [1.0, None, None, 2.5]
    """
    return [float(v) if math.isfinite(v) else None
            for v in np.asarray(values, dtype=float).ravel().tolist()]

SCHEMA_PATH = Path(__file__).with_name("chart_spec.schema.json")

Numbers = list[float | None]
Texts = list[str | None]


class Axis(TypedDict, total=False):
    """``xaxis``; ``yaxis`` (left), ``yaxis2`` (right, ``overlaying: "y"``), ``yaxis3``
    (a strip under the curves); categories when the traces' values are strings."""

    title: dict[str, str]
    type: Literal["linear", "log"]
    range: list[float]
    autorange: bool | str  # False: keep ``range``; "reversed": categories top down
    domain: list[float]
    anchor: str
    overlaying: str
    side: Literal["left", "right"]
    tickformat: str | None  # "~g" (default) or ".0%"
    nticks: int | None
    tickmode: str
    tickvals: Numbers  # with ticktext: the ticks drawn (dates, category names by index)
    ticktext: Texts
    tickfont: dict[str, Any]
    gridcolor: str
    showgrid: bool
    zeroline: bool
    fixedrange: bool
    ticklabeloverflow: str
    visible: bool  # False: no axis (an empty panel)


class _Trace(TypedDict, total=False):
    name: str
    xaxis: str
    yaxis: str
    hovertemplate: str
    hoverinfo: str
    showlegend: bool
    legendgroup: str
    visible: bool | str
    opacity: float
    meta: dict[str, bool]  # raw: a logged curve; smooth: its smoothed twin


class ScatterTrace(_Trace, total=False):
    """A line and/or markers over steps; a ``None`` in ``y`` breaks the line."""

    type: Literal["scatter"]
    mode: Literal["lines", "markers", "lines+markers", "text"]
    x: Numbers
    y: Numbers
    text: Texts
    line: dict[str, Any]  # color, width, dash ("solid", "dot", "dash")
    marker: dict[str, Any]  # color, size, symbol
    fill: Literal["toself", "none"]


class HeatmapTrace(_Trace, total=False):
    """Rows of categories (``y``) over steps (``x``); ``None`` in ``z``: not sampled."""

    type: Literal["heatmap"]
    x: Numbers
    y: Texts
    z: list[Numbers]
    colorscale: str | list[Any]
    showscale: bool
    colorbar: dict[str, Any]


class BarTrace(_Trace, total=False):
    """Bars. ``orientation="h"``: one per category (``y``) along ``x``, grouped with the
    other bar traces. ``"v"``: one per ``x`` (a number: a histogram bin's centre, or a
    category's index named by the x axis's ``tickvals``/``ticktext``) up to ``y``, ``width``
    wide in x units; the traces overlaid (``layout.barmode="overlay"``, a histogram of two
    distributions) or side by side in each slot (``"group"``)."""

    type: Literal["bar"]
    orientation: Literal["h", "v"]
    x: Numbers
    y: list[str | float | None]  # h: the categories; v: the heights
    width: float
    text: Texts  # v: each bar's hover text
    customdata: Texts
    marker: dict[str, Any]


class Shape(TypedDict, total=False):
    """A mark across the chart. ``line`` with ``xref="x"``, ``yref="paper"``: a vertical
    mark at ``x0`` (an epoch boundary, the current frame); with ``xref="paper"``,
    ``yref="y"``: a reference level at ``y0`` (a threshold). ``rect`` (``xref="x"``,
    ``yref="paper"``): a box from ``x0`` to ``x1`` filled with ``fillcolor`` (a window)."""

    type: Literal["line", "rect"]
    xref: str
    yref: str
    x0: float | None
    x1: float | None
    y0: float | None
    y1: float | None
    layer: str
    line: dict[str, Any]
    fillcolor: str
    opacity: float


class Annotation(TypedDict, total=False):
    """A note in words over the chart (pseudo-HTML, escaped)."""

    text: str
    x: float | None
    y: float | None
    xref: str
    yref: str
    xanchor: str
    yanchor: str
    showarrow: bool
    font: dict[str, Any]


class Layout(TypedDict, total=False):
    title: dict[str, Any]
    height: float
    margin: dict[str, float]
    xaxis: Axis
    yaxis: Axis
    yaxis2: Axis
    yaxis3: Axis
    shapes: list[Shape]
    annotations: list[Annotation]
    legend: dict[str, Any]
    showlegend: bool
    barmode: Literal["group", "overlay"]
    hovermode: str | bool
    plot_bgcolor: str
    uirevision: str | int


class ChartSpec(TypedDict):
    """One chart: its traces and its layout."""

    data: list[ScatterTrace | HeatmapTrace | BarTrace]
    layout: Layout


@cache
def schema() -> dict[str, Any]:
    """The JSON schema of :class:`ChartSpec` (``chart_spec.schema.json``)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
