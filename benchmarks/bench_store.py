"""Stored runs (``watch(model, store=path)``, ``open_run``) vs TensorBoard's event files.

Two parts, each interleaving the configurations in every repeat:

1. **Training overhead.** The digits CNN of ``bench_overhead.py`` trained through a real
   DataLoader: plain loop; ``watch`` defaults; ``watch`` defaults writing a run file;
   TensorBoard ``SummaryWriter.add_scalar`` of the loss every step (what people do to keep
   a run on disk). CPU time of the process (writer threads included), ratio to plain.
2. **Logging and reading back many points.** 3 metrics x ``--points`` steps written with
   ``session.log`` + the store, and with ``add_scalar``; then read back with
   ``open_run(path).scalars()`` and with TensorBoard's ``EventAccumulator`` (all points).

    python benchmarks/bench_store.py                 # 5 repeats x 300 steps, 100k points
    python benchmarks/bench_store.py --repeats 3 --steps 200 --points 20000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from bench_overhead import CLOCK, plain, run, watch
from torch import nn

import vizdebug as vd

WRITER_SHARE: list[float] = []  # writer CPU / process CPU, per watch+store run


def watch_store(model, loader, workdir):
    session = vd.watch(model, loader=loader, store=os.path.join(workdir, f"r{time.time_ns()}.sqlite"))
    start = CLOCK()

    def finish() -> None:
        session.close()  # the last write is part of the cost
        WRITER_SHARE.append(session.store.cpu_seconds / (CLOCK() - start))

    return (lambda step, loss: session.log(loss=loss)), finish


def tensorboard_scalar(model, loader, workdir):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(os.path.join(workdir, f"tb{time.time_ns()}"))
    return (lambda step, loss: writer.add_scalar("loss", loss.item(), step)), writer.close


CONFIGS = {"plain": plain, "watch": watch(None), "watch+store": watch_store,
           "tensorboard": tensorboard_scalar}


def train(kind: str, steps: int, workdir: str) -> float:
    """CPU seconds per step of one configuration, its closing call included."""
    return run(CONFIGS[kind], steps, workdir, count_finish=True)


def overhead(repeats: int, steps: int) -> dict[str, list[float]]:
    kinds = ["plain", "watch", "watch+store", "tensorboard"]
    ratios: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as workdir:
        train("watch+store", 30, workdir)  # warm up imports and caches
        train("tensorboard", 30, workdir)
        for r in range(repeats):
            order = kinds[r % len(kinds):] + kinds[: r % len(kinds)]
            times = {k: train(k, steps, workdir) for k in order}
            for k in kinds:
                ratios[k].append(times[k] / times["plain"])
            print(f"  repeat {r + 1}: plain {times['plain'] * 1e3:.2f} ms/step; "
                  + ", ".join(f"{k} {ratios[k][-1]:.3f}x" for k in kinds[1:]), flush=True)
    return ratios


def many_points(n: int) -> dict[str, float]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    names = ("loss", "acc", "lr")
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "run.sqlite")
        start = time.perf_counter()
        session = vd.watch(nn.Linear(2, 2), store=path)
        for step in range(n):
            session.log(loss=1.0 / (step + 1), acc=step / n, lr=0.1)
        session.close()
        out["vizdebug write s"] = time.perf_counter() - start

        tb_dir = os.path.join(workdir, "tb")
        start = time.perf_counter()
        writer = SummaryWriter(tb_dir)
        for step in range(n):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_scalar("acc", step / n, step)
            writer.add_scalar("lr", 0.1, step)
        writer.close()
        out["tensorboard write s"] = time.perf_counter() - start

        start = time.perf_counter()
        df = vd.open_run(path).scalars()
        out["vizdebug read s"] = time.perf_counter() - start
        assert len(df) == 3 * n, len(df)

        start = time.perf_counter()
        acc = EventAccumulator(tb_dir, size_guidance={"scalars": 0})
        acc.Reload()
        points = sum(len(acc.Scalars(name)) for name in names)
        out["tensorboard read s"] = time.perf_counter() - start
        assert points == 3 * n, points
        out["vizdebug file MB"] = os.path.getsize(path) / 2**20
        out["tensorboard file MB"] = sum(f.stat().st_size for f in Path(tb_dir).rglob("*")
                                         if f.is_file()) / 2**20
    return out


def million(n: int) -> dict[str, float]:
    """Reading a long run: 2 metrics x ``n`` steps; peak memory of this process (ru_maxrss)."""
    import resource

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "long.sqlite")
        session = vd.watch(nn.Linear(2, 2), store=path)
        for step in range(n):
            session.log(loss=1.0 / (step + 1), acc=step / n)
        session.close()
        out["file MB"] = os.path.getsize(path) / 2**20
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        run = vd.open_run(path)
        start = time.perf_counter()
        rec = run.records()
        out["records() s"] = time.perf_counter() - start
        out["points per metric in memory"] = rec.scalars["loss"][0].size
        out["peak RSS MB after records()"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        out["peak RSS MB before"] = rss
        start = time.perf_counter()
        run.findings()
        out["findings() s"] = time.perf_counter() - start
        start = time.perf_counter()
        out["scalars() rows"] = len(run.scalars())
        out["scalars() s"] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--million", type=int, default=0, metavar="N",
                        help="also read back a run of 2 metrics x N steps (e.g. 1000000)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.million:  # first, while this process is small, so its peak RSS means something
        print(f"a long run: 2 metrics x {args.million} steps", flush=True)
        for key, value in million(args.million).items():
            print(f"  {key}: {value:.3g}")
    if not args.repeats:
        return

    print(f"training overhead: {args.repeats} repeats x {args.steps} steps (CPU time, ratio "
          "to the plain loop in the same repeat)", flush=True)
    ratios = overhead(args.repeats, args.steps)
    print("\n| configuration | median ratio | range |\n|---|---|---|")
    for k, values in ratios.items():
        if k != "plain":
            print(f"| {k} | {statistics.median(values):.3f}x | "
                  f"{min(values):.3f}-{max(values):.3f} |")

    print(f"\nthe store's writer thread used {statistics.median(WRITER_SHARE) * 100:.2f}% of "
          f"the process CPU time (median over runs; range {min(WRITER_SHARE) * 100:.2f}-"
          f"{max(WRITER_SHARE) * 100:.2f}%)")
    print(f"\n3 metrics x {args.points} steps, written then read back (wall time, one run)",
          flush=True)
    res = many_points(args.points)
    print("\n| | vizdebug store | TensorBoard | ratio |\n|---|---|---|---|")
    for what in ("write s", "read s", "file MB"):
        a, b = res[f"vizdebug {what}"], res[f"tensorboard {what}"]
        print(f"| {what} | {a:.2f} | {b:.2f} | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
