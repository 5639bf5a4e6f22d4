"""``show_batch``: a batch as the model receives it, as a grid (or a table), flagged.

The kernel renders each page once (HTML with escaped captions); the browser pages through
what was captured, so paging works while the kernel is busy. Asking for a page that was
not captured yet sends one message to the kernel, which reads the next batch and sends
that page alone (a custom message: the widget's state holds only the pages it was built
with, so a Next never resends the pages read so far).
"""

from __future__ import annotations

import threading
import uuid
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from ..data.sources import PageSource, page_source
from ..findings import Findings
from ._base import View, live_esm
from ._display import shown_where_called
from .batch_page import Page, check_classes, render_page

_STATIC = Path(__file__).with_name("static")


@cache
def _asset(name: str) -> str:
    return (_STATIC / name).read_text(encoding="utf-8")


class BatchView(View):
    """Pages of a batch source, rendered as image grids or tables with their findings.

    Build it with :func:`show_batch` or :meth:`from_source`.

    Examples
    --------
    >>> import numpy as np
    >>> view = BatchView.from_source(np.random.rand(8, 3, 16, 16))
    >>> len(view.pages), view.findings.codes
    (1, [])
    """

    note = ""  # shown on every page (a subclass's word on what the pages hold)

    title = "vizdebug batch"

    def __init__(self, source: PageSource, *, classes=None, mean=None, std=None) -> None:
        self.source = source
        self.classes = classes
        self.mean = mean
        self.std = std
        self.pages: list[Page] = []
        self.page = 0
        self._lock = threading.Lock()
        self._sent = 0  # pages the widget has (in its state or sent since)

    @classmethod
    def from_source(cls, source: Any, n: int | None = None, *, classes=None, mean=None,
                    std=None, layout: str = "auto") -> BatchView:
        """Read the first page of ``source`` and build the view."""
        view = cls(page_source(source, n, layout), classes=check_classes(classes), mean=mean,
                   std=std)
        if view._read_page() is None:
            from ..errors import VizdebugError

            raise VizdebugError(f"the {view.source.description} yielded no batch: it is empty")
        return view

    def _read_page(self) -> Page | None:
        with self._lock:
            batch = self.source.next_page()
            if batch is None:
                return None
            page = render_page(batch, len(self.pages), classes=self.classes, mean=self.mean,
                               std=self.std, note=self.note)
            self.pages.append(page)
            return page

    @property
    def findings(self) -> Findings:
        """Findings of the page on show."""
        return self.pages[self.page].findings

    @property
    def more(self) -> bool:
        return not self.source.exhausted

    def next(self) -> BatchView:
        """Show the next page, reading a new batch from the source when needed."""
        at_end = self.page + 1 >= len(self.pages)
        if not (at_end and (not self.more or self._read_page() is None)):
            self.page += 1
        self._sync_widget()
        return self

    def previous(self) -> BatchView:
        """Show the previous page."""
        self.page = max(0, self.page - 1)
        self._sync_widget()
        return self

    def _sync_widget(self) -> None:
        w = self._widget
        if w is not None:
            self._send_new_pages()
            with w.hold_sync():
                w.count = len(self.pages)
                w.more = self.more
                w.page = self.page

    def _send_new_pages(self) -> None:
        """Send the widget the pages read since it last had them, once (before the state
        that counts them, so the browser holds a page when it is told it exists)."""
        if self._sent < len(self.pages):
            self._send_pages(self._sent)
            self._sent = len(self.pages)

    def _send_pages(self, start: int) -> None:
        self.widget.send({"type": "pages", "start": start,
                          "html": [p.html for p in self.pages[start:]]})

    def _build_widget(self) -> Any:
        widget = _widget_class()(pages=[p.html for p in self.pages], count=len(self.pages),
                                 page=self.page, more=self.more)
        self._sent = len(self.pages)
        widget.on_msg(lambda _w, content, _buffers: self._on_message(content))
        widget.observe(lambda change: setattr(self, "page", change["new"]), names="page")
        return widget

    def _on_message(self, content: dict) -> None:
        """The browser's Next at the last page: read another batch. A request with a
        ``seq`` (the widget's own) only appends the page and answers ``seq``: the browser
        moves to it unless the user paged elsewhere meanwhile (a Previous right after the
        Next must not be overridden by the page arriving later)."""
        if isinstance(content, dict) and content.get("type") == "resend":
            start = content.get("start")  # a browser whose store lacks pages (a reload)
            if isinstance(start, int) and not isinstance(start, bool) and 0 <= start < len(self.pages):
                self._send_pages(start)
            return
        if not isinstance(content, dict) or content.get("type") != "more":
            return
        seq = content.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            seq = None
        w = self.widget
        try:
            if seq is None:
                self.page = len(self.pages) - 1
                self.next()
            elif self.more:
                self._read_page()
            w.status = ""
        except Exception as exc:  # shown in the widget; the kernel keeps running
            w.status = f" could not read the next batch: {exc}"[:300]
            w.more = False
        if seq is not None:
            self._send_new_pages()
            with w.hold_sync():
                w.count = len(self.pages)
                w.more = w.more and self.more
                w.answered = seq

    def _static_html(self) -> str:
        uid = f"vdb{uuid.uuid4().hex[:12]}"  # one per copy on a page: its paging finds it
        pages = "".join(
            f'<div class="vd-static-page" data-n="{i}" style="display:{"block" if i == self.page else "none"}">'
            f"{p.html}</div>" for i, p in enumerate(self.pages)
        )
        nav = ""
        if len(self.pages) > 1:
            nav = (f'<div class="vd-nav"><button onclick="vdPage_{uid}(-1)">&#9664; Previous</button>'
                   f'<span id="{uid}-label"> batch {self.page + 1} of {len(self.pages)} </span>'
                   f'<button onclick="vdPage_{uid}(1)">Next &#9654;</button></div>'
                   f"<script>function vdPage_{uid}(d){{var r=document.getElementById('{uid}');"
                   "var ps=r.querySelectorAll('.vd-static-page');var i=0;"
                   "ps.forEach(function(p,k){if(p.style.display!=='none')i=k;});"
                   "var j=Math.min(ps.length-1,Math.max(0,i+d));"
                   "ps.forEach(function(p,k){p.style.display=k===j?'block':'none';});"
                   f"document.getElementById('{uid}-label').textContent=' batch '+(j+1)+' of '+ps.length+' ';}}"
                   "</script>")
        return (f'<div id="{uid}" class="vd-batch-static"><style>{_asset("batch.css")}</style>'
                f"{nav}{pages}</div>")

    def __repr__(self) -> str:
        page = self.pages[self.page]
        return (f"BatchView(page {self.page + 1} of {len(self.pages)}{'+' if self.more else ''}, "
                f"{page.n_items} items, findings: {', '.join(page.findings.codes) or 'none'})")


@lru_cache(maxsize=1)
def _widget_class() -> type:
    import anywidget
    import traitlets

    class BatchWidget(anywidget.AnyWidget):
        _esm = live_esm(_asset("batch_widget.js"))
        _css = _asset("batch.css")
        pages = traitlets.List(traitlets.Unicode()).tag(sync=True)  # those it was built with
        count = traitlets.Int(0).tag(sync=True)  # pages the kernel holds (later ones: messages)
        page = traitlets.Int(0).tag(sync=True)
        more = traitlets.Bool(False).tag(sync=True)
        status = traitlets.Unicode("").tag(sync=True)
        fallback_id = traitlets.Unicode("").tag(sync=True)
        answered = traitlets.Int(-1).tag(sync=True)  # the last "more" request served

    return BatchWidget


def show_batch(source: Any, n: int | None = None, *, classes=None, mean=None, std=None,
               layout: str = "auto") -> BatchView:
    """Show a batch as the model receives it: a grid of images (or a table), flagged.

    Parameters
    ----------
    source
        A DataLoader, a map-style Dataset, any iterable of batches, a tensor or ndarray,
        an ``(x, y, ...)`` tuple, a dict batch (``image``/``pixel_values``/``x`` with
        ``label``/``target``/``y``), a list of PIL images or arrays, a 2-D float array or
        a DataFrame (shown as a table).
    n
        Images per page (1 to 256); default: the batch size, at most 64.
    classes
        Class names: a list indexed by label, or a dict from label to name.
    mean, std
        The values your ``Normalize`` used, to show true colours; inferred otherwise.
    layout
        ``"auto"`` or one of NCHW, NHWC, NHW, CHW, HWC, HW, ``"table"``.

    Examples
    --------
    >>> import numpy as np
    >>> view = show_batch(np.random.rand(16, 3, 32, 32), classes=["cat", "dog"])
    >>> view.findings.codes
    []
    """
    return shown_where_called(BatchView.from_source(source, n, classes=classes, mean=mean,
                                                    std=std, layout=layout))
