"""The Lightning callback on a tiny regression module, trained on the CPU in well under a
second per fit: a learning rate 100x too high is found, the same run at a sane rate is
clean, and the callback follows fast_dev_run, validation, gradient accumulation, a
stored run, a crash, Ctrl-C, tracked embeddings and DDP with two gloo processes. The extra is installed by
scripts/test.sh (`pip install -e ".[test,lightning,transformers]"`)."""

from __future__ import annotations

import signal

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

# a plain ".[test]" install has no lightning: skip this module there, do not abort collection
L = pytest.importorskip("lightning.pytorch", reason='needs the extra: pip install -e ".[lightning]"')
VizdebugCallback = pytest.importorskip("vizdebug.integrations.lightning").VizdebugCallback

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning",
                                        "ignore::UserWarning:lightning")


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models train much faster on one thread on a shared 2-core machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


class Regressor(L.LightningModule):
    """An MLP regressor whose training_step calls a submodule, not its own forward."""

    def __init__(self, lr: float, crash_at: int | None = None,
                 crash_with: type[BaseException] = RuntimeError) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
        self.lr, self.crash_at, self.crash_with = lr, crash_at, crash_with
        self.raw_losses: list[float] = []

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        if batch_idx == self.crash_at:
            raise self.crash_with("planted crash")
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_mse", loss)
        self.raw_losses.append(loss.item())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y))
        self.log("r2/val", 1 - nn.functional.mse_loss(self.net(x), y) / y.var())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)


def loaders(n_train: int = 384):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n_train + 128, 8, generator=g)
    y = x @ torch.randn(8, 1, generator=g) + 0.1 * torch.randn(len(x), 1, generator=g)
    train = DataLoader(TensorDataset(x[:n_train], y[:n_train]), batch_size=32, shuffle=True,
                       generator=g)
    return train, DataLoader(TensorDataset(x[n_train:], y[n_train:]), batch_size=64)


def fit(lr: float = 0.01, *, callback: VizdebugCallback | None = None, crash_at=None,
        crash_with=RuntimeError, **trainer_args) -> tuple[L.Trainer, VizdebugCallback]:
    torch.manual_seed(0)
    cb = callback or VizdebugCallback()
    trainer_args.setdefault("max_epochs", 4)
    trainer_args.setdefault("devices", 1)
    trainer = L.Trainer(callbacks=[cb], accelerator="cpu", enable_progress_bar=False,
                        logger=False, enable_checkpointing=False, enable_model_summary=False,
                        **trainer_args)
    trainer.fit(Regressor(lr, crash_at, crash_with), *loaders())
    return trainer, cb


def warnings_of(findings: vd.Findings) -> list[str]:
    return [f"{f.severity} {f.code} [{f.where}]" for f in findings.at_least("warning")]


def test_a_learning_rate_100x_too_high_is_found():
    _, cb = fit(lr=1.0)
    found = cb.session.findings()
    assert any(f.code == "nonfinite-loss" and f.severity == "error" and f.where == "loss"
               for f in found), warnings_of(found)


def test_the_same_run_at_a_sane_rate_is_clean():
    trainer, cb = fit(lr=0.01)
    assert cb.session.closed and cb.session.collector_errors() == []
    assert warnings_of(cb.session.findings()) == []
    df = cb.session.scalars()
    loss = df[df.name == "loss"]
    assert loss.step.tolist() == list(range(trainer.global_step))  # one point per step
    assert cb.session.hooks.steps == trainer.global_step == 48


def test_training_is_bitwise_unchanged():
    plain, _ = fit(max_epochs=1, callback=L.Callback())
    watched, cb = fit(max_epochs=1, callback=VizdebugCallback(every=1))
    assert cb.session.hooks.steps == 12
    for (name, a), (_, b) in zip(plain.lightning_module.named_parameters(),
                                 watched.lightning_module.named_parameters()):
        assert torch.equal(a, b), name


def test_validation_metrics_arrive_as_eval_series():
    trainer, cb = fit(max_epochs=2)
    rec = cb.session.records()
    assert rec.val_loss()[0] == "val_loss"
    assert {"val_loss", "val_r2_val", "train_mse", "loss"} <= set(rec.scalars)
    steps, values = rec.scalars["val_loss"]
    assert steps.tolist() == [11, 23]  # after each epoch's last step, sanity check left out
    assert values[-1] == pytest.approx(float(trainer.callback_metrics["val_loss"]))


def test_fast_dev_run():
    trainer, cb = fit(fast_dev_run=True)
    assert cb.session.closed and trainer.global_step == 1
    assert set(cb.session.scalars().name) >= {"loss", "val_loss"}


def test_gradient_accumulation_counts_optimizer_steps():
    trainer, cb = fit(max_epochs=2, accumulate_grad_batches=3)
    assert trainer.global_step == 8
    assert cb.session.hooks.steps == 8
    df = cb.session.scalars()
    loss = df[df.name == "loss"]
    assert loss.step.tolist() == list(range(8))
    # the step's loss is what Lightning backpropagates: the mean over its three batches
    raw = np.asarray(trainer.lightning_module.raw_losses).reshape(8, 3).mean(1)
    np.testing.assert_allclose(loss.value.to_numpy(), raw, rtol=1e-5)


def test_stored_run_is_readable(tmp_path):
    path = tmp_path / "fit.sqlite"
    trainer, cb = fit(max_epochs=1, callback=VizdebugCallback(run=path, every=2))
    run = vd.open_run(path)
    assert run.state == "closed"
    df = run.scalars()
    assert set(df.name) >= {"loss", "val_loss"}
    assert df[df.name == "loss"].step.tolist() == list(range(trainer.global_step))


def test_a_crash_closes_the_session_as_failed(tmp_path):
    path = tmp_path / "crash.sqlite"
    with pytest.raises(RuntimeError, match="planted crash"):
        fit(callback=VizdebugCallback(run=path), crash_at=5)
    assert vd.open_run(path).state == "failed"


def test_ctrl_c_closes_the_session_as_failed(tmp_path):
    path = tmp_path / "interrupted.sqlite"
    handler = signal.getsignal(signal.SIGINT)
    try:  # Lightning ignores SIGINT from then on and exits with status 1
        with pytest.raises(SystemExit):
            fit(callback=VizdebugCallback(run=path), crash_at=5, crash_with=KeyboardInterrupt)
    finally:
        signal.signal(signal.SIGINT, handler)
    run = vd.open_run(path)
    assert run.state == "failed" and "KeyboardInterrupt" in run.failed


def test_tracked_embeddings_follow_the_epochs():
    probe = torch.randn(50, 8, generator=torch.Generator().manual_seed(1))
    cb = VizdebugCallback(track_embeddings={"layer": "net.1", "probe": probe})
    trainer, _ = fit(max_epochs=2, callback=cb)
    frames = cb.session.embedding_frames("net.1")
    assert [(f.step, f.epoch) for f in frames] == [(0, 0), (12, 1), (24, 2)]
    assert frames[-1].features.shape == (50, 32)


def test_dashboard_is_shown_when_training_starts(monkeypatch):
    from vizdebug.integrations import _common

    shown = []
    monkeypatch.setattr(_common, "in_kernel", lambda: True)  # no Jupyter kernel in pytest
    monkeypatch.setattr("IPython.display.display", shown.append)
    _, cb = fit(max_epochs=1, callback=VizdebugCallback(dashboard=True))
    assert len(shown) == 1 and type(shown[0]).__name__ == "Dashboard"


def test_bad_options_are_refused_when_the_callback_is_built():
    with pytest.raises(vd.VizdebugTypeError, match="evry"):
        VizdebugCallback(evry=3)
    with pytest.raises(vd.VizdebugTypeError, match="run takes a file path"):
        VizdebugCallback(run=3)
    with pytest.raises(vd.VizdebugTypeError, match="'layer' and 'probe'"):
        VizdebugCallback(track_embeddings={"layer": "net.1"})


class Classifier(L.LightningModule):
    """A classifier whose training_step calls its own forward (self(x)): the loss checks
    see what reaches the loss."""

    def __init__(self, softmax: bool) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3))
        self.softmax = softmax

    def forward(self, x):
        out = self.net(x)
        return out.softmax(-1) if self.softmax else out

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


@pytest.mark.parametrize("softmax", [True, False])
def test_a_softmax_before_cross_entropy_is_found_through_forward(softmax):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    torch.manual_seed(0)
    cb = VizdebugCallback()
    L.Trainer(max_epochs=2, callbacks=[cb], accelerator="cpu", enable_progress_bar=False,
              logger=False, enable_checkpointing=False, enable_model_summary=False,
              ).fit(Classifier(softmax), DataLoader(TensorDataset(x, y), batch_size=32))
    found = cb.session.findings()
    assert warnings_of(found) == (["warning loss-output-mismatch [loss (cross_entropy)]"]
                                  if softmax else [])


def test_begin_step_counts_the_steps_a_loop_marks():
    """Session.begin_step(): the loop marks its steps (forward passes then do not count)
    until the optimizer counts; two forwards per step (accumulation) stay one step."""
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with vd.watch(model, every=1) as session:
        session.begin_step()
        for _ in range(2):
            model(torch.randn(4, 3)).pow(2).mean().backward()
        assert session.hooks.step == 0  # the first step, before the optimizer counts
        opt.step()
        for _ in range(2):
            session.begin_step()  # the optimizer counts now: this changes nothing
            model(torch.randn(4, 3)).sum().backward()
            opt.step()
    assert session.hooks.steps == 3


def test_eval_names():
    from vizdebug.integrations._common import eval_name

    assert [eval_name(n) for n in ("val_loss", "val/acc", "acc", "eval/f1", "test_x")] == [
        "val_loss", "val_acc", "val_acc", "eval_f1", "test_x"]


def test_ddp_with_two_gloo_processes_stores_one_run_per_rank(tmp_path):
    """A DDP strategy on the CPU (gloo), two processes forked by Lightning (``ddp_fork``,
    as ``ddp_notebook`` in a notebook; ``strategy="ddp"``, which starts the script again,
    behaves the same but takes a minute of imports here). Each rank watches its own
    replica; a folder as run= becomes one name for the job (rank 0's, broadcast), rank 1
    writing <name>.rank1.sqlite beside rank 0's file."""
    runs = tmp_path / "runs"
    runs.mkdir()
    trainer, cb = fit(callback=VizdebugCallback(run=runs), max_epochs=2, devices=2,
                      strategy="ddp_fork")
    assert cb.session is None  # the ranks ran in the forked processes: read their runs
    files = {p.name for p in runs.iterdir()}
    first = min(files, key=len)
    assert files == {first, first.replace(".sqlite", ".rank1.sqlite")}
    run = vd.open_run(runs / first)
    ranks = [run, *run.rank_runs()]
    assert [int(r.meta["rank"]) for r in ranks] == [0, 1]
    assert [r.state for r in ranks] == ["closed"] * 2
    df = run.scalars()  # both ranks, tagged
    assert sorted(df["rank"].unique()) == [0, 1]
    for rank in (0, 1):
        mine = df[df["rank"] == rank]
        assert mine[mine.name == "loss"].step.tolist() == list(range(12))  # 192 rows a rank
        assert mine[mine.name == "val_loss"].step.tolist() == [5, 11]


class WithHyperparameters(Regressor):
    def __init__(self, lr: float) -> None:
        super().__init__(lr)
        self.save_hyperparameters()


def test_the_modules_hyperparameters_are_the_runs_config(tmp_path):
    """What Lightning knows of the run (``hparams``) is stored as its ``config``, which
    ``vd.compare_runs`` groups and tabulates by."""
    path = tmp_path / "hparams.sqlite"
    torch.manual_seed(0)
    trainer = L.Trainer(callbacks=[VizdebugCallback(run=path)], accelerator="cpu", devices=1,
                        max_epochs=1, enable_progress_bar=False, logger=False,
                        enable_checkpointing=False, enable_model_summary=False)
    trainer.fit(WithHyperparameters(0.02), *loaders())
    assert vd.open_run(path).meta["config"] == {"lr": 0.02}
