"""The embedding explorer's analysis: adapters, layouts, quality figures and findings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays
from sklearn.datasets import load_digits
from sklearn.manifold import trustworthiness as sk_trustworthiness

from vizdebug.analysis.embeddings.findings import feature_geometry, geometry_findings
from vizdebug.analysis.embeddings.project import (
    as_features,
    choose_method,
    duplicate_count,
    pca_layout,
    per_point,
    refined_layout,
    unit_box,
)
from vizdebug.analysis.embeddings.quality import neighbour_index, trustworthiness
from vizdebug.errors import VizdebugError, VizdebugTypeError


@pytest.fixture(scope="module")
def digits():
    return load_digits(return_X_y=True)


def flip(y: np.ndarray, share: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    flipped = rng.choice(len(y), int(share * len(y)), replace=False)
    noisy = y.copy()
    noisy[flipped] = (y[flipped] + rng.integers(1, 10, len(flipped))) % 10
    return noisy, flipped


@pytest.mark.parametrize("make", [
    lambda x: x, torch.from_numpy, lambda x: pd.DataFrame(x), lambda x: x.tolist(),
    lambda x: x.astype(np.float32),
])
def test_features_from_arrays_tensors_frames_lists(make):
    x = np.random.default_rng(0).normal(size=(20, 5))
    fs = as_features(make(x))
    assert fs.values.shape == (20, 5) and fs.n_input == 20 and fs.rows.tolist() == list(range(20))
    np.testing.assert_allclose(fs.values, x, rtol=1e-6)


def test_frame_keeps_numeric_columns_and_says_so():
    fs = as_features(pd.DataFrame({"a": [1.0, 2.0], "name": ["x", "y"], "b": [3, 4]}))
    assert fs.columns == ["a", "b"] and "name" in fs.notes[0]


def test_odd_shapes_become_pictures():
    assert as_features(np.arange(5.0)).values.shape == (5, 1)
    fs = as_features(np.zeros((4, 2, 3, 3)))
    assert fs.values.shape == (4, 18) and "flattened" in fs.notes[0]
    assert pca_layout(as_features([[1.0, 2.0]]).values).tolist() == [[0.0, 0.0]]
    wide = np.random.default_rng(0).normal(size=(5, 300))  # more dimensions than points
    assert pca_layout(wide).shape == (5, 2)
    same = pca_layout(np.ones((6, 3)))
    assert np.all(same == 0)
    assert duplicate_count(np.r_[wide, wide[:2]]) == 2


def test_nan_rows_left_out_and_named():
    x = np.random.default_rng(0).normal(size=(10, 3))
    x[[2, 7], 1] = np.nan
    x[4, 0] = np.inf
    fs = as_features(x)
    assert fs.rows.tolist() == [0, 1, 3, 5, 6, 8, 9] and "[2, 4, 7]" in fs.notes[0]


@pytest.mark.parametrize("bad, kind, says", [
    (None, VizdebugTypeError, "None"),
    ("text", VizdebugTypeError, "str"),
    (np.array(["a", "b"]), VizdebugTypeError, "dtype <U1"),
    (np.zeros((0, 3)), VizdebugError, "no points"),
    (np.zeros((3, 0)), VizdebugError, "(3, 0)"),
    (np.full((3, 2), np.nan), VizdebugError, "every one of the 3 rows"),
    ([[1, 2], [3]], VizdebugTypeError, "same length"),
    (pd.DataFrame({"s": ["a", "b"]}), VizdebugTypeError, "no numeric columns"),
])
def test_bad_features_name_what_was_passed(bad, kind, says):
    with pytest.raises(kind, match=None) as err:
        as_features(bad)
    assert says in str(err.value)


def test_per_point_values_checked():
    assert per_point(None, 3, "labels") is None
    assert per_point(torch.tensor([[0.1, 0.9], [0.8, 0.2]]), 2, "predictions").tolist() == [1, 0]
    with pytest.raises(VizdebugError, match="labels .*length 2.* 3 rows"):
        per_point([1, 2], 3, "labels")


def test_method_choice():
    assert choose_method("AUTO", 100) == "tsne" and choose_method("auto", 10**5) == "umap"
    assert choose_method("tsne", 2) == "pca"
    with pytest.raises(VizdebugError, match="'isomap'"):
        choose_method("isomap", 100)


def test_tsne_layout_passes_parameters(digits):
    # the fit itself is covered by test_embeddings_view (the refinement replaces the preview)
    x = digits[0][:60]
    with pytest.raises(TypeError, match="no_such_option"):
        refined_layout(x, "tsne", {"no_such_option": 1})
    with pytest.raises(ValueError, match="perplexity"):
        refined_layout(x, "tsne", {"perplexity": 100})  # sklearn's own check: it got there
    box = unit_box(np.random.default_rng(0).normal(size=(60, 2)) * 50)
    assert box.dtype == np.float32 and np.abs(box).max() <= 1


def test_trustworthiness_matches_sklearn():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(120, 8))
    for layout, k in [(x[:, :2], 5), (rng.normal(size=(120, 2)), 5), (x[:, 2:4], 12)]:
        assert trustworthiness(x, layout, k) == pytest.approx(
            sk_trustworthiness(x, layout, n_neighbors=k), abs=1e-9)


def test_neighbours_exclude_the_point_itself():
    x = np.r_[np.zeros((3, 2)), np.ones((3, 2))]
    near = neighbour_index(x, 2)
    assert all(i not in row for i, row in enumerate(near))


def label_noise_scores(x, y, share, seed=0):
    noisy, flipped = flip(y, share, seed)
    finding = next(f for f in geometry_findings(feature_geometry(x, noisy), np.arange(len(y)))
                   if f.code == "label-noise-suspects")
    found = set(finding.evidence["indices"])
    hits = len(found & set(flipped.tolist()))
    return finding, hits / len(found), hits / len(flipped)


def test_injected_label_flips_are_found(digits):
    x, y = digits
    finding, precision, recall = label_noise_scores(x, y, 0.10)
    print(f"10% flips on digits: precision {precision:.3f} recall {recall:.3f}")
    assert finding.severity == "warning"
    assert precision >= 0.9 and recall >= 0.85
    _, flipped = flip(y, 0.10)
    guesses = dict(zip(finding.evidence["indices"], finding.evidence["suspected"]))
    right = [guesses[i] == y[i] for i in flipped.tolist() if i in guesses]
    assert np.mean(right) >= 0.95  # the suspected label is the true one


def test_clean_digits_give_no_warning(digits):
    x, y = digits
    for features in (x, (x - x.mean(0)) / (x.std(0) + 1e-9)):
        found = geometry_findings(feature_geometry(features, y), np.arange(len(y)))
        assert [f for f in found if f.severity != "info"] == []


def test_overlapping_classes_are_named():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, (200, 5)), rng.normal(6, 1, (100, 5))]
    labels = np.array(["cat"] * 100 + ["dog"] * 100 + ["car"] * 100)  # cat/dog: one blob
    found = geometry_findings(feature_geometry(x, labels), np.arange(300))
    overlap = [f for f in found if f.code == "class-overlap"]
    assert len(overlap) == 1 and overlap[0].severity == "warning"
    assert set(overlap[0].evidence["classes"]) == {"cat", "dog"}
    assert not [f for f in found if f.code == "label-noise-suspects" and f.severity == "warning"]


def penultimate(x: np.ndarray, labels: np.ndarray, epochs: int = 3) -> np.ndarray:
    """A small MLP trained on ``labels``; its penultimate layer on every input."""
    from torch import nn

    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny layers: threads only contend on a shared machine
    try:
        return _train(nn, x, labels, epochs)
    finally:
        torch.set_num_threads(threads)


def _train(nn, x: np.ndarray, labels: np.ndarray, epochs: int) -> np.ndarray:
    body = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32), nn.ReLU())
    head = nn.Linear(32, 10)
    opt = torch.optim.Adam([*body.parameters(), *head.parameters()], lr=1e-2)
    xt, yt = torch.tensor(x, dtype=torch.float32), torch.tensor(labels)
    for _ in range(epochs):
        for b in torch.randperm(len(xt)).split(64):
            loss = nn.functional.cross_entropy(head(body(xt[b])), yt[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
    with torch.no_grad():
        return body(xt).numpy()


def test_trained_model_penultimate_layer(digits):
    """Clean labels: no warning; 10% flipped training labels: found (recall falls as the
    model memorises the flips: 0.83 after 3 epochs, 0.44 after 30, precision stays 0.95)."""
    x, y = digits
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    clean = geometry_findings(feature_geometry(penultimate(x, y), y), np.arange(len(y)))
    assert [f for f in clean if f.severity != "info"] == []
    noisy, flipped = flip(y, 0.10)
    found = geometry_findings(feature_geometry(penultimate(x, noisy), noisy), np.arange(len(y)))
    suspects = next(f for f in found if f.code == "label-noise-suspects")
    hits = len(set(suspects.evidence["indices"]) & set(flipped.tolist()))
    precision, recall = hits / len(suspects.evidence["indices"]), hits / len(flipped)
    print(f"10% flips, MLP penultimate layer: precision {precision:.3f} recall {recall:.3f}")
    assert suspects.severity == "warning" and precision >= 0.9 and recall >= 0.6


def test_collapsed_representation_is_named():
    found = geometry_findings(feature_geometry(np.full((30, 8), 0.5), None), np.arange(30))
    assert found.codes == ["representation-collapse"] and found[0].severity == "warning"
    tiny = np.random.default_rng(0).normal(size=(30, 8)) * 1e-3  # small but alive
    assert geometry_findings(feature_geometry(tiny, None), np.arange(30)).codes == []


def test_randomized_preview_matches_exact_pca():
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 2500)
    x = (rng.normal(0, 1, (10, 900))[y] + rng.normal(0, 1, (2500, 900))).astype(np.float32)
    fast = pca_layout(as_features(x).values)  # 2.25M values: the randomized path
    exact = PCA(2).fit_transform(x.astype(np.float64))
    for k in range(2):
        err = min(np.abs(fast[:, k] - exact[:, k]).max(), np.abs(fast[:, k] + exact[:, k]).max())
        assert err < 1e-3 * np.abs(exact[:, k]).max()


@settings(max_examples=40, deadline=None)
@given(arrays(dtype=st.sampled_from([np.float32, np.float64, np.int64, np.bool_]),
              shape=array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)))
def test_any_array_becomes_a_picture_or_a_clear_error(x):
    try:
        fs = as_features(x)
    except VizdebugError as err:
        assert "shape" in str(err) or "rows" in str(err) or "points" in str(err)
        return
    xy = pca_layout(fs.values)
    assert xy.shape == (len(fs.rows), 2) and np.isfinite(xy).all()
    assert np.isfinite(unit_box(xy)).all()
