"""The marks over and around a figure's plot for :mod:`._figure_svg`: shapes (epoch marks,
reference levels, windows), notes in words and the legend; and plotly's pseudo-HTML as SVG
text. Everything drawn from user data is escaped."""

from __future__ import annotations

import html
import re
from typing import Any

_TAG = re.compile(r"<[^>]*>")


def text_of(markup: Any) -> str:
    """Plotly pseudo-HTML as escaped SVG text: tags dropped, entities read, re-escaped."""
    plain = html.unescape(_TAG.sub(" ", str(markup).replace("<br>", " · ")))
    return html.escape(" ".join(plain.split()))


def _axis_key(ref: str, letter: str) -> str:
    return f"{letter}axis{ref[1:]}"  # "x" -> "xaxis", "y6" -> "yaxis6"


def axis_key(ref: str, letter: str) -> str:
    return f"{letter}axis{ref[1:]}"  # "x" -> "xaxis", "y6" -> "yaxis6"


def annotations(layout: dict[str, Any], width: float, height: float,
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


def shapes(layout: dict[str, Any], axes: dict[str, Any], height: float,
            margin: dict[str, float]) -> str:
    """Vertical marks (xref x, yref paper), reference levels (xref paper, yref y) and
    boxes (rect: xref x, yref paper)."""
    top, bottom = margin.get("t", 30), height - margin.get("b", 40)
    paper = lambda v, d: bottom - float(d if v is None else v) * (bottom - top)  # noqa: E731
    out = []
    for shape in (layout.get("shapes") or [])[:200]:
        line = shape.get("line") or {}
        colour = html.escape(str(line.get("color", "#ccc")))
        dash = {"solid": ""}.get(line.get("dash", "dash"), ' stroke-dasharray="4,3"')
        xa = axes.get(axis_key(shape.get("xref", "x"), "x"))
        ya = axes.get(axis_key(shape.get("yref", "y"), "y"))
        if shape.get("xref") == "paper" and ya is not None and shape.get("y0") is not None:
            xs = [a for k, a in axes.items() if k[0] == "x"][:1]
            if xs:  # a level across the plot
                y = ya.pos(shape["y0"])
                out.append(f'<line x1="{xs[0].start:.1f}" y1="{y:.1f}" x2="{xs[0].end:.1f}" '
                           f'y2="{y:.1f}" stroke="{colour}"{dash}/>')
            continue
        if xa is None or shape.get("yref") != "paper" or shape.get("x0") is None:
            continue
        x, y0, y1 = xa.pos(shape["x0"]), paper(shape.get("y0"), 0), paper(shape.get("y1"), 1)
        if shape.get("type") == "rect" and shape.get("x1") is not None:
            fill = html.escape(str(shape.get("fillcolor", "#ffe0b2")))
            out.append(f'<rect x="{min(x, xa.pos(shape["x1"])):.1f}" y="{min(y0, y1):.1f}" '
                       f'width="{abs(xa.pos(shape["x1"]) - x):.1f}" height="{abs(y1 - y0):.1f}" '
                       f'fill="{fill}" opacity="{float(shape.get("opacity", 0.5))}"/>')
        elif shape.get("type") == "line":
            out.append(f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y1:.1f}" '
                       f'stroke="{colour}"{dash}/>')
    return "".join(out)


def legend(traces: list[dict[str, Any]], x: float, y: float, row: bool = False) -> str:
    """The legend: a column from (x, y), or a ``row`` ending at x."""
    out, seen = [], set()
    if row:
        names = [t.get("name") for t in traces if t.get("name") and t.get("showlegend") is not False]
        x -= sum(26 + 6.5 * len(text_of(n)[:40]) for n in dict.fromkeys(names))
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
        if row:
            x += 26 + 6.5 * len(text_of(name)[:40])
        else:
            y += 15
    return "".join(out)
