"""show_embedding_frames: layouts aligned frame to frame, per-frame figures, findings over
the timeline, and clear messages for frames that cannot be shown together."""

from __future__ import annotations

import numpy as np
import pytest

from vizdebug.analysis.embeddings.align import (
    aligned_previews,
    effective_rank,
    follow_layout,
    normalised,
    procrustes_onto,
)
from vizdebug.errors import VizdebugError, VizdebugTypeError
from vizdebug.records import EmbeddingFrame
from vizdebug.views.embedding_timeline import show_embedding_frames


def blobs(n: int = 300, d: int = 16, classes: int = 4, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    centres = rng.normal(0, 5, (classes, d))
    return (centres[y] + rng.normal(0, 1, (n, d))).astype(np.float32), y


def frames_of(*arrays, layer: str = "fc1") -> list[EmbeddingFrame]:
    return [EmbeddingFrame(layer, 100 * i, i, a) for i, a in enumerate(arrays)]


def moved(a: np.ndarray, b: np.ndarray) -> float:
    """Mean distance a point travels between two layouts."""
    return float(np.sqrt(((a - b) ** 2).sum(axis=1)).mean())


def test_a_frame_that_barely_changes_keeps_its_layout():
    x, y = blobs()
    jitter = np.random.default_rng(1).normal(0, 1e-3, x.shape).astype(np.float32)
    view = show_embedding_frames(frames_of(x, x + jitter, x * 3 + jitter), labels=y,
                                 method="pca").wait(60)
    a, b, c = view.layouts
    assert moved(a, b) < 0.005  # of a box 2 wide
    assert moved(a, c) < 0.005  # a change of scale is not a move
    assert all(v.dtype == np.float32 and np.abs(v).max() <= 1 for v in view.layouts)


def test_rotated_and_reflected_features_align_back():
    x, _ = blobs(d=8)
    q, _ = np.linalg.qr(np.random.default_rng(2).normal(size=(8, 8)))
    q[:, 0] *= -1  # a reflection as well as a rotation
    first, second = aligned_previews([x, (x @ q).astype(np.float32)])
    assert moved(first, second) < 1e-4
    turned = first @ np.array([[0.0, -1.0], [-1.0, 0.0]])  # a reflection in 2-D
    assert moved(procrustes_onto(turned, first), first) < 1e-9


def test_refined_frames_follow_the_previous_one():
    x, y = blobs(n=100, d=8)
    drift = x + np.random.default_rng(3).normal(0, 0.05, x.shape).astype(np.float32)
    first = follow_layout(x, None, "tsne", {"max_iter": 500})
    second = follow_layout(drift, first, "tsne")
    assert moved(normalised(first), procrustes_onto(second, first)) < 0.1  # RMS radii


def test_shapes_curve_and_widget_buffers():
    x, y = blobs(n=200)
    view = show_embedding_frames(frames_of(x * 0.5, x, x * 2)[::-1], labels=y,
                                 method="pca").wait(60)
    assert view.steps == [0, 100, 200] and len(view.layouts) == 3
    assert [v.shape for v in view.layouts] == [(200, 2)] * 3
    assert len(view.curve["knn"]) == 3 and view.curve["knn"][-1] > 0.95
    assert all(0.5 < t <= 1 for t in view.curve["trust"])
    w = view.widget
    assert len(w.xs) == len(w.ys) == 4 * 3 * 200 and w.frame == 2 and w.n_points == 200
    assert len(w.curve["kNN accuracy"]) == 3
    w.selected = [0, 5, 199]
    assert view.selected == [0, 5, 199]
    assert not view.findings.codes  # clean, well separated classes


def test_append_adds_a_frame_that_follows_the_last_one():
    x, y = blobs(n=150)
    view = show_embedding_frames(frames_of(x, x * 1.1), labels=y, method="pca").wait(60)
    w = view.widget
    later = EmbeddingFrame("fc1", 300, 3, x * 1.2 + 1e-3)
    view.append([later]).wait(60)
    assert view.steps == [0, 100, 300] and len(view.curve["trust"]) == 3
    assert moved(view.layouts[1], view.layouts[2]) < 0.005
    assert len(w.xs) == 4 * 3 * 150 and w.steps == [0, 100, 300] and "layouts" in view.timings
    with pytest.raises(VizdebugError, match="later frames"):
        view.append([EmbeddingFrame("fc1", 50, 0, x)])
    with pytest.raises(VizdebugError, match="layer 'fc1'"):
        view.append([EmbeddingFrame("fc2", 400, 4, x)])


def test_predictions_per_frame_follow_the_frames_order():
    x, y = blobs(n=60)
    wrong = (y + 1) % 4
    frames = frames_of(x, x * 2)[::-1]  # given newest first
    view = show_embedding_frames(frames, labels=y, predictions=[y, wrong], method="pca")
    codes = np.frombuffer(view.widget.predictions, dtype="<i4").reshape(2, 60)
    names = np.array(view.classes.names)
    assert (names[codes[0]] == wrong.astype(str)).all()  # step 0 was given second
    assert (names[codes[1]] == y.astype(str)).all() and view.widget.color_by == "label"
    view.append([EmbeddingFrame("fc1", 500, 5, x)]).wait(60)
    assert len(view.widget.predictions) == 4 * 3 * 60
    with pytest.raises(VizdebugError, match="predictions"):
        show_embedding_frames(frames, predictions=y[:5], method="pca")


def test_collapse_over_frames_is_found_and_clean_growth_is_not():
    x, y = blobs(n=200)
    fading = frames_of(x, x * 0.1, x * 1e-3 + 5)
    view = show_embedding_frames(fading, labels=y, method="pca").wait(60)
    found = [f for f in view.findings if f.code == "representation-collapse"]
    assert found and found[0].severity == "warning" and "spread" in found[0].message
    line = np.outer(np.linspace(-1, 1, 200), np.ones(16)).astype(np.float32)
    ranks = frames_of(x, 0.5 * x + line * 9, line * 10 + 1e-4 * x)
    rank_view = show_embedding_frames(ranks, labels=y, method="pca").wait(60)
    codes = {f.code: f.severity for f in rank_view.findings}
    assert codes.get("representation-collapse") == "warning"
    assert effective_rank(line) < 1.01


def test_rows_with_nan_are_left_out_of_every_frame_and_named():
    x, y = blobs(n=50)
    bad = x.copy()
    bad[[3, 7]] = np.nan
    view = show_embedding_frames(frames_of(x, bad), labels=y, images=np.random.rand(50, 6, 6),
                                 method="pca").wait(60)
    assert len(view.layouts[0]) == 48 and "rows [3, 7]" in " ".join(view.notes)
    view.widget.selected = [3]  # the fourth point drawn is probe row 4
    assert view.selected == [4]
    grid = view.show_selected()
    assert grid.pages[0].n_items == 1 and f'vd-label">{y[4]}<' in grid.pages[0].html
    gone = show_embedding_frames(frames_of(x, np.full_like(x, np.nan)), method="pca").wait(60)
    assert gone.steps == [0] and "left out" in gone.notes[0]


def test_bad_frames_get_clear_messages():
    x, y = blobs(n=30)
    cases = [
        ([], VizdebugError, "empty"),
        (frames_of(x) + frames_of(x, layer="fc2"), VizdebugError, "layers"),
        (frames_of(x, x[:20]), VizdebugError, "probe rows"),
        (frames_of(np.full_like(x, np.inf)), VizdebugError, "NaN or inf"),
        (x, VizdebugTypeError, "EmbeddingFrame"),
        ([x], VizdebugTypeError, r"frames\[0\]"),
        (frames_of(np.array(["a"] * 30)), VizdebugTypeError, "numbers"),
    ]
    for frames, kind, words in cases:
        with pytest.raises(kind, match=words):
            show_embedding_frames(frames, method="pca")
    with pytest.raises(VizdebugError, match="labels"):
        show_embedding_frames(frames_of(x), labels=y[:10], method="pca")
    with pytest.raises(VizdebugError, match="images"):
        show_embedding_frames(frames_of(x), images=np.zeros((3, 4, 4)), method="pca")
    with pytest.raises(VizdebugError, match="method"):
        show_embedding_frames(frames_of(x), method="isomap")


def test_static_twin_shows_the_last_frame_and_escapes_the_layer_name():
    x, y = blobs(n=40)
    view = show_embedding_frames(frames_of(x, x * 2, layer="<b>fc</b>"), labels=y,
                                 method="pca").wait(60)
    page = view.to_html()
    assert "&lt;b&gt;fc&lt;/b&gt;" in page and "<b>fc</b>" not in page
    assert "last frame: step 100 (epoch 1)" in page and "<svg" in page
    assert page.count("data:image/png") == 1
    assert np.allclose(normalised(view.layouts[1]).std(), normalised(view.layouts[0]).std())
