"""check_predictions / show_predictions: what accuracy hides on imbalanced classes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.analysis.datasets.predictions import prediction_report
from vizdebug.errors import VizdebugError, VizdebugTypeError


def test_metrics_match_scikit_learn():
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, confusion_matrix, f1_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 500)
    pred = np.where(rng.random(500) < 0.7, y, rng.integers(0, 4, 500))
    r = prediction_report(y, pred)
    assert r.accuracy == pytest.approx(accuracy_score(y, pred))
    assert r.balanced_accuracy == pytest.approx(balanced_accuracy_score(y, pred))
    assert (r.confusion == confusion_matrix(y, pred)).all()
    assert r.f1 == pytest.approx(f1_score(y, pred, average=None))


def test_majority_guessing_is_named_and_a_good_model_is_not():
    y = np.array([0] * 95 + [1] * 5)
    found = vd.check_predictions(y, np.zeros(100, dtype=int))
    assert found.codes == ["misleading-accuracy"]
    assert "never right on class 1" in found[0].message
    good = y.copy()
    good[[0, 96]] = 1 - good[[0, 96]]  # two mistakes, both classes found
    assert vd.check_predictions(y, good) == []
    assert vd.check_predictions([0, 1] * 50, [0] * 100) == []  # balanced: accuracy is honest


def test_a_missed_class_hidden_by_accuracy_is_named():
    y = [0] * 90 + [1] * 10 + [2] * 5
    found = vd.check_predictions(y, [0] * 100 + [2] * 5)
    assert found.codes == ["misleading-accuracy"]
    assert found[0].evidence["recall"]["1"] == 0.0


def test_scores_and_probabilities_are_read_as_predictions():
    logits = torch.tensor([[2.0, 0.1], [0.1, 3.0], [1.0, 0.0]])
    assert prediction_report(torch.tensor([0, 1, 1]), logits).accuracy == pytest.approx(2 / 3)
    probs = np.array([0.9, 0.2, 0.6, 0.4])
    assert prediction_report([1, 0, 1, 0], probs).accuracy == 1.0


def test_the_view_escapes_class_names_and_shows_the_matrix():
    view = vd.show_predictions(["<b>cat</b>", "dog", "dog"], ["<b>cat</b>", "<b>cat</b>", "dog"])
    text = view.to_html()
    assert "&lt;b&gt;cat&lt;/b&gt;" in text and "<b>cat</b>" not in text
    assert "vd-confusion" in text and view.table["support"].tolist() == [1, 2]
    assert "text/html" in view._repr_mimebundle_()


@pytest.mark.parametrize(("y_true", "y_pred", "error"), [
    (None, [0], VizdebugTypeError),
    ([0, 1], [0], VizdebugError),
    ([0.5, 1.2], [0, 1], VizdebugError),
    ([], [], VizdebugError),
])
def test_bad_input_gets_a_clear_error(y_true, y_pred, error):
    with pytest.raises(error):
        vd.check_predictions(y_true, y_pred)
    with pytest.raises(VizdebugError, match="lack classes"):
        vd.check_predictions([0, 1, 2], [0, 1, 2], labels=[0, 1])


def test_a_class_weighted_model_below_the_majority_rate_is_not_accused():
    """Class weights trade accuracy for balanced accuracy: 77% accuracy under a 77%
    majority rate, but both classes found (a working corpus program was accused)."""
    y = [0] * 77 + [1] * 23
    pred = [0] * 60 + [1] * 17 + [1] * 18 + [0] * 5
    assert vd.check_predictions(y, pred) == []



@pytest.mark.parametrize("dtypes", [("Int64", "Int64"), ("Float64", "Int64")])
def test_scores_with_missing_values_get_a_clear_error(dtypes):
    """A nullable pandas frame of scores with <NA> cells (found by the property test in
    CI: numpy's argmax over pd.NA raised 'boolean value of NA is ambiguous')."""
    import pandas as pd

    truth = pd.Series(["a", "b", "a", "b"])
    frame = pd.DataFrame({"a": pd.array([1, None, 3, 0], dtype=dtypes[0]),
                          "b": pd.array([0, 2, None, 4], dtype=dtypes[1])})
    with pytest.raises(VizdebugError, match="not finite numbers"):
        vd.check_predictions(truth, frame, labels=["a", "b"])
    filled = vd.show_predictions(truth, frame.fillna(0), labels=["a", "b"])
    assert filled.report.accuracy == 1.0  # the same frame without gaps is read as scores
