"""``show_embedding_frames``: one layer's representation across training, with an epoch
slider that moves in the browser.

Each frame's PCA is turned onto the previous frame's (Procrustes) and drawn at once; a
background thread measures each frame (kNN accuracy: the separability curve; rank and
spread: ``representation-collapse``) and the last one's label noise and class overlap,
then refits every frame with t-SNE/UMAP from the previous frame's layout
(:mod:`vizdebug.analysis.embeddings.align`). All layouts reach the browser once as float32:
slider, hover, colour and box / lasso selection need no kernel.
"""

from __future__ import annotations

import html
import threading
import time
from typing import Any

import numpy as np

from ..analysis.embeddings.align import (
    aligned_previews,
    effective_rank,
    follow_layout,
    in_box,
    layout_trust,
    normalised,
    procrustes_onto,
    spread,
)
from ..analysis.embeddings.findings import feature_geometry, geometry_findings
from ..analysis.embeddings.frames import (
    Timeline,
    check_later,
    collapse_finding,
    frame_name,
    frame_predictions,
    read_frames,
)
from ..analysis.embeddings.project import choose_method, pca_layout, per_point
from ..analysis.grouping import group_findings
from ..errors import VizdebugError
from ..findings import Findings, findings_html
from ._base import View
from ._display import shown_where_called
from ._embedding_curve import curve_figure, curve_frame, curve_html
from .embeddings import FIRST_PICTURE_GRACE, NAMES, EmbeddingView
from .embeddings_data import (
    check_images,
    class_codes,
    f32,
    i32,
    legend_html,
    no_predictions,
    picture_note,
    point_colours,
    scatter_png,
    selected_grid,
    take,
    thumbnails,
)
from .embeddings_widgets import timeline_widget


class EmbeddingTimelineView(View):
    """A layer's representation at several points of training, aligned frame to frame.

    Build it with :func:`show_embedding_frames`. ``layouts`` holds one ``n x 2`` float32
    array per frame (in [-1, 1], one scale for all), ``curve`` the per-frame figures.
    """

    title = "vizdebug embedding timeline"
    _show = EmbeddingView._show
    _refresh_static = EmbeddingView._refresh_static
    # the same background-view mechanics: wait for the work, its state, the selection,
    # the stage pushed to the widget
    wait = EmbeddingView.wait
    done = EmbeddingView.done
    selected = EmbeddingView.selected
    _set_stage = EmbeddingView._set_stage
    _push = EmbeddingView._push

    def __init__(self, timeline: Timeline, *, labels: np.ndarray | None = None,
                 predictions: np.ndarray | None = None, images: Any = None, method: str = "pca",
                 params: dict[str, Any] | None = None) -> None:
        self.timeline = timeline
        self.labels = labels
        self.images = images
        self.method = method
        self.params = dict(params or {})
        self.predictions = predictions  # (frames, points) or None
        self.classes = class_codes(labels, None if predictions is None else predictions.ravel())
        self._shown = aligned_previews(timeline.values)  # normalised, one per frame
        self._raw: list[np.ndarray] = []  # refined layouts in the library's scale
        self.layouts = in_box(self._shown)
        self._version = self._sent = 0  # of the layouts: made, and sent to the browser
        self.layout_name = "PCA preview" if method != "pca" else "PCA"
        self.curve: dict[str, list[float | None]] = {"knn": [], "trust": [], "rank": [],
                                                     "spread": []}
        self.notes = list(timeline.notes)
        self.thumbs: list[str] = []
        self.stage, self.error = "starting", ""
        self._findings = Findings()
        self._suspects: list[int] = []
        self._analysed, self._done = threading.Event(), threading.Event()
        self._running = True
        self._sync, self._lock = threading.Lock(), threading.Lock()
        self._display: Any = None
        self._fallback_id = ""
        self._selected: list[int] = []
        self._drawn = threading.Event()  # set once a first picture has been asked for
        self._since = time.perf_counter()  # the call (or append) being placed
        self.timings: dict[str, float] = {}  # seconds: layouts (from the last call/append)

    def start(self) -> EmbeddingTimelineView:
        """Start the background thread (figures per frame, findings, refined layouts)."""
        threading.Thread(target=self._work, name="vizdebug-embedding-frames",
                         daemon=True).start()
        return self

    @property
    def findings(self) -> Findings:
        """``representation-collapse`` over the frames; ``label-noise-suspects`` and
        ``class-overlap`` on the last frame (waits for the figures)."""
        self._drawn.set()
        self._analysed.wait()
        return self._findings

    @property
    def steps(self) -> list[int]:
        """The optimizer step of each frame, in order."""
        return list(self.timeline.steps)

    def show_selected(self, n: int | None = None) -> Any:
        """The selected probe samples' images (with labels) as a :func:`show_batch` grid."""
        if self.images is None or not self._selected:
            raise VizdebugError("nothing to show: " + (
                "pass images= to show_embedding_frames" if self.images is None
                else "select points first (shift-drag a box, or the lasso)"))
        where = np.searchsorted(self.timeline.rows, self._selected)
        return selected_grid(self.images, where, self.classes, n)

    def append(self, frames: Any) -> EmbeddingTimelineView:
        """Add later frames of the same layer and probe (another epoch): each drawn at once
        (its PCA turned onto the last picture), refined in the background from the last
        refined layout; the slider grows. The new frames have no predictions."""
        more = read_frames(frames)
        t = self.timeline
        check_later(t, more)
        keep = np.searchsorted(more.rows, t.rows)
        with self._lock:
            for step, epoch, x in zip(more.steps, more.epochs, more.values):
                t.steps.append(step)
                t.epochs.append(epoch)
                t.values.append(x[keep])
                self._shown.append(procrustes_onto(pca_layout(x[keep]), self._shown[-1]))
            self.layouts, self._since = in_box(self._shown), time.perf_counter()
            self._version += 1
            self.classes = no_predictions(self.classes, len(more.values) * len(t.rows))
            idle, self._running = not self._running, True
            self._done.clear()
        self._push()
        return self.start() if idle else self

    def _work(self) -> None:
        try:
            self._drawn.wait(FIRST_PICTURE_GRACE)  # the previews first: no GIL taken from them
            self._thumbnails()
            while self._round():
                pass
        except Exception as exc:  # shown in the view; the previews stay
            self.error = f"{self.stage or 'refinement'} failed: {type(exc).__name__}: {exc}"
            with self._lock:
                self._running = False
        finally:
            self._analysed.set()
            self.stage = ""
            self._push()
            self._refresh_static()
            if not self._running:
                self._done.set()

    def _round(self) -> bool:
        """Measure, refine and rate the frames not yet done; False once none are left."""
        n = len(self.timeline.values)
        self._measure(len(self.curve["knn"]), n)
        if self.method != "pca":
            self._refine(len(self._raw), n)
        self.timings["layouts"] = round(time.perf_counter() - self._since, 4)
        self._trust(len(self.curve["trust"]), n)
        with self._lock:
            more = len(self.timeline.values) > n
            self._running = more
            return more

    def _thumbnails(self) -> None:
        if self.images is None or self.thumbs:
            return
        self._set_stage("making thumbnails")
        try:
            self.thumbs, why = thumbnails(self.images, len(self.timeline.rows))
        except Exception as exc:  # the picture matters more than its thumbnails
            why = f"no thumbnails: {exc}"
        self.notes += [why] if why else []

    def _measure(self, first: int, n: int) -> None:
        values, geo = self.timeline.values, None
        for i in range(first, n):
            self._set_stage(f"measuring frame {i + 1} of {n}")
            geo = feature_geometry(values[i], self.labels)
            self.curve["knn"].append(geo.knn_features)
            self.curve["rank"].append(effective_rank(values[i]))
            self.curve["spread"].append(spread(values[i]))
        if geo is not None:
            self._find(geo)

    def _find(self, geo: Any) -> None:
        found = list(geometry_findings(geo, self.timeline.rows))
        if not geo.collapsed:
            collapse = collapse_finding(self.timeline, self.curve["rank"], self.curve["spread"],
                                        len(self.classes.names), self.curve["knn"][-1])
            found += [collapse] if collapse else []
        self._findings = Findings(group_findings(found))  # the collapse's overlaps under it
        if geo.suspects is not None:
            self._suspects = geo.sample[geo.suspects.positions].tolist()
        self._analysed.set()
        self._push()

    def _refine(self, first: int, n: int) -> None:
        name = NAMES[self.method]
        for i in range(first, n):
            self._set_stage(f"fitting {name} of frame {i + 1} of {n}"
                            + (" (from the previous frame)" if i else ""))
            previous = self._raw[-1] if self._raw else None
            self._raw.append(follow_layout(self.timeline.values[i], previous, self.method,
                                           self.params, stage=lambda _msg: None))
        with self._lock:
            self._shown[:n] = [normalised(v) for v in self._raw[:n]]
            if len(self._shown) > n:  # frames appended meanwhile: turned onto the new ones
                self._shown[n] = procrustes_onto(self._shown[n], self._shown[n - 1])
            self.layouts, self.layout_name = in_box(self._shown), name
            self._version += 1
        self._push()

    def _trust(self, first: int, n: int) -> None:
        """Trustworthiness of each frame's picture, after the pictures are in place."""
        if len(self.timeline.rows) < 5:
            return
        self._set_stage("measuring the pictures")
        self.curve["trust"] += [layout_trust(self.timeline.values[i], self.layouts[i])
                                for i in range(first, n)]

    def _send(self, w: Any) -> None:
        with w.hold_sync():
            if self._sent != self._version:  # frames appended or layouts refined
                t = self.timeline
                w.steps, w.epochs = list(t.steps), [-1 if e is None else int(e) for e in t.epochs]
                w.xs, w.ys = self._coordinates()
                w.predictions = i32(self.classes.predictions)
                self._sent = self._version
            w.layout_name = self.layout_name
            w.stage, w.error, w.busy = self.stage, self.error, self._running
            w.info_html = self._info_html()
            w.curve = self._curve_lists()
            if len(w.thumbs) != len(self.thumbs):
                w.thumbs = list(self.thumbs)
            w.suspects = list(self._suspects)

    def _coordinates(self) -> tuple[bytes, bytes]:
        stacked = np.concatenate(self.layouts)  # never empty: a timeline has a frame
        return f32(stacked[:, 0]), f32(stacked[:, 1])

    def _curve_lists(self) -> dict[str, list[float | None]]:
        return {name: [None if v is None or v != v else round(float(v), 4) for v in values]
                for name, values in (("kNN accuracy", self.curve["knn"]),
                                     ("trustworthiness", self.curve["trust"]))}

    def _build_widget(self) -> Any:
        with self._sync:  # the worker's pushes wait until the widget is in place
            self._widget = self._new_widget()
            return self._widget

    def _new_widget(self) -> Any:
        self._drawn.set()
        t, c = self.timeline, self.classes
        xs, ys = self._coordinates()
        self._sent = self._version
        widget = timeline_widget()(
            xs=xs, ys=ys, n_points=len(t.rows), steps=list(t.steps),
            epochs=[-1 if e is None else int(e) for e in t.epochs], layer=t.layer,
            frame=len(t.steps) - 1, rows=t.rows.astype("<i4").tobytes(),
            class_names=c.names, labels=i32(c.labels), predictions=i32(c.predictions),
            thumbs=list(self.thumbs),
            layout_name=self.layout_name, stage=self.stage, error=self.error,
            busy=self._running, info_html=self._info_html(), curve=self._curve_lists(),
            color_by="label" if c.labels is not None else (
                "prediction" if c.predictions is not None else "none"),
            suspects=list(self._suspects))
        widget.observe(self._on_selection, names="selected")
        return widget

    def _on_selection(self, change: dict) -> None:
        rows = self.timeline.rows
        self._selected = rows[[p for p in change["new"] if 0 <= p < len(rows)]].tolist()

    def _info_html(self, layout_name: str | None = None) -> str:
        """The side panel; ``layout_name``: the name of the pictures it stands beside."""
        t = self.timeline
        name = self.layout_name if layout_name is None else layout_name
        head = (f"<b>layer {html.escape(t.layer)}</b> &middot; {len(t.rows):,} probe points "
                f"&middot; {len(t.steps)} frames &middot; layout: {html.escape(name)}")
        notes = "".join(f'<div class="vd-note">{html.escape(n)}</div>' for n in self.notes)
        error = (f'<div class="vd-note" style="color:#c62828">{html.escape(self.error)}</div>'
                 if self.error else "")
        found = (findings_html(self._findings, empty="No problems found in the geometry.")
                 if self._analysed.is_set() else '<div class="vd-note">findings: working…</div>')
        return f'<div class="vd-emb-info">{head}{notes}{error}{found}</div>'

    def _static_html(self) -> str:
        self._drawn.set()
        with self._lock:  # the worker swaps the layouts, their name and its state together
            layouts, name, running = self.layouts, self.layout_name, self._running
        t, last = self.timeline, len(layouts) - 1
        colours = point_colours(self.classes, None, len(t.rows))
        picture = scatter_png(layouts[last], colours)
        status = picture_note(NAMES.get(self.method, self.method), name, running)
        return (f'<div class="vd-emb-static" style="display:flex;gap:16px;flex-wrap:wrap">'
                f'<div><div class="vd-note">last frame: '
                f"{html.escape(frame_name(t.steps[last], t.epochs[last]))}</div>"
                f'<img src="{picture}" width="420" height="420" alt="embedding, last frame" '
                f'style="border:1px solid #ddd">{legend_html(self.classes)}{status}</div>'
                f'<div style="max-width:520px">{curve_html(self._curve_lists(), t.steps, last)}'
                f"{self._info_html(name)}</div></div>")

    def to_frame(self) -> Any:
        """The quality curve's numbers per frame: ``step``, ``epoch``, ``knn``, ``trust``, ..."""
        return curve_frame(self.timeline, self.curve)

    def figure(self) -> Any:
        """The quality curve (kNN accuracy, trustworthiness) as a plotly Figure; needs plotly."""
        return curve_figure(self._curve_lists(), self.steps, len(self.steps) - 1)

    def __repr__(self) -> str:
        state = "done" if self.done else f"working: {self.stage}"
        return (f"EmbeddingTimelineView(layer {self.timeline.layer!r}, {len(self.layouts)} "
                f"frames x {len(self.timeline.rows)} points, {self.layout_name}, {state}, "
                f"findings: {', '.join(self._findings.codes) or 'none'})")


def show_embedding_frames(frames: Any, *, labels: Any = None, images: Any = None,
                          predictions: Any = None, method: str = "auto",
                          **params: Any) -> EmbeddingTimelineView:
    """Show one layer's :class:`~vizdebug.records.EmbeddingFrame` list as points that move
    from frame to frame, with an epoch slider, a separability curve and findings.

    Parameters
    ----------
    frames
        ``EmbeddingFrame`` s of one layer on one probe set (any order: shown by step).
    labels
        One class per probe sample (colours, the kNN curve, label-noise suspects).
    images
        The probe inputs (``N x H x W`` or ``N x C x H x W``), shown as thumbnails on hover.
    predictions
        One class (or ``n x c`` scores) per probe sample for every frame, or a list of
        those, one per frame given: colour by prediction or correct / wrong, and hover.
    method
        ``"auto"`` (t-SNE up to 5,000 points, UMAP above), ``"pca"``, ``"tsne"``, ``"umap"``.
    **params
        Passed to ``sklearn.manifold.TSNE`` or ``umap.UMAP``.

    Examples
    --------
    >>> from vizdebug.records import EmbeddingFrame
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(60, 8)).astype(np.float32)
    >>> frames = [EmbeddingFrame("fc", s, s, x * (1 + s)) for s in range(3)]
    >>> view = show_embedding_frames(frames, labels=np.arange(60) % 3, method="pca").wait()
    >>> len(view.layouts), view.layouts[0].shape, len(view.curve["knn"])
    (3, (60, 2), 3)
    """
    timeline = read_frames(frames)
    n = timeline.n_probe
    given = per_point(labels, n, "labels")
    given_count = len(frames) if isinstance(frames, (list, tuple)) else 1
    predicted = frame_predictions(predictions, timeline, given_count)
    check_images(images, n)
    chosen = choose_method(method, len(timeline.rows))
    kept = timeline.rows
    view = EmbeddingTimelineView(
        timeline, labels=None if given is None else given[kept], predictions=predicted,
        images=take(images, kept, n), method=chosen, params=params)
    return shown_where_called(view.start())
