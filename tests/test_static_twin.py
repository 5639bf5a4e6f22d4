"""Static twins: light (an SVG picture, no plotly.js), truthful (redrawn with the latest
state through their display handle, at a bounded rate while running), escaped."""

from __future__ import annotations

import re
import time
from types import SimpleNamespace

import numpy as np
import torch

import vizdebug as vd
from vizdebug.records import TrainingRecords
from vizdebug.views import _base
from vizdebug.views._dashboard_figure import PANELS, dashboard_panels, twin_figure
from vizdebug.views._figure_svg import figure_svg
from vizdebug.views.dashboard import Dashboard

EVIL = "<img src=x onerror=alert(1)>_loss"


class Handle:
    """Stands in for IPython's DisplayHandle (a kernel's front end is not here): keeps
    what each update would have sent."""

    def __init__(self) -> None:
        self.updates: list[dict] = []

    def update(self, bundle: dict, raw: bool = False) -> None:
        assert raw
        self.updates.append(bundle)


def _records() -> TrainingRecords:
    steps = np.arange(50)
    loss = np.linspace(2.0, 0.5, 50)
    loss[30] = np.nan
    return TrainingRecords(scalars={"loss": (steps, loss), EVIL: (steps, loss * 2),
                                    "val_acc": (np.array([10, 20]), np.array([0.5, 0.8]))})


def test_the_dashboard_picture_is_svg_with_the_data_and_escaped_names():
    panels = dashboard_panels(_records(), np.empty((0, 4)))
    svg = "".join(figure_svg(twin_figure(panels[name])) for name in PANELS)
    assert svg.startswith("<svg") and "plotly" not in svg.lower()
    assert len(svg) < 60_000
    assert "<img" not in svg and "&lt;img src=x onerror=alert(1)&gt;_loss" in svg
    assert svg.count("<polyline") >= 4  # raw + smoothed, each broken at the NaN
    assert re.search(r'<path d="M[\d.]+,[\d.]+l8,8m0,-8l-8,8" stroke="#c62828"', svg)  # NaN mark
    assert "Nothing logged yet" not in svg and "No gradients sampled yet" in svg


def _session(steps: int):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    session = vd.watch(model, every=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        session.log(loss=loss)
    return session


def test_a_dashboard_twin_follows_the_run_at_a_bounded_rate(monkeypatch):
    session = _session(3)
    dash = Dashboard(session, live=False)
    dash._widget = SimpleNamespace(hold_sync=_Null, revision=0)  # what _push writes to
    dash._twin, dash._fallback_id = Handle(), "ab12cd34"
    dash._twin_at = time.monotonic()
    session.log(loss=0.2)
    assert dash.refresh(force=False)
    assert dash._twin.updates == []  # within TWIN_INTERVAL of the display: not yet
    monkeypatch.setattr(_base, "TWIN_INTERVAL", 0.0)
    monkeypatch.setattr("vizdebug.views.dashboard.TWIN_INTERVAL", 0.0)
    session.log(loss=0.1)
    dash.refresh(force=True)
    session.close()
    dash.refresh(force=True)
    last = dash._twin.updates[-1]["text/html"]
    assert 'data-vd-fallback="ab12cd34"' in last and "<svg" in last
    assert "closed" in last and "step 5" in last and "plotly" not in last.lower()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
