"""The page's half of the dashboard's zoom (static/dashboard_state.js, run in node): the
kernel's answer for a range replaces the raw curve's points there, and the smoothed curve
drawn over it follows those points (its steps are the raw curve's, not the page's old ones).
The panel is a real dashboard's, the answer ``answer_zoom``'s of a real stored run."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.views import dashboard as dash_module
from vizdebug.views._dashboard_figure import dashboard_panels
from vizdebug.views._dashboard_zoom import answer_zoom
from vizdebug.views.dashboard import _live

NODE = shutil.which("node")
STATE_JS = Path(dash_module.__file__).with_name("static") / "dashboard_state.js"
STEPS = 30_000


def _loss(step: int) -> float:
    return 1.0 + math.sin(step / 500.0) + 0.1 * math.cos(step * 1.7)


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_smoothed_curve_follows_the_zoomed_points(tmp_path):
    path = tmp_path / "run.sqlite"
    with vd.watch(torch.nn.Linear(2, 1), store=str(path)) as session:
        for step in range(STEPS):
            session.log(step=step, loss=_loss(step))
            if step % 4000 == 3999:  # a tight loop must not outpace the writer
                session.log_store.resolve()
                session.store.tick()
    run = vd.open_run(path)
    panels = _live(dashboard_panels(run.records(), np.empty((0, 4))))  # as the page gets them
    curves = json.loads(json.dumps(panels["curves"]))
    reply = answer_zoom(run, {"kind": "zoom", "panel": "curves", "lo": 20_000, "hi": 20_400,
                              "points": 800})
    assert reply["series"][0]["exact"]
    script = STATE_JS.read_text() + f"""
    const view = vdCurvesView(vdMergeZoomed({json.dumps(curves)}, {json.dumps(reply)}), 0.6, false);
    const i = view.data.findIndex((t) => t.meta && t.meta.smooth);
    console.log(JSON.stringify([view.data[i - 1].x, view.data[i - 1].y, view.data[i].x,
                                view.data[i].y]));"""
    out = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60,
                         check=True)
    raw_x, raw_y, smooth_x, smooth_y = json.loads(out.stdout)
    assert smooth_x == raw_x and len(smooth_y) == len(raw_x)
    inside = [k for k, x in enumerate(raw_x) if 20_000 <= x <= 20_400]
    assert [raw_x[k] for k in inside] == list(range(20_000, 20_401))  # the file's points
    # the smoothed value at each zoomed step is near the curve there (an EMA over steps one
    # apart lags a sine of period ~3,100 steps by little), never the page's old buckets'
    worst = max(abs(smooth_y[k] - _loss(raw_x[k])) for k in inside[20:])
    assert worst < 0.2, worst
