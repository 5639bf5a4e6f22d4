"""Real ``torch.distributed`` jobs for the rank tests: gloo on the CPU, one process per
rank (``torch.multiprocessing`` spawn), DDP on a tiny model with a BatchNorm, each rank
watched with a store. ``fault`` plants problems (comma-separated): ``slow`` (rank 1 sleeps before each
forward), ``nan`` (rank 1's loss is NaN at step 5), ``drift`` (each rank's data has its own
mean and DDP does not broadcast buffers: the BatchNorm running statistics part),
``ignored`` (DDP is told to ignore the last layer's weight, as for a parameter synchronised
by hand, and nothing synchronises it: each rank steps it with its own gradient)."""

from __future__ import annotations

import os
import socket
import time

SLEEP = 0.03
NAN_STEP = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(rank: int, world: int, port: int, store: str, fault: str, steps: int) -> None:
    faults = set(fault.split(","))
    import torch
    import torch.distributed as dist
    from torch import nn

    import vizdebug as vd

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))
        if "ignored" in faults:
            nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
                model, ["3.weight"])
        ddp = nn.parallel.DistributedDataParallel(model, forward_sync_buffers="drift" not in faults)
        opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
        g = torch.Generator().manual_seed(100 + rank)
        w = torch.linspace(-1, 1, 8)
        with vd.watch(ddp, store=store) as session:
            for step in range(steps):
                x = torch.randn(32, 8, generator=g)
                if "drift" in faults:
                    x = x + 3.0 * rank
                y = (x * w).sum(1, keepdim=True)
                if "slow" in faults and rank == 1:
                    time.sleep(SLEEP)
                loss = (ddp(x) - y).pow(2).mean()
                if "nan" in faults and rank == 1 and step == NAN_STEP:
                    loss = loss * float("nan")
                opt.zero_grad()
                loss.backward()
                opt.step()
                session.log(loss=loss)
    finally:
        dist.destroy_process_group()


def run_job(store: str, world: int, fault: str = "", steps: int = 40) -> None:
    """Run the job to its end (raises when a rank fails)."""
    import torch.multiprocessing as mp

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.start_processes(_rank, args=(world, free_port(), store, fault, steps), nprocs=world,
                       start_method="spawn")
