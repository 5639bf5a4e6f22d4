"""The embedding view below the browser: preview first, refinement swapped in, widget
traits, selection, the static twin and its update, escaping."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import vizdebug as vd
from vizdebug._env import set_renderer
from vizdebug.errors import VizdebugError


@pytest.fixture
def blobs():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0, 1, (40, 6)), rng.normal(5, 1, (40, 6))]
    return x, np.repeat([0, 1], 40)


@pytest.fixture
def html_mode():
    set_renderer("html")
    yield
    set_renderer(None)


def test_preview_at_once_then_refined_layout_replaces_it(blobs):
    x, y = blobs
    view = vd.show_embeddings(x, labels=y, method="tsne", perplexity=10, max_iter=250)
    assert view.layout_name == "PCA preview"  # drawn before any fitting
    np.testing.assert_array_equal(view.layout, view.preview)
    widget = view.widget
    assert view.wait(120).done and view.error == ""
    assert view.layout_name == "t-SNE" and not np.allclose(view.layout, view.preview)
    assert np.frombuffer(widget.x, "<f4").tolist() == view.layout[:, 0].tolist()
    assert widget.layout_name == "t-SNE" and widget.busy is False
    assert 0.6 < view.quality["trustworthiness"] <= 1 and view.quality["knn_layout"] >= 0.95
    assert "trustworthiness" in widget.info_html


def test_umap_gets_the_parameters(blobs, monkeypatch):
    seen = {}

    class FakeUMAP:
        def __init__(self, **kw):
            seen.update(kw)

        def fit(self, x):
            self.embedding_ = x[:, :2] * 2
            return self

    monkeypatch.setitem(sys.modules, "umap", types.SimpleNamespace(UMAP=FakeUMAP))
    view = vd.show_embeddings(blobs[0], method="umap", n_neighbors=5, min_dist=0.3).wait(30)
    assert seen["n_neighbors"] == 5 and seen["min_dist"] == 0.3
    assert view.layout_name == "UMAP"


def test_a_failing_refinement_keeps_the_preview(blobs):
    view = vd.show_embeddings(blobs[0], labels=blobs[1], method="tsne", no_such=1).wait(30)
    assert "fitting t-SNE" in view.error and "TypeError" in view.error
    assert view.layout_name == "PCA preview"
    assert view.findings.codes == []


def test_traits_selection_and_dropped_rows(blobs):
    x, y = blobs
    x = x.copy()
    x[3] = np.nan
    images = np.random.default_rng(0).random((80, 8, 8))
    view = vd.show_embeddings(x, labels=y, predictions=1 - y, losses=np.arange(80.0),
                              images=images, method="pca").wait(30)
    w = view.widget
    assert np.frombuffer(w.rows, "<i4")[:4].tolist() == [0, 1, 2, 4]
    assert w.class_names == ["0", "1"] and len(w.thumbs) == 79
    assert w.code_width == 1 and len(w.labels) == 79  # one byte per class code
    assert np.frombuffer(w.labels, "<u1")[:2].tolist() == [0, 0]
    assert np.frombuffer(w.predictions, "<u1")[:2].tolist() == [1, 1]
    assert np.frombuffer(w.losses, "<f4")[3] == 4.0  # row 3 was left out
    w.selected = [2, 3]
    assert view.selected == [2, 4]
    grid = view.show_selected()
    assert grid.pages[0].n_items == 2 and "vd-label\">0<" in grid.pages[0].html
    assert "1 of 80 rows hold NaN" in w.info_html


def test_static_twin_escapes_and_updates(blobs, html_mode, monkeypatch):
    x, _ = blobs
    labels = ["<b>cat</b>"] * 40 + ["dog & co"] * 40
    shown = []

    class Handle:
        def update(self, bundle, raw=False):
            shown.append(bundle["text/html"])

    def fake_display(obj, raw=False, display_id=None):
        shown.append(obj["text/html"])
        return Handle()

    monkeypatch.setattr("IPython.display.display", fake_display)
    view = vd.show_embeddings(x, labels=labels, method="tsne", perplexity=10, max_iter=250)
    view._ipython_display_()
    view.wait(120)
    assert "data:image/png;base64," in shown[0]
    assert "<b>cat</b>" not in "".join(shown) and "&lt;b&gt;cat&lt;/b&gt;" in shown[-1]
    assert "dog &amp; co" in shown[-1] and "t-SNE" in shown[-1]
    assert len(view.to_html()) < 60_000


@pytest.mark.parametrize("kwargs, says", [
    ({"labels": [0, 1]}, "labels .*length 2.*80 rows"),
    ({"losses": np.zeros(3)}, "losses"),
    ({"method": "isomap"}, "'isomap'"),
    ({"images": np.zeros((3, 8, 8))}, r"images .*shape \(3, 8, 8\).* 80 rows"),
])
def test_bad_arguments_are_named(blobs, kwargs, says):
    with pytest.raises(VizdebugError, match=says):
        vd.show_embeddings(blobs[0], **kwargs)


def test_degenerate_inputs_give_a_picture():
    one = vd.show_embeddings([[1.0, 2.0, 3.0]], labels=["a"]).wait(30)
    assert one.layout.tolist() == [[0.0, 0.0]] and one.layout_name == "PCA"
    same = vd.show_embeddings(np.ones((20, 4)), method="pca").wait(30)
    assert np.all(same.layout == 0) and "19 points repeat" in same._info_html()
    line = vd.show_embeddings(np.arange(10.0), method="tsne").wait(30)
    assert line.layout.shape == (10, 2) and "1-D features" in line._info_html()
    small = vd.show_embeddings(np.random.rand(5, 3), method="tsne").wait(30)
    assert small.layout_name == "PCA" and "too few for tsne" in small._info_html()


@pytest.mark.notebook
def test_static_twin_shows_the_refined_layout_after_nbconvert():
    """Executed by a real kernel (as nbconvert does): the saved static output of the cell
    that showed the view is updated to the refined layout once it lands."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        "import numpy as np, vizdebug as vd\n"
        "x = np.random.default_rng(0).normal(size=(60, 5))\n"
        "view = vd.show_embeddings(x, method='tsne', perplexity=10, max_iter=250)\nview",
        "view.wait(120).layout_name",
    )]
    NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    first = [o for o in nb.cells[0].outputs if "text/html" in o.get("data", {})]
    assert first and "t-SNE" in first[0]["data"]["text/html"]
    assert "PCA preview" not in first[0]["data"]["text/html"]
    assert "'t-SNE'" in nb.cells[1].outputs[0]["data"]["text/plain"]


def test_label_noise_suspects_reach_the_widget():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x, y = x[:600], y[:600].copy()
    flipped = np.arange(0, 600, 20)
    y[flipped] = (y[flipped] + 3) % 10
    view = vd.show_embeddings(x, labels=y, method="pca").wait(60)
    finding = next(f for f in view.findings if f.code == "label-noise-suspects")
    positions = view.widget.suspects
    assert positions and sorted(positions) == sorted(finding.evidence["indices"])
    assert len(set(positions) & set(flipped.tolist())) >= 0.8 * len(flipped)


def test_quality_table_names_its_samples():
    from vizdebug.views.embeddings_data import quality_html

    q = {"trustworthiness": 0.9, "knn_features": 0.95, "knn_layout": None, "points": 2000,
         "knn_points": 10000}
    assert "trustworthiness on a fixed sample of 2,000 points" in quality_html(q, "UMAP", 10000)
    assert "kNN on a fixed sample of 10,000" in quality_html(q, "UMAP", 50000)
    assert "sample" not in quality_html({**q, "points": 80, "knn_points": 80}, "UMAP", 80)
