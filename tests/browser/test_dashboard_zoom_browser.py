"""The dashboard's zoom in a real JupyterLab: a drag across the learning curves of a long
run asks the kernel for that range (views/_dashboard_zoom.py answers), and the page draws
the answer's points, many more than the page held there; a double-click goes back to the
whole run. Then JupyterLab's dark theme: the toolbar, the hover tip and the export buttons
keep readable text (the charts are a white sheet, their text dark by construction)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .test_dark_and_paging import CONTRAST_JS, _theme

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

DARK_GROUPS = {"toolbar": ".jp-Notebook .vd-dash .vd-bar, .jp-Notebook .vd-dash .vd-bar *",
               "hover tip": ".jp-Notebook .vd-dash .vd-tip",
               "export buttons": ".jp-Notebook .vd-dash .vd-export button"}

RAW_X_JS = """() => document.querySelector('.jp-Notebook .vd-panel-curves').data
  .find((d) => d.name === 'loss' && d.meta && d.meta.raw).x"""

# points of the raw 'loss' trace drawn inside [lo, hi]
INSIDE_JS = """([lo, hi]) => {
  const gd = document.querySelector('.jp-Notebook .vd-panel-curves');
  const t = gd.data.find((d) => d.name === 'loss' && d.meta && d.meta.raw);
  return t.x.filter((x) => x >= lo && x <= hi).length;
}"""


def test_a_drag_zoom_draws_the_kernels_points_of_that_range(lab):
    page = lab.start_notebook("zoom.ipynb", CELLS)
    curves = page.locator(".jp-Notebook .vd-panel-curves")
    curves.locator(".uplot").wait_for(timeout=120_000)
    lab.wait_done(page, timeout=180)
    assert lab.widget_errors(page) == [] and lab.page_errors == []
    curves.scroll_into_view_if_needed()
    area = curves.locator(".vd-plot-area").bounding_box()
    y = area["y"] + area["height"] / 2
    own = page.evaluate(RAW_X_JS)  # the page's own points, before the kernel is asked
    page.mouse.move(area["x"] + 0.40 * area["width"], y)
    page.mouse.down()
    page.mouse.move(area["x"] + 0.45 * area["width"], y, steps=4)
    page.mouse.up()
    lo, hi = (float(v) for v in curves.get_attribute("data-xrange").split(","))
    before = sum(lo <= x <= hi for x in own)  # (the answer may be drawn already)
    page.wait_for_function("() => !!document.querySelector('.jp-Notebook .vd-panel-curves')"
                           ".dataset.zoomed", timeout=30_000)
    after = page.evaluate(INSIDE_JS, [lo, hi])
    assert after > 4 * before, (before, after)  # the kernel's, at the chart's resolution
    assert [float(v) for v in curves.get_attribute("data-xrange").split(",")] == [lo, hi]
    _assert_exports_the_zoomed_panel(page, curves, lo, hi)
    curves.locator(".vd-plot-area").dblclick()
    assert curves.get_attribute("data-zoomed") is None
    assert page.evaluate(INSIDE_JS, [lo, hi]) == before
    lab.screenshot(page, "dashboard_zoomed.png", curves)

    for theme in ("JupyterLab Dark", "JupyterLab Light"):
        _theme(lab, page, theme)
        area = curves.locator(".vd-plot-area").bounding_box()
        tip = curves.locator(".vd-tip")
        for k in range(40):  # down a column until the pointer meets the curve: the tip
            page.mouse.move(area["x"] + 0.5 * area["width"], area["y"] + area["height"] * k / 40)
            if tip.is_visible():
                break
        if theme == "JupyterLab Dark":
            lab.screenshot(page, "dashboard_dark.png", page.locator(".jp-Notebook .vd-dash").first)
        got = page.evaluate(CONTRAST_JS, DARK_GROUPS)
        for name, found in got.items():
            assert found["n"] > 0, (theme, name)
            assert found["worst"][0]["ratio"] >= 4.5, (theme, name, found["worst"])
    lab.screenshot(page, "dashboard_light_after_dark.png", curves)


def _assert_exports_the_zoomed_panel(page, curves, lo, hi):
    """The uPlot panel's SVG and PNG export: drawn from its spec by the SVG renderer (a
    canvas has no SVG form), with the zoom the user sees: its step ticks inside [lo, hi]."""
    with page.expect_download() as got:
        curves.locator(".vd-export-svg").click()
    assert got.value.suggested_filename == "vizdebug-curves.svg"
    root = ET.parse(got.value.path()).getroot()  # well-formed
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "Learning curves" in "".join(root.itertext())
    ticks = [float(t) for t in texts if t.replace(".", "", 1).isdigit()]
    steps = [v for v in ticks if v > 10]  # the y ticks of a loss near 1 are small numbers
    assert steps and all(lo <= v <= hi for v in steps), (lo, hi, ticks)
    width = float(root.get("width"))
    with page.expect_download() as got:
        curves.locator(".vd-export-png").click()
    data = Path(got.value.path()).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20], "big") == int(2 * width)
