"""show_batch in a real JupyterLab, in headless Chromium."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EVIL = "<img src=x onerror=alert(1)>"


def _errors(state):
    return [o for c in state["cells"] for o in c["outputs"] if o["type"] == "error"]


def test_notebook_grid_flags_and_paging(lab):
    page = lab.open("01_show_batch.ipynb")
    state = lab.run_all(page)
    assert _errors(state) == []
    assert lab.widget_errors(page) == [] and lab.page_errors == []
    widgets = page.locator(".jp-Notebook .vd-batch-widget")
    assert widgets.count() == 2
    fallbacks = page.locator(".jp-Notebook .vd-static-fallback")
    assert fallbacks.count() == 2  # the static twins are in the page, hidden by the widgets
    assert not fallbacks.nth(0).is_visible() and not fallbacks.nth(1).is_visible()
    clean, bad = widgets.nth(0), widgets.nth(1)
    assert clean.locator(".vd-cell").count() == 64
    assert clean.locator(".vd-cell.vd-warn, .vd-cell.vd-bad").count() == 0
    blank = bad.locator('.vd-cell[data-flags="blank"]').count()
    assert blank >= 10
    assert bad.locator(".vd-finding[data-code='blank-images']").count() == 1
    lab.screenshot(page, "01_show_batch.png")
    lab.screenshot(page, "01_show_batch_blanked.png", bad)

    clean.locator(".vd-next").click()  # not captured yet: the kernel reads the next batch
    clean.locator('.vd-batch[data-page="1"]').wait_for(timeout=30_000)
    assert "batch 2 of 2" in clean.locator(".vd-page-label").inner_text()
    clean.locator(".vd-prev").click()
    clean.locator('.vd-batch[data-page="0"]').wait_for(timeout=5_000)
    assert clean.locator(".vd-cell").count() == 64


def test_escaping_and_paging_while_the_kernel_is_busy(lab):
    page = lab.start_notebook("busy.ipynb", [
        "import time, torch, vizdebug as vd\n"
        "from IPython.display import display\n"
        f"classes = ['cat', {EVIL!r}]\n"
        "v = vd.show_batch((torch.rand(8, 3, 16, 16), torch.tensor([0, 1] * 4)), "
        "classes=classes, n=4)\n"
        "display(v.next())\n"
        "time.sleep(180)  # busy: interrupted by the test"
    ])
    widget = page.locator(".jp-Notebook .vd-batch-widget").first
    widget.locator('.vd-batch[data-page="1"]').wait_for(timeout=60_000)
    # "busy" means the cell is still running (no execution count yet): ipykernel 7 reports
    # idle/busy per message, so the kernel's status flag flickers to idle during a sleep
    assert lab.cells(page)["cells"][0]["count"] is None
    widget.locator(".vd-prev").click()  # the kernel is asleep: this must work client-side
    widget.locator('.vd-batch[data-page="0"]').wait_for(timeout=3_000)
    assert lab.cells(page)["cells"][0]["count"] is None
    labels = widget.locator(".vd-label").all_inner_texts()
    assert EVIL in labels  # shown as text ...
    assert page.locator('.jp-Notebook img[src="x"]').count() == 0  # ... never as an element
    assert lab.dialogs == []
    lab.screenshot(page, "busy_paging_and_escaping.png", widget)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.interrupt()")
    lab.wait_done(page, timeout=60)
