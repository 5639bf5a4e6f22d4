"""compare_runs in a real JupyterLab, in headless Chromium: the chart and table draw, the
controls ask the kernel, the table sorts while the kernel is busy, names stay text."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EVIL = "<img src=x onerror=alert(1)>"

SWEEP = (
    "import tempfile, time, torch, vizdebug as vd\n"
    "runs = tempfile.mkdtemp()\n"
    "for i, lr in enumerate((0.3, 0.1, 0.3, 0.1)):\n"
    "    s = vd.watch(torch.nn.Linear(2, 1), store=f'{runs}/r{i}.sqlite',\n"
    f"                 config={{'lr': lr, 'seed': i // 2, 'note': {EVIL!r}}})\n"
    "    for step in range(50):\n"
    "        s.log(step=step, loss=1.0 / (1 + lr * step) + 0.01 * i)\n"
    "    s.close()\n"
    "view = vd.compare_runs(runs)\n"
)


def _first_column(widget):
    return widget.locator("table.vd-compare-table tbody tr td:first-child").all_inner_texts()


def test_compare_runs_draws_answers_and_sorts_while_busy(lab):
    page = lab.start_notebook("compare.ipynb", [
        SWEEP + "time.sleep(180)  # busy: interrupted by the test"])
    widget = page.locator(".jp-Notebook .vd-compare-widget").first
    widget.locator("table.vd-compare-table").wait_for(timeout=90_000)
    assert widget.locator("svg polyline").count() == 4  # one line per run
    assert lab.cells(page)["cells"][0]["count"] is None  # the kernel is still busy
    before = _first_column(widget)
    widget.locator("table.vd-compare-table th").first.click()  # sort by run, client-side
    after = _first_column(widget)
    assert after == sorted(before)
    widget.locator("table.vd-compare-table th").first.click()  # and back, descending
    assert _first_column(widget) == sorted(before, reverse=True)
    assert page.locator('.jp-Notebook img[src="x"]').count() == 0  # the note stays text
    assert lab.page_errors == [] and lab.dialogs == []
    lab.screenshot(page, "compare_busy.png", widget)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session"
                  ".kernel.interrupt()")
    lab.wait_done(page, timeout=60)
    widget.locator("select.vd-compare-group_by").select_option("lr")  # the kernel answers
    widget.locator("h3", has_text="grouped by lr").wait_for(timeout=30_000)
    assert widget.locator("svg polygon").count() == 2  # a min-max band per lr
    lab.screenshot(page, "compare_grouped.png", widget)
