"""Server-drawn SVG overlays for the drift view: what shows where scripts do not run
(GitHub, nbviewer, an untrusted notebook). The browser app replaces them when it starts."""

from __future__ import annotations

import html
from typing import Any

REF, CUR = "#1f77b4", "#ff7f0e"
W, H, PAD_L, PAD_B, PAD_T = 420, 170, 40, 34, 16


def _bars(shares: list[tuple[float, float]], labels: list[str], unseen: list[bool] | None = None) -> str:
    ymax = max([max(r, c) for r, c in shares] + [1e-12]) * 1.1
    bw = (W - PAD_L - 6) / max(len(shares), 1)
    parts = []
    for i, (r, c) in enumerate(shares):
        for j, (v, colour) in enumerate(((r, REF), (c, CUR))):
            h = v / ymax * (H - PAD_T - PAD_B)
            parts.append(
                f'<rect x="{PAD_L + i * bw + j * bw * 0.45 + bw * 0.05:.1f}" y="{H - PAD_B - h:.1f}" '
                f'width="{bw * 0.45:.1f}" height="{h:.1f}" fill="{colour}" opacity="0.75">'
                f"<title>{html.escape(labels[i])}: reference {r:.1%}, current {c:.1%}"
                f"{' (new)' if unseen and unseen[i] else ''}</title></rect>"
            )
    parts.append(f'<text x="4" y="11" font-size="10">share of rows (max {ymax / 1.1:.1%})</text>')
    return "".join(parts)


def _axis_labels(left: str, right: str) -> str:
    y = H - PAD_B + 13
    return (f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - 6}" y2="{H - PAD_B}" stroke="#888"/>'
            f'<text x="{PAD_L}" y="{y}" font-size="10">{html.escape(left)}</text>'
            f'<text x="{W - 6}" y="{y}" font-size="10" text-anchor="end">{html.escape(right)}</text>')


def numeric_svg(sketch: dict[str, Any], bins: int = 30) -> str:
    """Reference vs current histograms (shares per bin) from a numeric sketch."""
    k = len(sketch["ref_hist"]) // bins
    ref = [sum(sketch["ref_hist"][i * k:(i + 1) * k]) for i in range(bins)]
    cur = [sum(sketch["cur_hist"][i * k:(i + 1) * k]) for i in range(bins)]
    nr, nc = max(sum(ref), 1), max(sum(cur), 1)
    lo, hi = sketch["lo"], sketch["hi"]
    labels = [f"[{lo + (hi - lo) * i / bins:.4g}, {lo + (hi - lo) * (i + 1) / bins:.4g})" for i in range(bins)]
    return _bars([(r / nr, c / nc) for r, c in zip(ref, cur)], labels) + _axis_labels(f"{lo:.4g}", f"{hi:.4g}")


def categorical_svg(sketch: dict[str, Any]) -> str:
    """Reference vs current category shares from a categorical sketch."""
    ref, cur = sketch["ref_counts"], sketch["cur_counts"]
    nr, nc = max(sum(ref), 1), max(sum(cur), 1)
    names = sketch["categories"]
    bw = (W - PAD_L - 6) / max(len(names), 1)
    step = max(1, len(names) // 12)  # label at most ~12 bars; every bar has a hover title
    labels = "".join(
        f'<text x="{PAD_L + (i + 0.5) * bw:.1f}" y="{H - PAD_B + 13}" font-size="10" '
        f'text-anchor="middle">{html.escape(n[:12])}</text>'
        for i, n in enumerate(names) if i % step == 0
    )
    axis = f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - 6}" y2="{H - PAD_B}" stroke="#888"/>'
    return _bars([(r / nr, c / nc) for r, c in zip(ref, cur)], names, sketch.get("unseen")) + axis + labels


def overlay_figure(name: str, kind: str, sketch: dict[str, Any], caption: str) -> str:
    """One titled SVG figure for a feature (``name`` and ``caption`` are escaped here)."""
    if not sketch:
        return ""
    body = numeric_svg(sketch) if kind in ("numeric", "datetime") else categorical_svg(sketch)
    return (
        f'<figure class="vd-static-overlay" style="display:inline-block;margin:4px 12px 4px 0">'
        f'<svg viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img">{body}</svg>'
        f'<figcaption style="font-size:12px"><b>{html.escape(name)}</b> {html.escape(caption)} '
        f'<span style="color:{REF}">&#9632; reference</span> '
        f'<span style="color:{CUR}">&#9632; current</span></figcaption></figure>'
    )
