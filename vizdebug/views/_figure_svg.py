"""A plotly figure dict drawn as one light SVG, for static twins (no plotly.js needed).

What the live view draws with plotly.js, a static page (nbconvert, GitHub, a report
read offline) shows as a picture of the same data: line and marker traces, heatmaps,
horizontal bars, axes with a few round ticks, panel titles and notes (plotly's
pseudo-HTML reduced to text), dashed marks and a legend. Some tens of kilobytes instead
of the ~5 MB of plotly.js. Everything drawn from user data is escaped.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np

from ._ticks import format_tick, log_ticks, nice_ticks, tick_labels

WIDTH = 1000
#: How far under the plot a heatmap's colour key sits when the x axis has a title (the
#: title's line is at 25 px): a figure needs a bottom margin of a little more than this.
CAPTION_BELOW = 39
_TAG = re.compile(r"<[^>]*>")
_VIRIDIS = ("#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
            "#6ece58", "#b5de2b", "#fde725")


def text_of(markup: Any) -> str:
    """Plotly pseudo-HTML as escaped SVG text: tags dropped, entities read, re-escaped."""
    plain = html.unescape(_TAG.sub(" ", str(markup).replace("<br>", " · ")))
    return html.escape(" ".join(plain.split()))


def _axis_key(ref: str, letter: str) -> str:
    return f"{letter}axis{ref[1:]}"  # "x" -> "xaxis", "y6" -> "yaxis6"


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
        base = layout.get(_axis_key(spec["overlaying"], spec["overlaying"][0]), {}) \
            if spec.get("overlaying") else spec
        d0, d1 = base.get("domain", [0, 1])
        if key[0] == "x":
            axes[key] = _Axis(spec, left + d0 * (right - left), left + d1 * (right - left))
        else:
            axes[key] = _Axis(spec, bottom - d0 * (bottom - top), bottom - d1 * (bottom - top))
    return axes


def _axes_of(trace: dict[str, Any], axes: dict[str, _Axis]) -> tuple[_Axis, _Axis] | None:
    xa = axes.get(_axis_key(trace.get("xaxis", "x"), "x"))
    ya = axes.get(_axis_key(trace.get("yaxis", "y"), "y"))
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


def _axis_ticks(axis: _Axis, n: int, fmt: str) -> list[tuple[float, str]]:
    """``(value, label)`` of about ``n`` round ticks (the live chart's: :mod:`._ticks`);
    decades, and 2 and 5 times them over a short range, on a log axis."""
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
                           f'text-anchor="middle" fill="#444">{label}</text>')
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


def _annotations(layout: dict[str, Any], width: float, height: float,
                 margin: dict[str, float]) -> str:
    left, right = margin.get("l", 60), width - margin.get("r", 60)
    top, bottom = margin.get("t", 30), height - margin.get("b", 40)
    out = []
    for note in layout.get("annotations") or []:
        if note.get("xref") != "paper" or note.get("yref") != "paper":
            continue
        x = left + float(note.get("x", 0)) * (right - left)
        y = bottom - float(note.get("y", 0)) * (bottom - top)
        anchor = {"left": "start", "right": "end"}.get(note.get("xanchor"), "middle")
        raw = str(note.get("text", ""))
        bold = ' font-weight="600"' if raw.startswith("<b>") else ""
        font = note.get("font") or {}
        colour = html.escape(str(font.get("color", "#222")))
        out.append(f'<text x="{x:.1f}" y="{y - 4:.1f}" font-size="{font.get("size", 12)}" '
                   f'text-anchor="{anchor}" fill="{colour}"{bold}>{text_of(raw)}</text>')
    return "".join(out)


def _shapes(layout: dict[str, Any], axes: dict[str, _Axis], height: float,
            margin: dict[str, float]) -> str:
    top, bottom = margin.get("t", 30), height - margin.get("b", 40)
    out = []
    for shape in (layout.get("shapes") or [])[:200]:
        xa = axes.get(_axis_key(shape.get("xref", "x"), "x"))
        if shape.get("type") != "line" or xa is None or shape.get("yref") != "paper":
            continue
        x = xa.pos(shape.get("x0", 0))
        y0 = bottom - float(shape.get("y0", 0)) * (bottom - top)
        y1 = bottom - float(shape.get("y1", 1)) * (bottom - top)
        out.append(f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y1:.1f}" '
                   'stroke="#ccc" stroke-dasharray="4,3"/>')
    return "".join(out)


def _legend(traces: list[dict[str, Any]], x: float, y: float) -> str:
    out, seen = [], set()
    for trace in traces:
        name = trace.get("name")
        if not name or trace.get("showlegend") is False or trace.get("type") == "heatmap" \
                or name in seen or len(seen) >= 24:
            continue
        seen.add(name)
        style = trace.get("line") or trace.get("marker") or {}
        colour = html.escape(str(style.get("color", "#888")))
        out.append(f'<rect x="{x:.1f}" y="{y - 8:.1f}" width="14" height="4" fill="{colour}"/>'
                   f'<text x="{x + 18:.1f}" y="{y - 3:.1f}" font-size="11" fill="#333">'
                   f"{text_of(name)[:40]}</text>")
        y += 15
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
        if pair is not None:
            pair[0].add(trace.get("x"))
            pair[1].add(trace.get("y"))
    for axis in axes.values():
        axis.finish()
    body = [_shapes(layout, axes, height, margin)]
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
        body.append(_bars(group, *_axes_of(group[0], axes)))
    for key, axis in axes.items():
        partner = axis.spec.get("anchor") or ("y" if key[0] == "x" else "x")
        other = axes.get(_axis_key(partner, "y" if key[0] == "x" else "x"))
        if axis.values or axis.categories:
            body.append(_axis_lines(key, axis, other))
    body.append(_annotations(layout, width, height, margin))
    body.append(_legend(traces, width - margin.get("r", 60) + 50, margin.get("t", 30) + 10))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="vd-figure-svg" '
            f'viewBox="0 0 {width} {height:.0f}" width="100%" style="max-width:{width}px;'
            f'font-family:system-ui,sans-serif" role="img">{"".join(body)}</svg>')
