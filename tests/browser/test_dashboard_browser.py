"""The training dashboard in a real JupyterLab: it renders, and its curves gain points
while the cell that displayed it is still training; the log-scale toggle works while the
kernel is busy; the static twin is hidden once the widget renders."""

from __future__ import annotations

import time

import pytest

from .lab import POINTS_JS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EVIL = "<img src=x onerror=alert(1)>_loss"

SETUP = """
import time, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
import vizdebug as vd

torch.manual_seed(0)
x, y = torch.randn(512, 1, 8, 8), torch.randint(0, 10, (512,))
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(512, 10))
session = vd.watch(model, loader=loader, every=2)
"""

TRAIN = f"""
from IPython.display import display
display(session.dashboard())  # shown by the very cell that trains, no reference kept
opt = torch.optim.SGD(model.parameters(), lr=0.05)
start = time.perf_counter()
epoch = 0
while time.perf_counter() - start < 20:
    for xb, yb in loader:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        session.log(**{{"loss": loss, {EVIL!r}: loss}})
        time.sleep(0.03)
    session.log(val_loss=loss.item() * 1.2, epoch=epoch)
    epoch += 1
"""


def _errors(state):
    return [o for c in state["cells"] for o in c["outputs"] if o["type"] == "error"]


def _training(lab, page) -> bool:
    """The training cell (the second) has not finished: no execution count yet.

    (The kernel's status flickers while widget messages come and go; the cell's own
    prompt is the reliable sign, as BROWSER-NOTES says.)"""
    return lab.cells(page)["cells"][1]["count"] is None


def test_dashboard_updates_while_the_cell_runs(lab):
    page = lab.start_notebook("live.ipynb",
                              [SETUP, TRAIN, "session.close()\nsession.findings()"])
    page.locator(".jp-Notebook .vd-dash .js-plotly-plot").wait_for(timeout=90_000)

    counts, busy_counts = [], []
    deadline = time.time() + 60
    while time.time() < deadline and len(set(busy_counts)) < 4:
        n = page.evaluate(POINTS_JS)
        counts.append(n)
        if n > 0 and _training(lab, page):
            busy_counts.append(n)
        time.sleep(0.5)
    assert len(set(busy_counts)) >= 3, counts  # new points arrived mid-cell, several times
    assert busy_counts == sorted(busy_counts)
    lab.screenshot(page, "02_dashboard_running.png",
                   page.locator(".jp-Notebook .vd-dash").first)

    # client-side interactions while the kernel trains: smoothing and log scale
    dash = page.locator(".jp-Notebook .vd-dash").first
    dash.locator(".vd-log").check()
    page.wait_for_function(
        "() => document.querySelector('.jp-Notebook .vd-dash .js-plotly-plot')"
        "._fullLayout.yaxis.type === 'log'", timeout=10_000)
    assert _training(lab, page)

    state = lab.wait_done(page, timeout=120)
    assert _errors(state) == []
    assert lab.widget_errors(page) == [] and lab.page_errors == []
    final = page.evaluate(POINTS_JS)
    assert final >= max(counts)
    status = dash.locator(".vd-status").inner_text()
    assert "closed" in status
    twins = page.locator(".jp-Notebook .vd-static-fallback")
    assert twins.count() == 1 and not twins.first.is_visible()
    # the user's metric name is text, never markup
    assert page.locator('.jp-Notebook img[src="x"]').count() == 0
    legend = page.evaluate(
        "() => [...document.querySelectorAll('.jp-Notebook .vd-dash .legendtext')]"
        ".map(e => e.textContent)")
    assert any(EVIL in text for text in legend), legend
    # plotly.js was evaluated once on the page (the static twin's copy, or the bundle's)
    assert page.evaluate("() => !!window.Plotly")
    copies = page.evaluate(
        "() => [...document.querySelectorAll('script')].filter(s => s.text.length > 1e6).length")
    assert copies <= 1
    assert lab.dialogs == []
    lab.screenshot(page, "02_dashboard_done.png", dash)
