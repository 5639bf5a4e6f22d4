"""Data of unusual shape given to the data-side checks (issue 20): what a valid program
passes is read, or refused with a VizdebugError that names it and says what works."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import vizdebug as vd

RNG = np.random.default_rng(0)
NAMES = RNG.choice(["bird", "cat", "dog"], 300)
GUESS = np.where(RNG.random(300) < 0.8, NAMES, "cat")


@pytest.mark.parametrize("wrap", [np.asarray, pd.Series, lambda v: pd.Series(v, dtype="category"),
                                  pd.Categorical, list])
def test_check_predictions_takes_class_names_in_any_container(wrap) -> None:
    """Before: a numpy array or a pandas Series of class names raised ``y_true holds
    strings ...; images must be numeric`` (only a list worked)."""
    expected = vd.check_predictions(list(NAMES), list(GUESS))
    assert vd.check_predictions(wrap(NAMES), wrap(GUESS)).codes == expected.codes
    report = vd.show_predictions(wrap(NAMES), wrap(GUESS))
    assert "bird" in report._repr_mimebundle_()["text/html"]


def test_an_sklearn_classifier_of_string_labels() -> None:
    from sklearn.linear_model import LogisticRegression

    x = RNG.normal(size=(300, 4))
    y = np.where(x[:, 0] + 0.3 * RNG.normal(size=300) > 0, "pos", "neg")
    clf = LogisticRegression().fit(x, y)
    assert vd.check_predictions(y, clf.predict(x)).codes == []
    # scores per class: their columns are clf.classes_
    assert vd.check_predictions(y, clf.predict_proba(x), labels=clf.classes_).codes == []
    with pytest.raises(vd.VizdebugError, match=r"class names .*'neg'.* labels= names"):
        vd.check_predictions(y, clf.predict_proba(x))  # (before: silently accuracy 0)


def test_names_against_numbers_is_refused_not_scored_zero() -> None:
    with pytest.raises(vd.VizdebugError, match=r"y_pred holds class names \(\['1', '2'\]\)"):
        vd.check_predictions(np.array([1, 2, 1, 2]), np.array(["1", "2", "1", "2"]))


@pytest.mark.parametrize("wrap", [np.asarray, list, pd.Series,
                                  lambda v: pd.Series(v, dtype="category")])
def test_check_split_takes_class_names_as_targets(wrap) -> None:
    """Before: ``y_train holds strings ...; images must be numeric`` for an array or a
    Series of class names, and ``y_train is a str_ ('pos'), not image data`` for a list."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 4))
    y = np.where(x[:, 0] + rng.normal(size=300) > 0, "pos", "neg")
    assert vd.check_split(x[:200], x[200:], y_train=wrap(y[:200]), y_test=wrap(y[200:])).codes == []
    leaked = np.column_stack([x, (y == "pos") + 0.01 * rng.normal(size=300)])
    found = vd.check_split(leaked[:200], leaked[200:], y_train=wrap(y[:200]), y_test=wrap(y[200:]))
    assert found.codes == ["split-target-leak"]


def test_check_dataset_reads_pandas_frames_by_position() -> None:
    """Before: ``dataset-error`` (an error finding: ``KeyError: 0``) on a DataFrame and on
    ``(X_train, y_train)`` from ``train_test_split`` (frame[i] is a column, series[i] a
    label lookup); now their rows, read by position."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300),
                          "city": rng.choice(["x", "y"], 300)})
    y = pd.Series((frame["a"] > 0).astype(int))
    x_train, _, y_train, _ = train_test_split(frame, y, random_state=0)
    assert vd.check_dataset(frame).codes == []
    assert vd.check_dataset((x_train, y_train)).codes == []
    shuffled = y_train.sample(frac=1, random_state=1).reset_index(drop=True)
    assert vd.check_dataset((x_train, shuffled)).codes == ["labels-shuffled"]
    with pytest.raises(vd.VizdebugError, match=r"without numeric columns \(\['city'\]\)"):
        vd.check_dataset(frame[["city"]])


def test_hugging_face_style_dict_batches() -> None:
    """Before: ``check_batch`` raised 'batch is a dict with keys ['input_ids',
    'attention_mask', 'labels']; none of them names the inputs' on a tokenizer's batch."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Tokens(Dataset):
        def __len__(self) -> int:
            return 64

        def __getitem__(self, i: int) -> dict:
            return {"input_ids": torch.randint(0, 100, (12,)), "labels": torch.tensor(i % 2),
                    "attention_mask": torch.ones(12, dtype=torch.long)}

    loader = DataLoader(Tokens(), batch_size=8)
    batch = next(iter(loader))
    assert vd.check_batch(batch).codes == []
    assert "text/html" in vd.show_batch(loader)._repr_mimebundle_()
    assert vd.check_dataset(Tokens()).codes == []
    audio = {"input_values": torch.randn(4, 1600), "labels": torch.tensor([0, 1, 0, 1])}
    assert vd.check_batch(audio).codes == []


def test_rows_that_differ_in_a_date_or_a_name_are_not_duplicates() -> None:
    """Before: ``split-duplicates`` (a warning: 30 of 30 test rows in train) on a time
    series whose numeric column repeats (a counter) while the dates differ: only the
    numeric columns were compared."""
    train = pd.DataFrame({"t": pd.date_range("2020-01-01", periods=100), "v": range(100)})
    test = pd.DataFrame({"t": pd.date_range("2021-01-01", periods=30), "v": range(30)})
    assert vd.check_split(train, test).codes == []
    assert "split-duplicates" in vd.check_split(train, train.iloc[:30]).codes
    shops = pd.DataFrame({"city": ["x", "y"] * 50, "sales": np.arange(100) % 10})
    other = pd.DataFrame({"city": ["z"] * 30, "sales": np.arange(30) % 10})
    assert vd.check_split(shops, other).codes == []
    assert vd.check_split(shops, shops.iloc[:30].copy()).codes == ["split-duplicates"]


def test_binary_feature_rows_with_one_label_each_are_a_table() -> None:
    """Before: a (16, 8) bool batch of binary features with 16 labels was read as one
    picture and refused ('batch has 1 inputs but 16 labels')."""
    import torch

    features = torch.rand(16, 8, generator=torch.Generator().manual_seed(0)) > 0.5
    assert vd.check_batch((features, torch.arange(16) % 2)).codes == []
    assert vd.check_batch((features.to(torch.uint8), torch.arange(16) % 2)).codes == []
    from vizdebug.data.batch import make_batch

    assert make_batch(features, torch.arange(16) % 2).kind == "table"
    assert make_batch(features).kind == "image"  # alone: a binary mask, as before
    assert "text/html" in vd.show_batch((features, torch.arange(16) % 2))._repr_mimebundle_()
