"""The training dashboard as ONE plotly figure (a dict), built from TrainingRecords.

Pure: records in, a JSON-ready ``{"data": [...], "layout": {...}}`` out, used by the live
widget (which smooths and rescales it in the browser) and by the static HTML. Five panels
share the figure: learning curves, the per-layer gradient-norm heatmap, activation health,
data-wait vs compute, and the system. Curves are downsampled with min/max buckets, so
spikes survive; non-finite points are drawn as red crosses so a NaN is never invisible.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from ..analysis.curves import bucket_max, downsample, ema_smooth
from ..records import TrainingRecords

MAX_POINTS = 1500
MAX_COLUMNS = 160
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
            "#17becf", "#7f7f7f", "#bcbd22")
_EVAL = ("val_", "valid_", "validation_", "test_", "eval_")
_HIDDEN = ("epoch", "lr")


def _clean(values: np.ndarray) -> list[float | None]:
    """JSON-safe numbers: NaN and inf become ``None`` (a gap in the line)."""
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, dtype=float)]


def _label(text: str) -> str:
    """A user string as plotly text: escaped, so plotly's pseudo-HTML shows it literally."""
    return html.escape(str(text)).replace("%{", "%\u200b{")


def _is_ratio(name: str) -> bool:
    return any(k in name for k in ("acc", "f1", "precision", "recall", "auc"))


def _base_name(name: str) -> str:
    for prefix in _EVAL:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def curve_traces(rec: TrainingRecords, smoothing: float = 0.6) -> list[dict[str, Any]]:
    """Raw + smoothed line per metric; val_* share their training twin's colour."""
    names = [n for n in rec.scalars if n not in _HIDDEN]
    colours: dict[str, str] = {}
    traces: list[dict[str, Any]] = []
    for name in names:
        base = _base_name(name)
        colour = colours.setdefault(base, _PALETTE[len(colours) % len(_PALETTE)])
        steps, values = rec.scalars[name]
        x, y = downsample(steps, values, MAX_POINTS) if steps.size else (steps, values)
        axis = "y6" if _is_ratio(name) else "y"
        is_eval = name.startswith(_EVAL)
        line = {"color": colour, "width": 2 if is_eval else 1, "dash": "dot" if is_eval else "solid"}
        raw = {"type": "scatter", "x": _clean(x), "y": _clean(y),
               "name": _label(name), "legendgroup": _label(name), "yaxis": axis, "xaxis": "x",
               "mode": "lines+markers" if is_eval or x.size < 30 else "lines", "line": line,
               "opacity": 1.0 if is_eval else 0.35, "meta": {"raw": True}}
        traces.append(raw)
        if not is_eval:
            smooth = dict(raw, y=_clean(ema_smooth(y, smoothing)), opacity=1.0,
                          showlegend=False, mode="lines", meta={"smooth": True},
                          line=dict(line, width=2), hoverinfo="skip")
            traces.append(smooth)
        traces.extend(_nonfinite_markers(name, x, y, axis))
    return traces


def _nonfinite_markers(name: str, x: np.ndarray, y: np.ndarray, axis: str) -> list[dict]:
    bad = ~np.isfinite(y)
    if not bad.any():
        return []
    finite = y[~bad]
    top = float(finite.max()) if finite.size else 1.0
    labels = ["NaN" if np.isnan(v) else ("+inf" if v > 0 else "-inf") for v in y[bad]]
    return [{"type": "scatter", "x": _clean(x[bad]), "y": [top] * int(bad.sum()),
             "mode": "markers", "marker": {"symbol": "x", "color": "#c62828", "size": 9},
             "name": f"{_label(name)} non-finite", "yaxis": axis, "xaxis": "x",
             "text": labels, "hovertemplate": "step %{x}: %{text}<extra>" + _label(name)
             + "</extra>"}]


def epoch_marks(rec: TrainingRecords) -> list[int]:
    """Steps where a new epoch starts (from a logged ``epoch``, else val_* logging)."""
    if "epoch" in rec.scalars:
        steps, values = rec.scalars["epoch"]
        change = np.flatnonzero(np.diff(values) != 0) + 1
        return [int(s) for s in steps[change]]
    evals = [n for n in rec.scalars if n.startswith(_EVAL)]
    if not evals:
        return []
    return [int(s) for s in rec.scalars[evals[0]][0][:-1]]


def heatmap_trace(rec: TrainingRecords) -> list[dict[str, Any]]:
    """log10 of each parameter's gradient norm over sampled steps."""
    if rec.grads.shape[0] == 0:
        return []
    norms = rec.grad("grad_norm").T  # params x samples
    starts, reduced = bucket_max(norms, MAX_COLUMNS)
    with np.errstate(all="ignore"):
        z = np.log10(np.where(reduced > 0, reduced, np.nan))
    return [{"type": "heatmap", "x": [int(s) for s in rec.grad_steps[starts]],
             "y": [_label(p) for p in rec.param_paths], "z": [_clean(row) for row in z],
             "colorscale": "Viridis", "xaxis": "x2", "yaxis": "y2", "showscale": True,
             "colorbar": {"title": {"text": "log10 |g|"}, "len": 0.22, "y": 0.41, "x": 0.43,
                          "thickness": 10},
             "hovertemplate": "%{y}<br>step %{x}<br>log10 |g| %{z:.2f}<extra></extra>",
             "name": "gradient norms"}]


def health_traces(rec: TrainingRecords) -> list[dict[str, Any]]:
    """Latest sampled dead / saturated / exactly-zero share per leaf module."""
    if rec.activations.shape[0] == 0:
        return []
    latest = rec.activations[-1]
    ok = np.isfinite(latest[:, 0]) | (latest[:, 5] > 0)
    paths = [_label(f"{p} {c}") for p, c, keep in
             zip(rec.module_paths, rec.module_classes, ok) if keep]
    out = []
    for column, label, colour in ((3, "dead units", "#c62828"), (4, "saturated", "#ff7f0e"),
                                  (2, "exact zeros", "#90a4ae")):
        values = latest[ok, column]
        out.append({"type": "bar", "orientation": "h", "y": paths, "x": _clean(values),
                    "name": label, "marker": {"color": colour}, "xaxis": "x3", "yaxis": "y3",
                    "hovertemplate": "%{y}: %{x:.0%}<extra>" + label + "</extra>"})
    return out


def timing_traces(rec: TrainingRecords) -> list[dict[str, Any]]:
    """Seconds waiting for data vs computing, per batch (recent batches)."""
    t = rec.loader
    if not t or not len(t.get("wait", [])):
        return []
    wait, compute = 1000 * np.asarray(t["wait"]), 1000 * np.asarray(t["compute"])
    total = t["total_wait"] + t["total_compute"]
    share = t["total_wait"] / total if total > 0 else 0.0
    idx_w = np.arange(t["batches"] - wait.size, t["batches"])
    idx_c = np.arange(t["batches"] - compute.size, t["batches"])
    xw, yw = downsample(idx_w, wait, 600)
    xc, yc = downsample(idx_c, compute, 600)
    common = {"type": "scatter", "mode": "lines", "xaxis": "x4", "yaxis": "y4",
              "showlegend": False, "meta": {"wait_share": share}}
    return [dict(common, x=_clean(xw), y=_clean(yw), name="data wait",
                 line={"color": "#c62828", "width": 1}),
            dict(common, x=_clean(xc), y=_clean(yc), name="compute",
                 line={"color": "#1565c0", "width": 1})]


def system_traces(system: np.ndarray) -> list[dict[str, Any]]:
    """Process RSS (MiB) and CPU %, plus GPU memory when CUDA is in use."""
    if system.shape[0] == 0:
        return []
    t = system[:, 0] - system[0, 0]
    common = {"type": "scatter", "mode": "lines", "xaxis": "x5", "showlegend": False}
    out = [dict(common, x=_clean(t), y=_clean(system[:, 2]), yaxis="y5", name="RSS MiB",
                line={"color": "#6a1b9a"}),
           dict(common, x=_clean(t), y=_clean(system[:, 1]), yaxis="y7", name="CPU %",
                line={"color": "#00897b", "dash": "dot"})]
    if np.isfinite(system[:, 3]).any():
        out.append(dict(common, x=_clean(t), y=_clean(system[:, 3]), yaxis="y5",
                        name="GPU MiB", line={"color": "#ef6c00"}))
    return out


def _title(text: str, x: float, y: float) -> dict[str, Any]:
    return {"text": f"<b>{text}</b>", "x": x, "y": y, "xref": "paper", "yref": "paper",
            "showarrow": False, "xanchor": "left", "yanchor": "bottom", "font": {"size": 13}}


def layout(rec: TrainingRecords, n_health: int) -> dict[str, Any]:
    """Five panels on one page; the user's zoom survives refreshes (``uirevision``)."""
    t = rec.loader
    total = (t.get("total_wait", 0.0) + t.get("total_compute", 0.0)) if t else 0.0
    wait = f" {t['total_wait'] / total:.0%}" if total > 0 else ""
    shapes = [{"type": "line", "x0": s, "x1": s, "y0": 0.62, "y1": 1.0, "xref": "x",
               "yref": "paper", "line": {"color": "#bbb", "width": 1, "dash": "dash"}}
              for s in epoch_marks(rec)]
    grid = {"gridcolor": "#eee", "zeroline": False}
    return {
        "height": 820 + 12 * max(0, n_health - 8), "margin": {"l": 150, "r": 170, "t": 30, "b": 40},
        "uirevision": "vizdebug", "hovermode": "closest", "barmode": "group",
        "legend": {"x": 1.07, "y": 1.0, "font": {"size": 11}}, "shapes": shapes,
        "xaxis": dict(grid, domain=[0, 1], anchor="y", title={"text": "step"}),
        "yaxis": dict(grid, domain=[0.62, 1.0], title={"text": "loss"}),
        "yaxis6": dict(grid, overlaying="y", side="right", range=[0, 1.02], title={"text": "accuracy"},
                       showgrid=False),
        "xaxis2": dict(grid, domain=[0, 0.42], anchor="y2"),
        "yaxis2": dict(grid, domain=[0.3, 0.52], anchor="x2", tickfont={"size": 10},
                       autorange="reversed"),
        "xaxis3": dict(grid, domain=[0.68, 1.0], anchor="y3", range=[0, 1], tickformat=".0%"),
        "yaxis3": dict(grid, domain=[0.3, 0.52], anchor="x3", autorange="reversed",
                       tickfont={"size": 10}),
        "xaxis4": dict(grid, domain=[0, 0.42], anchor="y4", title={"text": "batch"}),
        "yaxis4": dict(grid, domain=[0.0, 0.2], anchor="x4", title={"text": "ms"}),
        "xaxis5": dict(grid, domain=[0.68, 1.0], anchor="y5", title={"text": "seconds"}),
        "yaxis5": dict(grid, domain=[0.0, 0.2], anchor="x5", title={"text": "MiB"}),
        "yaxis7": dict(grid, overlaying="y5", side="right", title={"text": "CPU %"},
                       showgrid=False, anchor="x5"),
        "annotations": [
            _title("Learning curves", 0, 1.0), _title("Gradient norm per parameter", 0, 0.53),
            _title("Activation health (latest sample)", 0.55, 0.53),
            _title(f"<span style='color:#c62828'>Data wait{wait}</span> vs "
                   "<span style='color:#1565c0'>compute</span>, ms/batch", 0, 0.21),
            _title("System: <span style='color:#6a1b9a'>RSS MiB</span>, "
                   "<span style='color:#00897b'>CPU % (dotted)</span>", 0.68, 0.21),
        ],
    }


def dashboard_figure(rec: TrainingRecords, system: np.ndarray,
                     smoothing: float = 0.6) -> dict[str, Any]:
    """The whole dashboard figure as a plotly dict.

    Examples
    --------
    >>> rec = TrainingRecords(scalars={"loss": (np.arange(3), np.array([2.0, np.nan, 1.0]))})
    >>> fig = dashboard_figure(rec, np.empty((0, 4)))
    >>> [t["name"] for t in fig["data"]]
    ['loss', 'loss', 'loss non-finite']
    """
    panels = {"curves": curve_traces(rec, smoothing), "grads": heatmap_trace(rec),
              "health": health_traces(rec), "timing": timing_traces(rec),
              "system": system_traces(system)}
    health = panels["health"]
    n_health = len(health[0]["y"]) if health else 0
    fig_layout = layout(rec, n_health)
    fig_layout["annotations"] += [_empty_note(name) for name, traces in panels.items()
                                  if not traces]
    return {"data": [t for traces in panels.values() for t in traces], "layout": fig_layout}


# An empty panel says why it is empty and what fills it: (x, y) of its centre, the text.
_EMPTY = {
    "curves": (0.5, 0.81, "Nothing logged yet: call session.log(loss=loss) in the loop"),
    "grads": (0.21, 0.41, "No gradients sampled yet<br>(they come with the first sampled "
                          "backward)"),
    "health": (0.84, 0.41, "No activations sampled yet"),
    "timing": (0.21, 0.1, "No loader tapped:<br>watch(model, loader=train_loader)"),
    "system": (0.84, 0.1, "No system samples yet (one per second)"),
}


def _empty_note(panel: str) -> dict[str, Any]:
    x, y, text = _EMPTY[panel]
    return {"text": text, "x": x, "y": y, "xref": "paper", "yref": "paper",
            "showarrow": False, "font": {"size": 12, "color": "#777"}, "align": "center"}
