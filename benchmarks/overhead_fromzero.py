"""The defaults' cost as a user meets it: whole runs from step 0, watched or not.

The paired runs of ``bench_overhead.py`` switch vizdebug off and on within one run, after
a warm-up; a user instead watches from the first step (when ``"auto"`` samples densely)
and runs to the end. Here each repeat trains fresh copies of a 33-module MLP (11 blocks of
Linear + LayerNorm + ReLU, batch 128, the same weights and batches) for ``--steps`` steps,
four ways at once: plain; ``vd.watch`` defaults from step 0 (``watch()`` and ``close()``
counted in its first and last step); naive hooks that read their statistics each step
(``.item()``); and naive hooks that keep them as tensors (no device read).

The four copies step **interleaved**: step ``i`` of each, in an order that rotates every
step, each step timed in this thread's CPU time (one intra-op thread). A burst of another
process's work lands on all four alike; whole runs one after the other (the previous
design) swung 0.73-1.29x between repeats on this shared machine. Each configuration's
ratio is the sum of its step times over every repeat against the plain copy's, with a
bootstrap 95% interval over repeats (runs, not steps: the early samples make a run's
steps unlike each other). The last line decides the target.

    python benchmarks/overhead_fromzero.py                 # 800 steps x 9 repeats
    python benchmarks/overhead_fromzero.py --steps 800 --repeats 15

vizdebug's optimizer step hook is global (``torch.optim``'s step post-hook): the other
copies' optimizer steps also call it, which returns after one lookup (~1-2 us charged to
them, not to vizdebug: the ratios are optimistic by about 0.1%).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import vizdebug as vd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead_shapes import verdict

torch.set_num_threads(1)
CLOCK = time.thread_time
KINDS = ("plain", "vd.watch defaults", "naive hooks, .item()", "naive hooks, tensors kept")
TARGET = 1.03


def mlp33(width: int = 64) -> nn.Module:
    layers: list[nn.Module] = []
    for i in range(11):
        layers += [nn.Linear(32 if i == 0 else width, width), nn.LayerNorm(width), nn.ReLU()]
    return nn.Sequential(*layers[:-1], nn.Linear(width, 10))  # 33 leaf modules


class TensorHooks:
    """Naive hooks that keep mean, std and zero share of every output, and every gradient
    norm: read at once (``.item()``) or kept as tensors (nothing waits for the device)."""

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


class Run:
    """One configuration's copy of the model, stepped one step at a time."""

    def __init__(self, kind: str, batches: list, seed: int, steps: int) -> None:
        torch.manual_seed(seed)
        self.kind, self.batches, self.steps = kind, batches, steps
        self.model = mlp33()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.session = None
        self.naive: TensorHooks | None = None
        self.after: Callable[[], None] = lambda: None
        self.samples = 0  # the session's sampled steps (read at close)

    def step(self, i: int) -> float:
        start = CLOCK()
        if i == 0:  # watching starts in the first step's time
            if self.kind == "vd.watch defaults":
                self.session = vd.watch(self.model)
            elif self.kind.startswith("naive"):
                self.naive = TensorHooks(self.model, read=self.kind == "naive hooks, .item()")
                self.after = self.naive.after_backward
        x, y = self.batches[i % len(self.batches)]
        self.opt.zero_grad()
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.after()
        self.opt.step()
        if self.session is not None:
            self.session.log(loss=loss)
        if i == self.steps - 1:  # and ends in the last one's
            if self.session is not None:
                self.session.close()
                self.samples = self.session.hooks.activations.total
            if self.naive is not None:
                self.naive.close()
        return CLOCK() - start


def one_repeat(steps: int, seed: int, kinds: tuple[str, ...] = KINDS,
               samples: list[int] | None = None) -> np.ndarray:
    """``(len(kinds), steps)`` step times of fresh copies stepped interleaved (the watched
    copy's sampled steps appended to ``samples``)."""
    gen = torch.Generator().manual_seed(seed)
    batches = [(torch.randn(128, 32, generator=gen), torch.randint(0, 10, (128,), generator=gen))
               for _ in range(16)]
    runs = [Run(kind, batches, seed, steps) for kind in kinds]
    times = np.zeros((len(kinds), steps))
    gc.collect()
    for i in range(steps):
        for k in np.roll(np.arange(len(kinds)), i + seed):  # each first in turn
            times[k, i] = runs[k].step(i)
    if samples is not None:
        samples += [r.samples for r in runs if r.kind == "vd.watch defaults"]
    return times


def bootstrap(extra: np.ndarray, plain: np.ndarray, n: int = 4000) -> tuple[float, float]:
    """95% interval of sum(extra) / sum(plain) over resampled repeats."""
    idx = np.random.default_rng(0).integers(0, len(plain), (n, len(plain)))
    lo, hi = np.percentile(extra[idx].sum(1) / plain[idx].sum(1), [2.5, 97.5])
    return float(lo), float(hi)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    one_repeat(40, 10**6)  # warm-up: every code path once (imports, first calls)
    totals, samples = np.zeros((args.repeats, len(KINDS))), []
    for rep in range(args.repeats):
        totals[rep] = one_repeat(args.steps, rep, samples=samples).sum(1)
        print(f"repeat {rep + 1}/{args.repeats}: vd / plain {totals[rep, 1] / totals[rep, 0]:.3f}, "
              f"{samples[-1]} sampled steps", file=sys.stderr, flush=True)
    plain = totals[:, 0]
    print(f"\n33-module MLP, {args.steps} steps from step 0, {args.repeats} repeats, the four "
          f"copies interleaved step by step, thread CPU time, 1 thread; plain run median "
          f"{np.median(plain):.3f} s; sampled steps per run {min(samples)}-{max(samples)}\n")
    print("| configuration | x plain (95%, over repeats) | per-repeat range | extra ms/run |\n"
          "|---|---|---|---|")
    for k, kind in enumerate(KINDS):
        ratios = totals[:, k] / plain
        lo, hi = bootstrap(totals[:, k], plain)
        print(f"| {kind} | {totals[:, k].sum() / plain.sum():.3f}x ({lo:.3f}-{hi:.3f}) | "
              f"{ratios.min():.3f}-{ratios.max():.3f} | "
              f"{1e3 * np.mean(totals[:, k] - plain):+.1f} |")
    ratio = totals[:, 1].sum() / plain.sum()
    lo, hi = bootstrap(totals[:, 1], plain)
    print(f"\nfrom step 0 ({args.steps}-step 33-module MLP): defaults {ratio:.3f}x (95% {lo:.3f}-{hi:.3f}; "
          f"target <= {TARGET:.2f}x): {verdict(lo, hi, TARGET)}")


if __name__ == "__main__":
    main()
