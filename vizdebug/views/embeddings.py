"""``show_embeddings``: a representation as a scatter plot that never makes the user wait.

The PCA preview is drawn at once; a background thread adds thumbnails, the neighbour
statistics and findings, then fits t-SNE or UMAP and swaps the refined layout in (the
browser animates the move). Colouring, hover (label, prediction, loss, thumbnail) and
lasso selection run in the browser with regl-scatterplot (WebGL, vendored under
``static/vendor``), so they work while the kernel is busy; the selection comes back to
Python as ``view.selected``.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import numpy as np

from .._env import renderer
from ..analysis.embeddings.findings import (
    Geometry,
    feature_geometry,
    geometry_findings,
    layout_quality,
)
from ..analysis.embeddings.pca import PCA_FIT_ROWS
from ..analysis.embeddings.project import (
    FeatureSet,
    as_features,
    duplicate_count,
    layout_plan,
    pca_layout,
    per_point,
    unit_box,
)
from ..analysis.embeddings.scale import refine
from ..findings import Findings, findings_html
from ._base import View
from ._display import shown_where_called
from .embeddings_data import (
    as_losses,
    check_images,
    class_codes,
    info_html,
    legend_html,
    picture_note,
    point_colours,
    quality_html,
    scatter_png,
    selected_grid,
    take,
    thumbnails,
)
from .embeddings_stream import DrawOrder, StreamedWidget
from .view_frames import embedding_figure, embedding_frame

NAMES = {"pca": "PCA", "tsne": "t-SNE", "umap": "UMAP"}
FIRST_PICTURE_GRACE = 1.0  # s the worker waits for the preview to be drawn (or asked for)


class EmbeddingView(StreamedWidget, View):
    """Points of a representation in 2-D, coloured by label, prediction, loss or
    correctness, with quality figures and findings from the geometry.

    Build it with :func:`show_embeddings` or :meth:`from_arrays`.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(40, 6))
    >>> view = EmbeddingView.from_arrays(x, labels=[0, 1] * 20, method="pca").wait()
    >>> view.layout.shape, view.layout_name
    ((40, 2), 'PCA')
    >>> [f.code for f in view.findings if f.severity == "warning"]  # random labels
    ['class-overlap']
    """

    title = "vizdebug embeddings"

    def __init__(self, features: FeatureSet, preview: np.ndarray, *, labels=None,
                 predictions=None, losses=None, images=None, method: str = "pca",
                 params: dict[str, Any] | None = None) -> None:
        self.features = features
        self.labels = labels
        self.predictions = predictions
        self.losses = losses
        self.images = images
        self.method = method
        self.params = dict(params or {})
        self.classes = class_codes(labels, predictions)
        self.preview = preview
        self.layout = self.preview
        self.layout_name = "PCA preview" if method != "pca" else "PCA"
        self.layout_how = ""  # how a big set's refined layout was made (fit on a sample)
        self.quality: dict[str, float | None] = {}
        self.thumbs: list[str] = []
        self.stage = "starting"
        self.error = ""
        self.notes = list(features.notes)
        self._findings = Findings()
        self._geometry: Geometry | None = None
        self._analysed = threading.Event()
        self._done = threading.Event()
        self._running = True
        self._sync = threading.Lock()
        # the picture, its name and whether work goes on change together: a static render
        # (a report, the twin) reads the three at once and describes what it draws
        self._lock = threading.Lock()
        self._display: Any = None
        self._fallback_id = ""
        self._selected: list[int] = []
        self._drawn = threading.Event()  # set once a first picture has been asked for
        self._started = time.perf_counter()
        self.timings: dict[str, float] = {}  # seconds from the call: layout, done
        self._order = DrawOrder(len(features.values))  # a big set: a sample first
        self._rest_wanted = threading.Event()  # the browser drew the sample
        self._rest_sent = threading.Event()  # every point is in the widget's state

    @classmethod
    def from_arrays(cls, features: Any, *, labels=None, images=None, predictions=None,
                    losses=None, method: str = "auto", **params: Any) -> EmbeddingView:
        """Check the inputs, draw the preview and start the refinement thread."""
        started = time.perf_counter()
        fs = as_features(features)
        n = fs.n_input
        per = {name: per_point(v, n, name) for name, v in
               (("labels", labels), ("predictions", predictions), ("losses", losses))}
        if per["losses"] is not None:
            per["losses"] = as_losses(per["losses"])
        chosen, why = layout_plan(method, fs.values)
        subset = {k: (v[fs.rows] if v is not None else None) for k, v in per.items()}
        preview = unit_box(pca_layout(fs.values))
        check_images(images, n)
        view = cls(fs, preview, images=take(images, fs.rows, n), method=chosen, params=params,
                   **subset)
        view.notes += [why] if why else []
        if len(fs.values) > PCA_FIT_ROWS:
            view.notes.append(f"PCA axes from a fixed sample of {PCA_FIT_ROWS:,} points; "
                              f"all {len(fs.values):,} projected on them")
        view._started = started
        return view.start()

    def start(self) -> EmbeddingView:
        """Start the background thread (thumbnails, findings, refined layout)."""
        threading.Thread(target=self._work, name="vizdebug-embeddings", daemon=True).start()
        return self

    def wait(self, timeout: float | None = None) -> EmbeddingView:
        """Block until the refined layout and its figures are in (or ``timeout`` passes)."""
        self._drawn.set()
        self._done.wait(timeout)
        self._refresh_static()
        return self

    @property
    def done(self) -> bool:
        """True once the refined layout (or an error) has replaced the preview."""
        return self._done.is_set()

    @property
    def findings(self) -> Findings:
        """``label-noise-suspects`` and ``class-overlap`` (waits for the neighbour step)."""
        self._drawn.set()
        self._analysed.wait()
        return self._findings

    def to_frame(self) -> Any:
        """The picture drawn now, a row per point (see :func:`.view_frames.embedding_frame`)."""
        return embedding_frame(self)

    def figure(self) -> Any:
        """:meth:`to_frame` as a ``plotly.graph_objects.Figure``, a trace per label (plotly)."""
        return embedding_figure(self)

    @property
    def selected(self) -> list[int]:
        """Indices (into the features passed) of the points selected in the browser."""
        return list(self._selected)

    def show_selected(self, n: int | None = None) -> Any:
        """The selected points' images (with their labels) as a :func:`show_batch` grid."""
        from ..errors import VizdebugError

        if self.images is None or not self._selected:
            raise VizdebugError("nothing to show: " + ("pass images= to show_embeddings"
                                if self.images is None else "select points first (box or lasso)"))
        where = np.searchsorted(self.features.rows, self._selected)
        return selected_grid(self.images, where, self.classes, n)

    def _work(self) -> None:
        try:
            self._drawn.wait(FIRST_PICTURE_GRACE)  # the preview first: no GIL taken from it
            self._thumbnails()
            if self.method != "pca":
                self._failing(self._refine)  # the picture first; its figures after the swap
            self._analyse()
        except Exception as exc:  # shown in the view; the preview stays
            self._failed(exc)
        finally:
            self._analysed.set()
            with self._lock:
                self.stage, self._running = "", False
            self._push()
            self._refresh_static()
            self._done.set()
            self.timings["done"] = self._clock()

    def _failing(self, step: Any) -> None:
        try:
            step()
        except Exception as exc:  # a failed fit keeps the preview and its findings
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        self.error = f"{self.stage or 'refinement'} failed: {type(exc).__name__}: {exc}"

    def _thumbnails(self) -> None:
        if self.images is None:
            return
        self._set_stage("making thumbnails")
        try:
            self.thumbs, why = thumbnails(self.images, len(self.features.values))
        except Exception as exc:  # the picture matters more than its thumbnails
            why = f"no thumbnails: {exc}"
        self.notes += [why] if why else []

    def _analyse(self) -> None:
        x = self.features.values
        dups = duplicate_count(x)
        if dups:
            self.notes.append(f"{dups} points repeat another point exactly (drawn on top)")
        self._set_stage("finding each point's nearest neighbours")
        self._geometry = feature_geometry(x, self.labels)
        self._findings = geometry_findings(self._geometry, self.features.rows)
        self._analysed.set()
        self._push()
        self._set_stage("measuring the picture")
        self.quality = layout_quality(x, self.layout, self._geometry)

    def _refine(self) -> None:
        x = self.features.values
        done = refine(x, self.method, self.params, stage=self._set_stage)
        layout = unit_box(done.layout)
        with self._lock:
            self.layout, self.layout_name = layout, NAMES[self.method]
            self.layout_how = done.how if done.fitted < len(x) else ""
        self.timings["layout"] = self._clock()
        self._push()

    def _clock(self) -> float:
        return round(time.perf_counter() - self._started, 4)

    def _set_stage(self, text: str) -> None:
        self.stage = text
        self._push()

    def _push(self) -> None:
        with self._sync:
            if self._widget is not None:
                self._send(self._widget)

    def _picture(self) -> tuple[np.ndarray, str, bool]:
        """The layout, its name and whether the view still works, read together."""
        with self._lock:
            return self.layout, self.layout_name, self._running

    def _build_widget(self) -> Any:
        with self._sync:  # the worker's pushes wait until the widget is in place
            self._widget = self._new_widget()
            return self._widget

    def _info_html(self, layout_name: str | None = None) -> str:
        """The side panel; ``layout_name``: the name of the picture it stands beside."""
        name = self.layout_name if layout_name is None else layout_name
        found = (findings_html(self._findings, empty="No problems found in the geometry.")
                 if self._analysed.is_set() else '<div class="vd-note">findings: working…</div>')
        quality = quality_html(self.quality, name, len(self.layout)) if self.quality else ""
        return info_html(self.features.values.shape, name, self.layout_how, self.notes,
                         self.error, quality + found)

    def _static_html(self) -> str:
        self._drawn.set()
        layout, name, running = self._picture()  # the worker may swap the layout meanwhile
        picture = scatter_png(layout, point_colours(self.classes, self.losses, len(layout)))
        status = picture_note(NAMES.get(self.method, self.method), name, running)
        return (f'<div class="vd-emb-static" style="display:flex;gap:16px;flex-wrap:wrap">'
                f'<div><img src="{picture}" width="420" height="420" alt="embedding layout" '
                f'style="border:1px solid #ddd">{legend_html(self.classes)}{status}</div>'
                f"<div style=\"max-width:520px\">{self._info_html(name)}</div></div>")

    def _show(self) -> None:
        """Like every view (static twin, then the widget), with the static twin kept as a
        display that the finished refinement updates."""
        from IPython.display import display

        widget = self.widget if renderer() == "widget" else None
        if widget is None or renderer() == "text":
            self._display = display(self._repr_mimebundle_(), raw=True, display_id=True)
            if not self._running:
                self._refresh_static()
            return
        widget.fallback_id = self._fallback_id = uuid.uuid4().hex
        self._display = display(self._static_bundle(self._fallback_id), raw=True,
                                display_id=True)
        display(widget)
        if not self._running:  # finished while being displayed: its update found no handle
            self._refresh_static()

    def _refresh_static(self) -> None:
        handle = self._display
        if handle is None:
            return
        try:
            bundle = (self._static_bundle(self._fallback_id) if self._fallback_id
                      else self._repr_mimebundle_())
            handle.update(bundle, raw=True)
        except Exception:  # a closed front end: the live widget still has the layout
            pass

    def __repr__(self) -> str:
        state = "done" if self.done else f"refining: {self.stage}"
        return (f"EmbeddingView({len(self.layout)} points, {self.layout_name}, {state}, "
                f"findings: {', '.join(self._findings.codes) or 'none'})")


def show_embeddings(features: Any, *, labels=None, images=None, predictions=None, losses=None,
                    method: str = "auto", **params: Any) -> EmbeddingView:
    """Show a representation as points in 2-D: a PCA preview at once, refined in the
    background with t-SNE or UMAP; hover, colour and select in the browser.

    Parameters
    ----------
    features
        ``n x d`` array, tensor or DataFrame (numeric columns); 1-D is one dimension, more
        dimensions are flattened per point; rows with NaN/inf are left out and named.
    labels, predictions
        One class per point (predictions may be ``n x c`` scores: the argmax is used).
    images
        The inputs (``N x H x W`` or ``N x C x H x W``), shown as thumbnails on hover.
    losses
        One loss per point.
    method
        ``"auto"`` (t-SNE up to 5,000 points, UMAP above), ``"pca"``, ``"tsne"``, ``"umap"``.
    **params
        Passed to ``sklearn.manifold.TSNE`` or ``umap.UMAP`` (``perplexity=50``,
        ``n_neighbors=30``, ...), except ``fit_points`` (past this many points the library
        is fitted on a fixed sample) and ``placement`` (how the rest is placed: ``"auto"``,
        ``"neighbours"``, ``"library"``; see :mod:`vizdebug.analysis.embeddings.scale`).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(60, 8))
    >>> view = show_embeddings(x, labels=np.arange(60) % 3, method="pca")
    >>> view.wait().quality["trustworthiness"] > 0.5
    True
    """
    return shown_where_called(EmbeddingView.from_arrays(
        features, labels=labels, images=images, predictions=predictions, losses=losses,
        method=method, **params))
