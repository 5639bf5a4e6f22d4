"""``show_predictions``: the confusion matrix and per-class metrics beside the accuracy.

A static view (the same HTML live and in nbconvert/GitHub): nothing in it changes after
it is drawn. The numbers come from :func:`vizdebug.analysis.datasets.predictions.prediction_report`.
"""

from __future__ import annotations

import html
from typing import Any

from ..analysis.datasets.predictions import PredictionReport, accuracy_findings, prediction_report
from ..findings import Findings, findings_html
from ._base import View
from ._display import shown_where_called
from ._plotly_export import plotly_go
from .view_frames import confusion_figure, confusion_frame

MAX_MATRIX = 30  # classes drawn in the matrix (the per-class table lists them all)


class PredictionView(View):
    """Accuracy, balanced accuracy, the confusion matrix and per-class precision/recall/F1.

    Examples
    --------
    >>> view = PredictionView(prediction_report([0, 1, 1], [0, 1, 0]))
    >>> round(view.report.balanced_accuracy, 2)
    0.75
    """

    title = "vizdebug predictions"

    def __init__(self, report: PredictionReport) -> None:
        self.report = report
        self.findings = Findings(accuracy_findings(report))

    @property
    def table(self) -> Any:
        """Per-class precision, recall, F1 and support (a DataFrame)."""
        return self.report.table()

    def to_frame(self) -> Any:
        """The confusion matrix in long form: ``true``, ``predicted``, ``count`` (a
        ``pandas.DataFrame``; ``.pivot(index="true", columns="predicted")`` squares it)."""
        return confusion_frame(self.report)

    def figure(self) -> Any:
        """The confusion matrix as a ``plotly.graph_objects.Figure`` (from
        :meth:`to_frame`); needs plotly.

        Examples
        --------
        >>> vd.show_predictions(y, pred).figure().write_image("cm.png")  # doctest: +SKIP
        """
        plotly_go()
        return confusion_figure(self.report, self.to_frame())

    def __repr__(self) -> str:
        r = self.report
        return (f"<PredictionView: {len(r.classes)} classes, accuracy {r.accuracy:.3f}, "
                f"balanced {r.balanced_accuracy:.3f}, {len(self.findings)} findings>")

    def _static_html(self) -> str:
        r = self.report
        head = (f"<h3>Predictions: accuracy {r.accuracy:.1%} &middot; balanced accuracy "
                f"{r.balanced_accuracy:.1%}</h3><div class='vd-note'>{int(r.support.sum())} "
                f"samples, {len(r.classes)} classes; always predicting "
                f"{html.escape(str(r.majority_class))} would score {r.majority_share:.1%}</div>")
        return (head + findings_html(self.findings) + "<div style='display:flex;gap:24px;"
                "flex-wrap:wrap;align-items:flex-start'>" + _matrix_html(r) + _class_table(r)
                + "</div>")


def _matrix_html(r: PredictionReport) -> str:
    k = min(len(r.classes), MAX_MATRIX)
    names = [html.escape(str(c)) for c in r.classes[:k]]
    rows = []
    for i in range(k):
        total = max(1, int(r.support[i]))
        cells = []
        for j in range(k):
            n = int(r.confusion[i, j])
            share = n / total
            colour = (f"rgba(46,125,50,{0.15 + 0.75 * share:.2f})" if i == j else
                      f"rgba(198,40,40,{0.75 * share:.2f})") if n else "transparent"
            cells.append(f"<td style='background:{colour}' title='true {names[i]}, predicted "
                         f"{names[j]}: {n} ({share:.0%} of the row)'>{n}</td>")
        rows.append(f"<tr><th>{names[i]}</th>{''.join(cells)}</tr>")
    cut = (f"<div class='vd-note'>first {k} of {len(r.classes)} classes</div>"
           if k < len(r.classes) else "")
    header = "".join(f"<th>{n}</th>" for n in names)
    return (f"<div><div class='vd-note'>confusion matrix (rows: true class, columns: "
            f"predicted)</div><table class='vd-table vd-confusion'><tr><th></th>{header}</tr>"
            f"{''.join(rows)}</table>{cut}</div>")


def _class_table(r: PredictionReport) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(str(c))}</td><td>{p:.3f}</td><td>{rc:.3f}</td><td>{f:.3f}</td>"
        f"<td>{int(s)}</td></tr>"
        for c, p, rc, f, s in zip(r.classes, r.precision, r.recall, r.f1, r.support))
    return ("<div><div class='vd-note'>per class</div><table class='vd-table vd-per-class'>"
            "<tr><th>class</th><th>precision</th><th>recall</th><th>F1</th><th>support</th>"
            f"</tr>{rows}</table></div>")


def show_predictions(y_true: Any, y_pred: Any, *, labels: Any = None) -> PredictionView:
    """The confusion matrix and per-class metrics of ``y_pred`` against ``y_true``, with
    ``misleading-accuracy`` when the accuracy is near the majority-class rate.

    Examples
    --------
    >>> vd.show_predictions(y_val, model(x_val).argmax(1))   # doctest: +SKIP
    """
    return shown_where_called(PredictionView(prediction_report(y_true, y_pred, labels=labels)))
