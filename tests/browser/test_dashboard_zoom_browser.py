"""The dashboard's zoom in a real JupyterLab: a drag across the learning curves of a long
run asks the kernel for that range (views/_dashboard_zoom.py answers), and the page draws
the answer's points, many more than the page held there; a double-click goes back to the
whole run."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CELLS = ["""
import numpy as np, torch
import vizdebug as vd
session = vd.watch(torch.nn.Linear(4, 1), every=100)
for step in range(40_000):
    session.log(loss=float(1.0 + np.sin(step / 50.0) + 0.1 * np.cos(step * 1.7)))
session.close()
session.dashboard()
"""]

# points of the raw 'loss' trace drawn inside [lo, hi]
INSIDE_JS = """([lo, hi]) => {
  const gd = document.querySelector('.jp-Notebook .vd-panel-curves');
  const t = gd.data.find((d) => d.name === 'loss' && d.meta && d.meta.raw);
  return t.x.filter((x) => x >= lo && x <= hi).length;
}"""


def test_a_drag_zoom_draws_the_kernels_points_of_that_range(lab):
    page = lab.start_notebook("zoom.ipynb", CELLS)
    curves = page.locator(".jp-Notebook .vd-panel-curves")
    curves.locator(".vd-chart-svg").wait_for(timeout=120_000)
    lab.wait_done(page, timeout=180)
    assert lab.widget_errors(page) == [] and lab.page_errors == []
    curves.scroll_into_view_if_needed()
    area = curves.locator(".vd-plot-area").bounding_box()
    y = area["y"] + area["height"] / 2
    page.mouse.move(area["x"] + 0.40 * area["width"], y)
    page.mouse.down()
    page.mouse.move(area["x"] + 0.45 * area["width"], y, steps=4)
    page.mouse.up()
    lo, hi = (float(v) for v in curves.get_attribute("data-xrange").split(","))
    before = page.evaluate(INSIDE_JS, [lo, hi])  # the page's own points of the range
    page.wait_for_function("() => !!document.querySelector('.jp-Notebook .vd-panel-curves')"
                           ".dataset.zoomed", timeout=30_000)
    after = page.evaluate(INSIDE_JS, [lo, hi])
    assert after > 4 * before, (before, after)  # the kernel's, at the chart's resolution
    assert [float(v) for v in curves.get_attribute("data-xrange").split(",")] == [lo, hi]
    curves.locator(".vd-plot-area").dblclick()
    assert curves.get_attribute("data-zoomed") is None
    assert page.evaluate(INSIDE_JS, [lo, hi]) == before
    lab.screenshot(page, "dashboard_zoomed.png", curves)
