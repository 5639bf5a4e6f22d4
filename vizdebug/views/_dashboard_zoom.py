"""The kernel's answer to the dashboard's zoom: the learning curves of a step range at the
resolution of the chart's width.

The protocol (the front end, ``static/dashboard_widget.js``, sends and draws it):

- the page sends ``{"kind": "zoom", "panel": "curves", "lo": <step>, "hi": <step>,
  "points": <pixels wide>}``, or ``{"kind": "zoom", "panel": "curves", "reset": true}``
  for the whole run;
- the kernel answers ``{"kind": "zoomed", "panel", "lo", "hi", "series": [{"name",
  "label", "x", "y", "ymin", "ymax", "exact"}]}``: per metric either its real points
  (``exact`` true, ``ymin``/``ymax`` null) or one point per bucket of steps (its mean,
  with the bucket's lowest and highest value as the band ``ymin``..``ymax``), at most
  about ``points`` of them. ``label`` is the name as the panel's traces carry it
  (escaped). A request it cannot answer gets the same reply with ``"series": []`` and an
  ``"error"`` in words.

Where the points come from: a stored run (``vd.open_run``) and a session with a
``store=`` read the run file's min/max envelope (:mod:`vizdebug.store.envelope`), so the
answer reads about ``2 * points`` rows however long the run, and zooming into step
900,000 of a million shows the real points there (a session's file is at most one write,
about half a second, behind it). A session without a store answers from what it holds in
memory (at most 20,000 points per metric, extremes kept).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..records import TrainingSource
from ..store.envelope import Window, points_window
from ..store.windows import check_query
from ._dashboard_curves import label
from .chart_spec import clean

ZOOM_PANELS = ("curves",)
DEFAULT_POINTS = 1000
MIN_POINTS, MAX_POINTS = 16, 8000  # a chart's width in pixels, within reason
HIDDEN = ("epoch",)  # not a curve of the panel

__all__ = ["ZOOM_PANELS", "answer_zoom"]


class ZoomRefused(ValueError):
    """A zoom message the kernel cannot answer (its words go back to the page)."""


def _points(value: Any) -> int:
    if value is None:
        return DEFAULT_POINTS
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ZoomRefused(f"points must be a number of pixels, got {str(value)[:40]!r}")
    return int(min(MAX_POINTS, max(MIN_POINTS, value)))


def _step(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ZoomRefused(f"{what} must be a step number, got {str(value)[:40]!r}")
    return int(max(-(2 ** 62), min(2 ** 62, math.floor(value) if what == "lo" else math.ceil(value))))


def _range(message: dict[str, Any]) -> tuple[int | None, int | None]:
    if message.get("reset") is True:
        return None, None
    lo, hi = _step(message.get("lo"), "lo"), _step(message.get("hi"), "hi")
    if hi < lo:
        raise ZoomRefused(f"hi ({hi}) is before lo ({lo})")
    return lo, hi


def _file_run(source: Any) -> Any:
    """The stored run to read: the source itself (``open_run``), or the file a session
    writes (``store=``); None: read what the source holds in memory."""
    if callable(getattr(source, "windows", None)):
        return source
    path = getattr(getattr(source, "store", None), "path", None)
    if path is None:
        return None
    from ..store.run import Run

    return Run(path)


def _memory_windows(source: TrainingSource, lo: int | None, hi: int | None,
                    points: int) -> dict[str, Window]:
    out = {}
    for name, (steps, values) in source.records(flush=False).scalars.items():
        steps = np.asarray(steps, dtype=np.int64)
        if steps.size == 0:
            continue
        first = int(steps.min()) if lo is None else lo
        last = int(steps.max()) if hi is None else hi
        out[name] = points_window(name, steps, values, np.zeros(steps.size), first, last, points)
    return out


def _windows(source: Any, lo: int | None, hi: int | None, points: int) -> dict[str, Window]:
    run = _file_run(source)
    if run is None:
        return _memory_windows(source, lo, hi, points)
    return run.windows(check_query(None, lo, hi, points))


def _series(window: Window) -> dict[str, Any]:
    bands = window.ymin is not None and window.ymax is not None
    return {"name": window.name, "label": label(window.name),
            "x": [int(x) for x in window.x], "y": clean(window.y),
            "ymin": clean(window.ymin) if bands else None,
            "ymax": clean(window.ymax) if bands else None, "exact": window.exact}


def answer_zoom(source: Any, message: Any) -> dict[str, Any]:
    """The reply to one zoom message from the dashboard's page (never raises: a request
    it cannot answer gets ``"series": []`` and an ``"error"``).

    Examples
    --------
    >>> answer_zoom(run, {"kind": "zoom", "panel": "curves", "lo": 900_000,
    ...                   "hi": 900_400, "points": 800})["series"][0]["exact"]  # doctest: +SKIP
    True
    """
    panel = message.get("panel") if isinstance(message, dict) else None
    reply: dict[str, Any] = {"kind": "zoomed", "panel": panel if isinstance(panel, str) else None,
                             "lo": None, "hi": None, "series": []}
    try:
        if not isinstance(message, dict) or message.get("kind") != "zoom":
            raise ZoomRefused("not a zoom message")
        if panel not in ZOOM_PANELS:
            raise ZoomRefused(f"the panel {str(panel)[:40]!r} has no zoom from the kernel "
                              f"(zoomable: {', '.join(ZOOM_PANELS)})")
        lo, hi = _range(message)
        windows = _windows(source, lo, hi, _points(message.get("points")))
        shown = [w for name, w in windows.items() if name not in HIDDEN]
        reply["series"] = [_series(w) for w in shown]
        reply["lo"] = lo if lo is not None else min((w.lo for w in shown), default=None)
        reply["hi"] = hi if hi is not None else max((w.hi for w in shown), default=None)
    except Exception as exc:  # an answer in words; the kernel and the dashboard go on
        reply["error"] = f"{type(exc).__name__}: {exc}"[:400]
    return reply

