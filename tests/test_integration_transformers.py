"""The Hugging Face Trainer callback on tiny models built from configs (nothing is
downloaded), on token data made here: a learning rate 100x too high is found, the same
run at a sane rate is clean, the loss the model computes reaches the curve (the same
numbers the Trainer logs, with and without gradient accumulation), evaluation metrics
arrive as eval series, the stored run (with a tracked layer) is readable, and the ranks of a distributed job
agree on the run's name. The extra is installed by
scripts/test.sh (`pip install -e ".[test,lightning,transformers]"`)."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
import torch

import vizdebug as vd

# a plain ".[test]" install has neither: skip this module there, do not abort collection
_EXTRA = 'needs the extra: pip install -e ".[transformers]"'
pytest.importorskip("accelerate", reason=_EXTRA)  # the Trainer needs it
hf = pytest.importorskip("transformers", reason=_EXTRA)
BertConfig, BertForSequenceClassification = hf.BertConfig, hf.BertForSequenceClassification
GPT2Config, GPT2LMHeadModel = hf.GPT2Config, hf.GPT2LMHeadModel
Trainer, TrainerCallback, TrainingArguments = hf.Trainer, hf.TrainerCallback, hf.TrainingArguments
VizdebugCallback = pytest.importorskip("vizdebug.integrations.transformers").VizdebugCallback

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning",
                                        "ignore::UserWarning")
SEQ = 16


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models train ~10x faster on one thread on a shared 2-core machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


class Tokens(torch.utils.data.Dataset):
    """Random token ids; the class is whether the first token is below 30 (learnable)."""

    def __init__(self, n: int, seed: int, lm: bool = False) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(5, 60, (n, SEQ), generator=g)
        self.labels = self.ids if lm else (self.ids[:, 0] < 30).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(SEQ, dtype=torch.long),
                "labels": self.labels[i]}


def bert() -> BertForSequenceClassification:
    return BertForSequenceClassification(BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=32, num_labels=2))


def gpt2() -> GPT2LMHeadModel:
    return GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2,
                                      n_head=2))


def train(tmp_path, model_fn=bert, *, lr=1e-3, callback=None, lm=False, **args):
    torch.manual_seed(0)
    model = model_fn()
    cb = callback or VizdebugCallback()
    options = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=16,
                   num_train_epochs=3, learning_rate=lr, logging_steps=5,
                   eval_strategy="epoch", save_strategy="no", report_to=[],
                   disable_tqdm=True, use_cpu=True, seed=0, lr_scheduler_type="constant")
    options.update(args)
    trainer = Trainer(model=model, args=TrainingArguments(**options),
                      train_dataset=Tokens(320, 0, lm), eval_dataset=Tokens(64, 1, lm),
                      callbacks=[cb])
    trainer.train()
    return trainer, cb


def warnings_of(findings: vd.Findings) -> list[str]:
    return [f"{f.severity} {f.code} [{f.where}]" for f in findings.at_least("warning")]


def assert_same_loss_as_the_trainer(trainer, session):
    """Each loss the Trainer logged (the mean over `logging_steps` steps) is the mean of
    the per-step losses vizdebug logged over those steps."""
    df = session.scalars()
    ours = df[df.name == "loss"].set_index("step").value
    logged = [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h]
    assert len(logged) >= 3
    for end, value in logged:
        window = ours.loc[end - 5:end - 1]
        assert len(window) == 5
        assert window.mean() == pytest.approx(value, rel=1e-3, abs=1e-4)


def test_a_learning_rate_100x_too_high_is_found(tmp_path):
    # AdamW at 0.1 (a sane rate is 1e-3; the Trainer clips gradients): the model collapses
    # to a constant output, and the gradients stop reaching the embeddings
    _, cb = train(tmp_path, lr=1e-1)
    found = cb.session.findings()
    assert any(f.code == "vanishing-gradients" and f.severity == "warning"
               and f.where == "bert.embeddings.word_embeddings.weight"
               for f in found), warnings_of(found)


def test_the_same_run_at_a_sane_rate_is_clean(tmp_path):
    trainer, cb = train(tmp_path, lr=1e-3)
    session = cb.session
    assert session.closed and session.collector_errors() == []
    assert warnings_of(session.findings()) == []
    assert session.hooks.steps == trainer.state.global_step == 60
    steps = session.scalars().query("name == 'loss'").step.tolist()
    assert steps == list(range(60))
    assert_same_loss_as_the_trainer(trainer, session)
    rec = session.records()
    assert rec.val_loss()[0] == "eval_loss"
    eval_steps, eval_values = rec.scalars["eval_loss"]
    assert eval_steps.tolist() == [19, 39, 59]
    assert eval_values[-1] == pytest.approx(trainer.state.log_history[-2]["eval_loss"])
    assert not any(n.endswith(("_runtime", "_per_second")) for n in rec.scalars)


def test_gradient_accumulation_on_a_causal_lm(tmp_path):
    """GPT-2 divides its loss by the step's token count (num_items_in_batch): the step's
    loss is the sum over its batches, and vizdebug counts optimizer steps."""
    trainer, cb = train(tmp_path, gpt2, lm=True, lr=3e-3, per_device_train_batch_size=8,
                        gradient_accumulation_steps=2, num_train_epochs=1)
    assert trainer.state.global_step == 20
    assert cb.session.hooks.steps == 20
    assert_same_loss_as_the_trainer(trainer, cb.session)
    loss = cb.session.scalars().query("name == 'loss'")
    assert loss.step.tolist() == list(range(20))
    assert np.log(64) * 0.8 < loss.value.iloc[0] < np.log(64) * 1.2  # chance level at start


def test_stored_run_is_readable(tmp_path):
    path = tmp_path / "hf.sqlite"
    probe = Tokens(32, 2)
    cb = VizdebugCallback(run=path, every=2, track_embeddings={
        "layer": "bert.pooler", "probe": probe.ids, "labels": probe.labels})
    trainer, _ = train(tmp_path, callback=cb, num_train_epochs=1)
    run = vd.open_run(path)
    assert run.state == "closed"
    frames = run.embedding_frames("bert.pooler")
    # the Trainer's loader cannot be tapped: the epochs are known from on_epoch_end on
    assert [(f.step, f.epoch) for f in frames] == [(0, None), (20, 1)]
    assert frames[-1].features.shape == (32, 32)
    df = run.scalars()
    assert set(df.name) >= {"loss", "eval_loss", "learning_rate", "grad_norm"}
    assert df[df.name == "loss"].step.tolist() == list(range(trainer.state.global_step))
    config = run.meta["config"]  # the TrainingArguments, for vd.compare_runs
    assert config["learning_rate"] == trainer.args.learning_rate
    assert config["num_train_epochs"] == 1


def test_bad_options_are_refused_when_the_callback_is_built():
    with pytest.raises(vd.VizdebugTypeError, match="on_anomly"):
        VizdebugCallback(on_anomly="raise")


def test_training_is_bitwise_unchanged(tmp_path):
    plain, _ = train(tmp_path, callback=TrainerCallback(), num_train_epochs=1)
    watched, cb = train(tmp_path, callback=VizdebugCallback(every=1), num_train_epochs=1)
    assert cb.session.hooks.steps == 20
    for (name, a), (_, b) in zip(plain.model.named_parameters(),
                                 watched.model.named_parameters()):
        assert torch.equal(a, b), name


def _name_on_rank(rank: int, runs: str, port: int) -> None:
    import torch.distributed as dist

    from vizdebug.integrations._common import shared_run_path
    from vizdebug.integrations.transformers import _broadcast

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2)
    try:  # a name of each rank's own would differ (it holds the process id)
        Path(runs, f"name{rank}.txt").write_text(str(shared_run_path(runs, _broadcast)))
    finally:
        dist.destroy_process_group()


def test_ranks_agree_on_the_run_name(tmp_path):
    """Under torch.distributed (as the Trainer runs under torchrun or accelerate launch) a
    folder as run= becomes rank 0's name on every rank; the store then writes
    <name>.rank1.sqlite for rank 1. (A whole Trainer DDP run was checked by hand: one
    run per rank, tagged; it takes half a minute of gloo steps on 2 busy cores.)"""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.multiprocessing.start_processes(_name_on_rank, args=(str(tmp_path), port),
                                          nprocs=2, start_method="fork")
    names = [(tmp_path / f"name{rank}.txt").read_text() for rank in (0, 1)]
    assert names[0] == names[1] and names[0].startswith(str(tmp_path / "run-"))
