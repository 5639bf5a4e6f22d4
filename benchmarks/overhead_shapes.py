"""Three model shapes for bench_overhead.py, and paired runs of each beside naive hooks.

- ``cnn``: the digits CNN of the demo (7 leaf modules, batch 64);
- ``mlp``: a deep MLP of 125 small leaf modules (Linear + LayerNorm + ReLU blocks, width
  64, batch 128);
- ``transformer``: ``nn.TransformerEncoder``, 4 layers, d_model 64, 4 heads, sequences of
  32 tokens, batch 32.

A paired run steps one model with a configuration on and off alternately (A B, B A, ...),
each step timed in this thread's CPU time, so that the shared machine's drift hits both
alike: vizdebug's configurations are switched off with ``session.paused()``, the naive
hooks by removing them, ``wandb.watch`` by ``wandb.unwatch`` (in blocks of 50 steps:
watching again costs a re-registration).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

import vizdebug as vd

CLOCK = time.thread_time


def verdict(lo: float, hi: float, target: float) -> str:
    """``met`` when the whole 95% interval is at or below the target, ``not met`` when it
    is above, else ``undecided`` (more steps, or a quieter machine)."""
    return "met" if hi <= target else ("not met" if lo > target else "undecided")


@dataclass
class Shape:
    name: str
    model: Callable[[], nn.Module]
    batch: Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]]


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 16, 10))


def _mlp(blocks: int = 41, width: int = 64) -> nn.Module:
    layers: list[nn.Module] = [nn.Linear(32, width)]
    for _ in range(blocks):
        layers += [nn.Linear(width, width), nn.LayerNorm(width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


class Encoder(nn.Module):
    """A small transformer encoder with a linear read-out of the mean token."""

    def __init__(self, d_model: int = 64) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x).mean(1))


SHAPES = {
    "cnn": Shape("digits CNN", _cnn, lambda g: (torch.randn(64, 1, 8, 8, generator=g),
                                                torch.randint(0, 10, (64,), generator=g))),
    "mlp": Shape("deep MLP", _mlp, lambda g: (torch.randn(128, 32, generator=g),
                                             torch.randint(0, 10, (128,), generator=g))),
    "transformer": Shape("transformer encoder", Encoder,
                         lambda g: (torch.randn(32, 32, 64, generator=g),
                                    torch.randint(0, 10, (32,), generator=g))),
}


def leaf_modules(model: nn.Module) -> list[nn.Module]:
    return [m for m in model.modules() if not any(True for _ in m.children())]


class NaiveHooks:
    """What a user writes: mean, std and zero share of every module's output, read each
    step, and every gradient norm after backward."""

    def __init__(self, model: nn.Module) -> None:
        self.model, self.handles, self.stats = model, [], []

    def on(self) -> None:
        def hook(module, inputs, output):
            if isinstance(output, torch.Tensor):
                o = output.detach()
                self.stats.append((o.mean().item(), o.std().item(), (o == 0).float().mean().item()))
        self.handles = [m.register_forward_hook(hook) for m in leaf_modules(self.model)]

    def off(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles, self.stats = [], []

    def after_backward(self) -> None:
        if self.handles:
            self.stats.append([p.grad.norm().item() for p in self.model.parameters()
                               if p.grad is not None])


class Trainer:
    """One model, its optimizer and a fixed stream of batches; ``step()`` returns the
    CPU seconds of one training step."""

    def __init__(self, shape: Shape, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.model = shape.model()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        gen = torch.Generator().manual_seed(seed)
        self.batches = [shape.batch(gen) for _ in range(16)]
        self.i = 0
        self.after_backward: Callable[[], None] = lambda: None
        self.log: Callable[[torch.Tensor], None] = lambda loss: None

    def step(self) -> float:
        x, y = self.batches[self.i % len(self.batches)]
        self.i += 1
        start = CLOCK()
        self.opt.zero_grad()
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.after_backward()
        self.opt.step()
        self.log(loss)
        return CLOCK() - start


def _alternate(trainer: Trainer, steps: int, on: Callable, off: Callable,
               block: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` steps with the configuration on and as many off, alternating in blocks."""
    watched, plain = np.zeros(steps), np.zeros(steps)
    state = None
    for start in range(0, steps, block):
        order = (True, False) if (start // block) % 2 == 0 else (False, True)
        for is_on in order:
            if is_on != state:  # switched only on a change (B A, A B: A stays on)
                (on if is_on else off)()
                state = is_on
            for i in range(start, min(start + block, steps)):
                (watched if is_on else plain)[i] = trainer.step()
    return watched, plain


def paired_vizdebug(shape: Shape, steps: int, every: int | str) -> dict:
    """Watched steps from step 0 (early samples included) beside paused ones."""
    trainer = Trainer(shape)
    for _ in range(20):  # warm-up, before watching
        trainer.step()
    session = vd.watch(trainer.model, every=every)
    pauses: list = []

    def on() -> None:
        while pauses:
            pauses.pop().__exit__(None, None, None)
        trainer.log = lambda loss: session.log(loss=loss)

    def off() -> None:
        pauses.append(session.paused())
        pauses[-1].__enter__()
        trainer.log = lambda loss: None

    watched, plain = _alternate(trainer, steps, on, off)
    on()
    samples = session.hooks.activations.total
    session.close()
    return _summary(watched, plain, len(leaf_modules(trainer.model)), samples)


def paired_naive(shape: Shape, steps: int) -> dict:
    trainer = Trainer(shape)
    naive = NaiveHooks(trainer.model)
    trainer.after_backward = naive.after_backward
    for _ in range(20):
        trainer.step()
    watched, plain = _alternate(trainer, steps, naive.on, naive.off)
    return _summary(watched, plain, len(leaf_modules(trainer.model)), steps)


def interleaved_every1_naive(shape: Shape, steps: int) -> dict:
    """``vd.watch(every=1)``, the naive hooks and neither on one model, one step each in
    a rotating order, so that the shared machine's drift hits all three alike (two
    separate paired runs land minutes apart, and their plain steps differ). Returns the
    ratio of their extra costs per step (= per module), with a bootstrap 95% interval
    over blocks of 50 steps."""
    trainer = Trainer(shape)
    naive = NaiveHooks(trainer.model)
    for _ in range(20):
        trainer.step()
    session = vd.watch(trainer.model, every=1)
    pause = session.paused()
    pause.__enter__()
    times = {name: np.zeros(steps) for name in ("plain", "vd", "naive")}
    orders = list(itertools.permutations(times))
    for i in range(steps):
        for name in orders[i % len(orders)]:
            if name == "vd":
                pause.__exit__(None, None, None)
                trainer.log = lambda loss: session.log(loss=loss)
            elif name == "naive":
                naive.on()
                trainer.after_backward = naive.after_backward
            times[name][i] = trainer.step()
            if name == "vd":
                pause = session.paused()
                pause.__enter__()
                trainer.log = lambda loss: None
            elif name == "naive":
                naive.off()
                trainer.after_backward = lambda: None
    pause.__exit__(None, None, None)
    session.close()
    blocks = max(steps // 50, 1)
    per = {k: v[: blocks * 50].reshape(blocks, -1).sum(1) for k, v in times.items()}
    idx = np.random.default_rng(0).integers(0, blocks, (4000, blocks))
    boot = ((per["vd"][idx] - per["plain"][idx]).sum(1)
            / (per["naive"][idx] - per["plain"][idx]).sum(1))
    lo, hi = np.percentile(boot, [2.5, 97.5])
    modules = len(leaf_modules(trainer.model))
    extra = {k: 1e6 * (times[k].mean() - times["plain"].mean()) / modules for k in ("vd", "naive")}
    return {"of_naive": (times["vd"] - times["plain"]).sum() / (times["naive"]
            - times["plain"]).sum(), "lo": lo, "hi": hi, "vd_us": extra["vd"],
            "naive_us": extra["naive"], "plain_ms": 1e3 * times["plain"].mean()}


def paired_wandb(shape: Shape, steps: int, log_freq: int, workdir: str) -> dict:
    import wandb

    trainer = Trainer(shape)
    run = wandb.init(project="vizdebug-bench", dir=workdir, mode="offline")
    for _ in range(20):
        trainer.step()
    step = {"n": 0}

    def log(loss):
        wandb.log({"loss": loss.item()}, step=step["n"])
        step["n"] += 1

    def on():
        wandb.watch(trainer.model, log="all", log_freq=log_freq)
        trainer.log = log

    def off():
        wandb.unwatch(trainer.model)
        trainer.log = lambda loss: None

    watched, plain = _alternate(trainer, steps, on, off, block=50)
    off()
    run.finish()
    return _summary(watched, plain, len(leaf_modules(trainer.model)), None)


def _summary(watched: np.ndarray, plain: np.ndarray, modules: int, samples: int | None) -> dict:
    """The ratio with a bootstrap 95% interval over blocks of 50 steps, and the cost per
    step and per module."""
    blocks = max(len(watched) // 50, 1)
    wb = watched[: blocks * 50].reshape(blocks, -1).sum(1)
    pb = plain[: blocks * 50].reshape(blocks, -1).sum(1)
    idx = np.random.default_rng(0).integers(0, blocks, (4000, blocks))
    lo, hi = np.percentile(wb[idx].sum(1) / pb[idx].sum(1), [2.5, 97.5])
    extra = watched.mean() - plain.mean()
    return {"ratio": watched.sum() / plain.sum(), "lo": lo, "hi": hi,
            "plain_ms": 1e3 * plain.mean(), "extra_us": 1e6 * extra,
            "per_module_us": 1e6 * extra / modules, "modules": modules, "samples": samples}


def run_shapes(steps: int, default_steps: int, workdir: str, with_wandb: bool,
               defaults_only: bool = False) -> None:
    """For each shape: defaults over ``default_steps`` watched steps from step 0,
    ``every=1``, naive hooks and ``wandb.watch`` over ``steps`` each, paired
    (``defaults_only``: the defaults alone, the deciding line's rows: ~1/3 of the time)."""
    print(f"\n### Three model shapes (paired; defaults over {default_steps} steps from step 0, "
          f"the others over {steps})\n")
    print("| shape | leaf modules | plain ms/step | configuration | watched / plain (95%) "
          "| extra us/step | us per module |\n|---|---|---|---|---|---|---|")
    decided: list[str] = []
    for shape in SHAPES.values():
        rows = {"vd.watch defaults": paired_vizdebug(shape, default_steps, "auto")}
        if defaults_only:
            d = rows["vd.watch defaults"]
            print(f"| {shape.name} | {d['modules']} | {d['plain_ms']:.2f} | vd.watch defaults | "
                  f"{d['ratio']:.3f}x ({d['lo']:.3f}-{d['hi']:.3f}) | {d['extra_us']:+.0f} | "
                  f"{d['per_module_us']:.1f} |", flush=True)
            decided.append(f"{shape.name} {d['ratio']:.3f}x (95% {d['lo']:.3f}-{d['hi']:.3f}): "
                           + verdict(d["lo"], d["hi"], 1.03))
            continue
        rows |= {"vd.watch(every=1)": paired_vizdebug(shape, steps, 1),
                "naive hooks (mean/std/zeros + grad norms, each step)": paired_naive(shape, steps)}
        if with_wandb:
            for freq in (1, 100):
                rows[f"wandb.watch(log='all', log_freq={freq})"] = paired_wandb(
                    shape, max(steps, 200), freq, workdir)
        for name, r in rows.items():
            print(f"| {shape.name} | {r['modules']} | {r['plain_ms']:.2f} | {name} | "
                  f"{r['ratio']:.3f}x ({r['lo']:.3f}-{r['hi']:.3f}) | {r['extra_us']:+.0f} | "
                  f"{r['per_module_us']:.1f} |")
        every1, naive = rows["vd.watch(every=1)"], rows[
            "naive hooks (mean/std/zeros + grad norms, each step)"]
        print(f"| {shape.name} | | | every=1 per module / naive per module | "
              f"**{every1['per_module_us'] / naive['per_module_us']:.2f}** (target <= 0.5) | | |")
        both = interleaved_every1_naive(shape, steps)
        print(f"| {shape.name} | | {both['plain_ms']:.2f} | the same, interleaved on one model "
              f"(every=1 {both['vd_us']:.1f} us, naive {both['naive_us']:.1f} us per module) | "
              f"**{both['of_naive']:.2f}** ({both['lo']:.2f}-{both['hi']:.2f}) | | |")
        d = rows["vd.watch defaults"]
        decided.append(f"{shape.name} {d['ratio']:.3f}x (95% {d['lo']:.3f}-{d['hi']:.3f}): "
                       + verdict(d["lo"], d["hi"], 1.03))
        print(f"| {shape.name} | | | defaults | **{d['ratio']:.3f}x** "
              f"(target <= 1.03x; {d['samples']} samples) | | |", flush=True)
    print("\nthree shapes, defaults (paired, from step 0; target <= 1.03x each): "
          + "; ".join(decided))
