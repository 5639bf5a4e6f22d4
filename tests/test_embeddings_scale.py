"""Embeddings at scale: the sampled PCA preview, the one-pass row statistics against their
definitions, refined layouts fitted on a sample with the rest placed, and what is sent."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest

from vizdebug.analysis.embeddings import pca, rowstats, scale
from vizdebug.analysis.embeddings.project import duplicate_count, is_collapsed
from vizdebug.errors import VizdebugError
from vizdebug.views.embeddings_data import code_bytes, code_width, rows_bytes


def blobs(n: int, d: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, n)
    return (rng.normal(0, 6, (5, d))[y] + rng.normal(0, 1, (n, d))).astype(np.float32), y


@pytest.mark.parametrize("name", ["vizdebug.analysis.embeddings.scale",
                                  "vizdebug.analysis.embeddings.rowstats",
                                  "vizdebug.analysis.embeddings.pca"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.parametrize("seed", range(6))
def test_hashed_duplicates_match_the_definition(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 9))
    dtype = [np.float32, np.float64, np.int16, np.uint8][seed % 4]
    x = rng.integers(0, 3, (500, d)).astype(dtype)  # few distinct values: many repeats
    x[rng.integers(0, 500, 40)] = x[rng.integers(0, 500, 40)]
    rows = np.ascontiguousarray(x).view(np.dtype((np.void, x.dtype.itemsize * d)))
    assert rowstats.duplicate_count_hashed(x) == len(x) - len(np.unique(rows))
    assert rowstats.duplicate_count_hashed(rng.normal(size=(300, d))) == 0


@pytest.mark.parametrize("seed", range(6))
def test_spread_bound_matches_the_definition(seed):
    rng = np.random.default_rng(seed)
    x = np.ones((3000, 4)) * rng.normal()
    if seed % 2:  # one column varies, in one row only, by a little or a lot
        x[int(rng.integers(0, 3000)), 2] += [1e-9, 1e-3, 5.0][seed % 3] * abs(x[0, 0])
    size = float(np.abs(x).max())
    reference = float((x / size).std(axis=0).max())
    for threshold in (1e-12, 1e-6, 1e-3):
        assert rowstats.spread_exceeds(x, size, threshold) == (reference > threshold)
    assert rowstats.largest_spread(x, size) == pytest.approx(reference, rel=1e-9, abs=1e-15)


def test_big_sets_take_the_fast_paths_with_the_same_answers(monkeypatch):
    x, _ = blobs(4000)
    x[10] = x[20]
    slow = (duplicate_count(x), is_collapsed(x), is_collapsed(np.ones((4000, 3))))
    monkeypatch.setattr("vizdebug.analysis.embeddings.project.FAST_ROWS", 100)
    assert (duplicate_count(x), is_collapsed(x), is_collapsed(np.ones((4000, 3)))) == slow
    assert slow == (1, False, True)


def test_sampled_pca_preview_matches_the_exact_one(monkeypatch):
    x, _ = blobs(6000, d=32)
    exact = pca.pca_layout(x)
    monkeypatch.setattr(pca, "PCA_FIT_ROWS", 2000)
    monkeypatch.setattr(pca, "PROJECT_CHUNK", 1000)  # several chunks
    sampled = pca.pca_layout(x)
    assert sampled.shape == (6000, 2) and np.isfinite(sampled).all()
    for k in range(2):  # the same axes up to the sample's noise (signs are fixed)
        assert np.corrcoef(exact[:, k], sampled[:, k])[0, 1] > 0.99
    assert (pca.pca_layout(np.ones((6000, 3))) == 0).all()  # no spread: zeros, as ever


@pytest.mark.slow  # sklearn's t-SNE: 2-20 s on a shared 2-core machine
def test_tsne_on_a_sample_places_the_rest_by_neighbours(monkeypatch):
    x, y = blobs(600)
    monkeypatch.setattr(scale, "_has_opentsne", lambda: False)
    monkeypatch.setattr(scale, "PLACE_CHUNK", 200)
    heard = []
    done = scale.refine(x, "tsne", {"fit_points": 150, "max_iter": 250}, heard.append)
    assert done.fitted == 150 and done.layout.shape == (600, 2)
    assert done.how.startswith("t-SNE fitted on 150 of 600 points; the rest placed at the "
                               "median of their 5 nearest fitted neighbours")
    assert [h.split(":")[-1] for h in heard if h.startswith("placing the other 450")] == [
        " 0 done", " 200 done", " 400 done"]
    assert _knn_label_accuracy(done.layout, y) > 0.95  # placed into their own clusters


def test_opentsne_places_the_rest_with_its_transform():
    pytest.importorskip("openTSNE")
    x, y = blobs(600)
    done = scale.refine(x, "tsne", {"fit_points": 150})
    assert "openTSNE's transform" in done.how and done.fitted == 150
    assert np.isfinite(done.layout).all() and _knn_label_accuracy(done.layout, y) > 0.9


def test_small_sets_are_fitted_whole_and_bad_limits_refused():
    x, _ = blobs(200)
    done = scale.refine(np.ones((200, 4)), "tsne", {"fit_points": 50})  # collapsed: no fit
    assert done.fitted == 200 and done.how == "t-SNE of all 200 points"
    for bad in (3, 2.5, "many", True):
        with pytest.raises(VizdebugError, match="fit_points"):
            scale.refine(x, "tsne", {"fit_points": bad})


def test_first_umap_use_is_named_in_the_stage(monkeypatch):
    monkeypatch.setitem(scale._STATE, "umap_fitted", False)
    assert "numba compiles" in scale.first_use_note("umap")
    assert scale.first_use_note("tsne") == ""
    monkeypatch.setitem(scale._STATE, "umap_fitted", True)
    assert scale.first_use_note("umap") == ""


@pytest.mark.slow
def test_umap_on_a_sample_places_the_rest_with_transform():
    pytest.importorskip("umap")
    x, y = blobs(3000)
    done = scale.refine(x, "umap", {"fit_points": 1000})
    assert done.how.endswith("the rest placed with UMAP.transform") and done.fitted == 1000
    assert _knn_label_accuracy(done.layout, y) > 0.95


def test_codes_and_rows_sent_narrow():
    codes = np.array([0, 4, -1, 2])
    assert np.frombuffer(code_bytes(codes, 5), "<u1").tolist() == [0, 4, 255, 2]
    assert np.frombuffer(code_bytes(codes, 300), "<u2").tolist() == [0, 4, 65535, 2]
    assert np.frombuffer(code_bytes(codes, 70000), "<i4").tolist() == [0, 4, -1, 2]
    assert code_width(254) == 1 and code_width(255) == 2 and code_bytes(None, 3) == b""
    assert rows_bytes(np.arange(1000)) == b""
    assert np.frombuffer(rows_bytes(np.array([0, 1, 3])), "<i4").tolist() == [0, 1, 3]
    assert np.frombuffer(rows_bytes(np.array([1, 2])), "<i4").tolist() == [1, 2]


def _knn_label_accuracy(layout: np.ndarray, y: np.ndarray, k: int = 10) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    clf = KNeighborsClassifier(k).fit(layout[::2], y[::2])
    return float((clf.predict(layout[1::2]) == y[1::2]).mean())
