"""A stored run followed from another kernel, in a real JupyterLab: a separate Python
process trains with ``watch(model, store=path)``; a notebook cell shows
``vd.open_run(path).dashboard()`` and finishes at once; the curve gains points while the
other process writes; when that process is killed the dashboard says the run was
interrupted."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .lab import POINTS_JS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

JOB = textwrap.dedent("""
    import sys, time, torch, vizdebug as vd
    import vizdebug.store.writer as w
    w.INTERVAL = 0.3
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    session = vd.watch(model, store=sys.argv[1], every=2)
    start = time.monotonic()
    while time.monotonic() - start < 120:  # killed by the test long before
        loss = (model(torch.randn(32, 8)) - 1).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        session.log(loss=loss)
        time.sleep(0.02)
""")


def test_a_dashboard_follows_a_run_written_by_another_process(lab, lab_root):
    run_file = lab_root / "job.sqlite"
    job = subprocess.Popen([sys.executable, "-c", JOB, str(run_file)], cwd=REPO)
    try:
        deadline = time.time() + 60
        while not run_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        page = lab.start_notebook(
            "follow.ipynb", ["import vizdebug as vd\nvd.open_run('job.sqlite').dashboard()"])
        page.locator(".jp-Notebook .vd-dash .js-plotly-plot").wait_for(timeout=90_000)
        lab.wait_done(page, timeout=60)  # the cell is finished; the view keeps following

        counts = []
        deadline = time.time() + 60
        while time.time() < deadline and len(set(counts)) < 4:
            counts.append(page.evaluate(POINTS_JS))
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
