"""The defaults' cost as a user meets it: whole runs from step 0, watched or not.

The paired runs of ``bench_overhead.py`` switch vizdebug off and on within one run, after
a warm-up; a user instead watches from the first step (when ``"auto"`` samples densely)
and runs to the end. Here each repeat trains a fresh 33-module MLP (11 blocks of
Linear + LayerNorm + ReLU, batch 128) for ``--steps`` steps four ways, in a rotating
order: plain; ``vd.watch`` defaults from step 0 (``watch()`` and ``close()`` included);
naive hooks that read their statistics each step (``.item()``); and naive hooks that keep
them as tensors (no device read, the cheaper thing a user writes). Thread CPU time, one
intra-op thread; the ratios are medians over repeats against the plain run of the same
repeat.

    python benchmarks/overhead_fromzero.py                 # 800 steps x 7 repeats
    python benchmarks/overhead_fromzero.py --steps 800 --repeats 11
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import vizdebug as vd

torch.set_num_threads(1)
CLOCK = time.thread_time


def mlp33(width: int = 64) -> nn.Module:
    layers: list[nn.Module] = []
    for i in range(11):
        layers += [nn.Linear(32 if i == 0 else width, width), nn.LayerNorm(width), nn.ReLU()]
    return nn.Sequential(*layers[:-1], nn.Linear(width, 10))  # 33 leaf modules


class TensorHooks:
    """Naive hooks that keep mean, std and zero share of every output, and every gradient
    norm, as tensors (no ``.item()``: nothing waits for the device)."""

    def __init__(self, model: nn.Module, read: bool) -> None:
        self.model, self.read, self.stats = model, read, []
        leaves = [m for m in model.modules() if not any(True for _ in m.children())]
        self.handles = [m.register_forward_hook(self._hook) for m in leaves]

    def _hook(self, module, inputs, output) -> None:
        o = output.detach()
        stats = (o.mean(), o.std(), (o == 0).float().mean())
        self.stats.append(tuple(s.item() for s in stats) if self.read else stats)

    def after_backward(self) -> None:
        norms = [p.grad.norm() for p in self.model.parameters() if p.grad is not None]
        self.stats.append([n.item() for n in norms] if self.read else norms)

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def one_run(kind: str, steps: int, seed: int) -> float:
    torch.manual_seed(seed)
    model = mlp33()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(seed)
    batches = [(torch.randn(128, 32, generator=gen), torch.randint(0, 10, (128,), generator=gen))
               for _ in range(16)]
    start = CLOCK()
    session = vd.watch(model) if kind == "vd.watch defaults" else None
    naive = TensorHooks(model, read=kind == "naive hooks, .item()") if "naive" in kind else None
    after: Callable[[], None] = naive.after_backward if naive else (lambda: None)
    for i in range(steps):
        x, y = batches[i % len(batches)]
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        after()
        opt.step()
        if session is not None:
            session.log(loss=loss)
    if session is not None:
        session.close()
    if naive is not None:
        naive.close()
    return CLOCK() - start


KINDS = ("plain", "vd.watch defaults", "naive hooks, .item()", "naive hooks, tensors kept")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    one_run("plain", 50, 0)  # warm-up
    times: dict[str, list[float]] = {k: [] for k in KINDS}
    orders = list(itertools.permutations(KINDS))
    for rep in range(args.repeats):
        for kind in orders[rep * 5 % len(orders)]:
            times[kind].append(one_run(kind, args.steps, rep))
    plain = times["plain"]
    print(f"\n33-module MLP, {args.steps} steps from step 0, {args.repeats} repeats, thread CPU "
          f"time, 1 thread; plain run median {statistics.median(plain):.3f} s\n")
    print("| configuration | x plain, median | per-repeat range |\n|---|---|---|")
    for kind in KINDS:
        ratios = [t / p for t, p in zip(times[kind], plain)]
        print(f"| {kind} | {statistics.median(ratios):.3f}x | {min(ratios):.3f}-"
              f"{max(ratios):.3f} |")


if __name__ == "__main__":
    main()
