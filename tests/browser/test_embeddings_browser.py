"""show_embeddings in a real JupyterLab, in headless Chromium: 10k points drawn with
WebGL, a hover read while the kernel is busy, a lasso selection that reaches Python, and
class names shown as text."""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EVIL = "<img src=x onerror=alert(1)>"

SETUP = f"""
import time, numpy as np, vizdebug as vd
rng = np.random.default_rng(0)
n = 10_000
centres = rng.normal(0, 6, (10, 16))
y = rng.integers(0, 10, n)
x = centres[y] + rng.normal(0, 1, (n, 16))
names = np.array([f"class {{i}}" for i in range(9)] + [{EVIL!r}], dtype=object)
pred = np.where(rng.random(n) < 0.1, (y + 1) % 10, y)
view = vd.show_embeddings(x, labels=names[y], predictions=names[pred], losses=rng.random(n),
                          images=rng.random((n, 8, 8)), method="pca")
view
"""
REFINED = ("small = vd.show_embeddings(x[:300], labels=names[y[:300]], method='tsne', "
           "max_iter=250)\nsmall")
BUSY = "view.wait(120)\ntime.sleep(180)  # busy: interrupted by the test"

DRAWN = """() => { const el = document.querySelector('.jp-Notebook .vd-emb');
  const p = el && el.parentElement.__vdPlot;
  return p && p.get('isPointsDrawn') ? p.get('points').length : 0; }"""
RUN_JS = """(code) => new Promise((resolve) => {
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const f = k.requestExecute({code}); let out = '';
  f.onIOPub = (m) => { if (m.header.msg_type === 'stream') out += m.content.text; };
  f.done.then(() => resolve(out));
})"""


def _screen_position(page, index: int) -> tuple[float, float]:
    return tuple(page.evaluate(
        f"""() => {{ const el = document.querySelector('.jp-Notebook .vd-emb');
          const p = el.parentElement.__vdPlot; const [x, y] = p.getScreenPosition({index});
          const r = el.querySelector('canvas').getBoundingClientRect();
          return [r.left + x, r.top + y]; }}"""))


def test_10k_points_hover_while_busy_and_lasso(lab):
    page = lab.start_notebook("embeddings.ipynb", [SETUP, REFINED, BUSY])
    started = time.time()
    page.wait_for_function(f"() => ({DRAWN})() === 10000", timeout=120_000)
    print(f"10k points drawn {time.time() - started:.1f} s after Run All")
    view = page.locator(".jp-Notebook .vd-emb").first
    view.locator(".vd-emb-side .vd-finding, .vd-emb-side .vd-empty").first.wait_for(
        timeout=60_000)
    assert lab.cells(page)["cells"][2]["count"] is None  # the kernel is still busy
    twins = page.locator(".jp-Notebook .vd-static-fallback")
    assert twins.count() == 2 and not twins.first.is_visible()  # hidden by the live views

    target = next(i for i in range(50) if _screen_position(page, i)[0] > 0)
    x, y = _screen_position(page, target)
    t0 = time.time()
    page.mouse.move(x - 30, y - 30)
    page.mouse.move(x, y, steps=5)
    tip = view.locator(".vd-emb-tip")
    tip.wait_for(state="visible", timeout=10_000)
    print(f"hover: tooltip {1000 * (time.time() - t0):.0f} ms after the first of 6 mouse moves")
    text = tip.inner_text()
    assert "label:" in text and "prediction:" in text and "loss:" in text
    assert tip.locator("img").count() == 1  # the thumbnail
    assert lab.cells(page)["cells"][2]["count"] is None  # still busy: hover was client-side

    evil_point = page.evaluate("""() => { const w = document.querySelector('.jp-Notebook .vd-emb');
      return Array.from(w.querySelectorAll('.vd-emb-key')).map(k => k.textContent); }""")
    assert EVIL in evil_point  # a class name shown as text ...
    assert page.locator('.jp-Notebook img[src="x"]').count() == 0  # ... never as an element
    assert lab.dialogs == []

    view.locator(".vd-emb-lasso").click()
    x, y = _screen_position(page, target)
    page.mouse.move(x - 40, y - 40)
    page.mouse.down()
    for dx, dy in [(40, -40), (40, 40), (-40, 40), (-40, -40)]:
        page.mouse.move(x + dx, y + dy, steps=6)
    page.mouse.up()
    view.locator(".vd-emb-strip .vd-note").first.wait_for(timeout=10_000)
    shown = view.locator(".vd-emb-strip .vd-note").first.inner_text()
    count = int(shown.split()[0])
    assert count >= 1
    lab.screenshot(page, "embeddings_10k.png", view)

    _refined_view_swaps_in(page)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.interrupt()")
    lab.wait_done(page, timeout=60)
    out = page.evaluate(RUN_JS, "print(len(view.selected), view.layout_name)")
    assert out.split()[0] == str(count)
    assert lab.widget_errors(page) == [] and lab.page_errors == []


def _refined_view_swaps_in(page) -> None:
    """The second view starts as the PCA preview and ends as t-SNE, in place."""
    status = page.locator(".jp-Notebook .vd-emb-status").nth(1)
    page.wait_for_function(
        "() => { const s = document.querySelectorAll('.jp-Notebook .vd-emb-status')[1];"
        " return s && s.textContent.includes('t-SNE') && !s.classList.contains('vd-emb-busy'); }",
        timeout=120_000)
    assert "PCA" not in status.inner_text()


TIMELINE = """
import time, numpy as np, vizdebug as vd
from vizdebug.records import EmbeddingFrame
rng = np.random.default_rng(0)
n = 10_000
y = rng.integers(0, 10, n)
noise = rng.normal(0, 1, (n, 16))
frames = [EmbeddingFrame("fc1", 100 * k, k, (rng.normal(0, 2 + 2 * k, (10, 16))[y] + noise)
                         .astype(np.float32)) for k in range(3)]
pred = [np.where(rng.random(n) < 0.3 / (k + 1), (y + 1) % 10, y) for k in range(3)]
tl = vd.show_embedding_frames(frames, labels=y, predictions=pred, images=rng.random((n, 8, 8)),
                              method="pca")
tl
"""
TL_BUSY = "tl.wait(120)\ntime.sleep(180)  # busy: interrupted by the test"
TL = ".jp-Notebook .vd-emb"
TL_PLOT = f"document.querySelector('{TL}').parentElement"


def _tl_position(page, index: int) -> tuple[float, float]:
    return tuple(page.evaluate(
        f"""() => {{ const host = {TL_PLOT}; const [x, y] = host.__vdPlot.getScreenPosition({index});
          const r = host.querySelector('canvas').getBoundingClientRect();
          return [r.left + x, r.top + y]; }}"""))


def test_timeline_slider_hover_and_box_select_while_busy(lab):
    """10k points x 3 frames: the slider moves the points without the kernel, a hover
    reads the frame shown, a shift-drag box selects into view.selected."""
    page = lab.start_notebook("timeline.ipynb", [TIMELINE, TL_BUSY])
    page.wait_for_function(
        f"() => {{ const h = document.querySelector('{TL}'); const p = h && h.parentElement.__vdPlot;"
        " return p && p.get('isPointsDrawn') && p.get('points').length === 10000; }",
        timeout=120_000)
    view = page.locator(TL).first
    view.locator(".vd-emb-side .vd-finding, .vd-emb-side .vd-empty").first.wait_for(timeout=90_000)
    assert lab.cells(page)["cells"][1]["count"] is None  # the kernel is busy
    assert "(3 of 3)" in view.locator(".vd-emb-frame").inner_text()
    target = next(i for i in range(50) if _tl_position(page, i)[0] > 0)
    before = _tl_position(page, target)
    t0 = time.time()
    view.locator(".vd-emb-slider").focus()
    page.keyboard.press("Home")  # a real input event: frame 1 of 3
    page.wait_for_function(f"() => {TL_PLOT}.__vdTimeline.frame === 0 && "
                           f"!{TL_PLOT}.__vdTimeline.drawing", timeout=10_000)
    print(f"slider: frame swapped {1000 * (time.time() - t0):.0f} ms after the key press")
    after = _tl_position(page, target)
    assert abs(after[0] - before[0]) + abs(after[1] - before[1]) > 3  # the point moved
    assert "(1 of 3)" in view.locator(".vd-emb-frame").inner_text()
    assert view.locator(".vd-emb-curve .vd-emb-now").count() == 1
    curve = view.locator(".vd-emb-curve-plot")  # the uPlot chart, its marker on frame 1
    assert curve.locator("canvas").count() == 1
    assert curve.evaluate("el => [el.layout.shapes[0].x0, el.uplot.data.length]") == [0, 3]
    assert view.locator(".vd-emb-now").inner_text().startswith("step 0:")

    x, y = after
    page.mouse.move(x - 30, y - 30)
    page.mouse.move(x, y, steps=5)
    tip = view.locator(".vd-emb-tip")
    tip.wait_for(state="visible", timeout=10_000)
    assert "label:" in tip.inner_text() and "prediction:" in tip.inner_text()
    assert tip.locator("img").count() == 1
    assert lab.cells(page)["cells"][1]["count"] is None  # still busy: all client-side

    page.mouse.move(x - 25, y - 25)
    page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(x + 25, y + 25, steps=8)
    page.mouse.up()
    page.keyboard.up("Shift")
    note = view.locator(".vd-emb-strip .vd-note").first
    note.wait_for(timeout=10_000)
    count = int(note.inner_text().split()[0])
    assert count >= 1
    lab.screenshot(page, "embedding_timeline_10k.png", view)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.interrupt()")
    lab.wait_done(page, timeout=60)
    out = page.evaluate(RUN_JS, "print(len(tl.selected), tl.widget.frame)")
    assert out.split() == [str(count), "0"]
    assert lab.widget_errors(page) == [] and lab.page_errors == []


BIG = """
import numpy as np, vizdebug as vd
from vizdebug.views import embeddings_stream
embeddings_stream.STREAM_AT, embeddings_stream.FIRST_POINTS = 20_000, 5_000  # 1M's path, small
rng = np.random.default_rng(0)
y = rng.integers(0, 10, 30_000)
x = rng.normal(0, 4, (10, 8))[y] + rng.normal(0, 1, (30_000, 8))
big = vd.show_embeddings(x, labels=y, method="pca")
big
"""


def test_a_big_set_streams_in_after_its_sample(lab):
    """A real kernel: the sample is drawn first, the browser asks, every point follows."""
    page = lab.start_notebook("big.ipynb", [BIG])
    page.wait_for_function(f"() => ({DRAWN})() > 0", timeout=120_000)
    page.wait_for_function(f"() => ({DRAWN})() === 30000", timeout=60_000)
    lab.wait_done(page, timeout=60)
    out = page.evaluate(RUN_JS, "print(big._rest_wanted.is_set(), big._order.sent, "
                                "len(big.widget.x) // 4)")
    assert out.split() == ["True", "30000", "30000"]  # asked by the browser, not the timer
    status = page.locator(".jp-Notebook .vd-emb-status").first.inner_text()
    assert "arriving" not in status
    assert lab.widget_errors(page) == [] and lab.page_errors == []
