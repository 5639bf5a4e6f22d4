"""Training-protocol relations: a graph cut before a module that trains, BatchNorm fed
too few values per channel, a GAN whose real and generated samples live in different
ranges, a discriminator that wins at once (analysis/training/params.py, protocol.py; the
facts from collect/taps/program.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, TensorDataset

from tests.corpus import relations_train
from vizdebug.analysis.training.diagnose import diagnose
from vizdebug.analysis.training.params import graph_cut, rule_parameters_not_updated
from vizdebug.analysis.training.protocol import (
    rule_batchnorm_small_batch,
    rule_discriminator_wins,
    rule_gan_range,
)
from vizdebug.collect.taps.program import ProgramTap
from vizdebug.findings import CODES
from vizdebug.records import (
    ACTIVATION_FIELDS,
    GRAD_FIELDS,
    OptimizerFacts,
    ProgramFacts,
    TrainingRecords,
)

NAN = np.nan


def _records(order: list[float], graded: list[bool], held: list[int] | None = None,
             samples: int = 6) -> TrainingRecords:
    """Three modules ``enc``, ``mid``, ``head`` with one weight each; ``order`` their call
    order (NaN: never ran), ``graded`` whether each weight gets a gradient."""
    acts = np.zeros((samples, 3, len(ACTIVATION_FIELDS)))
    acts[:, :, ACTIVATION_FIELDS.index("order")] = order
    grads = np.ones((samples, 3, len(GRAD_FIELDS)))
    grads[:, ~np.asarray(graded), :2] = NAN
    held = [0, 1, 2] if held is None else held
    return TrainingRecords(
        module_paths=["enc", "mid", "head"], module_classes=["Linear"] * 3,
        act_steps=np.arange(samples), activations=acts,
        param_paths=["enc.weight", "mid.weight", "head.weight"], param_numel=[4, 4, 4],
        grad_steps=np.arange(samples), grads=grads,
        program=ProgramFacts(optimizers=[OptimizerFacts("Adam", held, 0, samples)]))


# -- gradient cut -----------------------------------------------------------------------------
def test_a_cut_before_a_trained_module_is_a_warning_at_the_cut():
    rec = _records([0, 1, 2], [False, False, True])
    found = rule_parameters_not_updated(rec)
    assert [(f.code, f.severity, f.where) for f in found] == [("graph-cut", "warning", "mid")]
    assert found[0].evidence["parameters"] == ["enc.weight", "mid.weight"]
    assert found[0].evidence["trained_after"] == "head"


def test_a_head_used_only_at_test_time_stays_info():
    rec = _records([0, 1, NAN], [True, True, False])  # head never ran in training
    found = rule_parameters_not_updated(rec)
    assert [(f.code, f.severity) for f in found] == [("parameters-not-updated", "info")]


def test_parameters_outside_the_optimizer_stay_info():
    rec = _records([0, 1, 2], [False, True, True], held=[1, 2])  # enc: a target network
    assert graph_cut(rec, np.array([0])) is None
    assert [f.severity for f in rule_parameters_not_updated(rec)] == ["info"]


def test_an_ungraded_module_after_every_trained_one_is_not_a_cut():
    rec = _records([0, 1, 2], [True, True, False])  # computed last, not used by the loss
    assert [f.code for f in rule_parameters_not_updated(rec)] == ["parameters-not-updated"]


# -- BatchNorm and the batch it receives ------------------------------------------------------
def _bn_records(numel: float, last: int, channels: int = 8, drop_last: bool = False,
                batch: int = 32) -> TrainingRecords:
    acts = np.zeros((4, 1, len(ACTIVATION_FIELDS)))
    acts[:, 0, ACTIVATION_FIELDS.index("numel")] = numel
    facts = ProgramFacts(loader_batch_size=batch, batch_sizes=[batch] * 4, drop_last=drop_last,
                         dataset_len=10 * batch + last, batch_norms=[["bn", channels]])
    return TrainingRecords(module_paths=["bn"], module_classes=["BatchNorm1d"],
                           act_steps=np.arange(4), activations=acts, program=facts)


def test_a_last_batch_of_one_into_batchnorm1d_is_named():
    found = rule_batchnorm_small_batch(_bn_records(32 * 8, last=1))
    assert [(f.code, f.where) for f in found] == [("batchnorm-small-batch", "bn")]
    assert found[0].evidence == {"batch": 1, "values_per_channel": 1}
    assert "drop_last=True" in found[0].hint


def test_a_small_last_batch_of_images_has_enough_values_per_channel():
    # three values per channel (public/cgan-digits trains well through them): info
    assert [f.severity for f in rule_batchnorm_small_batch(_bn_records(32 * 8, last=3))] == ["info"]
    # DCGAN's discriminator: a last batch of 3 into BatchNorm2d on 2x2 maps: 12 values
    assert rule_batchnorm_small_batch(_bn_records(32 * 8 * 4, last=3)) == []
    assert rule_batchnorm_small_batch(_bn_records(32 * 8, last=1, drop_last=True)) == []
    assert rule_batchnorm_small_batch(_bn_records(32 * 8, last=0)) == []


def test_the_tap_reads_drop_last_the_dataset_length_and_batchnorms():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    tap = ProgramTap(model)
    ds = TensorDataset(torch.zeros(10, 3))
    tap.observe_loader(DataLoader(ds, batch_size=3, drop_last=True))
    facts = tap.facts()
    assert (facts.drop_last, facts.dataset_len, facts.batch_norms) == (True, 10, [["1", 4]])

    class Stream(IterableDataset):
        def __iter__(self):
            yield torch.zeros(3)

    tap.observe_loader(DataLoader(Stream(), batch_size=2))
    assert tap.facts().dataset_len is None


def test_new_program_facts_survive_the_json_round_trip():
    facts = ProgramFacts(drop_last=False, dataset_len=417, batch_norms=[["bn", 8]],
                         input_ranges=[[0.0, 1.0], [-0.9, 0.8]], frozen_norm_drift={"bn": 0.5})
    back = ProgramFacts.from_json(facts.to_json())
    assert back.frozen_norm_drift == {"bn": 0.5}
    assert (back.drop_last, back.dataset_len) == (False, 417)
    assert back.batch_norms == [["bn", 8]] and back.input_ranges == [[0.0, 1.0], [-0.9, 0.8]]
    assert ProgramFacts.from_json({}).drop_last is None


def test_frozen_batchnorm_in_train_mode_is_info_with_its_drift():
    """The feature-extraction tutorial's pattern (trains fine): info, with how far the
    frozen layer's running mean moved on new data."""
    import vizdebug as vd

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    model[0].requires_grad_(False)
    model[1].requires_grad_(False)
    opt = torch.optim.SGD(model[3].parameters(), lr=0.1)
    with vd.watch(model, every=1) as session:
        for _ in range(70):
            x = torch.randn(16, 4) * 3 + 2  # a shifted domain
            loss = nn.functional.cross_entropy(model(x), torch.randint(0, 2, (16,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
        found = [f for f in session.findings() if f.code == "frozen-batchnorm-training"]
    assert [(f.severity, f.where) for f in found] == [("info", "1")]
    assert found[0].evidence["drift"]["1"] > 0 and "moved by" in found[0].message


# -- GANs -------------------------------------------------------------------------------------
def _gan_records(real: tuple[float, float], inputs: list[list[float]], last_cls: str = "Linear",
                 d_loss: np.ndarray | None = None, g_loss: np.ndarray | None = None):
    from vizdebug.records import LoaderRecord

    steps = np.arange(60)
    d = np.full(60, 1.3) if d_loss is None else d_loss
    g = np.full(60, 0.7) if g_loss is None else g_loss
    stats = np.tile([real[0], real[1], 0.3, 0.3, 0, 64], (5, 1)).astype(float)
    acts = np.zeros((3, 2, len(ACTIVATION_FIELDS)))
    acts[:, :, ACTIVATION_FIELDS.index("order")] = [0, 1]
    opts = [OptimizerFacts("Adam", [0], 0, 60), OptimizerFacts("Adam", [], 4, 60)]
    return TrainingRecords(
        scalars={"loss_D": (steps, d), "loss_G": (steps, g)},
        module_paths=["fc", "out"], module_classes=["Linear", last_cls],
        act_steps=np.arange(3), activations=acts,
        loader=LoaderRecord(batches=5, batch_steps=np.arange(5), batch_stats=stats),
        program=ProgramFacts(optimizers=opts, input_ranges=inputs))


def test_unit_real_data_against_a_tanh_generator_is_named():
    found = rule_gan_range(_gan_records((0.0, 1.0), [], last_cls="Tanh"))
    assert [(f.code, f.where) for f in found] == [("gan-range-mismatch", "out")]


def test_a_discriminator_reading_fakes_below_the_real_range_is_named():
    found = rule_gan_range(_gan_records((0.0, 1.0), [[0.0, 1.0], [-0.8, 0.9]]))
    assert [f.code for f in found] == ["gan-range-mismatch"]
    # a generator's noise input is no real batch: nothing to compare
    assert rule_gan_range(_gan_records((0.0, 1.0), [[-3.1, 2.9]])) == []
    # real data in [-1, 1] (the working DCGAN): nothing to say
    assert rule_gan_range(_gan_records((-1.0, 1.0), [[-1, 1]], last_cls="Tanh")) == []


def test_a_discriminator_that_wins_at_once():
    d = np.r_[np.full(3, 1.4), np.full(57, 0.01)]
    g = np.r_[np.full(3, 0.7), np.linspace(2, 9, 57)]
    found = rule_discriminator_wins(_gan_records((-1, 1), [], d_loss=d, g_loss=g))
    assert [(f.code, f.where) for f in found] == [("discriminator-wins", "loss_D")]
    # a WGAN critic's loss goes negative: not a probability, nothing to say
    assert rule_discriminator_wins(_gan_records((-1, 1), [], d_loss=d - 1, g_loss=g)) == []


def test_new_codes_are_in_the_vocabulary():
    for code in ("graph-cut", "batchnorm-small-batch", "frozen-batchnorm-training",
                 "gan-range-mismatch", "discriminator-wins"):
        assert CODES[code] == "training"


def test_empty_records_say_nothing():
    assert diagnose(TrainingRecords()).codes == []


# -- the corpus: every fault named at its place, every twin clean ------------------------------
@pytest.mark.parametrize("fault", relations_train.FAULTS, ids=lambda f: f.name)
def test_corpus_fault_and_twin(fault):
    hits = [f for f in fault.program(False)
            if f.code == fault.code and f.severity != "info"
            and (fault.where is None or fault.where in (f.where or ""))]
    assert hits, fault.name
    assert not [f for f in fault.program(True) if f.severity != "info"]
