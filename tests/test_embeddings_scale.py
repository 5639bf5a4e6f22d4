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
                               "median of their 5 nearest fitted points")
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
def test_umap_on_a_sample_places_the_rest_by_neighbours_or_transform():
    pytest.importorskip("umap")
    x, y = blobs(3000)
    done = scale.refine(x, "umap", {"fit_points": 1000})
    assert "the rest placed at the median of their 5 nearest fitted points" in done.how
    assert done.fitted == 1000 and _knn_label_accuracy(done.layout, y) > 0.95
    library = scale.refine(x, "umap", {"fit_points": 1000, "placement": "library"})
    assert library.how.endswith("the rest placed with UMAP.transform")
    assert _knn_label_accuracy(library.layout, y) > 0.95


def _fitted(n: int = 400, d: int = 24):
    x, y = blobs(n, d)
    centres = np.array([[np.cos(a), np.sin(a)] for a in np.linspace(0, 6, 5)]) * 10
    layout = centres[y] + np.random.default_rng(1).normal(0, 0.5, (n, 2))  # a "fitted" picture
    return x, y, layout


def test_neighbour_placement_is_deterministic_bounded_and_chunk_free():
    x, y, layout = _fitted()
    fit, rest = x[:200], x[200:]
    a = scale.NeighbourPlacement(fit, layout[:200])(rest)
    b = scale.NeighbourPlacement(fit.copy(), layout[:200].copy())
    assert (a == b(rest)).all()  # equal inputs, equal results
    assert (a == np.concatenate([b(rest[:37]), b(rest[37:150]), b(rest[150:])])).all()
    lo, hi = layout[:200].min(axis=0), layout[:200].max(axis=0)
    assert ((a >= lo) & (a <= hi)).all()  # inside the fitted picture's box
    assert b.dimensions == 16 and b.k == 5 and b(rest[:0]).shape == (0, 2)
    near = np.linalg.norm(a[:, None] - layout[:200][None], axis=2).argmin(axis=1)
    assert (y[:200][near] == y[200:]).mean() > 0.97  # each placed among its own class
    exact = scale.NeighbourPlacement(fit, layout[:200], k=1)(fit)  # a fitted point: its spot
    assert np.allclose(exact, layout[:200])


def test_neighbour_placement_refuses_bad_input_by_name():
    x, _, layout = _fitted(60, 4)
    with pytest.raises(VizdebugError, match=r"n x 2 layout, got \(60, 4\) and \(59, 2\)"):
        scale.NeighbourPlacement(x, layout[:59])
    for k in (0, 2.5, True):
        with pytest.raises(VizdebugError, match="k must be a whole number"):
            scale.NeighbourPlacement(x, layout, k=k)
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(VizdebugError, match="NaN or inf"):
        scale.NeighbourPlacement(bad, layout)
    with pytest.raises(VizdebugError, match=r"must be m x 4, got shape \(3, 5\)"):
        scale.NeighbourPlacement(x, layout)(np.zeros((3, 5)))
    with pytest.raises(VizdebugError, match="placement must be one of"):
        scale.refine(x, "tsne", {"fit_points": 20, "placement": "transform"})
    assert scale.NeighbourPlacement(x, layout, k=100).k == 60  # no more than there are


def test_a_big_view_sends_a_sample_first_then_every_point(monkeypatch):
    import time

    from ipywidgets.widgets.widget import _remove_buffers

    import vizdebug as vd
    from vizdebug import _env
    from vizdebug.views import embeddings_stream

    monkeypatch.setattr(embeddings_stream, "STREAM_AT", 500)
    monkeypatch.setattr(embeddings_stream, "FIRST_POINTS", 300)
    monkeypatch.setattr(embeddings_stream, "REST_WAIT", 60.0)
    _env.set_renderer("widget")
    x, y = blobs(1000, 8)
    x[7] = np.nan  # one row left out: positions and input rows differ
    view = vd.EmbeddingView.from_arrays(x, labels=y, losses=np.arange(1000.0), method="pca")
    w, order = view.widget, view._order.order
    assert (len(w.x), len(w.labels), w.total) == (4 * 300, 300, 999)
    assert (np.frombuffer(w.x, "<f4") == view.layout[order[:300], 0].astype("<f4")).all()
    assert (np.frombuffer(w.labels, "u1") == view.classes.labels[order[:300]]).all()
    assert (np.frombuffer(w.rows, "<i4") == view.features.rows[order[:300]]).all()
    assert (np.frombuffer(w.losses, "<f4") == view.losses[order[:300]]).all()
    _, paths, _ = _remove_buffers(w.get_state())  # binary buffers, not JSON lists
    assert {"x", "y", "labels", "rows", "losses"} <= {p[0] for p in paths}
    w.selected = [0, 5, 299, 300, -1]  # draw indices; past the sample: not drawn yet
    assert view.selected == view.features.rows[order[[0, 5, 299]]].tolist()
    time.sleep(0.3)
    assert len(w.x) == 4 * 300  # nothing more until the browser asks
    w._handle_custom_msg({"kind": "rest"}, [])
    assert view._rest_sent.wait(20)
    assert (len(w.x), len(w.labels), len(w.rows)) == (4 * 999, 999, 4 * 999)
    assert (np.frombuffer(w.y, "<f4") == view.layout[order, 1].astype("<f4")).all()
    assert (np.frombuffer(w.labels, "u1") == view.classes.labels[order]).all()
    view.wait(60)
    suspects = view._order.drawn(view._geometry.sample[view._geometry.suspects.positions].tolist()) \
        if view._geometry.suspects is not None else []
    assert w.suspects == suspects
    w.selected = [998]
    assert view.selected == [int(view.features.rows[order[998]])]


def test_draw_order_maps_both_ways():
    from vizdebug.views.embeddings_stream import DrawOrder

    o = DrawOrder(1000, stream_at=100, first=50)
    assert o.streaming and len(set(o.order.tolist())) == 1000
    assert o.positions(o.drawn(o.order[:50].tolist())) == sorted(o.order[:50].tolist())
    assert o.drawn(o.order[60:70].tolist()) == []  # not held yet
    o.everything()
    assert not o.streaming and o.drawn([int(o.order[999])]) == [999]
    assert (DrawOrder(1000, stream_at=100, first=50).order == o.order).all()  # fixed sample
    same = DrawOrder(80, stream_at=100, first=50)
    assert same.order is None and same.positions([3, 90]) == [3] and same.drawn([4]) == [4]


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
