"""The panels practitioners expect beside the dashboard's five, drawn as light SVG: each
layer's activations over training (a band of mean ± std around the mean), each
parameter's weight scale (a heat of log10 RMS, layers by steps), and the optimizer's
learning rate per parameter group (log scale), with momentum and weight decay in words.

Until the dashboard's chart spec draws them live, they ride in the dashboard's HTML area
(the live widget, the static twin, the saved page and ``vd.report``): plotly-shaped dicts
built from the panels' frames (:mod:`.panel_frames`), drawn by :func:`._figure_svg.figure_svg`.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ._figure_svg import figure_svg
from ._plotly_export import PALETTE
from .panel_frames import panel_frame

if TYPE_CHECKING:
    import pandas as pd

    from ..records import TrainingRecords

MAX_LAYERS = 6  # bands drawn (every layer is in to_frame("activations"))
MAX_STEPS = 120  # sampled steps per line drawn (evenly spaced, the first and last kept)
HEAT_COLUMNS = 40  # sampled steps in the weight-scale heat
HEAT_ROWS = 24  # parameters in it (weights first; every one is in to_frame("parameters"))
_AXIS = {"gridcolor": "#eee", "zeroline": False, "nticks": 6, "tickformat": "~g"}


def clean(values: Any) -> list[float | None]:
    """JSON-safe numbers: NaN and inf become ``None`` (a gap)."""
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, dtype=float)]


def label(text: str) -> str:
    """A user string as figure text: escaped, so its markup shows literally."""
    return html.escape(str(text))


def _thin(part: pd.DataFrame) -> pd.DataFrame:
    """At most :data:`MAX_STEPS` rows, evenly spaced, the first and last kept."""
    if len(part) <= MAX_STEPS:
        return part
    keep = np.unique(np.linspace(0, len(part) - 1, MAX_STEPS).round().astype(int))
    return part.iloc[keep]


def _layout(title: str, y: dict[str, Any], height: int = 230) -> dict[str, Any]:
    return {"height": height, "margin": {"l": 60, "r": 170, "t": 28, "b": 40},
            "xaxis": dict(_AXIS, title={"text": "step"}), "yaxis": dict(_AXIS, **y),
            "annotations": [{"text": f"<b>{label(title)}</b>", "x": 0, "y": 1.0,
                             "xref": "paper", "yref": "paper", "xanchor": "left",
                             "yanchor": "bottom", "showarrow": False}]}


def activations_figure(frame: pd.DataFrame) -> dict[str, Any]:
    """Per layer (the first :data:`MAX_LAYERS`): the band and its mean."""
    traces = []
    for i, (layer, part) in enumerate(list(frame.groupby("layer", sort=False))[:MAX_LAYERS]):
        part = _thin(part)
        colour = PALETTE[i % len(PALETTE)]
        x = clean(part["step"])
        traces += [{"type": "scatter", "fill": "toself", "x": x + x[::-1],
                    "y": clean(part["high"]) + clean(part["low"])[::-1], "opacity": 0.18,
                    "line": {"color": colour}, "showlegend": False},
                   {"type": "scatter", "mode": "lines", "x": x, "y": clean(part["mean"]),
                    "name": label(str(layer)), "line": {"color": colour, "width": 1.5}}]
    return {"data": traces, "layout": _layout("Activations per layer: mean ± std",
                                              {"title": {"text": "output"}})}


def parameters_figure(frame: pd.DataFrame) -> dict[str, Any]:
    """log10 of each parameter's weight RMS, layers by sampled steps."""
    layers = heat_rows(frame)
    steps = sorted(set(frame["step"].tolist()))
    if len(steps) > HEAT_COLUMNS:
        steps = sorted({steps[int(i)] for i in np.linspace(0, len(steps) - 1, HEAT_COLUMNS).round()})
    table = frame.pivot_table(index="layer", columns="step", values="weight_rms",
                              aggfunc="last").reindex(index=layers, columns=steps)
    with np.errstate(all="ignore"):
        z = np.log10(np.where(table.to_numpy(float) > 0, table.to_numpy(float), np.nan))
    trace = {"type": "heatmap", "x": steps, "y": [label(str(p)) for p in layers],
             "z": [clean(row) for row in z], "colorscale": "Viridis",
             "colorbar": {"title": {"text": "log10 weight RMS"}}}
    height = max(180, 60 + 16 * len(layers))
    layout = _layout("Weight scale per parameter (RMS)", {"autorange": "reversed"}, height)
    layout["margin"]["l"] = 150
    layout["margin"]["b"] = 70
    return {"data": [trace], "layout": layout}


def heat_rows(frame: pd.DataFrame) -> list[str]:
    """The parameters the heat shows: the weights first, in the model's order, then the
    rest, at most :data:`HEAT_ROWS`; shown in the model's order."""
    layers = list(dict.fromkeys(frame["layer"]))
    first = [p for p in layers if str(p).endswith("weight")] + \
        [p for p in layers if not str(p).endswith("weight")]
    kept = set(first[:HEAT_ROWS])
    return [p for p in layers if p in kept]


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
    acts = panel_frame("activations", rec, np.empty((0, 4)), source)
    if len(acts):
        more = acts["layer"].nunique() - MAX_LAYERS
        note = f" ({more} more layers in to_frame(&quot;activations&quot;))" if more > 0 else ""
        pictures.append(figure_svg(activations_figure(acts), width=560) + _note(note))
    params = panel_frame("parameters", rec, np.empty((0, 4)), source)
    if len(params) and np.isfinite(params["weight_rms"].to_numpy(float)).any():
        more = params["layer"].nunique() - HEAT_ROWS
        note = (f" ({more} more parameters in to_frame(&quot;parameters&quot;))"
                if more > 0 else "")
        pictures.append(figure_svg(parameters_figure(params), width=560) + _note(note))
    hyper = panel_frame("optimizer", rec, np.empty((0, 4)), source)
    if len(hyper) and math.isfinite(np.nanmax(np.r_[hyper["lr"].to_numpy(float), -np.inf])):
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
