"""What :class:`~vizdebug.views.compare.CompareRuns` draws: the overlaid curves (a line per
run, or a mean and min-max band per group) as a figure dict, and the runs table as HTML.

A run's curve arrives as step buckets (:class:`~vizdebug.records.runs.Curve`). A bucket of
several points is drawn as its min and its max (the M4 idea: at one bucket per pixel column
the picture is the one every raw point would draw), so a spike of one step stays visible
in a run of a million steps.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from ..analysis.runs import Band
from ..records.runs import Curve, RunEntry
from .chart_spec import clean

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
MAX_CONFIG_COLUMNS = 8


def colour(i: int) -> str:
    """The ``i``-th colour of the palette (cycling)."""
    return PALETTE[i % len(PALETTE)]


def envelope_xy(curve: Curve) -> tuple[list[int], list[float | None]]:
    """The curve as a line through each bucket's min and max (one point where they are
    equal); a bucket with no finite value breaks the line."""
    xs: list[int] = []
    ys: list[float | None] = []
    for s, lo, hi, mean in zip(curve.step.tolist(), curve.low.tolist(), curve.high.tolist(),
                               curve.mean.tolist()):
        if not math.isfinite(mean):
            xs.append(s)
            ys.append(None)
        elif lo == hi or not (math.isfinite(lo) and math.isfinite(hi)):
            xs.append(s)
            ys.append(mean)
        else:
            xs += [s, s]
            ys += [lo, hi]
    return xs, ys


def _log_wanted(metric: str, values: list[float | None]) -> bool:
    """Log steps for a loss that spans more than two decades (and is positive)."""
    finite = [v for v in values if v is not None]
    if "loss" not in metric.lower() or not finite or min(finite) <= 0:
        return False
    return max(finite) / min(finite) > 100


def run_traces(entries: Sequence[RunEntry], metric: str, colours: dict[str, str],
               baseline: str | None) -> list[dict[str, Any]]:
    """One line per run (the baseline drawn black and on top)."""
    traces = []
    for entry in entries:
        curve = entry.curves.get(metric)
        if curve is None or not curve.step.size:
            continue
        xs, ys = envelope_xy(curve)
        base = entry.name == baseline
        traces.append({"type": "scatter", "mode": "lines", "name": entry.name, "x": xs,
                       "y": ys, "showlegend": len(entries) <= 12 or base,
                       "line": {"color": "#111" if base else colours[entry.name],
                                "width": 2.5 if base else 1.2},
                       "opacity": 1.0 if base else 0.8})
    traces.sort(key=lambda t: t["name"] == baseline)
    return traces


def band_traces(bands: Sequence[Band]) -> list[dict[str, Any]]:
    """Per group: its min-max band (a filled outline) and its mean line."""
    traces = []
    for i, b in enumerate(bands):
        steps = b.step.tolist()
        low, high = clean(b.low), clean(b.high)
        outline_x = steps + steps[::-1]
        outline_y = high + low[::-1]
        name = f"{b.label} ({len(b.runs)} runs)"
        traces.append({"type": "scatter", "mode": "lines", "fill": "toself", "x": outline_x,
                       "y": outline_y, "name": name, "showlegend": False, "hoverinfo": "skip",
                       "line": {"color": colour(i), "width": 0}, "opacity": 0.18})
        traces.append({"type": "scatter", "mode": "lines", "x": steps, "name": name,
                       "y": clean(b.mean), "line": {"color": colour(i), "width": 2}})
    return traces


def figure(entries: Sequence[RunEntry], metric: str, *, bands: Sequence[Band] = (),
           colours: dict[str, str] | None = None, baseline: str | None = None,
           height: int = 380) -> dict[str, Any]:
    """The comparison chart of ``metric``: bands when grouped, else a line per run."""
    colours = colours or {e.name: colour(i) for i, e in enumerate(entries)}
    raw = [v for e in entries if metric in e.curves for v in clean(e.curves[metric].high)]
    log = _log_wanted(metric, raw + [v for e in entries if metric in e.curves
                                     for v in clean(e.curves[metric].low)])
    traces = band_traces(bands) if bands else []
    shown = [e for e in entries if e.name == baseline] if bands else list(entries)
    traces += run_traces(shown, metric, colours, baseline)
    title = f"{metric} over steps, {len(entries)} runs{' (log scale)' if log else ''}"
    return {"data": traces, "layout": {
        "height": height, "margin": {"l": 64, "r": 190, "t": 34, "b": 40},
        "title": {"text": title}, "xaxis": {"title": {"text": "step"}},
        "yaxis": {"title": {"text": metric}, **({"type": "log"} if log else {})}}}


def varying_keys(entries: Sequence[RunEntry]) -> tuple[list[str], dict[str, Any]]:
    """Config keys whose values differ between runs (table columns, at most
    :data:`MAX_CONFIG_COLUMNS`), and the settings every run shares."""
    keys = list(dict.fromkeys(k for e in entries for k in e.config))
    varying, same = [], {}
    for key in keys:
        values = {repr(e.config.get(key, "?")) for e in entries}
        if len(values) > 1:
            varying.append(key)
        else:
            same[key] = entries[0].config.get(key)
    return varying[:MAX_CONFIG_COLUMNS], same


def _number(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.4g}" if isinstance(v, float) else html.escape(str(v))


def table_rows(entries: Sequence[RunEntry], metric: str, keys: Sequence[str],
               counts: dict[str, dict[str, int] | None],
               new: dict[str, int | None]) -> list[dict[str, Any]]:
    """The runs table as plain rows (what ``.table()`` returns and the HTML shows)."""
    rows = []
    for entry in entries:
        s = entry.summary(metric)
        c = counts.get(entry.name)
        rows.append({"run": entry.name, "state": entry.state,
                     **{k: entry.config.get(k) for k in keys},
                     f"final {metric}": s["final"], f"best {metric}": s["best"],
                     "best step": s["best_step"], "last step": entry.last_step,
                     "errors": None if c is None else c.get("error", 0),
                     "warnings": None if c is None else c.get("warning", 0),
                     "new vs baseline": new.get(entry.name)})
    return rows


def table_html(rows: Sequence[dict[str, Any]], colours: dict[str, str],
               baseline: str | None) -> str:
    """The runs table (every cell escaped); the colour swatch ties a row to its line."""
    if not rows:
        return '<div class="vd-empty">no runs</div>'
    head = "".join(f'<th data-col="{i}">{html.escape(str(k))}</th>'
                   for i, k in enumerate(rows[0]))
    body = []
    for row in rows:
        name = str(row["run"])
        swatch = (f'<span style="display:inline-block;width:10px;height:10px;margin-right:5px;'
                  f'background:{html.escape(colours.get(name, "#888"))}"></span>')
        mark = " ★ baseline" if name == baseline else ""
        cells = [f"<td>{swatch}{html.escape(name)}{mark}</td>"]
        cells += [f"<td>{_number(v)}</td>" for k, v in row.items() if k != "run"]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<table class="vd-table vd-compare-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')
