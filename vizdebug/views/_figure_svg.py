"""A chart spec (:mod:`.chart_spec`) drawn as one light SVG, for static twins.

What the live view draws with uPlot, a static page (nbconvert, GitHub, a report read
offline) shows as a picture of the same spec: line and marker traces, heatmaps, bars
(horizontal per category; vertical per bin or category, overlaid or grouped), axes with a
few round ticks or named ones, panel titles and notes (plotly's pseudo-HTML reduced to
text), marks, levels and windows (:mod:`._figure_marks`) and a legend. Some tens of
kilobytes instead of a chart library. Everything drawn from user data is escaped.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np

from ._figure_marks import annotations, axis_key, legend, shapes, text_of
from ._ticks import format_tick, log_ticks, nice_ticks, tick_labels

WIDTH = 1000
#: How far under the plot a heatmap's colour key sits when the x axis has a title (the
#: title's line is at 25 px): a figure needs a bottom margin of a little more than this.
CAPTION_BELOW = 39
_VIRIDIS = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
            "#6ece58", "#b5de2b", "#fde725")


def _numbers(values: Any) -> np.ndarray:
    out = np.array([v if isinstance(v, (int, float)) and v is not None else np.nan
                    for v in (values or [])], dtype=float)
    return out


class _Axis:
    """One axis: its pixel span, its data range (numeric or categories), its direction."""

    def __init__(self, spec: dict[str, Any], start: float, end: float) -> None:
        self.spec, self.start, self.end = spec, start, end
        self.values: list[float] = []
        self.categories: list[str] = []
        self.log = spec.get("type") == "log"  # a log axis holds log10 of its values

    def add(self, values: Any) -> None:
        for v in values or []:
            if isinstance(v, str):
                if v not in self.categories:
                    self.categories.append(v)
            elif v is not None and math.isfinite(v) and not (self.log and v <= 0):
                self.values.append(math.log10(v) if self.log else float(v))

    def finish(self) -> None:
        rng = self.spec.get("range")
        if self.categories:
            self.lo, self.hi = -0.5, len(self.categories) - 0.5
        elif rng and len(rng) == 2:
            self.lo, self.hi = float(rng[0]), float(rng[1])
        elif self.values:
            self.lo, self.hi = min(self.values), max(self.values)
            pad = (self.hi - self.lo) * 0.04 or abs(self.hi) * 0.1 or 1.0
            self.lo, self.hi = self.lo - pad, self.hi + pad
        else:
            self.lo, self.hi = 0.0, 1.0
        self.reversed = self.spec.get("autorange") == "reversed"
        span = (self.end - self.start) / ((self.hi - self.lo) or 1.0)
        # pos(v) = origin + v * scale (reversed: measured from the far end)
        self._scale = -span if self.reversed else span
        self._origin = (self.end + self.lo * span) if self.reversed else (self.start - self.lo * span)

    def pos(self, v: Any) -> float:
        if isinstance(v, str):
            v = self.categories.index(v) if v in self.categories else 0
        v = float(v)
        if self.log:  # (plotly's convention)
            v = math.log10(v) if v > 0 else self.lo
        return self._origin + v * self._scale


def _layout_axes(layout: dict[str, Any], width: float, height: float,
                 margin: dict[str, float]) -> dict[str, _Axis]:
    left, right = margin.get("l", 60), width - margin.get("r", 60)
    top, bottom = margin.get("t", 30), height - margin.get("b", 40)
    axes: dict[str, _Axis] = {}
    for key, spec in layout.items():
        if not re.fullmatch(r"[xy]axis\d*", key) or not isinstance(spec, dict):
            continue
        base = layout.get(axis_key(spec["overlaying"], spec["overlaying"][0]), {}) \
            if spec.get("overlaying") else spec
        d0, d1 = base.get("domain", [0, 1])
        if key[0] == "x":
            axes[key] = _Axis(spec, left + d0 * (right - left), left + d1 * (right - left))
        else:
            axes[key] = _Axis(spec, bottom - d0 * (bottom - top), bottom - d1 * (bottom - top))
    return axes


def _axes_of(trace: dict[str, Any], axes: dict[str, _Axis]) -> tuple[_Axis, _Axis] | None:
    xa = axes.get(axis_key(trace.get("xaxis", "x"), "x"))
    ya = axes.get(axis_key(trace.get("yaxis", "y"), "y"))
    return (xa, ya) if xa is not None and ya is not None else None


def _scatter(trace: dict[str, Any], xa: _Axis, ya: _Axis) -> str:
    xs, ys = trace.get("x") or [], trace.get("y") or []
    line, marker = trace.get("line") or {}, trace.get("marker") or {}
    colour = html.escape(str(line.get("color") or marker.get("color") or "#1f77b4"))
    opacity = float(trace.get("opacity", 1.0))
    mode = trace.get("mode", "lines")
    parts, run, lone = [], [], []  # lone: points with no line through them (a gap each side)
    for x, y in zip([*xs, None], [*ys, None]):
        if x is None or y is None:
            if run:
                (parts if len(run) > 1 else lone).append(run)
            run = []
            continue
        run.append(f"{xa.pos(x):.1f},{ya.pos(y):.1f}")
    out = []
    if trace.get("fill") == "toself" and parts:  # a band: its outline filled
        points = " ".join(" ".join(p) for p in parts)
        out.append(f'<polygon points="{points}" fill="{colour}" stroke="none" '
                   f'opacity="{opacity}"/>')
        return "".join(out)
    if "lines" in mode:
        dash = ' stroke-dasharray="2,3"' if line.get("dash") in ("dot", "dash") else ""
        width = line.get("width", 1.5)
        out += [f'<polyline points="{" ".join(p)}" fill="none" stroke="{colour}" '
                f'stroke-width="{width}" opacity="{opacity}"{dash}/>' for p in parts]
        if "markers" not in mode:  # a lone point drawn as a dot, not left out
            out += [_dot(p[0], colour, opacity) for p in lone]
    if "markers" in mode and len(xs) <= 200:
        cross = marker.get("symbol") == "x"
        for x, y in zip(xs, ys):
            if x is None or y is None:
                continue
            px, py = xa.pos(x), ya.pos(y)
            out.append(f'<path d="M{px - 4:.1f},{py - 4:.1f}l8,8m0,-8l-8,8" stroke="{colour}" '
                       'stroke-width="2"/>' if cross else
                       f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="{colour}"/>')
    return "".join(out)


def _dot(point: str, colour: str, opacity: float) -> str:
    x, y = point.split(",")
    return f'<circle cx="{x}" cy="{y}" r="2.5" fill="{colour}" opacity="{opacity}"/>'


def _colour(v: float, lo: float, hi: float) -> str:
    if not math.isfinite(v):
        return "#eeeeee"
    k = int((v - lo) / ((hi - lo) or 1.0) * (len(_VIRIDIS) - 1) + 0.5)
    return _VIRIDIS[min(max(k, 0), len(_VIRIDIS) - 1)]


def _heatmap(trace: dict[str, Any], xa: _Axis, ya: _Axis) -> str:
    z = [_numbers(row) for row in trace.get("z") or []]
    finite = np.concatenate([r[np.isfinite(r)] for r in z]) if z else np.zeros(0)
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    xs, ys = trace.get("x") or [], trace.get("y") or []
    if not xs or not ys:
        return ""
    w = abs(xa.end - xa.start) / max(len(xs), 1)
    h = abs(ya.pos(0) - ya.pos(1)) if len(ya.categories) > 1 else abs(ya.end - ya.start)
    out = []
    for i, row in enumerate(z):
        y = ya.pos(ys[i]) - h / 2 if i < len(ys) else 0
        for j, v in enumerate(row):
            out.append(f'<rect x="{xa.start + j * w:.1f}" y="{y:.1f}" width="{w + 0.3:.1f}" '
                       f'height="{h + 0.3:.1f}" fill="{_colour(v, lo, hi)}"/>')
    # the colour key goes under the tick labels, and under the axis title when there is
    # one (the two lines drawn at one height are unreadable)
    titled = bool((xa.spec.get("title") or {}).get("text"))
    below = max(ya.start, ya.end) + (CAPTION_BELOW if titled else 26)
    what = text_of(((trace.get("colorbar") or {}).get("title") or {}).get("text") or "value")
    out.append(f'<text x="{xa.start:.0f}" y="{below:.0f}" font-size="10" fill="#555">'
               f"colour: {what} from {format_tick(lo)} (dark) to {format_tick(hi)} (yellow); grey: "
               "none or not finite</text>")
    return "".join(out)


def _bars(traces: list[dict[str, Any]], xa: _Axis, ya: _Axis) -> str:
    n = len(traces)
    band = abs(ya.pos(0) - ya.pos(1)) if len(ya.categories) > 1 else 14
    out = []
    for k, trace in enumerate(traces):
        colour = html.escape(str((trace.get("marker") or {}).get("color", "#888")))
        for cat, v in zip(trace.get("y") or [], trace.get("x") or []):
            if v is None or not math.isfinite(v):
                continue
            y = ya.pos(cat) - band * 0.4 + k * band * 0.8 / n
            out.append(f'<rect x="{xa.pos(0):.1f}" y="{y:.1f}" height="{band * 0.8 / n:.1f}" '
                       f'width="{max(xa.pos(v) - xa.pos(0), 0):.1f}" fill="{colour}"/>')
    return "".join(out)


def _columns(traces: list[dict[str, Any]], xa: _Axis, ya: _Axis, overlay: bool = False) -> str:
    """Vertical bars, ``width`` wide (x units), side by side in each slot or overlaid; a
    bar's ``text`` is its hover title."""
    n = 1 if overlay else len(traces)
    out = []
    for k, trace in enumerate(traces):
        colour = html.escape(str((trace.get("marker") or {}).get("color", "#888")))
        xs, texts = trace.get("x") or [], trace.get("text") or []
        width = float(trace.get("width") or (0.8 * _spacing(xs)))
        for i, (x, v) in enumerate(zip(xs, trace.get("y") or [])):
            if x is None or v is None or not math.isfinite(v):
                continue
            x0 = xa.pos(x - width / 2 + k * width / n)
            top, base = ya.pos(max(v, 0)), ya.pos(0)
            title = f"<title>{text_of(texts[i])}</title>" if i < len(texts) and texts[i] else ""
            out.append(f'<rect x="{x0:.1f}" y="{top:.1f}" height="{max(base - top, 0):.1f}" '
                       f'width="{max(xa.pos(x + width / 2) - xa.pos(x - width / 2), 0) / n:.1f}"'
                       f' fill="{colour}" opacity="{float(trace.get("opacity", 1.0))}">'
                       f"{title}</rect>")
    return "".join(out)


def _spacing(xs: list[Any]) -> float:
    gaps = np.diff([float(x) for x in xs if x is not None]) if len(xs) > 1 else np.ones(1)
    return float(np.min(np.abs(gaps))) if gaps.size and np.min(np.abs(gaps)) > 0 else 1.0


def _axis_ticks(axis: _Axis, n: int, fmt: str) -> list[tuple[float, str]]:
    """``(value, label)`` of about ``n`` round ticks (the live chart's: :mod:`._ticks`);
    decades, and 2 and 5 times them over a short range, on a log axis."""
    given = axis.spec.get("tickvals")
    if given:  # named ticks (dates, categories by index): those within the range
        names = axis.spec.get("ticktext") or tick_labels(given, fmt)
        return [(v, str(s)) for v, s in zip(given, names)
                if v is not None and axis.lo <= v <= axis.hi]
    values = ([10.0 ** e for e in log_ticks(axis.lo, axis.hi)] if axis.log
              else nice_ticks(axis.lo, axis.hi, n))
    return list(zip(values, tick_labels(values, fmt)))


def _axis_lines(key: str, axis: _Axis, other: _Axis | None) -> str:
    """The axis line at its panel's edge, a few ticks with labels, and its title."""
    if other is None:
        return ""
    spec = axis.spec
    fmt = ".0%" if spec.get("tickformat") == ".0%" else "~g"
    title = text_of((spec.get("title") or {}).get("text", ""))
    out = []
    if key[0] == "x":
        y = max(other.start, other.end) if not other.reversed else max(other.start, other.end)
        out.append(f'<line x1="{axis.start:.1f}" y1="{y:.1f}" x2="{axis.end:.1f}" y2="{y:.1f}" '
                   'stroke="#999"/>')
        if not axis.categories:
            # as many as the live chart: one per 80 px, 2 to 7
            n = max(2, min(7, int(abs(axis.end - axis.start) // 80)))
            for t, label in _axis_ticks(axis, n, fmt):
                out.append(f'<text x="{axis.pos(t):.1f}" y="{y + 12:.1f}" font-size="10" '
                           f'text-anchor="middle" fill="#444">{text_of(label)[:18]}</text>')
        if title:
            out.append(f'<text x="{(axis.start + axis.end) / 2:.1f}" y="{y + 25:.1f}" '
                       f'font-size="11" text-anchor="middle" fill="#444">{title}</text>')
        return "".join(out)
    right = spec.get("side") == "right"
    x = max(other.start, other.end) if right else min(other.start, other.end)
    anchor, dx = ("start", 4) if right else ("end", -4)
    out.append(f'<line x1="{x:.1f}" y1="{axis.start:.1f}" x2="{x:.1f}" y2="{axis.end:.1f}" '
               'stroke="#999"/>')
    labels = ([(i, c) for i, c in enumerate(axis.categories)][:40] if axis.categories
              else _axis_ticks(axis, 5 if right else 6, fmt))  # the live chart's
    for v, label in labels:
        out.append(f'<text x="{x + dx:.1f}" y="{axis.pos(v) + 3:.1f}" font-size="9" '
                   f'text-anchor="{anchor}" fill="#444">{text_of(label)[:28]}</text>')
    if title:
        tx = x + (38 if right else -42)
        ty = (axis.start + axis.end) / 2
        out.append(f'<text x="{tx:.1f}" y="{ty:.1f}" font-size="11" text-anchor="middle" '
                   f'fill="#444" transform="rotate(-90 {tx:.1f} {ty:.1f})">{title}</text>')
    return "".join(out)


def figure_svg(figure: dict[str, Any], width: int = WIDTH) -> str:
    """The figure (``{"data": [...], "layout": {...}}``) as an ``<svg>`` element."""
    layout = figure.get("layout") or {}
    traces = [t for t in figure.get("data") or [] if isinstance(t, dict)]
    height = float(layout.get("height") or 450)
    margin = layout.get("margin") or {}
    axes = _layout_axes(layout, width, height, margin)
    for trace in traces:
        pair = _axes_of(trace, axes)
        if pair is not None and trace.get("orientation") == "v":  # the bars' edges, and 0
            half = float(trace.get("width") or 0.8 * _spacing(trace.get("x") or [])) / 2
            pair[0].add([v + d for v in trace.get("x") or [] if v is not None for d in (-half, half)])
            pair[1].add([0.0, *(trace.get("y") or [])])
        elif pair is not None:
            pair[0].add(trace.get("x"))
            pair[1].add(trace.get("y"))
    for axis in axes.values():
        axis.finish()
    body = [shapes(layout, axes, height, margin)]
    bars: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for trace in traces:
        pair = _axes_of(trace, axes)
        if pair is None:
            continue
        kind = trace.get("type", "scatter")
        if kind == "bar":
            bars.setdefault((id(pair[0]), id(pair[1])), []).append(trace)
        elif kind == "heatmap":
            body.append(_heatmap(trace, *pair))
        elif kind == "scatter":
            body.append(_scatter(trace, *pair))
    for group in bars.values():
        pair = _axes_of(group[0], axes)
        body.append(_columns(group, *pair, layout.get("barmode") == "overlay")
                    if group[0].get("orientation") == "v" else _bars(group, *pair))
    for key, axis in axes.items():
        partner = axis.spec.get("anchor") or ("y" if key[0] == "x" else "x")
        other = axes.get(axis_key(partner, "y" if key[0] == "x" else "x"))
        if axis.values or axis.categories:
            body.append(_axis_lines(key, axis, other))
    body.append(annotations(layout, width, height, margin))
    if (layout.get("legend") or {}).get("orientation") == "h" and layout.get("showlegend"):
        body.append(legend(traces, width - margin.get("r", 60), margin.get("t", 30) - 6, True))
    else:
        body.append(legend(traces, width - margin.get("r", 60) + 50, margin.get("t", 30) + 10))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="vd-figure-svg" '
            f'viewBox="0 0 {width} {height:.0f}" width="100%" style="max-width:{width}px;'
            f'font-family:system-ui,sans-serif" role="img">{"".join(body)}</svg>')
