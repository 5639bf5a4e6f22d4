"""The dashboard's charts on a saved page in Chromium (no kernel, network blocked), the
line panels drawn by uPlot as in the live widget: hover, a legend entry that hides its
series, a drag that zooms the steps with the page's own points (no kernel to ask), a
double-click back, the log scale, PNG and SVG export of a panel, and a resize the charts
follow."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ..test_dashboard import small_session
from .lab import offline_page

pytestmark = [pytest.mark.browser]


def _xrange(curves) -> list[float]:
    return [float(v) for v in curves.get_attribute("data-xrange").split(",")]


def test_a_saved_dashboards_charts_answer_the_pointer_and_export(tmp_path):
    _, session = small_session(200, every=2)
    session.close()
    path = session.dashboard().save(tmp_path / "dash.html")
    with offline_page(width=1200) as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        curves = page.locator(".vd-panel-curves")
        curves.locator(".vd-chart-uplot .uplot canvas").wait_for(timeout=10_000)
        assert page.locator(".vd-chart-uplot").count() == 3  # curves, timing, system
        assert page.locator(".vd-panel svg.vd-chart-svg").count() == 2  # heatmap, bars
        assert page.locator(".vd-twin-charts").count() == 0  # the no-script picture replaced
        curves.scroll_into_view_if_needed()  # the findings come first on a saved page
        area = curves.locator(".vd-plot-area").bounding_box()
        y = area["y"] + area["height"] / 2
        tip = curves.locator(".vd-tip")
        for k in range(40):  # hover down a column until the pointer meets a curve: a value
            page.mouse.move(area["x"] + 0.5 * area["width"], area["y"] + area["height"] * k / 40)
            if tip.is_visible():
                break
        assert "step" in tip.inner_text(), k

        shown = lambda: page.evaluate(  # noqa: E731  (the series uPlot draws, by name)
            "() => document.querySelector('.vd-panel-curves').uplot.series"
            ".filter((s, i) => i && s.show).map((s) => s.label)")
        lines = shown()
        assert "val_loss" in lines and int(curves.get_attribute("data-series")) == len(lines)
        curves.locator(".vd-legend-item", has_text="val_loss").click()  # a toggle
        assert "val_loss" not in shown() and len(shown()) < len(lines)
        curves.locator(".vd-legend-item", has_text="val_loss").click()  # and back
        assert shown() == lines

        full = _xrange(curves)  # a drag zooms (the page's own points: no kernel here)
        page.mouse.move(area["x"] + 0.2 * area["width"], y)
        page.mouse.down()
        page.mouse.move(area["x"] + 0.5 * area["width"], y, steps=4)
        page.mouse.up()
        zoomed, span = _xrange(curves), full[1] - full[0]
        assert abs(zoomed[0] - (full[0] + 0.2 * span)) < 0.02 * span, (full, zoomed)
        assert curves.get_attribute("data-zoomed") is None
        curves.locator(".vd-plot-area").dblclick()
        assert _xrange(curves) == full

        assert curves.get_attribute("data-yscale") == "linear"  # the log scale, offline
        page.locator(".vd-saved-charts .vd-log").check()
        assert curves.get_attribute("data-yscale") == "log"
        assert page.evaluate("() => document.querySelector('.vd-panel-curves').uplot"
                             ".scales.y.distr") == 3  # uPlot's log distribution
        page.locator(".vd-saved-charts .vd-log").uncheck()
        assert curves.get_attribute("data-yscale") == "linear"

        with page.expect_download() as got:  # export: the SVG as drawn
            curves.locator(".vd-export-svg").click()
        svg = got.value
        assert svg.suggested_filename == "vizdebug-curves.svg"
        root = ET.parse(svg.path()).getroot()  # well-formed
        assert "Learning curves" in "".join(root.itertext())
        width = float(root.get("width"))
        with page.expect_download() as got:  # and as a PNG, twice the size
            curves.locator(".vd-export-png").click()
        png = got.value
        assert png.suggested_filename == "vizdebug-curves.png"
        data = Path(png.path()).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert int.from_bytes(data[16:20], "big") == int(2 * width)

        page.set_viewport_size({"width": 900, "height": 1000})  # the charts follow
        page.wait_for_timeout(500)
        widths = page.evaluate("() => [...document.querySelectorAll('.vd-panel')].map((d) => "
                               "[d.getBoundingClientRect().width, d.querySelector('.vd-chart-svg, .uplot canvas')"
                               ".getBoundingClientRect().width])")
        assert len(widths) == 5 and all(abs(a - b) < 2 for a, b in widths), widths
        assert errors == []
