"""A report opened in Chromium with the network blocked: the dashboard's five charts (the
line panels on uPlot, the heatmap and the bars as SVG) draw from the inline script, hover
works offline, and a hostile metric name is text."""

from __future__ import annotations

import pytest

import vizdebug as vd

from ..test_dashboard import small_session
from .lab import offline_page

pytestmark = [pytest.mark.browser]

EVIL = "</script><img src=x onerror=alert(1)>_loss"


def test_a_report_draws_its_dashboard_offline(tmp_path):
    _, session = small_session(120, every=2, **{EVIL: 1.0})
    session.close()
    path = vd.report(session, tmp_path / "report.html")
    assert path.stat().st_size < 300_000
    with offline_page() as page:
        errors, dialogs = [], []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        assert page.locator(".vd-dashboard .vd-chart-uplot .uplot").count() == 3
        assert page.locator(".vd-dashboard .vd-panel svg.vd-chart-svg").count() == 2
        legend = page.evaluate(  # the full names (a long one is cut in the key)
            "() => [...document.querySelectorAll('.vd-panel-curves .vd-legend-item')]"
            ".map((e) => e.title)")
        assert EVIL in legend, legend
        title = page.evaluate("() => document.querySelector('.vd-panel-curves .vd-chart-title')"
                              ".textContent")
        assert title.startswith("Learning curves"), title
        assert page.locator('img[src="x"]').count() == 0
        area = page.locator(".vd-plot-area").nth(1)  # the gradient panel
        area.scroll_into_view_if_needed()  # below the fold once the epoch table is above it
        heat = area.bounding_box()
        page.mouse.move(heat["x"] + heat["width"] / 2, heat["y"] + 4)
        tip = page.locator(".vd-tip:visible")
        tip.wait_for(timeout=5_000)
        assert "0.weight" in tip.inner_text()
        assert errors == [] and dialogs == []
