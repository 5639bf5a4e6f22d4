"""plotly figures of the views' numbers: the way out for users who want their own charts.

Every chart view gives ``to_frame()`` (a ``pandas.DataFrame`` of the numbers it draws) and
``figure()`` (a ``plotly.graph_objects.Figure`` built from that frame, never from the
view's own drawing code), which a user can restyle, save with ``write_html`` /
``write_image`` or put in their own report. plotly is optional: it is imported inside
:func:`plotly_go`, and a missing plotly is a :class:`~vizdebug.errors.VizdebugError` that
names ``pip install plotly``.

The builders here take a frame and the names of its columns; each trace's ``x`` / ``y``
(or ``z``) are that frame's columns, unchanged (NaN stays NaN: plotly draws a gap), so a
figure round-trips its frame.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VizdebugError

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

INSTALL = "pip install plotly  (or: pip install 'vizdebug[plotly]')"


def plotly_go() -> Any:
    """``plotly.graph_objects``, or a VizdebugError naming the install line."""
    try:
        import plotly.graph_objects as go
    except ImportError as exc:
        raise VizdebugError(
            f"figure() builds a plotly figure, and plotly is not installed ({exc}); "
            f"install it with `{INSTALL}`, or use to_frame() for the numbers") from None
    return go


def _values(column: Any) -> np.ndarray:
    return np.asarray(column)


def _layout(go: Any, title: str, x: str, y: str, **extra: Any) -> Any:
    return go.Layout(title={"text": title}, xaxis={"title": {"text": x}},
                     yaxis={"title": {"text": y}}, template="plotly_white", **extra)


def lines_figure(frame: pd.DataFrame, *, x: str, y: str, by: str | None, title: str,
                 y_title: str | None = None, log_y: bool = False) -> go.Figure:
    """One line per value of ``by`` (or one line), in the frame's order."""
    go = plotly_go()
    traces = []
    parts = [(str(name), part) for name, part in frame.groupby(by, sort=False)] if by else \
        [(y, frame)]
    for name, part in parts:
        traces.append(go.Scatter(x=_values(part[x]), y=_values(part[y]), name=name,
                                 mode="lines+markers" if len(part) < 40 else "lines"))
    layout = _layout(go, title, x, y_title or y)
    if log_y:
        layout.yaxis.type = "log"
    return go.Figure(traces, layout)


def band_figure(frame: pd.DataFrame, *, x: str, mid: str, low: str, high: str, by: str,
                title: str, y_title: str) -> go.Figure:
    """Per value of ``by``: a line through ``mid`` and a shaded band from ``low`` to
    ``high`` (two traces, the second filled to the first)."""
    go = plotly_go()
    traces = []
    for i, (name, part) in enumerate(frame.groupby(by, sort=False)):
        group = str(name)
        colour = PALETTE[i % len(PALETTE)]
        xs = _values(part[x])
        traces += [
            go.Scatter(x=xs, y=_values(part[low]), name=f"{group} {low}", legendgroup=group,
                       mode="lines", line={"width": 0, "color": colour}, showlegend=False,
                       meta={"column": low, "group": group}),
            go.Scatter(x=xs, y=_values(part[high]), name=f"{group} {high}", legendgroup=group,
                       mode="lines", line={"width": 0, "color": colour}, fill="tonexty",
                       opacity=0.3, showlegend=False, meta={"column": high, "group": group}),
            go.Scatter(x=xs, y=_values(part[mid]), name=group, legendgroup=group,
                       mode="lines", line={"color": colour}, meta={"column": mid, "group": group}),
        ]
    return go.Figure(traces, _layout(go, title, x, y_title))


def heatmap_figure(frame: pd.DataFrame, *, x: str, y: str, z: str, title: str,
                   log10: bool = False) -> go.Figure:
    """A heat of ``z`` over ``x`` (columns) and ``y`` (rows): the frame pivoted, rows in
    their order of first appearance; with ``log10`` the colour is log10 of ``z``
    (zero and negative values are blank) and the hover shows ``z`` itself."""
    go = plotly_go()
    table = pivot(frame, x=x, y=y, z=z)
    values = table.to_numpy(dtype=float)
    shown = values
    if log10:
        with np.errstate(all="ignore"):
            shown = np.log10(np.where(values > 0, values, np.nan))
    trace = go.Heatmap(x=table.columns.to_numpy(), y=[str(r) for r in table.index], z=shown,
                       customdata=values, colorscale="Viridis",
                       colorbar={"title": {"text": f"log10 {z}" if log10 else z}},
                       hovertemplate=f"%{{y}}<br>{x} %{{x}}<br>{z} %{{customdata:.4g}}"
                                     "<extra></extra>")
    return go.Figure([trace], _layout(go, title, x, y))


def pivot(frame: pd.DataFrame, *, x: str, y: str, z: str) -> pd.DataFrame:
    """``frame`` as a table: rows ``y`` (first-appearance order), columns ``x`` (sorted)."""
    rows = list(dict.fromkeys(frame[y].tolist()))
    table = frame.pivot_table(index=y, columns=x, values=z, aggfunc="last", dropna=False,
                              sort=True)
    return table.reindex(rows)


def bars_figure(frame: pd.DataFrame, *, category: str, values: list[str], title: str,
                horizontal: bool = False, value_title: str = "") -> go.Figure:
    """One bar trace per column of ``values``, grouped by ``category``."""
    go = plotly_go()
    cats = [str(c) for c in frame[category].tolist()]
    traces = []
    for column in values:
        v = _values(frame[column])
        traces.append(go.Bar(y=cats, x=v, name=column, orientation="h") if horizontal else
                      go.Bar(x=cats, y=v, name=column))
    layout = (_layout(go, title, value_title, category) if horizontal else
              _layout(go, title, category, value_title))
    layout.barmode = "group"
    return go.Figure(traces, layout)


def matrix_figure(matrix: np.ndarray, labels: list[str], *, title: str) -> go.Figure:
    """A confusion matrix: rows the true class, columns the predicted one, counts in cells."""
    go = plotly_go()
    trace = go.Heatmap(z=matrix, x=labels, y=labels, colorscale="Blues", text=matrix,
                       texttemplate="%{text}",
                       hovertemplate="true %{y}<br>predicted %{x}<br>%{z}<extra></extra>")
    layout = _layout(go, title, "predicted", "true")
    layout.yaxis.autorange = "reversed"
    return go.Figure([trace], layout)


def points_figure(frame: pd.DataFrame, *, colour: str | None, title: str) -> go.Figure:
    """A 2-D scatter of ``x``/``y``, one trace per value of ``colour`` (or one trace)."""
    go = plotly_go()
    parts = ([(str(name), part) for name, part in frame.groupby(colour, sort=True, dropna=False)]
             if colour else [("points", frame)])
    traces = [go.Scattergl(x=_values(part["x"]), y=_values(part["y"]), name=name,
                           mode="markers", marker={"size": 5},
                           customdata=_values(part["row"]),
                           hovertemplate="row %{customdata}<extra>" + name + "</extra>")
              for name, part in parts]
    layout = _layout(go, title, "x", "y")
    layout.yaxis.scaleanchor = "x"
    return go.Figure(traces, layout)


def subplots_figure(figures: dict[str, go.Figure], title: str) -> go.Figure:
    """Several figures stacked, one row each, each trace keeping its data (and
    ``meta["panel"]`` naming the row it came from)."""
    plotly_go()
    from plotly.subplots import make_subplots

    names = list(figures)
    out = make_subplots(rows=len(names), cols=1, subplot_titles=names, vertical_spacing=0.06)
    for row, name in enumerate(names, start=1):
        for trace in figures[name].data:
            trace.meta = dict(trace.meta or {}, panel=name)
            out.add_trace(trace, row=row, col=1)
        source = figures[name].layout
        out.update_xaxes(title_text=source.xaxis.title.text, row=row, col=1)
        out.update_yaxes(title_text=source.yaxis.title.text, type=source.yaxis.type,
                         row=row, col=1)
    out.update_layout(title={"text": title}, template="plotly_white",
                      height=max(320, 280 * len(names)))
    return out


PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")
