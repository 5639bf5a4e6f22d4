"""A real JupyterLab on 127.0.0.1 driven by headless Chromium (Debian's, via playwright).

Usage::

    with JupyterLab(root) as lab:
        page = lab.open("01_show_batch.ipynb")
        lab.run_all(page)
        lab.cells(page)          # per cell: type, execution count, output types, error names

Everything it starts stops by itself: the browser and server are closed in ``__exit__``,
and the server also gets a shutdown-on-idle timer in case the test process dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("VIZDEBUG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-proxy-server", "--disable-dev-shm-usage",
]
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}

_CELLS_JS = """() => {
  const nb = window.jupyterapp.shell.currentWidget;
  const cells = nb.content.model.cells;
  const out = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    const row = {type: c.type, count: c.type === 'code' ? c.executionCount : null, outputs: []};
    if (c.type === 'code') {
      for (let j = 0; j < c.outputs.length; j++) {
        const o = c.outputs.get(j).toJSON();
        row.outputs.push({type: o.output_type, ename: o.ename || null,
                          mimes: Object.keys(o.data || {})});
      }
    }
    out.push(row);
  }
  const kernel = nb.sessionContext.session && nb.sessionContext.session.kernel;
  return {cells: out, kernel: kernel ? kernel.status : 'none'};
}"""


# How many points the dashboard's 'loss' curve has on the page (-1: no figure yet).
POINTS_JS = """() => {
  const gd = document.querySelector('.jp-Notebook .vd-dash .vd-panel-curves');
  if (!gd || !gd.data) return -1;
  const t = gd.data.find(d => d.name === 'loss');
  return t ? t.x.length : 0;
}"""


@contextlib.contextmanager
def offline_page(width: int = 1200, height: int = 1000):
    """A Chromium page that can open local files and nothing else (a page read offline)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            context = browser.new_context(offline=True,
                                          viewport={"width": width, "height": height})
            context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                          else r.abort())
            yield context.new_page()
        finally:
            browser.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """Start JupyterLab (or, with ``frontend="notebook"``, Notebook 7) serving ``root``
    and a headless Chromium pointed at it. Both expose ``window.jupyterapp``, whose
    ``shell.currentWidget`` is the open notebook, so everything below works in both."""

    def __init__(self, root: Path, artifacts: Path | None = None, idle_shutdown: int = 600,
                 frontend: str = "lab"):
        if frontend not in ("lab", "notebook"):
            raise ValueError(f"frontend is 'lab' or 'notebook', got {frontend!r}")
        self.frontend = frontend
        self.root = Path(root)
        self.artifacts = artifacts
        self.idle_shutdown = idle_shutdown
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.tmp = Path(tempfile.mkdtemp(prefix="vd-lab-"))
        self.server: subprocess.Popen | None = None
        self.page_errors: list[str] = []
        self.dialogs: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> JupyterLab:
        if not Path(CHROMIUM).exists():
            raise RuntimeError(f"{CHROMIUM} not found: apt-get install -y chromium")
        self._write_settings()
        self._start_server()
        self._start_browser()
        return self

    def _write_settings(self) -> None:
        for rel, value in SETTINGS.items():
            path = self.tmp / "settings" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            JUPYTERLAB_SETTINGS_DIR=str(self.tmp / "settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(self.tmp / "workspaces"),
            JUPYTER_RUNTIME_DIR=str(self.tmp / "runtime"),
            JUPYTER_CONFIG_DIR=str(self.tmp / "config"),
        )
        return env

    def _start_server(self) -> None:
        app = (["jupyterlab", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None"]
               if self.frontend == "lab" else
               ["notebook", "--JupyterNotebookApp.expose_app_in_browser=True"])
        cmd = [
            sys.executable, "-m", app[0], *app[1:], "--no-browser", "--ip=127.0.0.1",
            f"--port={self.port}", f"--ServerApp.token={self.token}", "--allow-root",
            f"--ServerApp.root_dir={self.root}", "--ServerApp.open_browser=False",
            f"--ServerApp.shutdown_no_activity_timeout={self.idle_shutdown}",
            f"--MappingKernelManager.cull_idle_timeout={self.idle_shutdown}",
        ]
        log = open(self.tmp / "server.log", "w")  # noqa: SIM115 - closed with the process
        self.server = subprocess.Popen(cmd, env=self._env(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2)
                return
            except OSError:
                if self.server.poll() is not None:
                    break
                time.sleep(0.5)
        raise RuntimeError(f"{self.frontend} did not start:\n" + (self.tmp / "server.log").read_text()[-3000:])

    def _start_browser(self) -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.context = self._pw.chromium.launch_persistent_context(
            str(self.tmp / "chrome"), executable_path=CHROMIUM, args=CHROMIUM_FLAGS,
            headless=True, viewport={"width": 1400, "height": 1000},
        )

    def open(self, notebook: str, timeout: float = 90, before=None):
        """Open a notebook (path relative to ``root``) and wait for its kernel;
        ``before(page)`` runs on the new page before it loads (to listen to it)."""
        page = self.context.new_page()
        if before is not None:
            before(page)
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        if self.frontend == "lab":  # a workspace per notebook: Lab restores the last one
            space = "".join(ch if ch.isalnum() else "-" for ch in notebook)
            page.goto(f"{self.url}/lab/workspaces/{space}/tree/{notebook}?reset&token={self.token}")
        else:
            page.goto(f"{self.url}/notebooks/{notebook}?token={self.token}")
        page.wait_for_function(
            "() => window.jupyterapp && window.jupyterapp.shell.currentWidget && "
            "window.jupyterapp.shell.currentWidget.sessionContext && "
            "window.jupyterapp.shell.currentWidget.sessionContext.session && "
            "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel && "
            "window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
            timeout=timeout * 1000,
        )
        return page

    def start_notebook(self, name: str, sources: list[str], timeout: float = 90):
        """Write a notebook of these code cells under ``root``, open it and start running
        every cell without waiting for them (the tests watch it run)."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        nbformat.write(nb, self.root / name)
        page = self.open(name, timeout)
        # do not await the command's promise: it resolves only when every cell has run
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        return page

    def cells(self, page) -> dict:
        return page.evaluate(_CELLS_JS)

    def run_all(self, page, timeout: float = 240) -> dict:
        """Run every cell and wait until done: all executed, kernel idle, outputs stable."""
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        return self.wait_done(page, timeout)

    def wait_done(self, page, timeout: float = 240) -> dict:
        deadline = time.time() + timeout
        last, stable_since = None, time.time()
        while time.time() < deadline:
            state = self.cells(page)
            code = [c for c in state["cells"] if c["type"] == "code"]
            done = state["kernel"] == "idle" and all(c["count"] is not None for c in code)
            snapshot = json.dumps(state)
            if snapshot != last:
                last, stable_since = snapshot, time.time()
            if done and time.time() - stable_since > 2:
                return state
            time.sleep(0.5)
        raise TimeoutError(f"notebook did not finish in {timeout} s: {last}")

    def widget_errors(self, page) -> list[str]:
        """Texts of the three ways a widget can fail to show (see BROWSER-NOTES)."""
        return page.evaluate("""() => {
          const nb = document.querySelector('.jp-Notebook');
          const errs = [];
          nb.querySelectorAll('.jp-OutputArea-output').forEach(o => {
            const t = o.innerText || '';
            if (t.includes('Error displaying widget') || t.includes('Click to show javascript error'))
              errs.push(t.slice(0, 200));
          });
          return errs;
        }""")

    def screenshot(self, page, name: str, element=None) -> Path | None:
        """Save a PNG under the artefacts folder: one element, or the whole notebook.

        The notebook scrolls inside its own panel, so the viewport is first grown to the
        panel's full height; then every output is laid out and nothing is cut off.
        """
        if self.artifacts is None:
            return None
        self.artifacts.mkdir(parents=True, exist_ok=True)
        path = self.artifacts / name
        height = page.evaluate(
            "() => { const p = document.querySelector('.jp-WindowedPanel-outer'); "
            "if (p) { p.scrollTop = 0; return p.scrollHeight; } return 1000; }")
        page.set_viewport_size({"width": 1400, "height": min(int(height) + 150, 16000)})
        page.wait_for_timeout(500)
        page.evaluate("() => { const p = document.querySelector('.jp-WindowedPanel-outer'); "
                      "if (p) p.scrollTop = 0; }")
        (element or page).screenshot(path=str(path))
        page.set_viewport_size({"width": 1400, "height": 1000})
        return path

    def __exit__(self, *exc) -> None:
        try:
            self.context.close()
            self._pw.stop()
        except Exception:
            pass
        if self.server is not None:
            try:
                req = urllib.request.Request(f"{self.url}/api/shutdown?token={self.token}", method="POST")
                urllib.request.urlopen(req, timeout=5)
                self.server.wait(timeout=15)
            except Exception:
                self.server.kill()
                self.server.wait(timeout=10)
        shutil.rmtree(self.tmp, ignore_errors=True)
