"""The panels practitioners expect beside the dashboard's five, drawn as light SVG: each
layer's activations over training (a band of mean ± std around the mean), each
parameter's weight scale (a heat of log10 RMS, layers by steps), and the optimizer's
learning rate per parameter group (log scale), with momentum and weight decay in words.

Until the dashboard's chart spec draws them live, they ride in the dashboard's HTML area
(the live widget, the static twin, the saved page and ``vd.report``): plotly-shaped dicts
built from the panels' data (:mod:`vizdebug.analysis.training.distributions`, the
optimizer frame of :mod:`.panel_frames`), drawn by :func:`._figure_svg.figure_svg`.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.training.distributions import LayerColumns, activation_bands, parameter_scales
from ._figure_svg import figure_svg
from ._plotly_export import PALETTE
from .chart_spec import clean
from .panel_frames import panel_frame

if TYPE_CHECKING:
    import pandas as pd

    from ..records import TrainingRecords

MAX_LAYERS = 6  # bands drawn (every layer is in to_frame("activations"))
MAX_STEPS = 120  # sampled steps per line drawn (evenly spaced, the first and last kept)
HEAT_COLUMNS = 40  # sampled steps in the weight-scale heat
HEAT_ROWS = 24  # parameters in it (weights first; every one is in to_frame("parameters"))
_AXIS = {"gridcolor": "#eee", "zeroline": False, "nticks": 6, "tickformat": "~g"}


def label(text: str) -> str:
    """A user string as figure text: escaped, so its markup shows literally."""
    return html.escape(str(text))


def _picks(n: int, most: int) -> np.ndarray:
    """At most ``most`` indices of ``n``, evenly spaced, the first and last kept."""
    if n <= most:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, most).round().astype(int))


def _thin(part: pd.DataFrame) -> pd.DataFrame:
    """At most :data:`MAX_STEPS` rows of a frame."""
    return part.iloc[_picks(len(part), MAX_STEPS)]


def _layout(title: str, y: dict[str, Any], height: int = 230) -> dict[str, Any]:
    return {"height": height, "margin": {"l": 60, "r": 170, "t": 28, "b": 40},
            "xaxis": dict(_AXIS, title={"text": "step"}), "yaxis": dict(_AXIS, **y),
            "annotations": [{"text": f"<b>{label(title)}</b>", "x": 0, "y": 1.0,
                             "xref": "paper", "yref": "paper", "xanchor": "left",
                             "yanchor": "bottom", "showarrow": False}]}


def activations_figure(bands: LayerColumns) -> dict[str, Any]:
    """Per layer (the first :data:`MAX_LAYERS`): the band and its mean."""
    layers, steps, mean = bands.wide("mean")
    low, high = bands.wide("low")[2], bands.wide("high")[2]
    cols = _picks(steps.size, MAX_STEPS)
    x = clean(steps[cols])
    traces = []
    for i, layer in enumerate(layers[:MAX_LAYERS]):
        colour = PALETTE[i % len(PALETTE)]
        traces += [{"type": "scatter", "fill": "toself", "x": x + x[::-1],
                    "y": clean(high[i, cols]) + clean(low[i, cols])[::-1], "opacity": 0.18,
                    "line": {"color": colour}, "showlegend": False},
                   {"type": "scatter", "mode": "lines", "x": x, "y": clean(mean[i, cols]),
                    "name": label(layer), "line": {"color": colour, "width": 1.5}}]
    return {"data": traces, "layout": _layout("Activations per layer: mean ± std",
                                              {"title": {"text": "output"}})}


def parameters_figure(scales: LayerColumns) -> dict[str, Any]:
    """log10 of each parameter's weight RMS, layers by sampled steps."""
    layers, steps, weight = scales.wide("weight_rms")
    rows = heat_rows(layers)
    cols = _picks(steps.size, HEAT_COLUMNS)
    matrix = weight[rows][:, cols]
    with np.errstate(all="ignore"):
        z = np.log10(np.where(matrix > 0, matrix, np.nan))
    trace = {"type": "heatmap", "x": [int(s) for s in steps[cols]],
             "y": [label(layers[r]) for r in rows], "z": [clean(row) for row in z],
             "colorscale": "Viridis", "colorbar": {"title": {"text": "log10 weight RMS"}}}
    height = max(180, 60 + 16 * len(rows))
    layout = _layout("Weight scale per parameter (RMS)", {"autorange": "reversed"}, height)
    layout["margin"]["l"] = 150
    layout["margin"]["b"] = 70
    return {"data": [trace], "layout": layout}


def heat_rows(layers: list[str]) -> list[int]:
    """The rows the heat shows: the weights first, then the rest, at most
    :data:`HEAT_ROWS`, in the model's order."""
    ranked = [i for i, p in enumerate(layers) if str(p).endswith("weight")] + \
        [i for i, p in enumerate(layers) if not str(p).endswith("weight")]
    return sorted(ranked[:HEAT_ROWS])


def _settings_note(frame: pd.DataFrame) -> str:
    """Momentum and weight decay in words: per group, the first and last value read."""
    parts = []
    for group, part in frame.groupby("group", sort=True):
        words = []
        for column in ("momentum", "weight_decay"):
            values = part[column].to_numpy(float)
            if np.isfinite(values).any():
                first, last = values[np.isfinite(values)][[0, -1]]
                words.append(f"{column} {first:.3g}" + ("" if first == last else f" → {last:.3g}"))
        if words:
            parts.append(f"group {int(group)}: " + ", ".join(words))
    return "; ".join(parts)


def optimizer_figure(frame: pd.DataFrame) -> dict[str, Any]:
    """The learning rate of each parameter group over steps."""
    lr = frame["lr"].to_numpy(float)
    log = bool(np.isfinite(lr).any() and (lr[np.isfinite(lr)] > 0).all())
    traces = []
    for i, (group, part) in enumerate(frame.groupby("group", sort=True)):
        part = _thin(part)
        traces.append({"type": "scatter", "mode": "lines", "x": clean(part["step"]),
                       "y": clean(part["lr"]), "name": f"group {int(group)}",
                       "line": {"color": PALETTE[i % len(PALETTE)], "width": 1.5}})
    y = {"title": {"text": "learning rate"}}
    if log:
        y["type"] = "log"
    return {"data": traces, "layout": _layout("Learning rate per parameter group", y)}


def panels_html(rec: TrainingRecords, source: Any = None) -> str:
    """The three panels that have data, as SVG pictures ("" when none has)."""
    pictures = []
    bands = activation_bands(rec)
    if len(bands):
        more = len(set(bands.layer)) - MAX_LAYERS
        note = f" ({more} more layers in to_frame(&quot;activations&quot;))" if more > 0 else ""
        pictures.append(figure_svg(activations_figure(bands), width=560) + _note(note))
    scales = parameter_scales(rec)
    if len(scales) and np.isfinite(scales.values["weight_rms"]).any():
        more = len(set(scales.layer)) - HEAT_ROWS
        note = (f" ({more} more parameters in to_frame(&quot;parameters&quot;))"
                if more > 0 else "")
        pictures.append(figure_svg(parameters_figure(scales), width=560) + _note(note))
    hyper = panel_frame("optimizer", rec, np.empty((0, 4)), source)
    if len(hyper) and np.isfinite(hyper["lr"].to_numpy(float)).any():
        pictures.append(figure_svg(optimizer_figure(hyper), width=560)
                        + _note(html.escape(_settings_note(hyper))))
    if not pictures:
        return ""
    cells = "".join(f'<div style="flex:1 1 45%;min-width:320px">{p}</div>' for p in pictures)
    return ('<details class="vd-more-panels" open><summary class="vd-note">Layers and '
            "optimizer: distributions over training, learning rate per group</summary>"
            f'<div style="display:flex;flex-wrap:wrap;gap:8px;max-width:1000px">{cells}</div>'
            "</details>")


def _note(text: str) -> str:
    return f'<p class="vd-note">{text}</p>' if text else ""
