"""The learning curves' automatic y range keeps the story and says what it leaves out
(issue 23: after 2,500 steps the range was 0-0.45 and the whole descent from 2.3 a flat
row of clipped markers at the top)."""

from __future__ import annotations

import numpy as np

from vizdebug.records import TrainingRecords
from vizdebug.views._dashboard_figure import dashboard_panels, twin_figure
from vizdebug.views._figure_svg import figure_svg

STEPS = np.arange(2500)
DESCENT = 0.05 + 2.25 * np.exp(-STEPS / 30) + 0.02 * np.random.default_rng(0).standard_normal(2500)


def _curves(values: np.ndarray) -> dict:
    rec = TrainingRecords(scalars={"loss": (STEPS[:values.size], values)})
    return dashboard_panels(rec, np.empty((0, 4)))["curves"]


def _off_scale(panel: dict) -> list[dict]:
    return [t for t in panel["data"] if t["name"].endswith("off the scale")]


def test_a_fast_descent_over_a_long_run_is_drawn_whole():
    panel = _curves(DESCENT)
    yaxis = panel["layout"]["yaxis"]
    assert "range" not in yaxis or yaxis["range"][1] >= DESCENT[0], yaxis
    assert _off_scale(panel) == []
    assert "off the scale" not in panel["layout"]["title"]["text"]


def test_a_lone_spike_is_left_out_and_named():
    values = DESCENT.copy()
    values[1000] = 40.0
    panel = _curves(values)
    low, high = panel["layout"]["yaxis"]["range"]
    assert DESCENT[0] <= high < 40  # the start kept, the spike left out
    (spike,) = _off_scale(panel)
    assert spike["x"] == [1000]
    title = panel["layout"]["title"]["text"]
    assert "1 value off the scale (linear): loss 40 at step 1000 above" in title
    assert "loss 40 at step 1000 above" in figure_svg(twin_figure(panel))  # the twin says it too


def test_a_first_step_spike_is_not_the_story():
    values = np.r_[5000.0, np.linspace(2.0, 0.1, 499)]
    panel = _curves(values)
    assert panel["layout"]["yaxis"]["range"][1] < 10
    assert "loss 5000 at step 0 above" in panel["layout"]["title"]["text"]
