"""The numbers behind the drift, predictions, embeddings and compare-runs charts, as
frames, and their plotly figures built from those frames (:mod:`._plotly_export`).

Each view's ``to_frame()`` / ``figure()`` calls one pair here:

- drift: one feature's overlay, reference against current, per bin (numeric and
  datetime features: ``bin_low``, ``bin_high``) or per category (``category``), with
  ``ref_count``, ``cur_count``, ``ref_share``, ``cur_share``;
- predictions: the confusion matrix in long form, ``true``, ``predicted``, ``count``;
- embeddings: the picture drawn now, ``row`` (the input's row), ``x``, ``y`` and the
  per-point ``label`` / ``prediction`` / ``loss`` given;
- compare runs: each run's curve at chart resolution, ``run``, ``step``, ``low``,
  ``high``, ``mean`` (a bucket's min, max and mean; one point each for a short run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VizdebugError, VizdebugTypeError
from . import _plotly_export as px

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from ..analysis.datasets.predictions import PredictionReport
    from ..analysis.drift.stats import FeatureDrift
    from ..records.runs import RunEntry
    from .embeddings import EmbeddingView


def _frame(columns: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns)


def _shares(counts: np.ndarray) -> np.ndarray:
    return counts / max(float(counts.sum()), 1.0)


# -- drift -------------------------------------------------------------------------------------
def pick_feature(results: Sequence[FeatureDrift], feature: Any) -> FeatureDrift:
    """The feature called ``feature`` (``None``: the most drifted), or an error naming some."""
    if not results:
        raise VizdebugError("this drift view has no features to draw")
    if feature is None:
        return results[0]
    if not isinstance(feature, str):
        raise VizdebugTypeError(f"feature must be a column name (str), got "
                                f"{type(feature).__name__} {feature!r}")
    for r in results:
        if r.feature == feature:
            return r
    names = [r.feature for r in results[:10]]
    raise VizdebugError(f"no feature called {feature!r}; the most drifted are {names}")


def drift_frame(r: FeatureDrift) -> pd.DataFrame:
    """One feature's overlay as numbers (empty when it was not sketched: a feature that
    could not be tested)."""
    sketch = r.sketch or {}
    if "ref_hist" in sketch:
        ref = np.asarray(sketch["ref_hist"], dtype=np.int64)
        cur = np.asarray(sketch["cur_hist"], dtype=np.int64)
        edges = np.linspace(sketch["lo"], sketch["hi"], ref.size + 1)
        return _frame({"bin_low": edges[:-1], "bin_high": edges[1:], "ref_count": ref,
                       "cur_count": cur, "ref_share": _shares(ref), "cur_share": _shares(cur)})
    if "categories" in sketch:
        ref = np.asarray(sketch["ref_counts"], dtype=np.int64)
        cur = np.asarray(sketch["cur_counts"], dtype=np.int64)
        return _frame({"category": [str(c) for c in sketch["categories"]], "ref_count": ref,
                       "cur_count": cur, "ref_share": _shares(ref), "cur_share": _shares(cur)})
    return _frame({"category": [], "ref_count": [], "cur_count": [], "ref_share": [],
                   "cur_share": []})


def drift_figure(r: FeatureDrift, frame: pd.DataFrame) -> go.Figure:
    """Reference and current shares, overlaid (bars at each bin's centre)."""
    go = px.plotly_go()
    numeric = "bin_low" in frame.columns
    x = ((frame["bin_low"] + frame["bin_high"]) / 2).to_numpy() if numeric else \
        frame["category"].to_numpy()
    width = (frame["bin_high"] - frame["bin_low"]).to_numpy() if numeric else None
    traces = [go.Bar(x=x, y=frame[f"{side}_share"].to_numpy(), name=name, width=width,
                     opacity=0.6, marker={"color": colour})
              for side, name, colour in (("ref", "reference", "#1f77b4"),
                                         ("cur", "current", "#ff7f0e"))]
    title = (f"{r.feature}: {r.effect_metric} {r.effect_size:.3g}"
             f"{', drifted' if r.drifted else ''}")
    layout = go.Layout(title={"text": title}, barmode="overlay" if numeric else "group",
                       xaxis={"title": {"text": r.feature}}, template="plotly_white",
                       yaxis={"title": {"text": "share of rows"}, "tickformat": ".0%"})
    return go.Figure(traces, layout)


# -- predictions -------------------------------------------------------------------------------
def confusion_frame(report: PredictionReport) -> pd.DataFrame:
    labels = [str(c) for c in report.classes]
    k = len(labels)
    return _frame({"true": np.repeat(labels, k).tolist(), "predicted": labels * k,
                   "count": np.asarray(report.confusion, dtype=np.int64).reshape(-1)})


def confusion_figure(report: PredictionReport, frame: pd.DataFrame) -> go.Figure:
    labels = list(dict.fromkeys(frame["true"].tolist()))
    matrix = frame["count"].to_numpy().reshape(len(labels), len(labels))
    return px.matrix_figure(matrix, labels, title=f"Confusion matrix (accuracy "
                                                   f"{report.accuracy:.1%})")


# -- embeddings --------------------------------------------------------------------------------
def embedding_frame(view: EmbeddingView) -> pd.DataFrame:
    """The picture ``view`` draws now: ``row`` (the input's row), ``x``, ``y`` and the
    ``label`` / ``prediction`` (an ``n x c`` score's argmax) / ``loss`` given per point."""
    view._drawn.set()  # (a picture was asked for: the refinement may go on)
    return _points(view, view._picture()[0])


def _points(view: EmbeddingView, layout: np.ndarray) -> pd.DataFrame:
    out: dict[str, Any] = {"row": np.asarray(view.features.rows, dtype=np.int64),
                           "x": np.asarray(layout[:, 0], dtype=float),
                           "y": np.asarray(layout[:, 1], dtype=float)}
    for name, values in (("label", view.labels), ("prediction", view.predictions),
                         ("loss", view.losses)):
        if values is None:
            continue
        values = np.asarray(values)
        if name == "prediction" and values.ndim == 2:
            values = values.argmax(axis=1)
        out[name] = values.tolist() if values.dtype.kind in "OUS" else values
    return _frame(out)


def embedding_figure(view: EmbeddingView) -> go.Figure:
    """The picture as a scatter, a trace per label (else per prediction)."""
    px.plotly_go()
    view._drawn.set()
    layout, name, _ = view._picture()  # (the layout and its name, read together)
    frame = _points(view, layout)
    colour = next((c for c in ("label", "prediction") if c in frame.columns), None)
    return px.points_figure(frame, colour=colour, title=f"Embeddings ({name})")


# -- compare runs ------------------------------------------------------------------------------
def compare_frame(entries: Sequence[RunEntry], metric: str, bands: Sequence[Any] = ()
                  ) -> pd.DataFrame:
    """A row per run and bucket; with groups (``bands``:
    :class:`~vizdebug.analysis.runs.Band`), a row per group and step of the common grid,
    ``run`` naming the group and how many runs it holds."""
    if bands:
        import pandas as pd

        return pd.concat([_frame({"run": [f"{b.label} ({len(b.runs)} runs)"] * b.step.size,
                                  "step": np.asarray(b.step, dtype=np.int64), "low": b.low,
                                  "high": b.high, "mean": b.mean}) for b in bands],
                         ignore_index=True)
    runs, parts = [], []
    for entry in entries:
        curve = entry.curves.get(metric)
        if curve is None or not curve.step.size:
            continue
        runs += [entry.name] * int(curve.step.size)
        parts.append((curve.step, curve.low, curve.high, curve.mean))
    cols = [np.concatenate([p[i] for p in parts]) if parts else np.empty(0) for i in range(4)]
    return _frame({"run": runs, "step": cols[0].astype(np.int64), "low": cols[1],
                   "high": cols[2], "mean": cols[3]})


def log_wanted(metric: str, frame: pd.DataFrame) -> bool:
    """A log y axis for a positive loss that spans more than two decades."""
    values = np.r_[frame["low"].to_numpy(dtype=float), frame["high"].to_numpy(dtype=float)]
    values = values[np.isfinite(values)]
    if "loss" not in metric.lower() or not values.size or values.min() <= 0:
        return False
    return bool(values.max() / values.min() > 100)


def compare_figure(frame: pd.DataFrame, metric: str) -> go.Figure:
    """Each run's (or group's) mean line within its min-max band."""
    fig = px.band_figure(frame, x="step", mid="mean", low="low", high="high", by="run",
                         title=f"{metric}, runs compared", y_title=metric)
    if log_wanted(metric, frame):
        fig.update_yaxes(type="log")
    return fig
