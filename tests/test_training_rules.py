"""Each diagnosis rule fires on a real digits run built to have the problem, and stays
quiet on its clean twin; clean runs give no warning at all.

The thresholds in ``vizdebug/analysis/training.py`` were calibrated on these runs (and on
more seeds, see benchmarks/README.md): e.g. spike share 0.08-0.13 on the unstable runs vs
at most 0.03 on clean ones, first/last gradient ratio ~1e-10 on the deep sigmoid vs 0.2-1
on clean models.
"""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np
import pytest

import vizdebug as vd
from tests.digits_runs import RunConfig, train
from vizdebug.analysis.training import (
    TrainingRecords,
    diagnose,
    loss_instability,
    rule_overfitting,
    rule_underfitting,
)

pytestmark = pytest.mark.slow

RUNS = {
    "clean": RunConfig(),
    "clean_sgd": RunConfig(optimizer="sgd", lr=0.05),
    "nan_input": RunConfig(nan_batch=30, epochs=2),
    "explode": RunConfig(model="deep", optimizer="sgd", lr=0.01, epochs=3),
    "explode_twin": RunConfig(model="deep", optimizer="sgd", lr=0.01, epochs=3,
                              model_kwargs={"std": 0.177}),
    "vanish": RunConfig(model="sigmoid", optimizer="sgd", lr=0.1, epochs=5),
    "vanish_twin": RunConfig(model="sigmoid", optimizer="sgd", lr=0.1, epochs=5,
                             model_kwargs={"depth": 2}),
    "dead": RunConfig(dead_bias=-20.0, epochs=5),
    "overfit": RunConfig(model="mlp", n_train=60, epochs=60, batch_size=30),
    "overfit_twin": RunConfig(model="mlp"),
    "underfit": RunConfig(lr=1e-6),
    "shuffled": RunConfig(shuffle_labels=True),
    "unstable": RunConfig(optimizer="sgd", lr=0.5, batch_size=16, epochs=4),
    "unstable_twin": RunConfig(optimizer="sgd", lr=0.05, batch_size=16, epochs=4),
    "input_bound": RunConfig(delay=0.001, epochs=1),
    "input_bound_twin": RunConfig(epochs=1),
}


@cache
def findings(name: str) -> vd.Findings:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, session = train(RUNS[name], lambda m, loader: vd.watch(m, loader=loader, every=5))
    found = session.findings()
    session.close()
    return found


def one(found: vd.Findings, code: str) -> vd.Finding:
    hits = [f for f in found if f.code == code]
    assert hits, f"{code} not in {found.codes}"
    return hits[0]


@pytest.mark.parametrize("name", ["clean", "clean_sgd", "overfit_twin", "unstable_twin",
                                  "input_bound_twin", "explode_twin"])
def test_clean_runs_give_no_warning(name):
    assert not findings(name).at_least("warning"), findings(name)


def test_nan_in_the_data_is_traced_to_the_first_module():
    found = findings("nan_input")
    f = one(found, "nonfinite-activation")
    assert f.where == "features.0" and f.severity == "error"
    loss = one(found, "nonfinite-loss")
    assert "first at step 30" in loss.message
    assert "exploding-gradients" not in found.codes  # a consequence, not a cause


def test_exploding_fires_and_twin_is_quiet():
    f = one(findings("explode"), "exploding-gradients")
    assert "reached" in f.message and "learning rate" in f.hint
    assert "exploding-gradients" not in findings("explode_twin").codes


def test_vanishing_fires_on_deep_sigmoid_and_twin_is_quiet():
    f = one(findings("vanish"), "vanishing-gradients")
    assert f.where == "net.1.weight" and f.evidence["ratio"] < 1e-3
    assert "sigmoid" in f.hint
    assert "vanishing-gradients" not in findings("vanish_twin").codes


def test_dead_units_fire_on_negative_bias_and_clean_is_quiet():
    f = one(findings("dead"), "dead-units")
    assert f.where == "features.1" and f.evidence["dead_share"] == 1.0
    assert "vanishing-gradients" not in findings("dead").codes  # blocked, not vanishing
    assert "dead-units" not in findings("clean").codes


def test_overfitting_fires_on_a_tiny_training_set_and_twin_is_quiet():
    f = one(findings("overfit"), "overfitting")
    assert f.where == "val_loss" and f.evidence["gap"] > 100
    assert "overfitting" not in findings("overfit_twin").codes


@pytest.mark.parametrize("name", ["underfit", "shuffled"])
def test_underfitting_fires_when_nothing_is_learned(name):
    f = one(findings(name), "underfitting")
    assert f.evidence["end"] / f.evidence["start"] > 0.8
    assert "shuffled" in f.hint


def test_unstable_fires_on_a_too_high_learning_rate_and_twin_is_quiet():
    f = one(findings("unstable"), "unstable-loss")
    assert f.evidence["spike_share"] >= 0.06
    assert "unstable-loss" not in findings("unstable_twin").codes


def test_input_bound_fires_on_a_slow_dataset_and_twin_is_quiet():
    f = one(findings("input_bound"), "input-bound")
    assert f.evidence["wait_share"] > 0.5 and "num_workers" in f.hint
    assert "input-bound" not in findings("input_bound_twin").codes


# -- rules on synthetic records (edges) -----------------------------------------------------
def test_optimizer_step_never_called_is_named():
    steps = np.arange(200)
    rec = TrainingRecords(
        scalars={"loss": (steps, np.full(200, 2.3))},
        grad_steps=np.arange(0, 200, 10), grads=np.tile([[1.0, 2.0, 0.0]], (20, 1, 1)),
        param_paths=["w"], param_numel=[10],
    )
    f = rule_underfitting(rec)[0]
    assert "optimizer.step()" in f.hint


def test_overfitting_needs_a_sustained_rise():
    train_steps = np.arange(100)
    rec = TrainingRecords(scalars={
        "loss": (train_steps, np.linspace(2, 0.01, 100)),
        "val_loss": (np.array([19, 39, 59, 79, 99]), np.array([1.0, 0.5, 0.4, 0.6, 0.39])),
    })
    assert rule_overfitting(rec) == []  # back at its best: noise, not overfitting


def test_instability_ignores_noise_on_a_flat_curve():
    rng = np.random.default_rng(0)
    flat = 2.3 + rng.normal(0, 0.01, 300)
    assert loss_instability(flat)[1] == 0.0


def test_empty_records_give_nothing():
    assert diagnose(TrainingRecords()) == []
