"""What every view shares: the mime bundle, the static twin, standalone HTML pages."""

from __future__ import annotations

import html
import json
import re
import time
import uuid
from functools import cache
from pathlib import Path
from typing import Any

from .._env import renderer

CSS = """
.vd-view{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:13px;color:#222}
.vd-view h3{font-size:15px;margin:4px 0 6px 0}
.vd-view table.vd-table{border-collapse:collapse;font-size:12px;margin:4px 0}
.vd-view table.vd-table th,.vd-view table.vd-table td{border-bottom:1px solid #e3e3e3;padding:2px 8px;text-align:right}
.vd-view table.vd-table th{background:#f5f5f5;font-weight:600}
.vd-view table.vd-table td:first-child,.vd-view table.vd-table th:first-child{text-align:left}
.vd-view .vd-note{color:#555;font-size:12px;margin:2px 0}
.vd-view .vd-empty{color:#666;font-style:italic;padding:12px;border:1px dashed #ccc;border-radius:4px}
"""

TWIN_INTERVAL = 10.0  # seconds between updates of a running view's static twin, at least
RERUN_NOTE = ("Live view not loaded: run this cell again to bring it back. "
              "The picture above shows the view as it was last drawn.")


def rerun_note_style(fallback_id: str) -> str:
    """The twin's rule that says what to do where its widget cannot be shown.

    A notebook reopened with a fresh kernel has no model for the widget, and JupyterLab and
    Notebook 7 write "Error displaying widget: model not found" into its output: a node
    with the ``jupyter-widgets`` class and text only (a rendered widget has elements; the
    "Loading widget..." placeholder lacks the class). That output follows the twin in the
    same output area, so the twin's own style can replace the words with :data:`RERUN_NOTE`.
    """
    widget = (f'.jp-OutputArea-child:has(.vd-static-fallback[data-vd-fallback="{fallback_id}"])'
              " + .jp-OutputArea-child > .jp-OutputArea-output.jupyter-widgets:not(:has(*))")
    return (f"<style>{widget}{{font-size:0;padding:2px 0}}{widget}::before{{"
            f'content:"{RERUN_NOTE}";font:italic 13px system-ui,sans-serif;color:#555}}</style>')


def script_json(data: Any) -> str:
    """JSON safe inside an HTML ``<script>``: no ``<``, ``>`` or ``&`` survives (so no
    ``</script>`` or ``<!--``), and NaN or infinity is refused, not written as invalid JSON."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def once_per_page(key: str, block: str) -> str:
    """``block`` (a style, a script) marked so that :func:`keep_first` leaves only its
    first copy on a page: the charts' library that each dashboard of a report carries."""
    if not re.fullmatch(r"[0-9a-z]{1,40}", key):
        raise ValueError(f"a block's key is 1-40 lowercase letters or digits, got {key!r}")
    return f"<!--vd-once:{key}-->{block}<!--/vd-once:{key}-->"


_ONCE = re.compile(r"<!--vd-once:([0-9a-z]+)-->.*?<!--/vd-once:\1-->", re.S)


def keep_first(page: str) -> str:
    """``page`` with each block of :func:`once_per_page` kept where it first appears and
    dropped where it repeats (user text cannot forge the markers: it is escaped)."""
    seen: set[str] = set()

    def first(match: re.Match) -> str:
        if match.group(1) in seen:
            return ""
        seen.add(match.group(1))
        return match.group(0)

    return _ONCE.sub(first, page)


def standalone_page(title: str, body: str) -> str:
    """A whole HTML document that works offline."""
    return keep_first(
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head>"
        f"<body class='vd-view' style='max-width:1200px;margin:16px auto'>{body}</body></html>"
    )


@cache
def _fallback_js() -> str:
    return (Path(__file__).with_name("static") / "fallback.js").read_text(encoding="utf-8")


def live_esm(view_js: str) -> str:
    """Wrap a view's anywidget ESM so its render first hides the view's static twin.

    ``view_js`` must end its module with ``export default {...}`` holding ``render``; the
    widget class needs a synced ``fallback_id = traitlets.Unicode("")`` trait.
    """
    if "export default" not in view_js:
        raise ValueError("a view's ESM must have an `export default { render }`")
    body = view_js.replace("export default", "const __vdView =", 1)
    # hide the twin once render() returned (and again once an async render resolved, in
    # case it replaced its element's content); a render that throws leaves it visible
    return (f"{_fallback_js()}\n{body}\nexport default {{ ...__vdView, render(ctx) {{ "
            "const out = __vdView.render(ctx); vdHideFallback(ctx.model, ctx.el); "
            "Promise.resolve(out).then(() => vdHideFallback(ctx.model, ctx.el), () => {}); "
            "return out; } };\n")


class View:
    """Base of every view: a live widget where a front end exists, static HTML elsewhere.

    Subclasses implement ``_static_html()`` (a self-contained fragment) and, when they
    have one, ``_build_widget()``. The static twin shown beside the widget is
    ``_twin_html()`` (by default the same fragment; lighter where the full one runs
    scripts: a picture, for pages that run none). It is a display with an id: :meth:`update_twin` redraws it with the
    view's latest state (at the end of the driving cell, at close, and at most every
    ``TWIN_INTERVAL`` seconds while it runs), so an executed notebook shows how it ended.
    """

    title = "vizdebug view"
    _widget: Any = None
    _twin: Any = None  # the display handle of the static twin
    _fallback_id = ""
    _twin_at = -1e9

    def _static_html(self) -> str:
        raise NotImplementedError

    def _twin_html(self) -> str:
        return self._static_html()

    def _build_widget(self) -> Any:
        return None

    def to_html(self) -> str:
        """A static HTML fragment (styles and scripts included)."""
        return f'<div class="vd-view"><style>{CSS}</style>{self._static_html()}</div>'

    def save(self, path: str | Path) -> Path:
        """Write a standalone HTML page that works offline; returns the path."""
        path = Path(path)
        path.write_text(
            standalone_page(self.title, self._static_html()),
            encoding="utf-8",
        )
        return path

    @property
    def widget(self) -> Any:
        """The live widget (built once)."""
        if self._widget is None:
            self._widget = self._build_widget()
        return self._widget

    def _static_bundle(self, fallback_id: str | None = None,
                       fragment: str | None = None) -> dict[str, Any]:
        """The twin's mime bundle: light HTML, no script needed."""
        fragment = self._twin_html() if fragment is None else fragment
        static = f'<div class="vd-view"><style>{CSS}</style>{fragment}</div>'
        if fallback_id:
            static = (f'<div class="vd-static-fallback" data-vd-fallback="{fallback_id}">'
                      f"{static}{rerun_note_style(fallback_id)}</div>")
        return {"text/plain": repr(self), "text/html": static}

    def _ipython_display_(self) -> None:
        """Show the view once per cell (see :mod:`vizdebug.views._display`): a view
        already shown where it was called is not shown again as the last expression."""
        from ._display import first_display_in_cell

        if first_display_in_cell(self):
            self._show()

    def _show(self) -> None:
        """Two outputs: static HTML, then the live widget, which hides the static one.

        nbconvert (with or without saved widget state), GitHub and a reopened notebook
        without a kernel show the static HTML; a live front end shows the widget only.
        """
        from IPython.display import display

        mode = renderer()
        widget = self.widget if mode == "widget" else None
        if widget is None or not widget.has_trait("fallback_id"):
            self._twin = display(self._repr_mimebundle_(), raw=True, display_id=True)
            return
        widget.fallback_id = self._fallback_id = uuid.uuid4().hex
        self._twin_at = time.monotonic()
        self._twin = display(self._static_bundle(self._fallback_id), raw=True, display_id=True)
        display(widget)

    def update_twin(self, force: bool = False, fragment: str | None = None) -> bool:
        """Redraw the static twin with the latest state: when ``force``d, else at most
        every ``TWIN_INTERVAL`` seconds. True if it did. Never raises (a closed front end
        leaves the live widget as it was)."""
        handle = self._twin
        if handle is None or (not force and time.monotonic() - self._twin_at < TWIN_INTERVAL):
            return False
        self._twin_at = time.monotonic()
        try:
            if self._fallback_id:
                bundle = self._static_bundle(self._fallback_id, fragment)
            else:
                bundle = self._repr_mimebundle_()
            handle.update(bundle, raw=True)
        except Exception:
            return False
        return True

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        mode = renderer()
        if mode == "text":
            return {"text/plain": repr(self)}
        bundle = self._static_bundle()
        if mode == "widget" and self.widget is not None:
            data = self.widget._repr_mimebundle_()
            if isinstance(data, tuple):
                data = data[0]
            bundle.update({k: v for k, v in data.items() if k != "text/plain"})
        return bundle
