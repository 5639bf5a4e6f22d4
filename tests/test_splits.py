"""check_split: duplicates, preprocessing fitted on both splits, a feature that leaks the
target; quiet on splits made the way scikit-learn's documentation makes them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from torch.utils.data import TensorDataset

import vizdebug as vd
from vizdebug.errors import VizdebugError, VizdebugTypeError

LOADERS = {"digits": load_digits, "breast_cancer": load_breast_cancer, "wine": load_wine,
           "iris": load_iris}


def _split(name: str, scaler=None, leak_scaler=None, seed: int = 0):
    x, y = LOADERS[name](return_X_y=True)
    if leak_scaler is not None:
        x = leak_scaler().fit_transform(x)  # fitted before the split: the fault
    xtr, xte, ytr, yte = train_test_split(x, y, random_state=seed, stratify=y)
    if scaler is not None:
        fitted = scaler().fit(xtr)  # fitted on train alone: the fix
        xtr, xte = fitted.transform(xtr), fitted.transform(xte)
    return xtr, xte, ytr, yte


@pytest.mark.parametrize("name", sorted(LOADERS))
@pytest.mark.parametrize("scaler", [None, StandardScaler, MinMaxScaler])
def test_splits_made_right_draw_no_warning(name, scaler):
    xtr, xte, ytr, yte = _split(name, scaler)
    found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte)
    assert found.at_least("warning") == [], found


# iris with a min-max scaler is left out: its values are rounded to 0.1 cm, so every
# column's extremes are tied and land in the training split too, and a scaler fitted on
# train alone would give the very same numbers: nothing to tell them apart
@pytest.mark.parametrize(("name", "scaler"), [
    *[(n, StandardScaler) for n in sorted(LOADERS)],
    *[(n, MinMaxScaler) for n in sorted(LOADERS) if n != "iris"]])
def test_a_scaler_fitted_before_the_split_is_named(name, scaler):
    xtr, xte, ytr, yte = _split(name, leak_scaler=scaler)
    found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte).at_least("warning")
    assert [f.code for f in found] == ["split-preprocessing-leak"]
    assert "fitted before the split" in found[0].hint


def test_rows_shared_by_the_splits_are_named_with_their_test_indices():
    xtr, xte, ytr, yte = _split("wine")
    test = np.concatenate([xte, xtr[:5]])
    found = vd.check_split(xtr, test)
    assert found.codes == ["split-duplicates"] and found[0].severity == "warning"
    assert found[0].evidence["test_indices"] == list(range(len(xte), len(xte) + 5))


def test_near_identical_images_are_duplicates_too():
    rng = np.random.default_rng(0)
    train = rng.random((40, 3, 32, 32)).astype(np.float32)
    test = rng.random((20, 3, 32, 32)).astype(np.float32)
    test[:4] = train[:4] + rng.normal(0, 0.01, (4, 3, 32, 32))  # re-encoded copies
    found = vd.check_split(torch.tensor(train), torch.tensor(test))
    assert found.codes == ["split-duplicates"]
    assert found[0].evidence["near"] == 4 and found[0].evidence["test_indices"] == [0, 1, 2, 3]


def test_a_feature_that_gives_the_label_away_is_named():
    x, y = load_breast_cancer(return_X_y=True, as_frame=True)
    x = x.assign(diagnosis_code=y * 7 + 3)  # the label under another name
    xtr, xte, ytr, yte = train_test_split(x, y, random_state=0)
    found = vd.check_split(xtr, xte, y_train=ytr, y_test=yte)
    assert found.codes == ["split-target-leak"] and found[0].where == "diagnosis_code"


def test_a_regression_target_leak():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 5))
    y = x @ rng.normal(size=5) + rng.normal(0, 1, 300)
    leaky = np.column_stack([x, y * 2.5])
    found = vd.check_split(leaky[:200], leaky[200:], y_train=y[:200], y_test=y[200:])
    assert found.codes == ["split-target-leak"] and found[0].where == "f5"
    assert vd.check_split(x[:200], x[200:], y_train=y[:200], y_test=y[200:]) == []


def test_datasets_of_items_are_read_with_their_targets():
    x, y = load_digits(return_X_y=True)
    xs = torch.tensor(x, dtype=torch.float32).reshape(-1, 1, 8, 8)
    ys = torch.tensor(y)
    train, test = TensorDataset(xs[:1000], ys[:1000]), TensorDataset(xs[990:], ys[990:])
    found = vd.check_split(train, test)
    assert found.codes == ["split-duplicates"]
    assert found[0].evidence["test_indices"][:10] == list(range(10))


@pytest.mark.parametrize(("train", "test", "error"), [
    (None, np.zeros((3, 2)), VizdebugTypeError),
    (np.zeros((3, 2)), np.zeros((3, 4)), VizdebugError),
    (np.zeros((0, 2)), np.zeros((3, 2)), VizdebugError),
    (pd.DataFrame({"a": ["x", "y"]}), pd.DataFrame({"a": ["x"]}), VizdebugError),
])
def test_bad_input_gets_a_clear_error(train, test, error):
    with pytest.raises(error):
        vd.check_split(train, test)
    with pytest.raises(VizdebugError, match="y_train"):
        vd.check_split(np.zeros((3, 2)), np.zeros((3, 2)), y_train=[1, 2], y_test=[1, 2, 3])
