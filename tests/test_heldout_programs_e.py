"""The causes of the false alarms the second round of held-out working programs
(tests/corpus/public_e.py) showed before any rule was changed for them, each checked on
the rule that spoke, with curves shaped like the programs' own."""

from __future__ import annotations

import numpy as np

from vizdebug.analysis.training.curves import rule_underfitting, rule_unstable
from vizdebug.records import ProgramFacts, TrainingRecords


def _loss(values, facts: ProgramFacts | None = None) -> TrainingRecords:
    values = np.asarray(values, dtype=float)
    return TrainingRecords(scalars={"loss": (np.arange(values.size), values)}, program=facts)


def _policy_gradient(n: int = 183, seed: int = 0) -> np.ndarray:
    """REINFORCE's per-episode ``sum(-log_prob * normalised return)``: centred near zero,
    both signs, its spread growing with the episode's length (pytorch/examples'
    reinforce.py logged 40% negative values while its reward rose 15 -> 175)."""
    rng = np.random.default_rng(seed)
    return 0.5 + rng.normal(size=n) * np.linspace(1.0, 6.0, n)


def test_a_loss_of_both_signs_is_not_judged_by_ratios():
    y = _policy_gradient()
    assert np.mean(y < 0) > 0.3
    assert rule_underfitting(_loss(y)) == []
    assert rule_unstable(_loss(y)) == []


def test_a_positive_loss_that_stalls_or_spikes_still_is_named():
    rng = np.random.default_rng(1)
    stalled = 2.3 + 0.05 * rng.normal(size=300)
    assert [f.code for f in rule_underfitting(_loss(stalled))] == ["underfitting"]
    spiky = np.linspace(2.0, 0.5, 300)
    spiky[40::6] *= 4.0
    assert [f.code for f in rule_unstable(_loss(spiky))] == ["unstable-loss"]


def _fine_tuning(n: int = 160, seed: int = 0) -> np.ndarray:
    """Quantization-aware training of a trained classifier at lr 1e-4 (the static
    quantization tutorial's recipe): per-batch cross-entropy 0.051 -> 0.046."""
    rng = np.random.default_rng(seed)
    return np.abs(0.05 - 0.0001 * np.arange(n) / 4 + 0.01 * rng.normal(size=n))


def test_a_class_loss_that_proves_most_predictions_right_is_not_underfitting():
    y = _fine_tuning()
    ce = ProgramFacts(loss_functions=["cross_entropy"])
    assert rule_underfitting(_loss(y, ce)) == []
    # the same curve from a loss the bound says nothing about (MSE) still is
    assert [f.code for f in rule_underfitting(_loss(y, ProgramFacts(loss_functions=["mse_loss"])))] \
        == ["underfitting"]
    # and a cross-entropy stalled above the bound (0.5 nats: >= 28% right only) still is
    assert [f.code for f in rule_underfitting(_loss(y + 0.45, ce))] == ["underfitting"]
    # mixup's probability targets: the loss's floor is not 0, the bound does not hold
    soft = ProgramFacts(loss_functions=["cross_entropy"], soft_targets=True)
    assert [f.code for f in rule_underfitting(_loss(y, soft))] == ["underfitting"]
