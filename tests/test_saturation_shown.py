"""The dashboard's saturation bar: a healthy output Linear (logits) is not saturated; a
Linear that feeds a tanh, and the tanh, are (analysis/training/saturation.py)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import vizdebug as vd  # noqa: E402
from vizdebug.analysis.training.saturation import saturation_applies, shown_saturation  # noqa: E402
from vizdebug.views._dashboard_figure import health_traces  # noqa: E402
from vizdebug.views.panel_frames import health_frame  # noqa: E402


def _watched(model, x, y, steps: int = 60, lr: float = 0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    with vd.watch(model, every=1, on_anomaly="ignore") as session:
        for _ in range(steps):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        return session.records()


@pytest.mark.slow  # a watched run of 60 steps
def test_confident_logits_are_not_saturation_but_a_tanh_input_is():
    torch.manual_seed(0)
    from sklearn.datasets import load_digits

    data, target = load_digits(return_X_y=True)
    x = torch.tensor((data[:512] - data.mean()) / data.std(), dtype=torch.float32)
    y = torch.tensor(target[:512])
    model = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10))
    rec = _watched(model, x, y)
    raw = rec.activations[-1][:, 4]
    shown = shown_saturation(rec)
    paths = dict(zip(rec.module_paths, range(len(rec.module_paths))))
    out = paths[next(p for p in paths if p.endswith("2"))]
    assert raw[out] > 0.05  # the trained logits pass |5|: the orange bar drawn before
    assert np.isnan(shown[out])  # the output layer: not saturating, not drawn
    first = paths[next(p for p in paths if p.endswith("0"))]
    tanh = paths[next(p for p in paths if p.endswith("1"))]
    assert shown[first] == raw[first] and shown[tanh] == raw[tanh]  # these mean saturation
    # what the dashboard draws and what .to_frame() gives are that decision, not the raw share
    bars = next(t for t in health_traces(rec) if t["name"] == "saturated")
    drawn = dict(zip(bars["y"], bars["x"]))
    by_path = {p: drawn[next(k for k in drawn if k.startswith(p + " ("))] for p in paths}
    assert by_path[rec.module_paths[out]] is None
    assert by_path[rec.module_paths[tanh]] == pytest.approx(raw[tanh])
    frame = health_frame(rec).set_index("module")["saturated"]
    assert np.isnan(frame[rec.module_paths[out]])
    assert frame[rec.module_paths[first]] == pytest.approx(raw[first])


def test_which_modules_saturate():
    assert saturation_applies(["Conv2d", "ReLU", "Conv2d", "ReLU", "MaxPool2d", "Flatten",
                               "Linear"]) == [False] * 7  # the digits CNN: nothing bounded
    assert saturation_applies(["Linear", "Dropout", "Tanh", "Linear", "Softmax"]) == [True] * 5
    assert saturation_applies(["Linear", "Dropout", "ReLU", "Linear"]) == [False] * 4
    assert saturation_applies([]) == []
