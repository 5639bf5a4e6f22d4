"""The dashboard's learning-curve panel, built from TrainingRecords (pure: dicts out).

What it does so the curves read at a glance:

- a raw + smoothed line per metric (``val_*`` dotted, in its training twin's colour),
  ratios (accuracy, F1...) on a right axis from 0 to 1;
- long curves are downsampled with min/max buckets of a power-of-two width aligned at
  step 0, so a new point changes only the last bucket and the live widget can send the
  new points alone (:mod:`._dashboard_delta`);
- a non-finite value is an event, not a number: a red cross on a band above the plot,
  with "loss was NaN at step k" on hover;
- one early spike does not flatten the rest: the y range is cut to a robust range and
  what lies beyond it is marked by a triangle at the edge, with its value on hover. (Not
  an automatic log scale: a loss can be zero or negative, a scale that switches as data
  arrives makes the picture jump, and the log-scale toggle is still there.)
- at most :data:`MAX_EPOCH_MARKS` epoch lines, so sixty epochs are not a fence.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from ..analysis.curves import ema_smooth
from ..analysis.training.curves import is_lr_name
from ..records import TrainingRecords
from .chart_spec import clean

MAX_POINTS = 800
MAX_EPOCH_MARKS = 12
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")
EVAL_PREFIXES = ("val_", "valid_", "validation_", "test_", "eval_")
_HIDDEN = ("epoch",)
BAD = "#c62828"
#: The y range of the main axis: the data sits in [0, 0.9], the non-finite band above.
_BAND = (0.93, 1.0)


def label(text: str) -> str:
    """A user string as plotly text: escaped, so plotly's pseudo-HTML shows it literally."""
    return html.escape(str(text)).replace("%{", "%\u200b{")


def is_ratio(name: str) -> bool:
    return any(k in name for k in ("acc", "f1", "precision", "recall", "auc"))


def base_name(name: str) -> str:
    for prefix in EVAL_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def stable_width(n: int, buckets: int) -> int:
    """The power-of-two bucket width that cuts ``n`` values into at most ``buckets``."""
    return 1 if n <= buckets else 1 << math.ceil(math.log2(n / buckets))


def stable_downsample(x: np.ndarray, y: np.ndarray,
                      max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Each bucket's minimum, maximum and first non-finite point, buckets aligned at 0.

    Examples
    --------
    >>> y = np.zeros(10_000); y[1234] = 9.0; y[5000] = np.nan
    >>> xs, ys = stable_downsample(np.arange(10_000), y, 200)
    >>> len(xs) <= 202, 1234 in xs, 5000 in xs
    (True, True, True)
    """
    n = y.size
    if n <= max_points:
        return x, y
    width = stable_width(n, max_points // 2)
    nb = -(-n // width)
    padded = np.full(nb * width, np.nan)
    padded[:n] = y
    finite = np.isfinite(padded)
    lo = np.where(finite, padded, np.inf).reshape(nb, width).argmin(axis=1)
    hi = np.where(finite, padded, -np.inf).reshape(nb, width).argmax(axis=1)
    bad = ~finite
    bad[n:] = False
    bad = bad.reshape(nb, width)
    base = np.arange(nb) * width
    first_bad = (base + bad.argmax(axis=1))[bad.any(axis=1)]
    idx = np.unique(np.concatenate([base + lo, base + hi, first_bad]))
    idx = idx[idx < n]
    return x[idx], y[idx]


def _trend(v: np.ndarray, width: int = 5) -> np.ndarray:
    """The running median of ``width`` points: the curve's course without its lone spikes
    (the ends take the median of the first and the last window)."""
    if v.size < width:
        return v
    mid = np.median(np.lib.stride_tricks.sliding_window_view(v, width), axis=1)
    half = width // 2
    return np.concatenate([np.full(half, mid[0]), mid, np.full(width - 1 - half, mid[-1])])


def robust_range(y: np.ndarray) -> tuple[float, float] | None:
    """A y range that leaves out a few far outliers and keeps the story (``None``:
    nothing to leave out).

    The fences lie five inter-decile spreads beyond the 10th and 90th percentiles, widened
    to hold the curve's course (its running median of five points: a descent from 2.3 to
    0.1 over the first few percent of a long run is the story, not an outlier), its start
    (unless that is a lone spike more than the course's whole span beyond it) and the
    latest tenth (a run that diverges now must show it). What still falls outside is
    drawn at the edge and counted in the panel's title (:func:`off_scale_note`).

    Examples
    --------
    >>> y = np.r_[5000.0, np.linspace(2.0, 0.1, 500)]
    >>> lo, hi = robust_range(y); bool(hi < 10)
    True
    >>> robust_range(np.linspace(2.0, 0.1, 500)) is None
    True
    >>> steps = np.arange(2500)
    >>> descent = 0.05 + 2.25 * np.exp(-steps / 30) + 0.01 * np.sin(steps)
    >>> robust_range(np.r_[descent[:1000], 40.0, descent[1000:]])[1] > 2.3
    True
    """
    v = y[np.isfinite(y)]
    if v.size < 20:
        return None
    q10, q90 = np.quantile(v, [0.1, 0.9])
    spread = max(q90 - q10, 1e-12 * max(abs(q90), 1.0))
    trend = _trend(v)
    low, high = min(q10 - 5 * spread, trend.min()), max(q90 + 5 * spread, trend.max())
    recent = v[-max(1, v.size // 10):]
    low, high = min(low, recent.min()), max(high, recent.max())
    span = trend.max() - trend.min()
    if trend.min() - span <= v[0] <= trend.max() + span:
        low, high = min(low, v[0]), max(high, v[0])
    inside = v[(v >= low) & (v <= high)]
    if inside.size == v.size or inside.size == 0:
        return None
    lo, hi = float(inside.min()), float(inside.max())
    pad = 0.05 * (hi - lo or abs(hi) or 1.0)
    return lo - pad, hi + pad


def off_scale_note(traces: list[dict[str, Any]], bounds: tuple[float, float] | None
                   ) -> str:
    """What the range leaves out, in words for the panel's title (``""``: nothing): how
    many logged values lie above and below it, and the farthest, with its step.

    Examples
    --------
    >>> t = {"meta": {"raw": True}, "name": "loss", "x": [0, 1, 2], "y": [5000.0, 1.0, -9.0]}
    >>> off_scale_note([t], (0.0, 2.0))
    '2 values off the scale (linear): loss 5000 at step 0 above, loss -9 at step 2 below'
    """
    if not bounds:
        return ""
    lo, hi = bounds
    above: list[tuple[float, str, int]] = []
    below: list[tuple[float, str, int]] = []
    for t in traces:
        if not (t.get("meta") or {}).get("raw") or t.get("yaxis", "y") != "y":
            continue
        for x, v in zip(t["x"], t["y"]):
            if v is not None and v > hi:
                above.append((v, t["name"], x))
            elif v is not None and v < lo:
                below.append((v, t["name"], x))
    if not above and not below:
        return ""
    parts = [f"{name} {v:.4g} at step {int(x) if float(x).is_integer() else x} {where}"
             for pool, pick, where in
             ((above, max, "above"), (below, min, "below")) if pool
             for v, name, x in [pick(pool)]]
    n = len(above) + len(below)
    return f"{n} value{'s' if n != 1 else ''} off the scale (linear): " + ", ".join(parts)


def _line_traces(name: str, x: np.ndarray, y: np.ndarray, colour: str,
                 smoothing: float, bounds: tuple[float, float] | None
                 ) -> list[dict[str, Any]]:
    is_eval = name.startswith(EVAL_PREFIXES)
    axis = "y2" if is_ratio(name) else "y"
    line = {"color": colour, "width": 2 if is_eval else 1, "dash": "dot" if is_eval else "solid"}
    raw = {"type": "scatter", "x": clean(x), "y": clean(y), "name": label(name),
           "legendgroup": label(name), "yaxis": axis, "xaxis": "x",
           "mode": "lines+markers" if x.size < 40 else "lines", "line": line,
           "opacity": 1.0 if is_eval else 0.35, "meta": {"raw": True},
           "hovertemplate": "step %{x}: %{y:.4~g}<extra>" + label(name) + "</extra>"}
    if is_lr_name(name):  # another scale than the loss: one click away in the legend
        raw.update(visible="legendonly", opacity=1.0)
    if is_eval or is_lr_name(name):
        return [raw]
    # smoothed within the robust range: a spike off the scale (marked by a triangle) would
    # otherwise drag a long decaying tail through the part of the curve that is in view
    inside = y if bounds is None or axis != "y" else np.clip(y, *bounds)
    smooth = dict(raw, y=clean(ema_smooth(inside, smoothing)), opacity=1.0, showlegend=False,
                  mode="lines", meta={"smooth": True}, line=dict(line, width=2),
                  hoverinfo="skip")
    smooth.pop("hovertemplate")
    return [raw, smooth]


def nonfinite_trace(name: str, x: np.ndarray, y: np.ndarray) -> dict[str, Any] | None:
    """Red crosses on the band above the plot, one per non-finite value."""
    bad = ~np.isfinite(y)
    if not bad.any():
        return None
    words = ["NaN" if np.isnan(v) else ("+inf" if v > 0 else "-inf") for v in y[bad]]
    text = [f"{label(name)} was {w} at step {int(s)}" for w, s in zip(words, x[bad])]
    return {"type": "scatter", "x": clean(x[bad]), "y": [0.5] * int(bad.sum()),
            "xaxis": "x", "yaxis": "y3", "mode": "markers", "showlegend": False,
            "marker": {"symbol": "x", "color": BAD, "size": 10},
            "name": f"{label(name)} non-finite", "text": text,
            "hovertemplate": "%{text}<extra></extra>"}


def nonfinite_words(name: str, values: np.ndarray, what: str = "values") -> str:
    """What a series with no finite value holds, in words (for a panel that would
    otherwise draw an axis fitted to nothing).

    Examples
    --------
    >>> nonfinite_words("loss", np.full(44, np.nan))
    'loss: all 44 values NaN'
    >>> nonfinite_words("loss", np.array([np.nan, np.inf, np.inf]))
    'loss: all 3 values non-finite (1 NaN, 2 +inf)'
    """
    v = np.asarray(values, dtype=float).ravel()
    counts = [(int(np.isnan(v).sum()), "NaN"), (int((v == np.inf).sum()), "+inf"),
              (int((v == -np.inf).sum()), "-inf")]
    kinds = [(n, word) for n, word in counts if n]
    if len(kinds) == 1:
        kind = kinds[0][1]
    else:
        kind = "non-finite (" + ", ".join(f"{n} {word}" for n, word in kinds) + ")"
    if v.size == 1:
        return f"{label(name)}: its one value is {kind}"
    return f"{label(name)}: all {v.size} {what} {kind}"


def nothing_finite(rec: TrainingRecords, traces: list[dict[str, Any]]) -> str | None:
    """The curves panel's words when none of its drawn lines has a finite point (``None``
    when something can be drawn): each metric that is all NaN/inf, one to a line."""
    drawn = [t for t in traces if t.get("yaxis", "y") in ("y", "y2")
             and t.get("visible", True) is True]
    if not drawn or any(v is not None for t in drawn for v in t.get("y") or []):
        return None
    lines = [nonfinite_words(name, values) for name, (_, values) in rec.scalars.items()
             if name not in _HIDDEN and not is_lr_name(name) and np.size(values)
             and not np.isfinite(np.asarray(values, dtype=float)).any()]
    return "<br>".join(lines) or None


def outlier_trace(name: str, x: np.ndarray, y: np.ndarray, axis: str,
                  bounds: tuple[float, float], colour: str) -> dict[str, Any] | None:
    """Triangles at the edge of the robust range for values beyond it."""
    lo, hi = bounds
    with np.errstate(invalid="ignore"):
        out = np.isfinite(y) & ((y > hi) | (y < lo))
    if not out.any():
        return None
    edge = np.where(y[out] > hi, hi, lo)
    text = [f"{label(name)} = {v:.4g} at step {int(s)} (off the scale)"
            for v, s in zip(y[out], x[out])]
    symbols = ["triangle-up" if v > hi else "triangle-down" for v in y[out]]
    return {"type": "scatter", "x": clean(x[out]), "y": clean(edge), "xaxis": "x",
            "yaxis": axis, "mode": "markers", "showlegend": False, "text": text,
            "marker": {"symbol": symbols, "color": colour, "size": 9},
            "name": f"{label(name)} off the scale", "hovertemplate": "%{text}<extra></extra>"}


def curve_traces(rec: TrainingRecords, smoothing: float = 0.6
                 ) -> tuple[list[dict[str, Any]], tuple[float, float] | None]:
    """The panel's traces and the main axis' robust range (``None``: automatic)."""
    colours: dict[str, str] = {}
    lines, marks, series = [], [], []
    for name in (n for n in rec.scalars if n not in _HIDDEN):
        colour = colours.setdefault(base_name(name), PALETTE[len(colours) % len(PALETTE)])
        steps, values = rec.scalars[name]
        x, y = stable_downsample(steps, np.asarray(values, dtype=float))
        series.append((name, x, y, colour))
    main = [y for name, _, y, _ in series if not (is_ratio(name) or is_lr_name(name))]
    bounds = robust_range(np.concatenate(main)) if main else None
    for name, x, y, colour in series:
        lines += _line_traces(name, x, y, colour, smoothing, bounds)
        bad = nonfinite_trace(name, x, y)
        marks += [bad] if bad else []
    for name, x, y, colour in series:
        if bounds and not (is_ratio(name) or is_lr_name(name)):
            out = outlier_trace(name, x, y, "y", bounds, colour)
            marks += [out] if out else []
    return lines + marks, bounds


def epoch_marks(rec: TrainingRecords) -> list[tuple[int, int]]:
    """``(step, epoch)`` where a new epoch starts (from a logged ``epoch``, else from the
    steps where ``val_*`` was logged), thinned to at most :data:`MAX_EPOCH_MARKS`.

    Examples
    --------
    >>> rec = TrainingRecords(scalars={"epoch": (np.arange(60) * 10, np.arange(60.0))})
    >>> marks = epoch_marks(rec); len(marks), marks[:2]
    (11, [(50, 5), (100, 10)])
    """
    if "epoch" in rec.scalars:
        steps, values = rec.scalars["epoch"]
        change = np.flatnonzero(np.diff(values) != 0) + 1
        marks = [(int(s), int(e)) for s, e in zip(steps[change], values[change])]
    else:
        evals = [n for n in rec.scalars if n.startswith(EVAL_PREFIXES)]
        steps = rec.scalars[evals[0]][0][:-1] if evals else []
        marks = [(int(s), i + 1) for i, s in enumerate(steps)]
    if len(marks) <= MAX_EPOCH_MARKS:
        return marks
    every = _nice_step(len(marks) / MAX_EPOCH_MARKS)
    return [(s, e) for s, e in marks if e % every == 0]


def _nice_step(raw: float) -> int:
    """The smallest 1-2-5 step (1, 2, 5, 10, 20...) at least ``raw``."""
    power = 10 ** math.floor(math.log10(raw))
    return int(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def curves_layout(rec: TrainingRecords, traces: list[dict[str, Any]],
                  bounds: tuple[float, float] | None) -> dict[str, Any]:
    has_band = any(t.get("yaxis") == "y3" for t in traces)
    top = _BAND[0] - 0.02 if has_band else 1.0
    axis = {"gridcolor": "#eee", "zeroline": False, "nticks": 7, "tickformat": "~g",
            "ticklabeloverflow": "allow"}  # plotly measures every label otherwise
    shapes, notes = [], []
    for step, epoch in epoch_marks(rec):
        shapes.append({"type": "line", "x0": step, "x1": step, "y0": 0, "y1": top,
                       "xref": "x", "yref": "paper", "layer": "below",
                       "line": {"color": "#d0d0d0", "width": 1, "dash": "dot"}})
        notes.append({"text": f"ep {epoch}", "x": step, "y": 0, "xref": "x", "yref": "paper",
                      "yanchor": "bottom", "xanchor": "left", "showarrow": False,
                      "font": {"size": 9, "color": "#999"}})
    y = dict(axis, domain=[0, top], title={"text": "loss"})
    if bounds:
        y.update(range=list(bounds), autorange=False)
    out = {"xaxis": dict(axis, title={"text": "step"}, anchor="y"), "yaxis": y,
           # tickmode auto: an overlaying axis' default ticks follow the other axis'
           # grid lines, at values such as 4%, 23%, 41%
           "yaxis2": dict(axis, overlaying="y", side="right", range=[0, 1.02], tickmode="auto",
                          title={"text": "accuracy"}, showgrid=False, tickformat=".0%",
                          autorange=False),
           "shapes": shapes, "annotations": notes, "showlegend": True,
           "legend": {"orientation": "h", "x": 1, "xanchor": "right", "y": 1.0,
                      "yanchor": "bottom", "font": {"size": 11}}}
    if has_band:
        out["yaxis3"] = {"domain": list(_BAND), "range": [0, 1], "showgrid": False,
                         "zeroline": False, "tickvals": [0.5], "ticktext": ["non-finite"],
                         "tickfont": {"size": 10, "color": BAD}, "fixedrange": True}
    return out
