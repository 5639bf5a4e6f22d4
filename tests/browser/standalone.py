"""Views rendered by the standalone Jupyter widgets HTML manager, without JupyterLab.

``@jupyter-widgets/html-manager`` (from npm) is the manager of pages that embed widget
state: nbconvert's HTML with saved widgets, ``ipywidgets.embed``, and the path that
front ends rendering outputs outside JupyterLab take (VS Code's webview, Colab's one frame
per output). Here each view's outputs, as the kernel would display them (static twin, then
widget), are written into small pages served from 127.0.0.1, in the combinations those front
ends make: one output per page, both in one page, a widget whose state is gone.

The manager is installed once by ``scripts/test.sh`` into a cache folder
(:data:`HTML_MANAGER`); anywidget's own AMD module (shipped in its Python package) is
served beside it, so no CDN is needed: the tests refuse every request that leaves
127.0.0.1 and check that none was tried.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

VERSION = "1.0.15"  # html-manager for ipywidgets 8
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
HTML_MANAGER = Path(os.environ.get("VIZDEBUG_HTML_MANAGER")
                    or _CACHE / "vizdebug-tests" / f"html-manager-{VERSION}")
EMBED = HTML_MANAGER / "node_modules/@jupyter-widgets/html-manager/dist/embed-amd.js"
REQUIRE = HTML_MANAGER / "node_modules/requirejs/require.js"

HEAD = ("<meta charset='utf-8'><script src='lib/require.js'></script>"
        # anywidget's models from its own package, never from a CDN
        "<script>requirejs.config({paths: {anywidget: 'lib/anywidget/index'}});</script>"
        "<script src='lib/embed-amd.js'></script>")


def available() -> bool:
    return EMBED.exists() and REQUIRE.exists()


class _DisplayHandle:
    def update(self, *args: Any, **kwargs: Any) -> None:
        pass


def outputs(view: Any, monkeypatch: Any) -> tuple[dict, Any]:
    """What the kernel displays for ``view`` in a widget front end: (twin bundle, widget)."""
    import IPython.display

    from vizdebug._env import set_renderer

    shown: list = []

    def display(obj: Any, raw: bool = False, display_id: Any = None, **_: Any) -> Any:
        shown.append(obj)
        return _DisplayHandle()

    monkeypatch.setattr(IPython.display, "display", display)
    set_renderer("widget")
    try:
        view._ipython_display_()
    finally:
        set_renderer(None)
    twin, widget = shown
    return twin, widget


def _script(kind: str, data: Any) -> str:
    text = json.dumps(data).replace("</", "<\\/")
    return f'<script type="application/vnd.jupyter.widget-{kind}+json">{text}</script>'


def pages(folder: Path, name: str, twin: dict, widget: Any) -> dict[str, str]:
    """Write the pages for one view; returns {case: file name}."""
    from ipywidgets.embed import embed_data

    data = embed_data(views=[widget], drop_defaults=False)  # _esm is a default: keep it
    state = _script("state", data["manager_state"])
    view = f"<div class='output'>{_script('view', data['view_specs'][0])}</div>"
    static = f"<div class='output'>{twin['text/html']}</div>"
    cases = {"widget": state + view, "twin": static, "both": static + state + view,
             "no-state": static + view}
    names = {}
    for case, body in cases.items():
        names[case] = f"{name}-{case}.html"
        (folder / names[case]).write_text(f"<!DOCTYPE html><html><head>{HEAD}</head>"
                                          f"<body>{body}</body></html>", encoding="utf-8")
    return names


def site(folder: Path) -> Path:
    """``folder`` with the manager, require.js and anywidget's AMD module under lib/."""
    import anywidget

    lib = folder / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    shutil.copy(EMBED, lib / "embed-amd.js")
    shutil.copy(REQUIRE, lib / "require.js")
    shutil.copytree(Path(anywidget.__file__).parent / "nbextension", lib / "anywidget",
                    dirs_exist_ok=True)
    return folder


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve(folder: Path):
    """Serve ``folder`` on 127.0.0.1 (a thread of this process); yields the base URL."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
