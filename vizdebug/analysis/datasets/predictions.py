"""``check_predictions``: what an accuracy figure hides.

Accuracy on imbalanced classes flatters a model that mostly predicts the majority class.
:func:`prediction_report` computes the confusion matrix, per-class precision/recall/F1
and balanced accuracy from plain arrays; :func:`check_predictions` names
``misleading-accuracy`` when the accuracy is close to what always predicting the
majority class would score *while* some class is rarely recalled. An accuracy near the
majority rate does not lie when every class is found above chance: a class-weighted
model that recalls 92% of the majority and 60% of a 10% minority scores 89% under a 90%
majority rate, with a balanced accuracy of 76% that says what it does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...data.arrays import to_numpy
from ...errors import VizdebugError, VizdebugTypeError, describe, short_repr
from ...findings import Finding, Findings

# The majority class holds at least this share of the samples before accuracy can mislead
MAJORITY_SHARE = 0.6
# ... and the model wins back less than this share of the errors the majority guess makes
MIN_LIFT = 0.25
# or balanced accuracy this far below accuracy with a class of at least MISSED_SUPPORT
# of the samples never predicted right
BALANCED_GAP = 0.2
MISSED_SUPPORT = 0.05
ACCURACY_GAP = 0.1
# Accuracy near the majority rate misleads only beside a class that is rarely recalled:
# found less often than the 1/K of its samples a uniform guess among K classes would find.
# A class-weighted model that recalls every class above that is trading accuracy for
# balance in the open (4 classes, 80% majority: recalls 0.87/0.78/0.49/0.78, accuracy 84%).
MAX_CLASSES = 1000


@dataclass
class PredictionReport:
    """Per-class metrics of one set of predictions (``confusion[i, j]``: true ``i``,
    predicted ``j``)."""

    classes: list[Any]
    confusion: np.ndarray
    accuracy: float
    balanced_accuracy: float
    majority_class: Any
    majority_share: float
    precision: np.ndarray = field(default_factory=lambda: np.empty(0))
    recall: np.ndarray = field(default_factory=lambda: np.empty(0))
    f1: np.ndarray = field(default_factory=lambda: np.empty(0))
    support: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @property
    def lift(self) -> float:
        """Share of the majority guess's errors that the model gets right (1: perfect,
        0: no better than always predicting the majority class)."""
        room = 1 - self.majority_share
        return (self.accuracy - self.majority_share) / room if room > 0 else 0.0

    def table(self) -> Any:
        """Per-class precision, recall, F1 and support as a DataFrame."""
        import pandas as pd

        return pd.DataFrame({"class": [str(c) for c in self.classes], "precision": self.precision,
                             "recall": self.recall, "f1": self.f1, "support": self.support})


def prediction_report(y_true: Any, y_pred: Any, *, labels: Any = None) -> PredictionReport:
    """The metrics of ``y_pred`` against ``y_true``.

    ``y_pred`` holds class ids, or scores: ``(n, C)`` rows (argmax) or ``(n,)``
    probabilities of the positive class when ``y_true`` is binary (threshold 0.5).

    Examples
    --------
    >>> r = prediction_report([0, 0, 0, 1], [0, 0, 0, 0])
    >>> r.accuracy, r.balanced_accuracy
    (0.75, 0.5)
    """
    truth = _as_labels(y_true, "y_true")
    pred = _as_predictions(y_pred, truth, labels)
    _same_kind(truth, pred)
    if pred.shape[0] != truth.shape[0]:
        raise VizdebugError(f"y_true has {truth.shape[0]} samples but y_pred {pred.shape[0]}; "
                            "they must match")
    classes = _classes(truth, pred, labels)
    index = {c: i for i, c in enumerate(classes)}
    confusion = np.zeros((len(classes), len(classes)), dtype=np.int64)
    np.add.at(confusion, ([index[v] for v in truth.tolist()], [index[v] for v in pred.tolist()]), 1)
    return _from_confusion(classes, confusion)


def _from_confusion(classes: list[Any], confusion: np.ndarray) -> PredictionReport:
    support = confusion.sum(axis=1)
    predicted = confusion.sum(axis=0)
    hits = np.diag(confusion).astype(float)
    with np.errstate(all="ignore"):
        precision = np.where(predicted > 0, hits / predicted, 0.0)
        recall = np.where(support > 0, hits / support, 0.0)
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    n = int(support.sum())
    present = support > 0
    top = int(np.argmax(support))
    return PredictionReport(
        classes=classes, confusion=confusion, accuracy=float(hits.sum() / n),
        balanced_accuracy=float(recall[present].mean()), majority_class=classes[top],
        majority_share=float(support[top] / n), precision=precision, recall=recall, f1=f1,
        support=support)


def _as_labels(y: Any, what: str) -> np.ndarray:
    if y is None:
        raise VizdebugTypeError(f"{what} is None; pass the class of each sample (a list, "
                                "an array or a tensor)")
    arr = _class_array(y, what)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    elif arr.ndim == 2 and arr.dtype.kind in "biuf" and _one_hot(arr):
        arr = arr.argmax(axis=1)  # one-hot rows: their classes
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise VizdebugError(f"{what} must be one class per sample (1-D, not empty), got "
                            f"{describe(y)}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or not np.all(arr == np.round(arr)):
            raise VizdebugError(f"{what} holds values that are not class ids ({describe(y)}); "
                                "pass integer or string classes")
        arr = arr.astype(np.int64)
    values = [v.item() if hasattr(v, "item") and getattr(v, "size", 1) == 1 else v for v in arr]
    odd = [v for v in values if not isinstance(v, (str, int, float, bool))
           or (isinstance(v, float) and v != v)][:1]  # a list: None is one of them
    if odd:
        raise VizdebugError(f"{what} must hold one class per sample (numbers or strings); "
                            f"found {short_repr(odd[0])} in {describe(y)}")
    return np.asarray(values, dtype=object)


def _one_hot(arr: np.ndarray) -> bool:
    return arr.shape[0] > 0 and bool(np.isin(arr, (0, 1)).all()) and bool(
        np.all(arr.sum(axis=1) == 1))


def _plain_array(values: list | tuple) -> np.ndarray:
    """A list as an array: numbers as numbers, anything else (strings, mixed) as objects."""
    try:
        arr = np.asarray(values)
        return arr if arr.dtype.kind in "biuf" else np.asarray(values, dtype=object)
    except Exception:  # ragged, or items whose __array__ fails (a bits8 tensor): one by one
        return np.fromiter(values, dtype=object, count=len(values))


def _class_array(y: Any, what: str) -> np.ndarray:
    """Classes or scores as an array: a list item by item, strings and categories (a
    numpy string array, a pandas Series or Categorical: an sklearn classifier's
    ``predict`` of string labels) as objects, anything numeric (a tensor too) as numbers.

    >>> _class_array(np.array(["cat", "dog"]), "y_true").tolist()
    ['cat', 'dog']
    """
    if isinstance(y, (list, tuple)):
        return _plain_array(y)
    y = _unwrap(y)
    if type(y).__module__.startswith("pandas"):  # a Categorical, an array of the extension
        y = np.asarray(y, dtype=object)
    if isinstance(y, np.ndarray) and y.dtype.kind in "USO":
        return y.astype(object)
    return to_numpy(y, what)


def _unwrap(y: Any) -> Any:
    """A pandas Series (or Index) as its numpy values."""
    return y.to_numpy() if hasattr(y, "to_numpy") and not hasattr(y, "columns") else y


def _same_kind(truth: np.ndarray, pred: np.ndarray) -> None:
    """Refuse classes of different kinds (names against numbers): no sample could match."""
    def kind(values: np.ndarray) -> set[bool]:
        return {isinstance(v, str) for v in values.tolist()}

    if kind(truth) != kind(pred) and len(kind(truth)) == len(kind(pred)) == 1:
        names, ids = (truth, pred) if kind(truth) == {True} else (pred, truth)
        raise VizdebugError(
            f"{'y_true' if names is truth else 'y_pred'} holds class names "
            f"({sorted(set(names.tolist()))[:4]}) and {'y_pred' if names is truth else 'y_true'}"
            f" class numbers ({sorted(set(ids.tolist()))[:4]}); pass both as names or both as "
            "numbers (scores per class: labels= names their columns, e.g. clf.classes_)")


def _as_predictions(y_pred: Any, truth: np.ndarray, labels: Any = None) -> np.ndarray:
    if y_pred is None:
        raise VizdebugTypeError("y_pred is None; pass the predicted classes or the scores")
    if isinstance(y_pred, (list, tuple)):
        return _as_labels(y_pred, "y_pred")
    arr = _class_array(y_pred, "y_pred")
    if arr.ndim > 2:
        raise VizdebugError(
            f"y_pred has shape {arr.shape}: pass one class per sample (n,) or scores (n, C); "
            "for per-pixel or per-token scores (N, C, ...) compare the classes, e.g. "
            "check_predictions(y_true.reshape(-1), y_pred.argmax(1).reshape(-1))")
    if arr.ndim == 2 and arr.shape[1] > 1:  # scores per class; named classes: labels names
        named = any(isinstance(v, str) for v in truth.tolist())  # the columns (clf.classes_)
        columns = list(labels) if named and labels is not None and len(labels) == arr.shape[1] else None
        best = _scores(arr).argmax(axis=1).tolist()
        if columns is not None:
            columns = [c.item() if hasattr(c, "item") else c for c in columns]
            return np.asarray([columns[i] for i in best], dtype=object)
        return np.asarray(best, dtype=object)
    flat = arr.reshape(-1) if arr.ndim == 2 else arr
    binary = set(truth.tolist()) <= {0, 1}
    if flat.dtype.kind == "f" and binary and not np.all(flat == np.round(flat)):
        return np.asarray((flat >= 0.5).astype(np.int64).tolist(), dtype=object)
    return _as_labels(flat, "y_pred")


def _scores(arr: np.ndarray) -> np.ndarray:
    """Scores per class as finite floats, or a clear refusal (a nullable pandas frame's
    missing values, strings, NaN: no class can be chosen from them)."""
    try:
        scores = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError):
        scores = None
    if scores is None or not np.isfinite(scores).all():
        raise VizdebugError(
            f"y_pred has shape {arr.shape} (scores per class) but holds values that are not "
            "finite numbers (missing, NaN, inf or text); pass finite scores (n, C) or one "
            "class per sample (n,)")
    return scores


def _classes(truth: np.ndarray, pred: np.ndarray, labels: Any) -> list[Any]:
    seen = set(truth.tolist()) | set(pred.tolist())
    if labels is not None:
        if isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__"):
            raise VizdebugTypeError(f"labels must be a list of classes, got {describe(labels)}")
        given = list(labels)
        missing = seen - set(given)
        if missing:
            raise VizdebugError(f"labels {given[:10]} lack classes that occur: "
                                f"{sorted(map(str, missing))[:10]}")
        return given
    if len(seen) > MAX_CLASSES:
        raise VizdebugError(f"{len(seen)} distinct classes: these look like continuous values, "
                            "not classes (check_predictions is for classification)")
    return sorted(seen, key=lambda v: (isinstance(v, str), v))


def check_predictions(y_true: Any, y_pred: Any, *, labels: Any = None) -> Findings:
    """Name what the accuracy hides: ``misleading-accuracy`` when it is near the
    majority-class rate, with the per-class recall in the evidence.

    Examples
    --------
    >>> check_predictions([0] * 90 + [1] * 10, [0] * 100).codes
    ['misleading-accuracy']
    """
    multi = _multi_label(y_true, y_pred)
    if multi is not None:
        return Findings(_label_findings(*multi))
    report = prediction_report(y_true, y_pred, labels=labels)
    return Findings(accuracy_findings(report))


def _multi_label(y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """``(truth, pred)`` as ``(n, k)`` 0/1 arrays when ``y_true`` is a multi-label target
    (``(n, k)`` of 0/1, k > 1, rows that do not all hold exactly one 1) and ``y_pred``
    its predictions of the same shape (0/1, or probabilities: threshold 0.5); None for
    anything else, which the one-class-per-sample path reads (a one-hot ``y_true`` as
    its classes)."""
    if y_true is None or y_pred is None:
        return None
    truth = _class_array(y_true, "y_true")
    if truth.ndim != 2 or truth.shape[1] < 2 or truth.dtype.kind not in "biuf":
        return None
    if not np.isin(truth, (0, 1)).all() or _one_hot(truth):  # one-hot: classes
        return None
    pred = _class_array(y_pred, "y_pred")
    if pred.shape != truth.shape:
        raise VizdebugError(f"y_true is a multi-label target of shape {truth.shape} but y_pred "
                            f"has shape {pred.shape}; pass one 0/1 prediction per label")
    if pred.dtype.kind == "f" and not np.isin(pred, (0, 1)).all():
        if not (np.isfinite(pred).all() and pred.min() >= 0 and pred.max() <= 1):
            raise VizdebugError("y_pred holds scores outside [0, 1] for a multi-label target; "
                                "pass 0/1 predictions (e.g. logits > 0) or probabilities")
        pred = pred >= 0.5
    elif not np.isin(pred, (0, 1)).all():
        raise VizdebugError(f"y_pred must hold 0/1 per label for a multi-label target, got "
                            f"{describe(y_pred)}")
    return truth.astype(np.int64), pred.astype(np.int64)


def _label_findings(truth: np.ndarray, pred: np.ndarray) -> list[Finding]:
    """``misleading-accuracy`` for a multi-label model whose element-wise accuracy is close
    to what predicting no label would score: the two classes 'label present' and 'label
    absent' pooled over every label (micro), read as :func:`accuracy_findings` reads a
    binary model, with the labels it never finds named."""
    confusion = np.zeros((2, 2), dtype=np.int64)
    np.add.at(confusion, (truth.reshape(-1), pred.reshape(-1)), 1)
    report = _from_confusion([0, 1], confusion)
    found = accuracy_findings(report)
    if not found or report.majority_class != 0:
        return found
    present = truth.sum(axis=0) > 0
    never = [str(j) for j in np.flatnonzero(present & ((truth & pred).sum(axis=0) == 0))]
    f = found[0]
    return [Finding(
        "misleading-accuracy", "warning",
        f"element-wise accuracy {report.accuracy:.1%} over {truth.shape[1]} labels is close to "
        f"the {report.majority_share:.1%} that predicting no label at all would score "
        f"(balanced accuracy {report.balanced_accuracy:.1%}; {report.recall[1]:.1%} of the "
        f"present labels found); never found: {len(never)} of {int(present.sum())} labels "
        f"({', '.join(never[:8])}{' ...' if len(never) > 8 else ''})",
        evidence={**f.evidence, "labels": truth.shape[1], "never_found": never[:256]},
        hint="report per-label recall/F1 (or mAP) instead of element-wise accuracy, and "
             "weight the positives: BCEWithLogitsLoss(pos_weight=negatives / positives per "
             "label)")]


def accuracy_findings(report: PredictionReport) -> list[Finding]:
    """``misleading-accuracy`` (warning) for a model close to the majority guess while some
    class is rarely recalled (or one with 5% of the samples is never recalled)."""
    n = report.support.sum()
    never = [str(c) for c, r, s in zip(report.classes, report.recall, report.support)
             if s > 0 and r == 0]
    big_miss = any(s >= MISSED_SUPPORT * n and r == 0
                   for r, s in zip(report.recall, report.support))
    # near the majority rate *because* the minority classes are missed: a class-weighted
    # model may trade accuracy for balanced accuracy and sit at or below the majority
    # rate while it finds every class
    chance = 1 / len(report.classes)
    rarely = any(s > 0 and r < chance for r, s in zip(report.recall, report.support))
    near_majority = (rarely and report.lift < MIN_LIFT
                     and report.accuracy - report.balanced_accuracy >= ACCURACY_GAP)
    hidden = big_miss and report.accuracy - report.balanced_accuracy >= BALANCED_GAP
    if (len(report.classes) < 2 or report.majority_share < MAJORITY_SHARE
            or not (near_majority or hidden)):
        return []
    missed = f"; never right on class {', '.join(never[:8])}" if never else ""
    return [Finding(
        "misleading-accuracy", "warning",
        f"accuracy {report.accuracy:.1%} is close to the {report.majority_share:.1%} that always "
        f"predicting class {report.majority_class!s} would score (balanced accuracy "
        f"{report.balanced_accuracy:.1%}){missed}",
        evidence={"accuracy": report.accuracy, "balanced_accuracy": report.balanced_accuracy,
                  "majority_share": report.majority_share,
                  "recall": {str(c): float(r) for c, r in zip(report.classes, report.recall)}},
        hint="report balanced accuracy or per-class recall/F1 instead, and train with class "
             "weights (CrossEntropyLoss(weight=...)), a WeightedRandomSampler or resampling",
    )]
