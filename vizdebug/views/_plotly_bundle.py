"""plotly.js for the live dashboards: sent to the page once per kernel, kept out of saved
notebooks.

The bundle widget carries plotly.js to the browser in its state, once per kernel, gzipped
(1.5 MB instead of 4.8; the page unpacks it with ``DecompressionStream``).
Left there, every saved or executed notebook with a dashboard would hold that state
(nbclient and JupyterLab save widget state): 5 MB per notebook. So, once the page has
had time to load it (``RELEASE_AFTER`` seconds, checked when a cell ends), the kernel
empties the trait; a page that loaded plotly.js keeps its copy, and a page that comes
later (a reload) asks for it again with a message (``{"want": "source"}``), answered
when the kernel is idle.
"""

from __future__ import annotations

import gzip
import time
import weakref
from functools import cache
from typing import Any

from .._env import in_kernel

RELEASE_AFTER = 15.0


@cache
def _source() -> bytes:
    from plotly.offline import get_plotlyjs

    return gzip.compress(get_plotlyjs().encode("utf-8"), 6)


def keep_light(bundle: Any) -> Any:
    """Set the bundle's source now and arrange its release; returns ``bundle``."""
    bundle.source = _source()
    bundle._vd_sent_at = time.monotonic()
    bundle.on_msg(_on_msg)
    if in_kernel():
        from IPython import get_ipython

        shell = get_ipython()
        ref = weakref.ref(bundle)

        def release(*_: Any) -> None:
            widget = ref()
            if widget is None or getattr(widget, "comm", None) is None:
                shell.events.unregister("post_run_cell", release)
                return
            release_if_due(widget)

        shell.events.register("post_run_cell", release)
    return bundle


def release_if_due(bundle: Any, now: float | None = None) -> bool:
    """Empty the bundle's source if it was sent ``RELEASE_AFTER`` seconds ago or more."""
    now = time.monotonic() if now is None else now
    if bundle.source and now - bundle._vd_sent_at >= RELEASE_AFTER:
        bundle.source = b""
        return True
    return False


def _on_msg(bundle: Any, content: Any, buffers: Any) -> None:
    """A page without plotly.js asks for it: send it again (and release it again later)."""
    if isinstance(content, dict) and content.get("want") == "source" and not bundle.source:
        bundle._vd_sent_at = time.monotonic()
        bundle.source = _source()
