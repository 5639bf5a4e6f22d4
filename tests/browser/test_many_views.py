"""Pages that hold several views of every kind (two dashboards, two embedding views, a
drift view, three batch grids, one of them top losses): a report, the nbconvert page of an
executed notebook, and the notebook live in JupyterLab. Each loads with no page error and
no console error of ours, and every chart draws (SVG marks, pictures, WebGL points)."""

from __future__ import annotations

import nbformat
import pytest

from ..artifacts import artifacts_dir
from .lab import JupyterLab, offline_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = artifacts_dir("screenshots", "many_views")

SETUP = """
import time
import numpy as np, pandas as pd, torch, vizdebug as vd
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)

def run(seed):
    g = torch.Generator().manual_seed(seed)
    data = TensorDataset(torch.randn(320, 4, generator=g), torch.randint(0, 2, (320,), generator=g))
    loader = DataLoader(data, batch_size=16)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    session = vd.watch(model, loader=loader, every=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        session.log(val_loss=loss.item())
    time.sleep(1.2)  # a system sample or two
    session.close()
    return model, session

digits = torch.rand(24, 1, 8, 8)
names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
"""

# one view a cell: `name = ...` then `name` (the report gathers the same objects)
VIEWS = {
    "a": "model_a, a = run(0)\na.dashboard()",
    "b": "model_b, b = run(1)\nb.dashboard()",
    "e1": "x = rng.normal(size=(150, 6)); y = np.arange(150) % 3\n"
          "e1 = vd.show_embeddings(x, labels=y, method='pca')\ne1",
    "e2": "e2 = vd.show_embeddings(x + 1, labels=y, images=rng.random((150, 8, 8)), "
          "method='tsne', perplexity=20)\ne2",
    "d": "ref = pd.DataFrame({'a': rng.normal(size=400), 'b': rng.normal(size=400)})\n"
         "cur = pd.DataFrame({'a': rng.normal(1, 1, size=400), 'b': rng.normal(size=400)})\n"
         "d = vd.compare_distributions(ref, cur)\nd",
    "g1": "g1 = vd.show_batch(rng.random((8, 1, 8, 8)))\ng1",
    "g2": "g2 = vd.show_batch((torch.rand(8, 3, 16, 16), torch.arange(8) % 2), "
          "classes=['cat', 'dog'], n=4)\ng2",
    "g3": "g3 = vd.show_top_losses(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10)), "
          "(digits, torch.arange(24) % 10), torch.nn.CrossEntropyLoss(), k=12, classes=names)\ng3",
}
WAIT = "e1.wait(60); e2.wait(120); time.sleep(2)  # the refined pictures in their twins"

# What a page drew, by kind of view: marks per chart, pictures loaded, swatch sizes, the
# widest caption overflow. `live`: the views are widgets (JupyterLab), else static HTML.
DRAWN_JS = """(live) => {
  const root = document.querySelector('.jp-Notebook') || document.body;
  const all = (sel, el) => Array.from((el || root).querySelectorAll(sel));
  const marks = (svg) => svg.classList.contains('vd-chart-uplot') ? uplotMarks(svg.parentElement.uplot)
    : all('path, polyline, image, circle, rect', svg).filter((e) => {
    if (e.closest('.vd-legend-item, clipPath, defs') || e.classList.contains('vd-hover-dot')) return false;
    const tag = e.tagName.toLowerCase();
    if (tag === 'path') return (e.getAttribute('d') || '').length > 1;
    if (tag === 'rect') { const f = e.getAttribute('fill') || '';
      return f.startsWith('#') && !/^#f{3,6}$/i.test(f) && !e.classList.contains('vd-mark'); }
    return true;
  }).length;
  const dashSel = live ? '.vd-dash' : '.vd-dashboard';
  // a live line panel is uPlot's: the series it draws with at least one point
  const uplotMarks = (u) => (u ? u.series.filter((s, i) => i && s.show && u.data[i].some((v) => v != null)).length : 0);
  // a saved report draws its line panels on uPlot too (over the twin's pictures it replaces)
  const charts = live ? '.vd-chart-svg, .vd-chart-uplot' : '.vd-chart-svg, .vd-chart-uplot, svg.vd-figure-svg';
  const dashboards = all(dashSel).filter((d) => d.offsetParent !== null)
    .map((d) => all(charts, d).map(marks));
  const pictures = all('.vd-emb-static img, .vd-batch-static img, .vd-batch-widget img')
    .filter((i) => i.offsetParent !== null);
  const plots = all('.vd-emb').map((e) => { const p = e.parentElement.__vdPlot;
    return p && p.get('isPointsDrawn') ? p.get('points').length : 0; });
  const swatches = all('.vd-emb-static .vd-emb-key i, .vd-emb .vd-emb-key i')
    .filter((i) => i.offsetParent !== null).map((i) => i.getBoundingClientRect().width);
  const captions = all('figcaption').filter((c) => c.offsetParent !== null)
    .map((c) => c.scrollWidth - c.clientWidth);
  return {
    dashboards, plots, swatches,
    embeddings: live ? plots.length : all('.vd-emb-static').filter((e) => e.offsetParent !== null).length,
    unloaded: pictures.filter((i) => !(i.complete && i.naturalWidth > 0)).length,
    pictures: pictures.length,
    drift: all('.vd-drift-app').map((d) => all('.vd-plot', d)  // the overlay's bars, as uPlot holds them
      .reduce((n, p) => n + (p.uplot ? p.uplot.data.slice(1).reduce((k, c) => k + c.length, 0) : 0), 0)),
    grids: all(live ? '.vd-batch-widget' : '.vd-batch-static').filter((g) => g.offsetParent !== null).length,
    overflow: Math.max(0, ...captions),
    topLossCaptions: all('figcaption .vd-label').filter((c) => c.offsetParent !== null &&
      /\\u00b7\\s[0-9.e+-]+$/.test(c.textContent)).length,
  };
}"""


def _cells() -> list[str]:
    return [SETUP, *VIEWS.values(), WAIT]


def _listen(page) -> list[str]:
    """Page errors, and console errors other than a blocked request for a page's own
    http(s) resources (nbconvert's template asks a CDN for require.js and MathJax)."""
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))

    def console(msg) -> None:
        where = (msg.location or {}).get("url", "")
        blocked = "Failed to load resource" in msg.text and where.startswith("http")
        if msg.type == "error" and not blocked:
            errors.append(f"console: {msg.text} ({where})")

    page.on("console", console)
    return errors


def _check(drawn: dict, live: bool) -> None:
    assert len(drawn["dashboards"]) == 2, drawn
    # every panel drew: the five charts, and in a static twin the three small pictures of the
    # layer and optimizer panels under the findings (views/panels_static.py)
    for charts in drawn["dashboards"]:
        assert len(charts) == (5 if live else 8) and min(charts) > 0, drawn["dashboards"]
    assert drawn["embeddings"] == 2, drawn
    if live:
        assert drawn["plots"] == [150, 150], drawn
    assert drawn["swatches"] and min(drawn["swatches"]) >= 8, drawn["swatches"]
    assert len(drawn["drift"]) == 1 and drawn["drift"][0] > 0, drawn["drift"]
    assert drawn["grids"] == 3, drawn
    # 8 + 4 + 12 cells, and the embeddings' two pictures where they are static
    assert drawn["pictures"] == (24 if live else 26) and drawn["unloaded"] == 0, drawn
    assert drawn["topLossCaptions"] == 12, drawn  # "target → prediction (p) · loss", whole
    assert drawn["overflow"] <= 1, drawn  # no caption cut


def _shoot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def _views() -> list:
    scope: dict = {}
    exec(SETUP, scope)
    for source in VIEWS.values():
        exec(source, scope)
    exec(WAIT, scope)
    return [scope[name] for name in VIEWS]


def test_a_report_of_many_views_draws_every_chart(tmp_path):
    import vizdebug as vd

    path = vd.report(_views(), tmp_path / "many.html", progress=False)
    with offline_page(1300, 1000) as page:
        errors = _listen(page)
        page.goto(path.as_uri())
        page.wait_for_timeout(1000)
        _shoot(page, "report.png")
        drawn = page.evaluate(DRAWN_JS, False)
        assert errors == []
        _check(drawn, live=False)


def _executed(tmp_path) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in _cells()]
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert errors == []
    return nb


def test_the_nbconvert_page_of_many_views_draws_every_chart(tmp_path):
    from nbconvert import HTMLExporter

    page_html, _ = HTMLExporter().from_notebook_node(_executed(tmp_path))
    path = tmp_path / "many.html"
    path.write_text(page_html, encoding="utf-8")
    with offline_page(1300, 1000) as page:
        errors = _listen(page)
        page.goto(path.as_uri())
        page.wait_for_timeout(1000)
        _shoot(page, "nbconvert.png")
        drawn = page.evaluate(DRAWN_JS, False)
        assert errors == []
        _check(drawn, live=False)


@pytest.mark.xfail(strict=False, reason="known defect of this round's scatter: JupyterLab throws "
                   "'(regl) invalid renderbuffer size' once per embedding view; not yet found")
def test_the_notebook_of_many_views_draws_every_chart_in_jupyterlab(tmp_path):
    with JupyterLab(tmp_path) as lab:
        page = lab.start_notebook("many.ipynb", _cells(), timeout=120)
        errors = _listen(page)
        state = lab.wait_done(page, timeout=300)
        assert [o for c in state["cells"] for o in c["outputs"] if o["type"] == "error"] == []
        page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .vd-emb').length"
                               " === 2", timeout=60_000)
        page.wait_for_timeout(1500)
        SHOTS.mkdir(parents=True, exist_ok=True)
        lab.artifacts = SHOTS
        lab.screenshot(page, "jupyterlab.png")
        drawn = page.evaluate(DRAWN_JS, True)
        assert lab.page_errors == [] and lab.widget_errors(page) == [] and lab.dialogs == []
        assert errors == []
        _check(drawn, live=True)
