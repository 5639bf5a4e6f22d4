"""The training dashboard as five small plotly figures (dicts), built from TrainingRecords.

Pure: records in, ``{panel: {"data": [...], "layout": {...}}}`` out, used by the live
widget (one plot per panel, each redrawn only when its own data changed) and by the
static HTML. The panels: learning curves (:mod:`._dashboard_curves`), the per-parameter
gradient-norm heatmap, activation health, data wait vs compute, and the system. Each
panel has its own legend or none, so no key sits in another panel's way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.training.activations import BOUNDED, SATURATION, UNIT_LOW, UNIT_RANGE
from ..analysis.training.saturation import shown_saturation
from ..records import TrainingRecords
from ._dashboard_curves import (
    MAX_POINTS,
    curve_traces,
    curves_layout,
    epoch_marks,
    label,
    nonfinite_words,
    nothing_finite,
    off_scale_note,
    stable_downsample,
    stable_width,
)
from ._figure_svg import CAPTION_BELOW
from .chart_spec import clean

__all__ = ["MAX_COLUMNS", "MAX_POINTS", "PANELS", "dashboard_panels", "epoch_marks",
           "twin_figure"]

MAX_COLUMNS = 160
PANELS = ("curves", "grads", "health", "timing", "system")
ZERO_GRAD = "#e57373"
_AXIS = {"gridcolor": "#eee", "zeroline": False, "nticks": 6, "tickformat": "~g",
         "ticklabeloverflow": "allow"}


def _stable_bucket_max(matrix: np.ndarray, max_columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns reduced to at most ``max_columns`` by their max, in power-of-two buckets
    aligned at the first column (a new column changes only the last bucket); NaN wins."""
    n = matrix.shape[1]
    width = stable_width(n, max_columns)
    nb = -(-n // width)
    padded = np.full((matrix.shape[0], nb * width), -np.inf)
    padded[:, :n] = np.where(np.isnan(matrix), -np.inf, matrix)
    reduced = padded.reshape(matrix.shape[0], nb, width).max(axis=2)
    nan = np.zeros(padded.shape, dtype=bool)
    nan[:, :n] = np.isnan(matrix)
    reduced[nan.reshape(matrix.shape[0], nb, width).any(axis=2)] = np.nan
    return np.arange(nb) * width, reduced


def heatmap_traces(rec: TrainingRecords) -> list[dict[str, Any]]:
    """log10 of each parameter's gradient norm over sampled steps; an exactly zero
    gradient is its own colour (labelled "0"), not a blank like a missing sample."""
    if rec.grads.shape[0] == 0:
        return []
    starts, reduced = _stable_bucket_max(rec.grad("grad_norm").T, MAX_COLUMNS)
    x = [int(s) for s in rec.grad_steps[starts]]
    y = [label(p) for p in rec.param_paths]
    with np.errstate(all="ignore"):
        z = np.log10(np.where(reduced > 0, reduced, np.nan))
    common = {"type": "heatmap", "x": x, "y": y, "xaxis": "x", "yaxis": "y"}
    zero = np.where(reduced == 0, 0.0, np.nan)
    heat = [dict(common, z=[clean(row) for row in z], colorscale="Viridis", name="log10 |g|",
                 colorbar={"title": {"text": "log10 |g|", "side": "right"}, "thickness": 10,
                           "len": 1.0, "tickformat": "~g", "nticks": 6},
                 hovertemplate="%{y}<br>step %{x}<br>log10 |g| %{z:.2f}<extra></extra>")]
    if (reduced == 0).any():  # drawn over the blanks that are zeros, not missing samples
        heat.append(dict(common, z=[clean(row) for row in zero], showscale=False, name="zero",
                         colorscale=[[0, ZERO_GRAD], [1, ZERO_GRAD]],
                         hovertemplate="%{y}<br>step %{x}<br>gradient exactly 0<extra></extra>"))
    return heat


def saturation_meaning(module_class: str) -> str:
    """What "saturated" counts for an output of this module class (the same thresholds
    as :mod:`vizdebug.analysis.training.activations`)."""
    if module_class in UNIT_RANGE:
        return f"outputs below {UNIT_LOW:g} or above {1 - UNIT_LOW:g} (flat ends of {module_class})"
    if module_class in BOUNDED:
        return f"|output| > {BOUNDED[module_class]:g} (flat ends of {module_class})"
    return (f"|output| > {SATURATION:g}: {module_class} has no flat region, but values this "
            "large saturate a tanh/sigmoid that follows")


def health_traces(rec: TrainingRecords) -> list[dict[str, Any]]:
    """Latest sampled dead / saturated / exactly-zero share per leaf module."""
    if rec.activations.shape[0] == 0:
        return []
    latest = rec.activations[-1]
    ok = np.isfinite(latest[:, 0]) | (latest[:, 5] > 0)
    classes = [c for c, keep in zip(rec.module_classes, ok) if keep]
    paths = [label(f"{p} ({c})") for p, c, keep in
             zip(rec.module_paths, rec.module_classes, ok) if keep]
    # a share of large values is saturation only where a bounded activation reads it
    # (analysis/training/saturation.py): the logits layer's is not drawn
    shown = shown_saturation(rec)[ok]
    out = []
    for column, name, colour in ((3, "dead units", "#c62828"), (4, "saturated", "#ff7f0e"),
                                 (2, "exact zeros", "#90a4ae")):
        why = ([label(saturation_meaning(c)) for c in classes] if column == 4 else
               ["units with no output over the whole batch" if column == 3 else
                "outputs exactly 0"] * len(classes))
        values = shown if column == 4 else latest[ok, column]
        out.append({"type": "bar", "orientation": "h", "y": paths, "x": clean(values),
                    "name": name, "marker": {"color": colour}, "xaxis": "x", "yaxis": "y",
                    "customdata": why,
                    "hovertemplate": f"%{{y}}<br>{name}: %{{x:.0%}}<br>%{{customdata}}<extra></extra>"})
    return out


def timing_traces(rec: TrainingRecords) -> list[dict[str, Any]]:
    """Milliseconds waiting for data vs computing, per batch (recent batches)."""
    t = rec.loader
    if not len(t.wait):
        return []
    out = []
    for key, name, colour in (("wait", "data wait", "#c62828"), ("compute", "compute", "#1565c0")):
        ms = 1000 * np.asarray(getattr(t, key), dtype=float)
        idx = np.arange(t.batches - ms.size, t.batches)
        x, y = stable_downsample(idx, ms, 600)
        out.append({"type": "scatter", "mode": "lines", "xaxis": "x", "yaxis": "y",
                    "x": clean(x), "y": clean(y), "name": name,
                    "line": {"color": colour, "width": 1}})
    return out


def system_traces(system: np.ndarray) -> list[dict[str, Any]]:
    """Process RSS (MiB) and CPU %, plus GPU memory when CUDA is in use."""
    if system.shape[0] == 0:
        return []
    t = clean(system[:, 0] - system[0, 0])
    common = {"type": "scatter", "mode": "lines", "xaxis": "x"}
    out = [dict(common, x=t, y=clean(system[:, 2]), yaxis="y", name="RSS MiB",
                line={"color": "#6a1b9a"}),
           dict(common, x=t, y=clean(system[:, 1]), yaxis="y2", name="CPU %",
                line={"color": "#00897b", "dash": "dot"})]
    if np.isfinite(system[:, 3]).any():
        out.append(dict(common, x=t, y=clean(system[:, 3]), yaxis="y", name="GPU MiB",
                        line={"color": "#ef6c00"}))
    return out


def _layout(title: str, height: int, left: int = 60, right: int = 20,
            **extra: Any) -> dict[str, Any]:
    """A panel's layout: its title top left, fixed margins, the zoom kept across refreshes."""
    return {"height": height, "margin": {"l": left, "r": right, "t": 34, "b": 40},
            "title": {"text": title, "x": 0, "xref": "paper", "xanchor": "left", "y": 1,
                      "yref": "container", "yanchor": "top", "pad": {"t": 8},
                      "font": {"size": 13}},
            "uirevision": "vizdebug", "hovermode": "closest", "showlegend": False,
            "plot_bgcolor": "#fff", **extra}


def _panel_layouts(rec: TrainingRecords, panels: dict[str, list]) -> dict[str, dict]:
    t = rec.loader
    total = t.total_wait + t.total_compute
    wait = f" ({t.total_wait / total:.0%} of the time)" if total > 0 else ""
    n_rows = max(len(rec.param_paths), len(panels["health"][0]["y"]) if panels["health"] else 0)
    row_height = max(260, 70 + 16 * n_rows)
    long_name = max([len(p) for p in rec.param_paths] + [len(p) for p in rec.module_paths] + [4])
    left = int(min(260, 30 + 6.5 * long_name))
    return {
        "grads": _layout("<b>Gradient norm per parameter</b> <span style='color:#777'>(log10;"
                         f" <span style='color:{ZERO_GRAD}'>■</span> = exactly 0)</span>",
                         row_height, left, xaxis=dict(_AXIS, title={"text": "step"}),
                         yaxis=dict(_AXIS, autorange="reversed", tickfont={"size": 10},
                                    nticks=None, tickformat=None)),
        "health": _layout("<b>Activation health</b> <span style='color:#777'>(latest sample;"
                          " hover: what it counts)</span>", row_height, left,
                          barmode="group", showlegend=True,
                          legend={"orientation": "h", "x": 0, "y": -0.12, "yanchor": "top",
                                  "font": {"size": 11}},
                          xaxis=dict(_AXIS, range=[0, 1], tickformat=".0%", autorange=False),
                          yaxis=dict(_AXIS, autorange="reversed", tickfont={"size": 10},
                                     nticks=None, tickformat=None)),
        "timing": _layout(f"<b><span style='color:#c62828'>Data wait</span>{wait} vs "
                          "<span style='color:#1565c0'>compute</span></b>, ms per batch", 240,
                          xaxis=dict(_AXIS, title={"text": "batch"}),
                          yaxis=dict(_AXIS, title={"text": "ms"})),
        "system": _layout("<b>System: <span style='color:#6a1b9a'>RSS MiB</span>, "
                          "<span style='color:#00897b'>CPU % (dotted)</span></b>", 240, right=60,
                          xaxis=dict(_AXIS, title={"text": "seconds"}),
                          yaxis=dict(_AXIS, title={"text": "MiB"}),
                          yaxis2=dict(_AXIS, overlaying="y", side="right", showgrid=False,
                                      tickmode="auto",
                                      title={"text": "CPU %"})),
    }


# An empty panel says why it is empty and what fills it.
_EMPTY = {
    "curves": "Nothing logged yet: call session.log(loss=loss) in the loop",
    "grads": "No gradients sampled yet<br>(they come with the first sampled backward)",
    "health": "No activations sampled yet",
    "timing": "No loader tapped:<br>watch(model, loader=train_loader)",
    "system": "No system samples yet (one per second)",
}


def dashboard_panels(rec: TrainingRecords, system: np.ndarray,
                     smoothing: float = 0.6) -> dict[str, dict[str, Any]]:
    """The dashboard as one small plotly figure per panel, in :data:`PANELS` order.

    Examples
    --------
    >>> rec = TrainingRecords(scalars={"loss": (np.arange(3), np.array([2.0, np.nan, 1.0]))})
    >>> panels = dashboard_panels(rec, np.empty((0, 4)))
    >>> list(panels), [t["name"] for t in panels["curves"]["data"]]
    (['curves', 'grads', 'health', 'timing', 'system'], ['loss', 'loss', 'loss non-finite'])
    """
    curves, bounds = curve_traces(rec, smoothing)
    data = {"curves": curves, "grads": heatmap_traces(rec), "health": health_traces(rec),
            "timing": timing_traces(rec), "system": system_traces(system)}
    layouts = _panel_layouts(rec, data)
    note = off_scale_note(curves, bounds)  # the range says what it leaves out
    title = "<b>Learning curves</b>" + (f" <span style='color:#777'>· {note}</span>" if note else "")
    layouts["curves"] = _layout(title, 340, right=60, **curves_layout(rec, curves, bounds))
    words = {name: _EMPTY[name] for name, traces in data.items() if not traces}
    words.update(_nothing_to_draw(rec, data))
    for name, text in words.items():
        data[name] = []
        layouts[name].pop("shapes", None)
        layouts[name]["annotations"] = [
            {"text": text, "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper",
             "showarrow": False, "font": {"size": 12, "color": "#777"}}]
        layouts[name]["xaxis"] = dict(layouts[name].get("xaxis", {}), visible=False)
        layouts[name]["yaxis"] = dict(layouts[name].get("yaxis", {}), visible=False)
    return {name: {"data": data[name], "layout": layouts[name]} for name in PANELS}


def _nothing_to_draw(rec: TrainingRecords, data: dict[str, list]) -> dict[str, str]:
    """Panels that have traces but not one finite value to draw, and what to say instead:
    an axis fitted to no values is invented (made-up ticks round a made-up level), and an
    all-grey heatmap or a row of empty bars reads as "nothing wrong"."""
    out = {}
    curves = nothing_finite(rec, data["curves"])
    if curves:
        out["curves"] = curves
    if data["grads"] and not np.isfinite(rec.grad("grad_norm")).any():
        out["grads"] = nonfinite_words("gradient norms", rec.grad("grad_norm"),
                                       "sampled values")
    if data["health"] and not np.isfinite(rec.act("mean")[-1]).any():
        step = int(rec.act_steps[-1]) if len(rec.act_steps) else 0
        out["health"] = f"activations: the latest sample (step {step}) is NaN/inf everywhere"
    return out


def twin_figure(panel: dict[str, Any]) -> dict[str, Any]:
    """A panel as the static twin's SVG (``_figure_svg``) draws it: the title as a note
    above the plot, room on the right for the legend (none when the panel has none), the
    curves clamped to the robust range, non-finite crosses along its top edge."""
    layout = dict(panel["layout"])
    title = (layout.pop("title", None) or {}).get("text", "")
    notes = [n for n in layout.get("annotations") or [] if n.get("xref") == "paper"]
    notes.append({"text": title, "x": 0, "y": 1.0, "xref": "paper", "yref": "paper",
                  "xanchor": "left", "font": {"size": 13}})
    margin = dict(layout.get("margin") or {})
    margin["t"] = max(margin.get("t", 30), 40)
    if any(t.get("type") == "heatmap" for t in panel["data"]):  # the colour key's line
        margin["b"] = max(margin.get("b", 40), CAPTION_BELOW + 10)
    if layout.get("showlegend"):
        margin["r"] = max(margin.get("r", 20), 150)
    layout.update(annotations=notes, margin=margin)
    if layout.pop("yaxis3", None) is not None:  # the non-finite band
        layout["yaxis"] = dict(layout["yaxis"], domain=[0, 1])
    lo, hi = _twin_bounds(panel["data"], layout.get("yaxis") or {})
    data = []
    for trace in panel["data"]:
        if trace.get("visible") == "legendonly":  # the learning rates: not in a picture
            continue
        trace = dict(trace, showlegend=bool(layout.get("showlegend")) and
                     trace.get("showlegend", True))
        if trace.get("yaxis") == "y3":
            trace.update(yaxis="y", y=[hi] * len(trace.get("y") or []))
        elif trace.get("yaxis", "y") == "y" and trace.get("type", "scatter") == "scatter":
            trace["y"] = [v if v is None else min(max(v, lo), hi) for v in trace.get("y") or []]
        data.append(trace)
    return {"data": data, "layout": layout}


def _twin_bounds(data: list[dict[str, Any]], yaxis: dict[str, Any]) -> tuple[float, float]:
    if yaxis.get("range"):
        return tuple(yaxis["range"])
    values = [v for t in data if t.get("yaxis", "y") == "y" and t.get("type", "scatter") ==
              "scatter" for v in t.get("y") or [] if isinstance(v, (int, float))]
    return (min(values), max(values)) if values else (0.0, 1.0)
