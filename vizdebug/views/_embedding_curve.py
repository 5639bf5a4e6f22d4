"""The embedding timeline's quality curve: its chart spec (:mod:`.chart_spec`), drawn by
the static twin with :func:`._figure_svg.figure_svg` and built again in the browser by
``static/embedding_timeline.js`` (``vdtCurveSpec``, as the slider moves; the chart is the
dashboard's uPlot one), its numbers as a frame, and the spec handed to plotly."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from ._figure_svg import figure_svg
from ._plotly_export import plotly_go

if TYPE_CHECKING:
    import pandas as pd

    from ..analysis.embeddings.frames import Timeline

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c")


def curve_spec(series: dict[str, list[float | None]], steps: list[int],
               current: int) -> dict[str, Any]:
    """The per-frame figures in [0, 1] (one line per series over the frames' steps, the
    ``current`` frame marked) as a chart spec; names escaped.

    >>> spec = curve_spec({"kNN": [0.5, 0.9]}, [0, 100], 1)
    >>> [t["name"] for t in spec["data"]], spec["layout"]["shapes"][0]["x0"]
    (['kNN', 'kNN'], 100)
    """
    traces, now = [], []
    at = steps[current] if 0 <= current < len(steps) else None
    for k, (name, values) in enumerate(series.items()):
        colour, label = COLOURS[k % len(COLOURS)], html.escape(name)
        ys = [None if v is None or v != v else float(v) for v in values]
        traces.append({"type": "scatter", "mode": "lines", "name": label, "x": steps[:len(ys)],
                       "y": ys, "line": {"color": colour, "width": 1.5},
                       "hovertemplate": "step %{x}: %{y}"})
        v = ys[current] if 0 <= current < len(ys) else None
        traces.append({"type": "scatter", "mode": "markers", "name": label, "showlegend": False,
                       "hoverinfo": "skip", "x": [at], "y": [v],
                       "marker": {"color": colour, "size": 7}})
        now.append(f"{label} {v:.3f}" if v is not None else f"{label} –")
    shapes = [] if at is None else [{"type": "line", "xref": "x", "yref": "paper", "x0": at,
                                     "x1": at, "y0": 0, "y1": 1,
                                     "line": {"color": "#d62728", "dash": "solid"}}]
    return {"data": traces, "layout": {
        "height": 150, "margin": {"l": 34, "r": 8, "t": 26, "b": 24}, "showlegend": True,
        "legend": {"orientation": "h"}, "shapes": shapes,
        "title": {"text": f"step {at}: " + " · ".join(now) if at is not None else ""},
        "xaxis": {}, "yaxis": {"range": [0, 1.02]}}}


def curve_html(series: dict[str, list[float | None]], steps: list[int], current: int) -> str:
    """The curve drawn from its spec for the static twin, the frame's figures under it."""
    spec = curve_spec(series, steps, current)
    return (f'<div class="vd-emb-curve" style="width:320px;background:#fff;color:#222">'
            f'{figure_svg(spec, width=320)}<div class="vd-note">'
            f'{spec["layout"]["title"]["text"]}</div></div>')


def curve_frame(timeline: Timeline, curve: dict[str, list[float | None]]) -> pd.DataFrame:
    """Per frame: ``step``, ``epoch`` and the figures measured so far (``knn``, ``trust``,
    ``rank``, ``spread``; missing while the background work has not reached a frame)."""
    import pandas as pd

    n = len(timeline.steps)
    columns = {"step": list(timeline.steps), "epoch": list(timeline.epochs)}
    for name, values in curve.items():
        columns[name] = [float(v) if v is not None else float("nan") for v in values[:n]] + \
            [float("nan")] * max(0, n - len(values))
    return pd.DataFrame(columns)


def curve_figure(series: dict[str, list[float | None]], steps: list[int], current: int) -> Any:
    """The curve's spec (a subset of plotly's figure schema) as a plotly Figure."""
    go = plotly_go()
    spec = curve_spec(series, steps, current)
    spec["layout"]["title"]["text"] = "embedding quality: " + spec["layout"]["title"]["text"]
    return go.Figure(spec)
