"""The drift explorer in a real JupyterLab, in headless Chromium."""

from __future__ import annotations

import nbformat
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EVIL = "<img src=x onerror=alert(1)>"

SETUP = f"""
import numpy as np, pandas as pd, vizdebug as vd
rng = np.random.default_rng(0)
n = 6000
ref = pd.DataFrame({{"temp": rng.normal(20, 2, n), {EVIL!r}: rng.normal(size=n),
                    "site": rng.choice(["a", "b", "c"], n)}})
cur = pd.DataFrame({{"temp": rng.normal(20, 2, n) + np.linspace(0, 3, n), {EVIL!r}: rng.normal(size=n),
                    "site": rng.choice(["a", "b", "c", "d"], n),
                    "ts": pd.date_range("2025-01-01", periods=n, freq="min")}})
v = vd.compare_distributions(ref, cur, time="ts")
display(v)
"""

READ_TRAITS = """async () => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const f = k.requestExecute({code: "print(v.widget.selected, '|', v.widget.bins, '|', v.widget.window)"});
  let out = '';
  f.onIOPub = (m) => { if (m.header.msg_type === 'stream') out += m.content.text; };
  await f.done;
  return out;
}"""


def _errors(state):
    return [o for c in state["cells"] for o in c["outputs"] if o["type"] == "error"]


def _bars(widget) -> list[int]:
    """How many bars each of the overlay's series has, as the uPlot chart holds them (its
    own data: x and a column per series)."""
    return widget.locator(".vd-plot").evaluate(
        "el => el.uplot.series.slice(1).map((s, i) => el.uplot.data[i + 1].length)")


def _heights(widget):
    return widget.locator(".vd-plot").evaluate("el => JSON.stringify(el.uplot.data.slice(1))")


def _hover(page, widget) -> str:
    """The tip under the pointer in the middle of the overlay's plot."""
    box = widget.locator(".vd-plot .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.6)
    tip = widget.locator(".vd-plot .vd-tip")
    tip.wait_for(state="visible", timeout=5000)
    return tip.inner_text()


def _slide(widget, control: str, value: float) -> None:
    widget.locator(f"input[data-control={control}]").evaluate(
        "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", value)


def _still_running(lab, page) -> bool:
    """The cell has not finished (no execution count yet). ``kernel.status`` is no proof:
    it can read 'idle' mid-cell when the kernel answers a comm message on the side."""
    return lab.cells(page)["cells"][0]["count"] is None


def test_sliders_redraw_client_side_while_the_kernel_is_busy(lab, lab_root):
    nb = nbformat.v4.new_notebook()
    busy = ("import os, time\nt0 = time.time()\n"  # busy until the test says it is done
            "while not os.path.exists('done.flag') and time.time() - t0 < 240:\n    time.sleep(0.2)")
    # one cell: shows the view, then keeps the kernel busy (run-all sometimes ran only cell 1)
    nb.cells = [nbformat.v4.new_code_cell(SETUP + busy)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, lab_root / "drift_busy.ipynb")
    page = lab.open("drift_busy.ipynb")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    widget = page.locator(".jp-Notebook .vd-drift >> visible=true").first
    widget.wait_for(timeout=90_000)
    assert _still_running(lab, page)
    rows = widget.locator(".vd-drift-table tr")
    assert rows.count() == 4  # header + 3 features
    assert _bars(widget) == [30, 30]
    assert widget.locator(".vd-plot canvas").count() == 1  # drawn by uPlot
    assert "reference" in _hover(page, widget) and "%" in _hover(page, widget)
    legend = widget.locator(".vd-plot .vd-legend-item")
    assert legend.count() == 2
    legend.nth(1).click()  # the legend hides "current" ...
    assert widget.locator(".vd-plot").evaluate("el => el.uplot.series[2].show") is False
    legend.nth(1).click()  # ... and shows it again
    lab.screenshot(page, "drift_widget_initial.png", widget)

    widget.locator(".vd-plot").evaluate("el => { window.__vdChart = el.uplot; }")
    _slide(widget, "bins", 11)  # the 12th choice: 60 bins
    assert _bars(widget) == [60, 60]
    assert widget.locator(".vd-plot").evaluate("el => el.uplot === window.__vdChart")  # setData, no new chart
    before = _heights(widget)
    _slide(widget, "win0", 18)  # only the last quarter of the current data
    assert _heights(widget) != before
    assert "window" in widget.locator(".vd-summary").inner_text()
    assert "α = 0.05 (holm)" in widget.locator(".vd-summary").inner_text()
    _slide(widget, "alpha", 0)  # the strictest level
    assert "α = 1.00e-4" in widget.locator(".vd-summary").inner_text()
    _slide(widget, "alpha", 5)  # back to 0.05
    _slide(widget, "shift", 0.6)
    assert widget.locator(".vd-plot").evaluate("el => el.data.filter(t => t.name === 'what-if').length") == 1
    assert "WOULD be flagged" in widget.locator(".vd-whatif").inner_text()
    redraw_ms = float(page.locator(".jp-Notebook .vd-drift >> visible=true").first.evaluate(
        "el => el.parentElement.getAttribute('data-redraw-ms') || el.closest('[data-redraw-ms]').getAttribute('data-redraw-ms')"))
    assert redraw_ms < 100
    assert _still_running(lab, page)  # everything above ran in the browser alone
    lab.screenshot(page, "drift_widget_window_whatif.png", widget)

    evil_row = rows.filter(has_text=EVIL)
    assert evil_row.count() == 1  # the name is text ...
    evil_row.click()
    assert EVIL in widget.locator(".vd-plot-title").inner_text()
    assert page.locator('.jp-Notebook img[src="x"]').count() == 0  # ... never an element
    assert lab.dialogs == [] and lab.page_errors == [] and lab.widget_errors(page) == []
    lab.screenshot(page, "drift_widget_escaped_name.png", widget)
    assert _still_running(lab, page)

    (lab_root / "done.flag").touch()
    state = lab.wait_done(page, timeout=120)
    assert _errors(state) == []
    traits = page.evaluate(READ_TRAITS)
    assert EVIL in traits and "| 60 |" in traits and "[18, 23]" in traits


def test_notebook_03_renders_in_lab(lab):
    page = lab.open("03_drift.ipynb")
    state = lab.run_all(page, timeout=300)
    assert _errors(state) == []
    assert lab.widget_errors(page) == [] and lab.page_errors == [] and lab.dialogs == []
    views = page.locator(".jp-Notebook .vd-drift >> visible=true")
    # views show where they are made (issue 22): the sensor view, the split, the scanner;
    # the windows, the two sample sizes and the streamed comparison are read as data
    # (`.drifted`, `.table`), so they show nothing
    assert views.count() == 3
    assert views.nth(0).locator(".vd-timeline").evaluate("el => el.uplot.data[1].length") >= 1
    assert views.nth(0).locator(".vd-drift-table tr").count() == 9
    assert page.locator(".jp-Notebook .js-plotly-plot").count() == 0  # no plotly.js pulled in
    lab.screenshot(page, "03_drift.png")
