"""Normalisation over the wrong axis: a softmax/log_softmax over the batch instead of the
classes, into a class loss (judged from the values: which axis sums to one) or into a loss of
the program's own (judged from the op: its axis is the batch the model received)."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from vizdebug.analysis.training.loss_checks import batch_of, loss_problems, normalised_over_batch
from vizdebug.analysis.training.loss_verdicts import loss_event_finding
from vizdebug.collect.checks.loss_rules import normaliser, summarize
from vizdebug.collect.checks.losses import LossWatch
from vizdebug.records import AnomalyEvent

torch.manual_seed(0)
X = torch.randn(32, 5, requires_grad=True)
Y = torch.randint(0, 5, (32,))


def events_of(call, inputs: tuple = (X,), loader_batch: int | None = None) -> list:
    """The events of the torch calls ``call`` makes while a LossWatch is armed after a
    forward pass that received ``inputs``."""
    events, errors = [], []
    watch = LossWatch(events.append, lambda where, exc: errors.append(exc))
    watch.loader_batch = loader_batch
    watch.arm(3, inputs)
    try:
        call()
    finally:
        watch.disarm()
    assert not watch.armed and errors == []
    return events


def places(call, inputs: tuple = (X,), loader_batch: int | None = None) -> list[tuple]:
    found = [loss_event_finding(e) for e in events_of(call, inputs, loader_batch)]
    return [(f.code, f.severity, f.where) for f in found]


def _gathered(log_probs: torch.Tensor) -> torch.Tensor:
    return -log_probs.gather(1, Y[:, None]).mean()


WRONG = {
    "nll-log-softmax-dim0": (lambda: F.nll_loss(F.log_softmax(X, 0), Y), "loss (nll_loss)"),
    "nll-module-dim0": (lambda: nn.NLLLoss()(nn.LogSoftmax(dim=0)(X), Y), "loss (nll_loss)"),
    "ce-softmax-dim0": (lambda: F.cross_entropy(F.softmax(X, 0), Y), "loss (cross_entropy)"),
    "gather-log-softmax-dim0": (lambda: _gathered(F.log_softmax(X, 0)), "loss (log_softmax)"),
    "gather-softmax-log": (lambda: _gathered(F.softmax(X, dim=0).log()), "loss (softmax)"),
    "sliced-mixture-weights": (lambda: (F.softmax(X, 0)[:, :3] * X[:, :3]).sum(),
                               "loss (softmax)"),
}
RIGHT = {
    "nll-log-softmax-dim1": lambda: F.nll_loss(F.log_softmax(X, 1), Y),
    "nll-positional-1": lambda: F.nll_loss(F.log_softmax(X, 1), Y),
    "gather-dim-minus-1": lambda: _gathered(F.log_softmax(X, dim=-1)),
    "ce-raw-scores": lambda: F.cross_entropy(X, Y),
    "one-sample-dim0": lambda: -F.log_softmax(X[0], 0)[Y[0]],  # no batch axis: dim 0 is right
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_normalisation_over_the_batch_is_named_at_its_place(name):
    call, where = WRONG[name]
    assert places(call) == [("loss-output-mismatch", "warning", where)]


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_normalisation_over_the_classes_says_nothing(name):
    assert places(RIGHT[name]) == []


def test_contrastive_similarities_are_normalised_over_either_batch_axis():
    """SimCLR/CLIP: an (N, N) similarity; softmax over either axis is right."""
    sim = torch.randn(32, 32, requires_grad=True)
    labels = torch.arange(32)
    assert places(lambda: F.nll_loss(F.log_softmax(sim, 0), labels)) == []
    assert places(lambda: -F.log_softmax(sim, dim=0).diag().mean(), (sim,)) == []
    assert places(lambda: (F.cross_entropy(sim, labels) + F.cross_entropy(sim.t(), labels)) / 2,
                  (sim,)) == []


def test_attention_over_a_sequence_as_long_as_the_batch_says_nothing():
    """Weights (B, H, T, T) over the keys, T == B: two axes have the batch's size."""
    q = torch.randn(8, 2, 8, 4, requires_grad=True)
    weights = torch.softmax(q @ q.transpose(-1, -2), dim=-1)
    assert places(lambda: (weights @ q).pow(2).mean(), (torch.randn(8, 8, 4),)) == []


def test_a_sequence_first_language_model_over_its_vocabulary_says_nothing():
    """(seq, batch, vocab) log-probabilities over the last axis; the loader's batch is axis 1."""
    logits = torch.randn(12, 8, 20, requires_grad=True)
    tokens = torch.randint(0, 20, (12, 8))
    inputs = (torch.randint(0, 20, (12, 8)),)

    def lm_loss(dim):
        return lambda: F.nll_loss(F.log_softmax(logits, dim).reshape(-1, 20), tokens.reshape(-1))

    assert places(lm_loss(-1), inputs, loader_batch=8) == []
    mixture = lambda: (F.log_softmax(logits, dim=1) * logits).sum()  # noqa: E731
    assert places(mixture, inputs, loader_batch=8) == [
        ("loss-output-mismatch", "warning", "loss (log_softmax)")]


def test_without_the_models_input_the_op_says_nothing():
    assert places(lambda: _gathered(F.log_softmax(X, 0)), ()) == []


def test_the_relation_itself():
    assert normalised_over_batch((32, 5), 0, 32) and not normalised_over_batch((32, 5), 1, 32)
    assert normalised_over_batch((1, 2), 0, 1)  # a batch of one over axis 0: all ones
    assert not normalised_over_batch((32, 32), 1, 32)  # which axis is the batch?
    assert not normalised_over_batch((32, 1), 0, 32)  # nothing else to normalise over
    assert not normalised_over_batch((32,), 0, 32)
    assert not normalised_over_batch((16, 5), 0, None)
    assert normalised_over_batch((12, 8, 5), 1, 8) and not normalised_over_batch((12, 8, 5), 2, 8)
    assert batch_of((64, 1, 8, 8), 64) == 64 and batch_of((3, 1, 8, 8), 64) == 3
    assert batch_of((12, 8, 5), 8) == 8 and batch_of((12, 8, 5), None) == 12
    assert batch_of((), 8) is None and batch_of(None, 8) is None


def test_the_op_and_its_axis_are_read_from_the_graph():
    assert normaliser(F.log_softmax(X, dim=-1)) == ("logsoftmax", 1, (32, 5))
    assert normaliser(F.softmax(X, 0).view(-1)) == ("softmax", 0, (32, 5))  # past a view
    assert normaliser(X * 2) is None and normaliser(F.softmax(X.detach(), 0)) is None


def _summary(x: torch.Tensor) -> dict:
    return summarize("nll_loss", (x, Y), {})


def test_the_torch_summary_measures_what_the_numpy_one_does():
    lp = F.log_softmax(torch.randn(32, 5, generator=torch.Generator().manual_seed(0)), 0)
    fast, slow = _summary(lp), _summary(lp.half())  # (half precision: the torch path)
    for key in ("lse0_dev", "colsum_dev", "lse_dev", "rowsum_dev"):
        assert fast[key] == pytest.approx(slow[key], rel=1e-3, abs=3e-3)
    assert fast["lse0_dev"] < 1e-5 < fast["lse_dev"]


def test_a_stored_summary_without_the_column_statistics_still_reads():
    old = {k: v for k, v in _summary(F.log_softmax(X.detach(), 0)).items()
           if k not in ("lse0_dev", "colsum_dev")}
    assert loss_problems(old) == []


def test_a_stored_event_gives_the_same_finding():
    for call in (lambda: F.nll_loss(F.log_softmax(X, 0), Y), lambda: _gathered(F.softmax(X, 0))):
        event = events_of(call)[0]
        stored = AnomalyEvent.from_json(json.loads(json.dumps(event.to_json())))
        assert loss_event_finding(stored) == loss_event_finding(event)


def test_the_message_has_the_numbers_and_the_hint_the_fix():
    found = loss_event_finding(events_of(lambda: _gathered(F.log_softmax(X, 0)))[0])
    assert "axis 0 of a (32, 5) tensor" in found.message and "32 entries" in found.message
    assert "dim=-1" in found.hint
    found = loss_event_finding(events_of(lambda: F.nll_loss(F.log_softmax(X, 0), Y))[0])
    assert "32 samples, 5 classes" in found.message and "dim=1" in found.hint


def _mixture_training(watch: bool, dim: int) -> tuple[list, list[torch.Tensor]]:
    """A small mixture-density fit (the mixture weights' softmax in forward, the loss of
    the program's own): its findings and its trained parameters."""
    import vizdebug as vd

    torch.manual_seed(0)
    model = nn.Linear(3, 6)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    session = vd.watch(model) if watch else None
    for _ in range(20):
        x = torch.randn(16, 3)
        out = model(x)
        pi, mu = F.softmax(out[:, :3], dim=dim), out[:, 3:]
        density = pi * torch.exp(-0.5 * (x[:, :1] - mu) ** 2)
        loss = -torch.log(density.sum(1) + 1e-6).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    found = session.findings() if session else []
    if session:
        session.close()
    return found, [p.detach().clone() for p in model.parameters()]


def test_watch_names_mixture_weights_over_the_batch_and_trains_bitwise_the_same():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found, watched = _mixture_training(True, 0)
        _, plain = _mixture_training(False, 0)
        fixed, _ = _mixture_training(True, 1)
    assert [(f.code, f.where) for f in found if f.severity != "info"] == [
        ("loss-output-mismatch", "loss (softmax)")]
    assert [f for f in fixed if f.severity != "info"] == []
    assert all(torch.equal(a, b) for a, b in zip(watched, plain))


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is faster on shared cores
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("fixed", [False, True])
def test_the_corpus_programs(fixed, one_thread):
    from tests.corpus import relations_axis
    from tests.corpus.run import alarms

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fault in relations_axis.FAULTS:
            said = [(f.code, f.where) for f in alarms(fault.program(fixed))]
            assert said == ([] if fixed else [(fault.code, fault.where)]), fault.name
