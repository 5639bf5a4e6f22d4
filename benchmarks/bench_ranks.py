"""What the rank tap costs a real 2-rank DDP job (gloo on the CPU): step time with
``vd.watch(store=...)`` and its rank tap, beside the same watch with the tap turned off,
beside no vizdebug at all. The three are interleaved in every repeat inside one job (the
same processes, the same process group: machine noise hits them alike) and reported as the
median over repeats of each one's mean step time, with the paired ratios.

    python benchmarks/bench_ranks.py                  # 5 repeats x 200 steps, 2 ranks
    python benchmarks/bench_ranks.py --repeats 3 --steps 100 --world 2
    python benchmarks/bench_ranks.py --in-process     # the tap alone, one process, paired

``--in-process`` times the same model's steps in one process (no process group), blocks
of steps with the rank tap and without it alternating, and reports the time the tap adds
per step: the collector's own cost, without the noise of two processes sharing cores.

What users have instead: nothing comparable (TensorBoard and W&B log each rank as its own
run); the alternative is the plain job, so the ratio against it is the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODES = ("plain", "watch, no rank tap", "watch + rank tap")


def _steps(mode: str, rank: int, steps: int, store: str) -> list[float]:
    import torch
    from torch import nn

    import vizdebug as vd
    import vizdebug.collect.session.core as core
    from vizdebug.collect.taps.ranks import rank_tap

    ddp = nn.parallel.DistributedDataParallel(_model())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    data = [(torch.randn(64, 256, generator=g), torch.randint(0, 10, (64,), generator=g))
            for _ in range(16)]
    core.rank_tap = rank_tap if mode == MODES[2] else (lambda *a, **k: None)
    session = vd.watch(ddp, store=store) if mode != "plain" else None
    times = []
    for i in range(steps):
        x, y = data[i % len(data)]
        t = time.perf_counter()
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if session is not None:
            session.log(loss=loss)
        times.append(time.perf_counter() - t)
    if session is not None:
        session.close()
    return times[10:]  # (the first steps warm up)


def _rank(rank: int, world: int, port: int, folder: str, repeats: int, steps: int) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    results: dict[str, list[float]] = {m: [] for m in MODES}
    for r in range(repeats):
        order = MODES if r % 2 == 0 else MODES[::-1]
        for mode in order:
            dist.barrier()
            times = _steps(mode, rank, steps, os.path.join(folder, f"r{r}-{MODES.index(mode)}.sqlite"))
            results[mode].append(statistics.fmean(times))  # (the armed steps count)
    if rank == 0:
        Path(folder, "results.json").write_text(json.dumps(results))
    dist.destroy_process_group()


def _model():
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.BatchNorm1d(512), nn.Linear(512, 10))


def in_process(blocks: int, steps: int) -> None:
    """Blocks of ``steps`` steps with and without the tap, alternating; the mean step of
    each, paired block by block."""
    import torch
    from torch import nn

    from vizdebug.collect.hooks.clock import StepClock
    from vizdebug.collect.taps.ranks import RankTap

    torch.set_num_threads(1)
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    clock = StepClock({id(p) for p in model.parameters()}, lambda: None)
    handed: list = []
    tap = None
    means: dict[bool, list[float]] = {False: [], True: []}
    for b in range(2 * blocks):
        on = b % 2 == 1
        if on and tap is None:
            tap = RankTap(model, clock, handed.append, lambda w, e: print(w, e))
        elif not on and tap is not None:
            tap.remove()
            tap = None
        t = time.perf_counter()
        for _ in range(steps):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        means[on].append((time.perf_counter() - t) / steps)
    probe = RankTap(model, clock, handed.append, lambda w, e: print(w, e))
    fingerprint = _best(lambda: probe._fingerprint(model), 50)
    arm = _best(lambda: (probe._arm(4), probe._close_step(time.perf_counter())), 500)
    model.train()
    with torch.no_grad():
        bare = _best(lambda: model(x), 200)
        probe._arm(4)
        armed = _best(lambda: (probe.__setattr__("_outer", None), model(x)), 200)
    probe.remove()
    clock.unhook()
    print(f"one fingerprint of the {sum(p.numel() for p in model.parameters()):,} parameters "
          f"(and the BatchNorm's buffers): {fingerprint * 1e6:.0f} us (at steps 0, 1, 2, 4..64, then every "
          f"100th); arming and closing a timed step: {arm * 1e6:.1f} us (every 4th step); "
          f"a forward pass with the step's hooks armed: +{(armed - bare) * 1e6:.1f} us; so "
          f"about {(fingerprint / 100 + (arm + max(armed - bare, 0)) / 4) * 1e6:.1f} us a step "
          "on average past step 64 (best of many calls each)")
    added = [a - b for a, b in zip(means[True], means[False])]
    ratios = [a / b for a, b in zip(means[True], means[False])]
    print(f"in one process, {blocks} paired blocks x {steps} steps (MLP 256-512-512-10, "
          f"batch 64, 1 thread): plain step {statistics.median(means[False]) * 1e3:.3f} ms, "
          f"with the rank tap {statistics.median(means[True]) * 1e3:.3f} ms: "
          f"+{statistics.median(added) * 1e6:.1f} us a step, x{statistics.median(ratios):.4f}")


def _best(call, n: int) -> float:
    """The fastest of ``n`` calls (seconds): the cost, not the machine's noise."""
    best = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    if args.in_process:
        in_process(blocks=max(args.repeats, 10) if args.repeats != 5 else 20, steps=args.steps)
        return
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as folder:
        mp.start_processes(_rank, args=(args.world, port, folder, args.repeats, args.steps),
                           nprocs=args.world, start_method="spawn")
        results = json.loads(Path(folder, "results.json").read_text())
    plain = results[MODES[0]]
    print(f"{args.world} ranks (gloo, CPU), {args.repeats} repeats x {args.steps} steps, "
          "mean step time of rank 0 (ms, median over repeats) and the ratio to the plain job in the same repeat:")
    for mode in MODES:
        ratios = [a / b for a, b in zip(results[mode], plain)]
        print(f"  {mode:<20} {statistics.median(results[mode]) * 1e3:7.3f} ms   "
              f"x{statistics.median(ratios):.3f}  (repeats: "
              + ", ".join(f"{v:.3f}" for v in ratios) + ")")
    tap = [a / b for a, b in zip(results[MODES[2]], results[MODES[1]])]
    print(f"  the rank tap alone (watch + tap / watch): x{statistics.median(tap):.3f}")


if __name__ == "__main__":
    main()
