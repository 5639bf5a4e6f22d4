"""A stored run followed from another kernel, in a real JupyterLab: a separate Python
process trains with ``watch(model, store=path)``; a notebook cell shows
``vd.open_run(path).dashboard()`` and finishes at once; the curve gains points while the
other process writes; when that process is killed the dashboard says the run was
interrupted."""

from __future__ import annotations

import signal
import time

import pytest

from ..digits_runs import start_store_child
from .lab import POINTS_JS

# The last step the 'loss' curve reaches on the page (-1: no curve yet): the points
# drawn can halve when the downsampling buckets widen, the last step only grows.
LAST_STEP_JS = POINTS_JS.replace("t ? t.x.length : 0", "t && t.x.length ? t.x[t.x.length - 1] : 0")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_dashboard_follows_a_run_written_by_another_process(lab, lab_root):
    run_file = lab_root / "job.sqlite"
    job = start_store_child(run_file, every=2, interval=0.3, pause=0.02)
    try:
        deadline = time.time() + 60
        while not run_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        page = lab.start_notebook(
            "follow.ipynb", ["import vizdebug as vd\nvd.open_run('job.sqlite').dashboard()"])
        page.locator(".jp-Notebook .vd-dash .vd-panel-curves .uplot").wait_for(
            timeout=90_000)
        lab.wait_done(page, timeout=60)  # the cell is finished; the view keeps following

        counts = []
        deadline = time.time() + 60
        while time.time() < deadline and len(set(counts)) < 4:
            counts.append(page.evaluate(LAST_STEP_JS))
            time.sleep(0.5)
        assert len(set(counts)) >= 4 and counts == sorted(counts), counts
        dash = page.locator(".jp-Notebook .vd-dash").first
        assert "running" in dash.locator(".vd-status").inner_text()
        lab.screenshot(page, "run_following.png", dash)
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()

    page.wait_for_function(
        "() => (document.querySelector('.jp-Notebook .vd-dash .vd-status') || {})"
        ".textContent.includes('interrupted')", timeout=60_000)
    dash.locator(".vd-findings").get_by_text("run-interrupted").first.wait_for(timeout=10_000)
    assert lab.widget_errors(page) == [] and lab.page_errors == []
    lab.screenshot(page, "run_interrupted.png", dash)
