"""Each diagnosis rule fires on a real digits run built to have the problem, and stays
quiet on its clean twin; clean runs give no warning at all.

The thresholds in ``vizdebug/analysis/training/diagnose.py`` were calibrated on these runs (and on
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
from vizdebug.analysis.training.curves import rule_input_bound
from vizdebug.analysis.training.diagnose import (
    TrainingRecords,
    diagnose,
    loss_instability,
    rule_dead_units,
    rule_overfitting,
    rule_underfitting,
    rule_vanishing,
)
from vizdebug.records import LoaderRecord

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
    "input_bound": RunConfig(delay=0.003, epochs=1),  # ~4 s of waiting in all
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


# -- recalibrations against false alarms on working programs (issue 11) ------------------
def test_overfitting_ignores_a_rise_on_a_nearly_solved_task():
    """Validation loss 0.008 -> 0.05 at 99% accuracy: a rise, but nothing to win back."""
    steps = np.arange(100)
    val_steps = np.arange(9, 100, 10)
    val = np.array([0.3, 0.02, 0.008, 0.01, 0.015, 0.02, 0.03, 0.04, 0.045, 0.05])
    rec = TrainingRecords(scalars={"loss": (steps, np.geomspace(0.7, 1e-4, 100)),
                                   "val_loss": (val_steps, val)})
    assert rule_overfitting(rec) == []
    rec.scalars["val_loss"] = (val_steps, val * 20)  # the same shape at 0.16 -> 1.0: overfit
    assert rule_overfitting(rec)[0].code == "overfitting"


def _vanishing_records(loss: np.ndarray) -> TrainingRecords:
    n = 20
    grads = np.zeros((n, 2, 3))
    grads[:, 0, 0], grads[:, 1, 0] = 1e-6, 1.0  # first layer 1e-6 of the last one
    return TrainingRecords(scalars={"loss": (np.arange(loss.size), loss)},
                           grad_steps=np.arange(n) * 10, grads=grads,
                           param_paths=["first.weight", "last.weight"], param_numel=[100, 100])


def test_vanishing_is_not_named_on_a_solved_task():
    assert rule_vanishing(_vanishing_records(np.full(200, 2.3)))[0].where == "first.weight"
    assert rule_vanishing(_vanishing_records(np.geomspace(2.3, 0.003, 200))) == []


def test_dead_units_need_most_of_a_layer():
    dead = np.zeros((10, 1, 9))
    dead[:, 0, 3] = 0.6  # 60% dead: seen in networks that train fine
    rec = TrainingRecords(module_paths=["act"], module_classes=["ReLU"], activations=dead,
                          act_steps=np.arange(10))
    assert rule_dead_units(rec) == []
    rec.activations[:, 0, 3] = 0.9
    assert rule_dead_units(rec)[0].evidence["dead_share"] == 0.9


def _loader(wait: float, compute: float, batches: int = 40) -> LoaderRecord:
    return LoaderRecord(batches=batches, total_wait=wait, total_compute=compute,
                        wait=np.full(batches, wait / batches),
                        compute=np.full(batches, compute / batches))


def test_input_bound_weighs_the_time_lost_too():
    assert rule_input_bound(TrainingRecords(loader=_loader(0.03, 0.01))) == []  # 30 ms in all
    assert rule_input_bound(TrainingRecords(loader=_loader(30.0, 10.0)))[0].code == "input-bound"


def test_underfitting_with_zero_gradients_blames_the_graph_not_the_optimizer():
    steps = np.arange(200)
    rec = TrainingRecords(
        scalars={"loss": (steps, np.full(200, 2.3))},
        grad_steps=np.arange(0, 200, 10), grads=np.zeros((20, 1, 3)),
        param_paths=["w"], param_numel=[10],
    )
    hint = rule_underfitting(rec)[0].hint
    assert "exactly zero" in hint and "optimizer.step()" not in hint
