"""Big embedding views reach the browser in two steps: a fixed sample first, every point after.

Software WebGL on two cores drew 1M points 2-5 s after they arrived, 100k in about one
second (most of it the fixed cost of a first draw). Past :data:`STREAM_AT` points the
widget's first state carries a fixed uniform random sample of :data:`FIRST_POINTS` of
them; once the browser has drawn it, it asks for the rest (a custom message) and every
point is sent, as binary traits like the first. A kernel busy with a later cell cannot
read that message, so the rest is sent after :data:`REST_WAIT` seconds anyway.

The browser draws points in *draw order*: the sample first, then the others. Everything
it sends back (a selection) and everything it is sent per point (coordinates, codes,
input rows, suspects) passes through :class:`DrawOrder`, so that Python keeps its own
positions (``view.layout[i]`` is the point of ``view.features.rows[i]``).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..analysis.embeddings.quality import sample_positions
from .embeddings_data import (
    code_bytes,
    code_width,
    default_colour,
    f32,
    rows_bytes,
    suspect_positions,
)
from .embeddings_widgets import embedding_widget

STREAM_AT = 200_000  # more points than this: the first state carries a sample of them
FIRST_POINTS = 100_000  # points in the first state of a big set
REST_WAIT = 10.0  # s after the widget was built: the rest is sent even if nobody asked


class DrawOrder:
    """The order in which the browser holds the ``n`` points of a view, and how many of
    them its state holds now (``sent``).

    Examples
    --------
    >>> o = DrawOrder(10, stream_at=5, first=3)
    >>> o.sent, o.total, len(o.take(np.arange(10)))
    (3, 10, 3)
    >>> o.positions(list(range(3))) == o.take(np.arange(10)).tolist()
    True
    >>> DrawOrder(4).take(np.arange(4)).tolist(), DrawOrder(4).streaming
    ([0, 1, 2, 3], False)
    """

    def __init__(self, n: int, stream_at: int | None = None, first: int | None = None) -> None:
        stream_at = STREAM_AT if stream_at is None else stream_at
        first = FIRST_POINTS if first is None else first
        self.total = n
        self.order: np.ndarray | None = None
        self.inverse: np.ndarray | None = None
        self.sent = n
        if n > stream_at and first < n:
            pick = sample_positions(n, first, seed=1)
            rest = np.ones(n, dtype=bool)
            rest[pick] = False
            self.order = np.concatenate([pick, np.flatnonzero(rest)])
            self.inverse = np.empty(n, dtype=np.int64)
            self.inverse[self.order] = np.arange(n)
            self.sent = len(pick)

    @property
    def streaming(self) -> bool:
        """True while the browser has only the first sample."""
        return self.sent < self.total

    def everything(self) -> None:
        """From now on the state holds every point."""
        self.sent = self.total

    def take(self, values: np.ndarray | None) -> np.ndarray | None:
        """The values (one per position) of the points the state holds, in draw order."""
        if values is None:
            return None
        if self.order is None:
            return values
        return values[self.order[: self.sent]]

    def positions(self, drawn: list[int]) -> list[int]:
        """Positions of the points at draw indices ``drawn`` (out-of-range ones dropped)."""
        keep = [i for i in drawn if 0 <= i < self.sent]
        if self.order is None:
            return keep
        return self.order[keep].tolist()

    def drawn(self, positions: list[int]) -> list[int]:
        """Draw indices of ``positions`` among the points the state holds."""
        if self.inverse is None:
            return list(positions)
        where = self.inverse[np.asarray(positions, dtype=np.int64)]
        return sorted(where[where < self.sent].tolist())

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The input row of each point held, in draw order."""
        return self.take(rows)


class StreamedWidget:
    """The widget side of :class:`~.embeddings.EmbeddingView`: its traits in draw order,
    the selection mapped back, and the rest of a big set sent once the sample is drawn.
    The view provides ``features``, ``classes``, ``losses``, ``thumbs``, ``_picture()``,
    ``_geometry``, ``_info_html()``, ``_drawn``, ``_sync`` and ``_selected``."""

    _order: DrawOrder
    _widget: Any

    def _send(self, w: Any) -> None:
        with w.hold_sync():
            state = self._live_state()
            if len(w.x) != 4 * self._order.sent:  # the rest of a big set: its codes too
                state.update(point_state(self, self._order))
            for name, value in state.items():
                setattr(w, name, value)
            if len(w.thumbs) != len(self.thumbs):
                w.thumbs = list(self.thumbs)

    def _live_state(self) -> dict[str, Any]:
        """The traits that change while the view works, read with the picture they describe."""
        layout, name, running = self._picture()
        take = self._order.take
        return {"x": f32(take(layout[:, 0])), "y": f32(take(layout[:, 1])), "layout_name": name,
                "layout_how": self.layout_how, "stage": self.stage, "error": self.error,
                "busy": running, "info_html": self._info_html(name),
                "suspects": self._order.drawn(suspect_positions(self._geometry))}

    def _new_widget(self) -> Any:
        self._drawn.set()
        c = self.classes
        widget = embedding_widget()(
            class_names=c.names, code_width=code_width(len(c.names)), thumbs=list(self.thumbs),
            color_by=default_colour(c, self.losses), **point_state(self, self._order),
            **self._live_state())
        widget.observe(self._on_selection, names="selected")
        if self._order.streaming:
            widget.on_msg(self._on_message)
            threading.Thread(target=self._send_rest, name="vizdebug-embeddings-rest",
                             daemon=True).start()
        return widget

    def _on_selection(self, change: dict) -> None:
        positions = sorted(self._order.positions(list(change["new"])))
        self._selected = self.features.rows[positions].tolist()

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("kind") == "rest":
            self._rest_wanted.set()

    def _send_rest(self) -> None:
        """Every point, once the browser has drawn the sample (or after REST_WAIT s)."""
        self._rest_wanted.wait(REST_WAIT)
        with self._sync:
            self._order.everything()
            if self._widget is not None:
                self._send(self._widget)
        self._rest_sent.set()


def point_state(view: Any, order: DrawOrder) -> dict[str, Any]:
    """The per-point traits that do not change with the layout, for the points held."""
    c = view.classes
    rows = order.rows(view.features.rows)
    return {"rows": rows_bytes(rows) if order.order is None else _i32(rows),
            "labels": code_bytes(order.take(c.labels), len(c.names)),
            "predictions": code_bytes(order.take(c.predictions), len(c.names)),
            "losses": f32(order.take(view.losses)), "total": order.total}


def _i32(values: np.ndarray) -> bytes:
    return np.asarray(values, dtype="<i4").tobytes()
