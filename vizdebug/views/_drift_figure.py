"""The drift explorer's overlay of one feature as a chart spec (:mod:`.chart_spec`), for the
static twin: what shows where scripts do not run (GitHub, nbviewer, an untrusted notebook),
drawn by :func:`._figure_svg.figure_svg`. The browser app builds the same spec from the same
sketch (``drift_plots.js``: ``overlaySpec``, where the sliders rebuild it) and draws it with
uPlot; ``tests/test_drift_figure.py`` holds the two builders to the same spec."""

from __future__ import annotations

import html
from datetime import datetime, timezone
from typing import Any

from ._figure_svg import figure_svg
from .chart_spec import ChartSpec

REF, CUR = "#1f77b4", "#ff7f0e"
WIDTH, HEIGHT = 560, 300
FINE_BINS = 120  # the sketch's histogram bins (analysis/drift/sketch.py)


def _date(ms: float, day_only: bool) -> str:
    iso = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat()
    return iso[:10] if day_only else iso[:16].replace("T", " ")


def _layout(x_range: list[float], ymax: float, y_title: str) -> dict[str, Any]:
    return {"height": HEIGHT, "margin": {"l": 50, "r": 14, "t": 30, "b": 30},
            "showlegend": True, "legend": {"orientation": "h"},
            "xaxis": {"range": x_range}, "yaxis": {"range": [0, ymax], "title": {"text": y_title}}}


def _shares(counts: list[float]) -> list[float]:
    total = sum(counts) or 1
    return [c / total for c in counts]


def _bar(name: str, x: list[float], y: list[float], colour: str, opacity: float,
         text: list[str]) -> dict[str, Any]:
    return {"type": "bar", "orientation": "v", "name": name, "x": x, "y": y,
            "marker": {"color": colour}, "opacity": opacity, "text": text}


def numeric_spec(sketch: dict[str, Any], bins: int = 30, dates: bool = False) -> ChartSpec:
    """Reference and current shares per bin, overlaid (``bins`` divides 120)."""
    if FINE_BINS % bins:
        raise ValueError(f"bins must divide {FINE_BINS}, got {bins}")
    k, lo, hi = FINE_BINS // bins, float(sketch["lo"]), float(sketch["hi"])
    ref = _shares([sum(sketch["ref_hist"][i * k:(i + 1) * k]) for i in range(bins)])
    cur = _shares([sum(sketch["cur_hist"][i * k:(i + 1) * k]) for i in range(bins)])
    width = (hi - lo) / bins
    x = [lo + width * (i + 0.5) for i in range(bins)]
    label = (lambda v: _date(v, hi - lo > 2 * 86_400_000)) if dates else (lambda v: f"{v:.4g}")
    text = [f"[{label(lo + width * i)}, {label(lo + width * (i + 1))}): reference "
            f"{100 * r:.3g}%, current {100 * c:.3g}%" for i, (r, c) in enumerate(zip(ref, cur))]
    bars = [_bar("reference", x, ref, REF, 0.45, text), _bar("current", x, cur, CUR, 0.45, text)]
    for trace in bars:
        trace["width"] = width
    layout = _layout([lo, hi], max(ref + cur + [1e-12]) * 1.08, "share of rows per bin")
    layout["barmode"] = "overlay"
    if dates:  # even steps, named as dates
        ticks = [lo + (hi - lo) * i / 4 for i in range(4)]  # (the end's label would overrun)
        layout["xaxis"] |= {"tickvals": ticks, "ticktext": [label(v) for v in ticks]}
    return {"data": bars, "layout": layout}


def categorical_spec(sketch: dict[str, Any]) -> ChartSpec:
    """Reference and current shares per category, side by side (a new one marked)."""
    names = [str(c) for c in sketch["categories"]]
    unseen = sketch.get("unseen") or [False] * len(names)
    ref, cur = _shares(sketch["ref_counts"]), _shares(sketch["cur_counts"])
    x = list(range(len(names)))
    text = [f"{html.escape(n)}: reference {100 * r:.3g}%, current {100 * c:.3g}%"
            + (" (new)" if u else "") for n, r, c, u in zip(names, ref, cur, unseen)]
    bars = [_bar("reference", x, ref, REF, 0.75, text), _bar("current", x, cur, CUR, 0.75, text)]
    layout = _layout([-0.5, len(names) - 0.5], max(ref + cur + [1e-12]) * 1.08, "share of rows")
    layout["barmode"] = "group"
    step = max(1, -(-len(names) // 12))  # at most ~12 labels; every bar has its hover text
    shown = x[::step]
    layout["xaxis"] |= {"tickvals": shown, "ticktext": [
        html.escape(names[i][:17] + ("…" if len(names[i]) > 17 else "") + (" (new)" if unseen[i] else ""))
        for i in shown]}
    return {"data": bars, "layout": layout}


def overlay_spec(kind: str, sketch: dict[str, Any], bins: int = 30) -> ChartSpec:
    """The overlay of one feature as the browser first draws it (a histogram of ``bins``)."""
    if kind in ("numeric", "datetime"):
        return numeric_spec(sketch, bins, dates=kind == "datetime")
    return categorical_spec(sketch)


def overlay_figure(name: str, kind: str, sketch: dict[str, Any], caption: str) -> str:
    """One titled SVG figure for a feature (``name`` and ``caption`` are escaped here)."""
    if not sketch:
        return ""
    svg = figure_svg(overlay_spec(kind, sketch), width=WIDTH)
    return (f'<figure class="vd-static-overlay" style="display:inline-block;margin:4px 12px 4px 0;'
            f'width:{WIDTH}px;max-width:100%;background:#fff;color:#222">{svg}'
            f'<figcaption style="font-size:12px"><b>{html.escape(name)}</b> '
            f"{html.escape(caption)}</figcaption></figure>")
