"""Lightning's ``ddp_spawn`` strategy on the CPU (gloo, two spawned processes) with
vizdebug's callback: both rank files appear beside each other and open as one job, with
the ranks' timing and replica fingerprints (Lightning calls ``training_step``, not the
module's ``forward``; the rank tap's global module hooks see the DDP wrapper and the
submodules) and no warning for a clean fit."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

L = pytest.importorskip("lightning.pytorch", reason='needs the extra: pip install -e ".[lightning]"')
VizdebugCallback = pytest.importorskip("vizdebug.integrations.lightning").VizdebugCallback

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


class Tiny(L.LightningModule):
    """A regressor whose training_step calls its submodule (as most modules do)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def test_ddp_spawn_writes_every_rank_and_opens_as_one_job(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(1024, 8)
    y = x @ torch.linspace(-1, 1, 8)[:, None]
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    runs = tmp_path / "runs"
    runs.mkdir()
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp_spawn", max_steps=24,
                        callbacks=[VizdebugCallback(run=runs)], logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(Tiny(), loader)
    files = sorted(p.name for p in runs.iterdir() if p.suffix == ".sqlite")
    assert len(files) == 2 and files[0].endswith(".rank1.sqlite")
    job = vd.open_run(runs)  # the folder: its newest rank-0 run, as a job
    assert sorted(job.ranks) == [0, 1] and job.world_size == 2
    df = job.scalars()
    assert sorted(df["rank"].unique()) == [0, 1]
    data = job.rank_data()
    assert all(d.times is not None and d.times.steps.size >= 5 for d in data)
    assert all(d.replicas is not None and "net.1.running_mean" in d.replicas.paths for d in data)
    assert job.findings().at_least("warning") == [], job.findings()
