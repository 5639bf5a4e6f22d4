"""The example notebooks in both front ends, JupyterLab 4 and Notebook 7, one server each:
every view renders as a widget, each static twin is hidden by its own widget, the first
anomaly is a styled finding (no stderr box), no plotly.js crosses the websocket (the
dashboard draws its own charts), and a dashboard notebook weighs at most 6 MB more than an
empty one.

JupyterLab runs 01 and 03 in test_batch_browser / test_drift_browser; here it runs 02.
Notebook 02 trains one epoch instead of eight (what is checked is the page, not the fit).

Then the path other front ends take (VS Code, Colab, nbconvert pages with widgets): every
view through the standalone Jupyter widgets HTML manager, no JupyterLab, offline (see
``standalone.py``): alone in its page (Colab's one frame per output) the widget draws and
the twin shows its picture; together the widget hides its twin; without widget state the
twin stays.
"""

from __future__ import annotations

import contextlib
import json
import time

import nbformat
import numpy as np
import pytest

from . import standalone
from .conftest import ARTIFACTS
from .lab import CHROMIUM, CHROMIUM_FLAGS, JupyterLab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = {"lab": ["02_live_training.ipynb"],
             "notebook": ["01_show_batch.ipynb", "02_live_training.ipynb", "03_drift.ipynb"]}
# what Notebook 7 logs on its own pages (BROWSER-NOTES)
KNOWN_PAGE_ERRORS = ("reading 'schema'",)
MB = 1_000_000


class Traffic:
    """Bytes a page received: HTTP response bodies and kernel websocket frames."""

    def __init__(self) -> None:
        self.requests: list = []
        self.frames: list[int] = []

    def attach(self, page) -> None:
        page.on("requestfinished", lambda request: self.requests.append(request))
        page.on("websocket", lambda ws: ws.on(
            "framereceived", lambda payload: self.frames.append(len(payload))))

    def total(self) -> int:
        http = 0
        for request in self.requests:
            with contextlib.suppress(Exception):  # a request whose page is gone
                http += max(request.sizes()["responseBodySize"], 0)
        return http + sum(self.frames)


def _prepare(root) -> None:
    nb = nbformat.read(root / "02_live_training.ipynb", as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("epochs=8", "epochs=1").replace("epochs=2", "epochs=1")
    nbformat.write(nb, root / "02_live_training.ipynb")
    empty = nbformat.v4.new_notebook()
    empty.cells = [nbformat.v4.new_code_cell("1 + 1")]
    empty.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}
    nbformat.write(empty, root / "empty.ipynb")


def _run(app: JupyterLab, name: str) -> tuple:
    traffic = Traffic()
    page = app.open(name, timeout=120, before=traffic.attach)
    state = app.run_all(page, timeout=300)
    page.wait_for_timeout(1500)  # the last widget messages and renders
    return page, state, traffic


def _essentials(app: JupyterLab, page, state, name: str) -> None:
    errors = [o for c in state["cells"] for o in c["outputs"] if o["type"] == "error"]
    assert errors == [], (name, errors)
    assert app.widget_errors(page) == [], name
    page_errors = [e for e in app.page_errors if not any(k in e for k in KNOWN_PAGE_ERRORS)]
    assert page_errors == [] and app.dialogs == [], (name, page_errors)
    widgets = sum(1 for c in state["cells"] for o in c["outputs"]
                  if "application/vnd.jupyter.widget-view+json" in o["mimes"])
    twins = page.locator(".jp-Notebook .vd-static-fallback")
    assert widgets >= 2 and twins.count() == widgets, name
    visible = [i for i in range(twins.count()) if twins.nth(i).is_visible()]
    assert visible == [], f"{name}: static twins {visible} still shown beside their widgets"


def _dashboards(page) -> None:
    plots = page.locator(".jp-Notebook .vd-dash .vd-panel-curves .uplot")
    assert plots.count() == 2
    drawn = page.evaluate("() => [...document.querySelectorAll('.jp-Notebook .vd-dash "
                          ".vd-panel-curves')].map(g => (g.data || []).length)")
    assert all(n > 0 for n in drawn), drawn
    statuses = page.locator(".jp-Notebook .vd-dash .vd-status").all_inner_texts()
    assert all("closed" in s for s in statuses), statuses
    notice = page.locator(".jp-Notebook .vd-anomaly-notice")  # once per session that saw
    assert notice.count() == 2 and notice.first.is_visible()  # NaN: the bad and the stored
    assert "nonfinite" in notice.first.inner_text()
    stderr = page.locator(".jp-Notebook [data-mime-type='application/vnd.jupyter.stderr']")
    assert not any("AnomalyWarning" in t for t in stderr.all_inner_texts())


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_example_notebooks_in_both_front_ends(frontend, lab_root):
    _prepare(lab_root)
    start = time.perf_counter()
    with JupyterLab(lab_root, artifacts=ARTIFACTS, frontend=frontend) as app:
        if frontend == "lab":  # the baseline for page bytes (Lab's is the heavier page)
            page, _, empty = _run(app, "empty.ipynb")
            page.close()
        for name in NOTEBOOKS[frontend]:
            began = time.perf_counter()
            page, state, traffic = _run(app, name)
            print(f"{frontend}: {name} ran in {time.perf_counter() - began:.0f} s")
            _essentials(app, page, state, name)
            if name.startswith("02"):
                _dashboards(page)
                big = [n for n in traffic.frames if n > 1.2 * MB]  # plotly.js gzipped: 1.5 MB
                print(f"{frontend}: websocket frames over 1.2 MB: {big}")
                assert big == [], "something as large as plotly.js crossed the websocket"
                if frontend == "lab":
                    extra = traffic.total() - empty.total()
                    print(f"lab: notebook 02 page bytes beyond an empty notebook: "
                          f"{extra / MB:.1f} MB (websocket {sum(traffic.frames) / MB:.1f} MB)")
                    assert extra <= 6 * MB
                app.screenshot(page, f"02_{frontend}.png")
            page.close()
    print(f"{frontend}: {time.perf_counter() - start:.0f} s")


# -- the standalone HTML manager ---------------------------------------------------------------
def _views() -> dict:
    """One of each kind of view, small."""
    import torch

    import vizdebug as vd

    rng = np.random.default_rng(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    session = vd.watch(model, every=1)
    for _ in range(5):
        optimizer.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        optimizer.step()
        session.log(loss=loss)
    session.close()
    x = rng.normal(size=(90, 6)) + np.repeat(np.eye(6)[:3] * 4, 30, axis=0)
    return {"batch": vd.show_batch(rng.random((8, 3, 16, 16), dtype=np.float32), n=8),
            "drift": vd.compare_distributions({"x": rng.normal(0, 1, 300)},
                                              {"x": rng.normal(1, 1, 300)}),
            "dashboard": session.dashboard(live=False),
            "embeddings": vd.show_embeddings(x, labels=np.arange(90) // 30, method="pca").wait()}


# per page: is the twin laid out, did a widget draw (an element of some height in the area
# the manager made), did it hand back to its twin (a widget that cannot draw here), and the
# manager's own error text
PAGE_JS = """() => {
  const twin = document.querySelector('.vd-static-fallback');
  const area = document.querySelector('.widget-subarea');
  const drawn = area ? [...area.querySelectorAll('*')].some(e => e.tagName !== 'STYLE'
      && e.getBoundingClientRect().height > 60) : false;
  return {twin: twin ? twin.getBoundingClientRect().height > 40 : null, drawn,
          handedBack: !!document.querySelector('[data-vd-twin-shown="1"]'),
          error: /Error|javascript error/.test(area ? area.innerText : '')};
}"""


@pytest.mark.skipif(not standalone.available(), reason="@jupyter-widgets/html-manager is not "
                    f"in {standalone.HTML_MANAGER}: scripts/test.sh installs it with npm")
def test_every_view_through_the_standalone_html_manager(tmp_path, monkeypatch):
    from playwright.sync_api import sync_playwright

    folder = standalone.site(tmp_path)
    files = {name: standalone.pages(folder, name, *standalone.outputs(view, monkeypatch))
             for name, view in _views().items()}
    seen: dict = {}
    with standalone.serve(folder) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        outside: list[str] = []
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base)
                      else (outside.append(r.request.url), r.abort()))
        for name, cases in files.items():
            for case, file in cases.items():
                page, errors = context.new_page(), []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.goto(f"{base}/{file}")
                if case in ("twin", "no-state"):  # nothing is to draw: give it the time
                    page.wait_for_timeout(2000)
                else:
                    page.wait_for_function(f"() => ({PAGE_JS})().drawn", timeout=30_000)
                page.wait_for_timeout(500)
                seen[name, case] = {**page.evaluate(PAGE_JS), "errors": errors}
                page.screenshot(path=str(ARTIFACTS / f"standalone-{file}.png"), full_page=True)
                page.close()
        browser.close()
    print(json.dumps({f"{n}/{c}": v for (n, c), v in seen.items()}, indent=1))
    assert outside == []  # every model, anywidget's included, loaded without a CDN
    for name in files:
        alone, twin, both, gone = (seen[name, c] for c in ("widget", "twin", "both", "no-state"))
        assert alone["drawn"] and not alone["error"] and alone["errors"] == [], (name, alone)
        assert twin["twin"], (name, twin)  # one output per page: the picture, on its own
        assert both["drawn"] and both["errors"] == [], (name, both)
        assert both["twin"] == both["handedBack"], (name, both)  # hidden unless handed back
        assert gone["twin"] and not gone["drawn"], (name, gone)  # no state: the picture stays
