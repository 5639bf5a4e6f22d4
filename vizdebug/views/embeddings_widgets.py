"""The anywidget classes of the embedding views: the traits they sync and their browser
code (regl-scatterplot, vendored, then the view's own script)."""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

from ._base import live_esm

_STATIC = Path(__file__).with_name("static")
_VENDOR = "vendor/regl-scatterplot-1.16.0.js"
_POINTS = "embeddings_points.js"  # typed arrays, colours, the draw queue, the moving sample
#: the timeline's quality curve is drawn by the dashboard's uPlot chart: its files, in order
#: (not chart_view.js: the curve has no export bar), and uPlot's style
_CHARTS = ("chart_ticks.js", "chart_core.js", "chart_panel.js", "vendor/uPlot-1.6.32.iife.min.js",
           "chart_uplot.js", "chart_uplot_view.js")
_UPLOT_CSS = "vendor/uPlot-1.6.32.min.css"


@cache
def _asset(name: str) -> str:
    return (_STATIC / name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _base_widget() -> type:
    """The traits both embedding widgets sync: point attributes, status, selection."""
    import anywidget
    import traitlets

    class EmbeddingWidgetBase(anywidget.AnyWidget):
        _css = _asset("embeddings.css")
        rows = traitlets.Bytes(b"").tag(sync=True)
        labels = traitlets.Bytes(b"").tag(sync=True)
        predictions = traitlets.Bytes(b"").tag(sync=True)
        class_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
        thumbs = traitlets.List(traitlets.Unicode()).tag(sync=True)
        code_width = traitlets.Int(4).tag(sync=True)  # bytes per label/prediction code
        layout_name = traitlets.Unicode("").tag(sync=True)
        layout_how = traitlets.Unicode("").tag(sync=True)
        stage = traitlets.Unicode("").tag(sync=True)
        error = traitlets.Unicode("").tag(sync=True)
        busy = traitlets.Bool(False).tag(sync=True)
        info_html = traitlets.Unicode("").tag(sync=True)
        color_by = traitlets.Unicode("label").tag(sync=True)
        selected = traitlets.List(traitlets.Int()).tag(sync=True)
        suspects = traitlets.List(traitlets.Int()).tag(sync=True)
        fallback_id = traitlets.Unicode("").tag(sync=True)

    return EmbeddingWidgetBase


@lru_cache(maxsize=1)
def embedding_widget() -> type:
    """The anywidget class of :class:`~vizdebug.views.embeddings.EmbeddingView`."""
    import traitlets

    class EmbeddingWidget(_base_widget()):
        _esm = live_esm("\n".join([_asset(_VENDOR), _asset(_POINTS),
                                   _asset("embeddings_widget.js")]))
        x = traitlets.Bytes(b"").tag(sync=True)
        y = traitlets.Bytes(b"").tag(sync=True)
        losses = traitlets.Bytes(b"").tag(sync=True)
        total = traitlets.Int(0).tag(sync=True)  # points in the view; x may hold a sample first

    return EmbeddingWidget


@lru_cache(maxsize=1)
def timeline_widget() -> type:
    """The anywidget class of the embedding timeline (the slider's frames in ``xs``/``ys``)."""
    import traitlets

    widget_js = _asset("embeddings_widget.js").replace("export default { render };", "")

    class EmbeddingTimelineWidget(_base_widget()):
        _esm = live_esm("\n".join([_asset(_VENDOR), _asset(_POINTS), widget_js,
                                   *map(_asset, _CHARTS), _asset("embedding_timeline.js")]))
        _css = _asset("embeddings.css") + "\n" + _asset(_UPLOT_CSS)
        xs = traitlets.Bytes(b"").tag(sync=True)
        ys = traitlets.Bytes(b"").tag(sync=True)
        n_points = traitlets.Int(0).tag(sync=True)
        steps = traitlets.List(traitlets.Int()).tag(sync=True)
        epochs = traitlets.List(traitlets.Int()).tag(sync=True)
        layer = traitlets.Unicode("").tag(sync=True)
        frame = traitlets.Int(0).tag(sync=True)
        curve = traitlets.Dict().tag(sync=True)

    return EmbeddingTimelineWidget
