"""The embedding scatter in a real Chromium (software WebGL), without a kernel: colour
changes log nothing, the view refits when it shrinks and resets on its button, a sample is
drawn while the camera moves and every point once it stops (the selection kept), a lost
WebGL context says so and redraws on a click, twenty views on one page all draw, and a big
set draws a sample first with the rest streamed in after it."""

from __future__ import annotations

import numpy as np
import pytest

from tests.browser.lab import offline_page
from tests.browser.scatter_harness import drawn, mount, plot_js

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SPAN_JS = plot_js(0, """const r = h.querySelector('canvas').getBoundingClientRect();
  const xs = []; for (let i = 0; i < m.get('x').byteLength / 4; i += 997) xs.push(p.getScreenPosition(i));
  return [r.width, Math.min(...xs.map((q) => q[0])), Math.max(...xs.map((q) => q[0]))];""")


def _widget(n: int, **extra):
    return _view(n, **extra).widget


def _view(n: int, **extra):
    import vizdebug as vd
    from vizdebug import _env

    _env.set_renderer("widget")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, n)
    x = rng.normal(0, 4, (10, 8))[y] + rng.normal(0, 1, (n, 8))
    view = vd.EmbeddingView.from_arrays(x, labels=y, predictions=(y + (rng.random(n) < 0.1)) % 10,
                                        losses=rng.random(n), method="pca", **extra)
    return view


def _wait_drawn(page, index: int = 0) -> None:
    page.wait_for_function(f"() => {{ const h = window.vdHosts[{index}].host;"
                           " return h.__vdPlot && h.__vdPlot.get('isPointsDrawn'); }",
                           timeout=90_000)


def test_colours_resize_reset_motion_and_a_lost_context():
    with offline_page() as page:
        page.goto("about:blank")
        mount(page, [_widget(60_000)])
        _wait_drawn(page)
        for by in ["prediction", "loss", "correct", "label", "prediction"]:  # no waiting
            page.evaluate(plot_js(0, f"m.set('color_by', '{by}');"))
        page.wait_for_timeout(1500)
        assert page.evaluate("() => window.vdErrors") == []  # no 'Ignoring draw call'

        page.evaluate(plot_js(0, "p.select([5, 17, 40000]);"))
        box = page.locator(".vd-emb-canvas").bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        page.mouse.move(x + 30, y + 20, steps=4)
        moving = page.evaluate(plot_js(0, "return p.get('isPointsFiltered');"))
        page.mouse.move(x + 60, y + 40, steps=4)
        page.mouse.up()
        assert moving  # a sample while moving ...
        page.wait_for_function(plot_js(0, "return !p.get('isPointsFiltered');"), timeout=10_000)
        page.wait_for_timeout(300)
        assert drawn(page) == 60_000  # ... every point once still, the selection kept
        assert page.evaluate(plot_js(0, "return p.get('selectedPoints');")) == [5, 17, 40000]

        page.locator(".vd-emb-reset").click()
        page.wait_for_timeout(400)
        width, low, high = page.evaluate(SPAN_JS)
        assert 0 <= low < high <= width
        page.evaluate("() => { window.vdHosts[0].host.style.width = '380px'; }")
        page.wait_for_timeout(1200)
        narrow, low, high = page.evaluate(SPAN_JS)
        assert narrow < width - 60 and 0 <= low < high <= narrow  # refitted to the new width

        page.evaluate(plot_js(0, "p.get('renderer').regl._gl.getExtension('WEBGL_lose_context')"
                                 ".loseContext();"))
        note = page.locator(".vd-emb-lost")
        note.wait_for(timeout=10_000)
        assert "lost its WebGL context" in note.inner_text()
        note.click()
        _wait_drawn(page)
        assert drawn(page) == 60_000 and page.locator(".vd-emb-lost").count() == 0
        assert page.evaluate("() => window.vdErrors") == []


def test_twenty_views_on_one_page_all_draw():
    messages: list[str] = []
    with offline_page() as page:
        page.on("console", lambda m: messages.append(m.text))
        page.goto("about:blank")
        mount(page, [_widget(500) for _ in range(20)], width=300)
        for i in range(20):
            _wait_drawn(page, i)
        page.wait_for_timeout(500)
        assert page.evaluate("() => globalThis.__vdScatterOwn.size") == 8  # the rest share one
        assert [drawn(page, i) for i in range(20)] == [500] * 20
        assert page.locator(".vd-emb-lost").count() == 0
        assert not [m for m in messages if "WebGL" in m and "context" in m.lower()], messages
        assert page.evaluate("() => window.vdErrors") == []


STATUS_JS = "() => window.vdHosts[0].host.querySelector('.vd-emb-status').textContent"


def test_a_big_set_draws_a_sample_first_and_the_rest_streams_in(monkeypatch):
    from tests.browser.scatter_harness import update
    from vizdebug.views import embeddings_stream

    monkeypatch.setattr(embeddings_stream, "STREAM_AT", 30_000)  # 1M's shape, at test size
    monkeypatch.setattr(embeddings_stream, "FIRST_POINTS", 20_000)
    monkeypatch.setattr(embeddings_stream, "REST_WAIT", 120.0)  # sent when asked, not before
    view = _view(60_000)
    widget = view.widget
    assert len(widget.x) == 4 * 20_000 and widget.total == 60_000
    with offline_page() as page:
        page.goto("about:blank")
        mount(page, [widget])
        _wait_drawn(page)
        assert drawn(page) == 20_000
        page.wait_for_function("() => window.vdSent.length > 0", timeout=10_000)
        assert page.evaluate("() => window.vdSent") == [{"kind": "rest"}]  # asked once drawn
        assert "20,000 of 60,000 points drawn (a fixed random sample), the rest arriving" in \
            page.evaluate(STATUS_JS)
        page.evaluate(plot_js(0, "p.select([5, 17, 19999]);"))
        assert widget.selected == [] and page.evaluate(plot_js(0, "return m.get('selected');")) \
            == [5, 17, 19999]
        widget.selected = [5, 17, 19999]  # what the model's save_changes would send
        first = view.selected

        widget._handle_custom_msg({"kind": "rest"}, [])  # the kernel hears the browser
        view._rest_sent.wait(30)
        assert len(widget.x) == 4 * 60_000 and len(widget.labels) == 60_000
        update(page, widget, ["x", "y", "rows", "labels", "predictions", "losses", "total"])
        page.wait_for_function(plot_js(0, "return p.get('points').length === 60000 && "
                                          "p.get('isPointsDrawn');"), timeout=60_000)
        page.wait_for_timeout(300)
        assert "arriving" not in page.evaluate(STATUS_JS)
        assert page.evaluate(plot_js(0, "return p.get('selectedPoints');")) == [5, 17, 19999]
        assert view.selected == first  # the same input rows as before the rest came
        rows = np.frombuffer(widget.rows, "<i4")  # the hover's "#row" of each point drawn
        assert (rows == view.features.rows[view._order.order]).all()
        assert page.evaluate("() => window.vdErrors") == []
