"""Per-layer distributions over training from the sampled statistics: activation bands
(mean ± std, largest magnitude) and parameter scales (weight / gradient RMS), checked
against what torch computes on the same tensors in a real watched loop."""

from __future__ import annotations

import numpy as np
import pytest

import vizdebug as vd
from vizdebug.analysis.training.activations import activation_stats
from vizdebug.analysis.training.distributions import activation_bands, parameter_scales
from vizdebug.records import TrainingRecords

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def watched():
    """lr=0: the weights stay, so every sampled step sees the same layers; the inputs are
    kept to recompute the outputs and gradients outside the hooks."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    inputs = []
    with vd.watch(model, every=2) as session:
        for _ in range(6):
            x = torch.randn(16, 5)
            inputs.append(x)
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            session.log(loss=loss.detach())
    return session, model, inputs


def test_activation_bands_are_mean_and_std_of_each_layers_output(watched):
    session, model, inputs = watched
    rec = session.records()
    bands = session.to_frame("activations")
    assert set(bands["step"]) == set(rec.act_steps.tolist()) and len(set(bands["step"])) >= 3
    first = model[0](inputs[0]).detach().numpy()
    want = activation_stats(first, "Linear")  # the reference statistics (mean, std, ...)
    row = bands[(bands["layer"] == "0 (Linear)") & (bands["step"] == 0)].iloc[0]
    assert row["mean"] == pytest.approx(want[0], rel=1e-5)
    assert row["high"] - row["mean"] == pytest.approx(want[1], rel=1e-5)
    assert row["mean"] - row["low"] == pytest.approx(want[1], rel=1e-5)
    assert row["absmax"] == pytest.approx(np.abs(first).max(), rel=1e-5)
    # the band holds on to the numbers as the hooks recorded them
    cols = activation_bands(rec)
    np.testing.assert_array_equal(cols.values["mean"], bands["mean"].to_numpy())


def test_parameter_scales_are_rms_of_weights_and_gradients(watched):
    session, model, inputs = watched
    scales = session.to_frame("parameters")
    weight = model[0].weight
    w = scales[scales["layer"] == "0.weight"]
    expect = float(weight.detach().norm()) / np.sqrt(weight.numel())
    assert w["weight_rms"].to_numpy() == pytest.approx(np.full(len(w), expect), rel=1e-5)
    step = int(w["step"].iloc[-1])
    model.zero_grad()
    model(inputs[step]).pow(2).mean().backward()
    grad = float(weight.grad.norm()) / np.sqrt(weight.numel())
    assert w["grad_rms"].iloc[-1] == pytest.approx(grad, rel=1e-4)


def test_nothing_sampled_gives_empty_columns_not_an_error():
    assert len(activation_bands(TrainingRecords())) == 0
    assert len(parameter_scales(TrainingRecords())) == 0


def test_the_figures_hold_the_frames(watched):
    pytest.importorskip("plotly")
    session, _, _ = watched
    frame = session.to_frame("activations")
    fig = session.figure("activations")
    assert {t.meta["group"] for t in fig.data} == set(frame["layer"])
    fill = [t for t in fig.data if t.fill == "tonexty"]
    assert len(fill) == frame["layer"].nunique()  # one shaded band per layer
