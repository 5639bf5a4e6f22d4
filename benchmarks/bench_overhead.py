"""Training overhead of vizdebug's collectors vs TensorBoard, W&B and livelossplot.

One small CNN on scikit-learn's digits, a few hundred steps per configuration, all
configurations interleaved in each repeat (so machine noise hits them alike); reported as
the median over repeats of (time per step / plain time per step in the same repeat), and
as the ratio of the best (least disturbed) repeats: CPU time only grows with disturbance.

    python benchmarks/bench_overhead.py            # default: 5 repeats x 300 steps
    python benchmarks/bench_overhead.py --repeats 3 --steps 200
    python benchmarks/bench_overhead.py --paired 3000   # vizdebug only, one model, step by step
    python benchmarks/bench_overhead.py --only-shapes   # the three model shapes only
    python benchmarks/bench_overhead.py --only-shapes --shape-defaults-only   # their target rows

The default run ends with three model shapes (the CNN, a deep MLP of 125 leaf modules, a
transformer encoder; see overhead_shapes.py), each paired beside naive hooks and
``wandb.watch``, with the cost of a sampled step per module.

W&B runs in offline mode (nothing leaves the machine); it is skipped with a note when the
package is missing. livelossplot draws with matplotlib's Agg backend (no window opens).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead_shapes import run_shapes, verdict

# The machine is shared: wall time swings with other people's jobs. One intra-op thread
# and CPU time of this process make the runs comparable (I/O waits are not counted, so
# TensorBoard/W&B writer threads still count as the CPU they burn).
torch.set_num_threads(1)
CLOCK = time.process_time


WIDTH = 16  # channels of the first conv; --width changes it for the paired mode


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, WIDTH, 3, padding=1), nn.ReLU(),
        nn.Conv2d(WIDTH, 2 * WIDTH, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(2 * WIDTH * 16, 10),
    )


def make_loader() -> DataLoader:
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = (x - x.mean()) / x.std()
    data = TensorDataset(torch.tensor(x, dtype=torch.float32).reshape(-1, 1, 8, 8),
                         torch.tensor(y))
    return DataLoader(data, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(0))


Setup = Callable[[nn.Module, DataLoader, str], tuple[Callable[[int, torch.Tensor], None],
                                                     Callable[[], None]]]


def run(setup: Setup, steps: int, workdir: str, *, count_finish: bool = False) -> float:
    """Seconds per training step (the loop, data loading included) for one configuration;
    with ``count_finish`` the configuration's closing call (a last write) counts too."""
    model, loader = make_model(), make_loader()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    after_step, finish = setup(model, loader, workdir)
    # The garbage an earlier configuration left (livelossplot's closed figures: ~1.3M
    # objects) is collected now, not by whichever later run's allocations trigger the
    # next full collection (a few hundred ms landing in one 1 s run).
    gc.collect()
    step, start = 0, CLOCK()
    while step < steps:
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            after_step(step, loss)
            step += 1
            if step == steps:
                break
    elapsed = CLOCK() - start
    finish()
    if count_finish:
        elapsed = CLOCK() - start
    return elapsed / steps


def nothing() -> None:
    return None


def plain(model, loader, workdir):
    return (lambda step, loss: None), nothing


def watch(every: int | None) -> Setup:
    def setup(model, loader, workdir):
        kwargs = {} if every is None else {"every": every}
        session = vd.watch(model, loader=loader, **kwargs)
        return (lambda step, loss: session.log(loss=loss)), session.close
    return setup


def tensorboard(every: int) -> Setup:
    def setup(model, loader, workdir):
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(tempfile.mkdtemp(dir=workdir))
        params = list(model.named_parameters())

        def after(step, loss):
            writer.add_scalar("loss", loss.item(), step)
            if step % every == 0:
                for name, p in params:
                    writer.add_histogram(name, p, step)
                    writer.add_histogram(name + ".grad", p.grad, step)
        return after, writer.close
    return setup


def wandb_watch(log_freq: int) -> Setup:
    def setup(model, loader, workdir):
        import wandb

        run_ = wandb.init(project="vizdebug-bench", dir=workdir, mode="offline")
        wandb.watch(model, log="all", log_freq=log_freq)

        def after(step, loss):
            wandb.log({"loss": loss.item()}, step=step)

        def finish():
            wandb.unwatch(model)
            run_.finish()
        return after, finish
    return setup


def livelossplot(every: int) -> Setup:
    def setup(model, loader, workdir):
        import matplotlib

        matplotlib.use("Agg")
        from livelossplot import PlotLosses

        plot = PlotLosses()

        def after(step, loss):
            plot.update({"loss": loss.item()})
            if step % every == 0:
                with contextlib.redirect_stdout(io.StringIO()):
                    plot.send()  # redraws the whole figure, as in a notebook
        return after, _close_figures
    return setup


def _close_figures() -> None:
    import matplotlib.pyplot as plt

    plt.close("all")


def log_cost(n: int = 200_000) -> dict[str, float]:
    """Microseconds per ``Session.log`` call, amortised (resolution included)."""
    out = {}
    graph = torch.tensor(0.25, requires_grad=True) * 2  # a loss before .backward()
    for label, value in (("float", 0.5), ("0-d tensor", torch.tensor(0.5)),
                         ("0-d tensor holding its graph", graph)):
        best = float("inf")
        for _ in range(5):
            session = vd.watch(nn.Linear(2, 2))
            start = time.perf_counter()
            for _ in range(n):
                session.log(loss=value)
            session.log_store.resolve()
            best = min(best, (time.perf_counter() - start) / n * 1e6)
            session.close()
        out[label] = best
    return out


def configurations(with_wandb: bool) -> dict[str, Setup]:
    configs: dict[str, Setup] = {
        "plain loop": plain,
        "plain loop, second copy (noise floor)": plain,
        f"vd.watch defaults (every={vd.collect.session.watch.DEFAULT_EVERY})": watch(None),
        "vd.watch(every=10)": watch(10),
        "vd.watch(every=1)": watch(1),
        "TensorBoard histograms every step": tensorboard(1),
        "TensorBoard histograms every 10th step": tensorboard(10),
        "livelossplot every step": livelossplot(1),
        "livelossplot every 10th step": livelossplot(10),
    }
    if with_wandb:
        configs["wandb.watch(log='all', log_freq=1)"] = wandb_watch(1)
        configs["wandb.watch(log='all', log_freq=100)"] = wandb_watch(100)
    return configs


PHASES = ("next batch", "zero_grad + forward", "loss + backward", "optimizer step", "log")


def _stepper(every: int | str) -> tuple[Callable[[np.ndarray, bool], None], object]:
    """One training step at a time on one model, watched or plain (the collectors paused,
    and batches from an untapped twin of the loader), its phases timed in CPU time."""
    model, loader, twin = make_model(), make_loader(), make_loader()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    session = vd.watch(model, loader=loader, every=every)

    def batches(source):
        while True:
            yield from source

    tapped, untapped, clock = batches(loader), batches(twin), time.thread_time

    def step(acc: np.ndarray, watched: bool) -> None:
        t0 = clock()
        x, y = next(tapped if watched else untapped)
        t1 = clock()
        opt.zero_grad()
        out = model(x)
        t2 = clock()
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        t3 = clock()
        opt.step()
        t4 = clock()
        if watched:
            session.log(loss=loss)
        acc += (t1 - t0, t2 - t1, t3 - t2, t4 - t3, clock() - t4)

    return step, session


def paired(steps: int, every: int | str) -> tuple[float, float, float]:
    """Watched and plain steps of the same model, alternately (A B, B A, ...): the plain
    ones run inside ``session.paused()`` (every hook off, batches from an untapped twin
    loader). One model, one process: no difference of memory placement between two
    copies (which moved a plain-vs-plain comparison of two copies by up to 1.7%), and
    drifts of the shared machine hit both alike. The ratio gets a bootstrap 95% interval
    over blocks of 50 steps."""
    step, session = _stepper(every)
    scratch = np.zeros(len(PHASES))
    for _ in range(30):
        step(scratch, True)
    wa, pa = np.zeros((steps, len(PHASES))), np.zeros((steps, len(PHASES)))
    for i in range(steps):
        for watched in ((True, False) if i % 2 else (False, True)):
            if watched:
                step(wa[i], True)
            else:
                with session.paused():
                    step(pa[i], False)
    session.close()
    w, p = wa.sum(axis=1), pa.sum(axis=1)
    blocks = steps // 50
    wb, pb = w[: blocks * 50].reshape(blocks, 50).sum(1), p[: blocks * 50].reshape(blocks, 50).sum(1)
    idx = np.random.default_rng(0).integers(0, blocks, (4000, blocks))
    lo, hi = np.percentile(wb[idx].sum(1) / pb[idx].sum(1), [2.5, 97.5])
    print(f"\nevery={every}: {steps} paired steps; watched / plain = {w.sum() / p.sum():.3f}x "
          f"(95% {lo:.3f}-{hi:.3f}); plain step {1e3 * p.mean():.2f} ms, watched "
          f"+{1e6 * (w.mean() - p.mean()):.0f} us; {session.hooks.activations.total} sampled steps")
    print("| phase | plain us/step | watched us/step | difference |\n|---|---|---|---|")
    for k, name in enumerate(PHASES):
        print(f"| {name} | {1e6 * pa[:, k].mean():.1f} | {1e6 * wa[:, k].mean():.1f} | "
              f"{1e6 * (wa[:, k].mean() - pa[:, k].mean()):+.1f} |")
    return w.sum() / p.sum(), lo, hi


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--paired", type=int, default=0, metavar="STEPS",
                        help="vizdebug only: defaults and every=1, watched and plain (paused) "
                             "steps of one model alternately, STEPS of each (e.g. 3000), per phase")
    parser.add_argument("--targets", type=int, default=1500, metavar="STEPS",
                        help="after the full runs, the paired check of the two overhead "
                             "targets with STEPS steps each (0: skip)")
    parser.add_argument("--shapes", type=int, default=300, metavar="STEPS",
                        help="the three model shapes, STEPS paired steps per configuration "
                             "(defaults: --shape-defaults steps); 0: skip")
    parser.add_argument("--shape-defaults", type=int, default=1000, metavar="STEPS")
    parser.add_argument("--only-shapes", action="store_true")
    parser.add_argument("--shape-defaults-only", action="store_true",
                        help="with the shapes: the defaults' rows alone (the target), ~1/3 the time")
    parser.add_argument("--width", type=int, default=16,
                        help="with --paired: channels of the first conv (64: a ~20 ms step)")
    return parser.parse_args()


def _targets(got: dict, steps: int) -> str:
    """The line that decides the two CNN targets."""
    (d, dlo, dhi), (e, elo, ehi) = got["auto"], got[1]
    return (f"targets (digits CNN, paired, {steps} steps each): defaults {d:.3f}x (95% "
            f"{dlo:.3f}-{dhi:.3f}; target <= 1.03x): {verdict(dlo, dhi, 1.03)}; every=1 "
            f"{e:.3f}x (95% {elo:.3f}-{ehi:.3f}; target <= 1.3x): {verdict(elo, ehi, 1.3)}")


def full_runs(repeats: int, steps: int, with_wandb: bool) -> None:
    """Every configuration once per repeat, in a new order each repeat; a table of ratios."""
    configs = configurations(with_wandb)
    times: dict[str, list[float]] = {name: [] for name in configs}
    with tempfile.TemporaryDirectory() as workdir:
        run(plain, 30, workdir)  # warm-up
        for rep in range(repeats):
            # a new order each repeat: no configuration always runs just after the heavy
            # ones, or always first (the machine drifts within a repeat too)
            order = list(configs)
            random.Random(rep).shuffle(order)
            for name in order:
                times[name].append(run(configs[name], steps, workdir))
            print(f"repeat {rep + 1}/{repeats} done", file=sys.stderr)
    plain_times = np.asarray(times["plain loop"])
    print(f"\n{repeats} repeats x {steps} steps, torch {torch.__version__}, "
          f"{os.cpu_count()} CPUs, 1 intra-op thread, CPU time of this process; "
          f"plain step median {1000 * np.median(plain_times):.2f} ms\n")
    print(f"| {'configuration':42s} | ms/step | x plain, median | x plain, best of {repeats} |"
          " per-repeat range |")
    print(f"|{'-' * 44}|---------|-----------------|------------------|------------------|")
    for name, values in times.items():
        ratios = np.asarray(values) / plain_times
        best = min(values) / plain_times.min()
        print(f"| {name:42s} | {1000 * np.median(values):7.2f} | {statistics.median(ratios):15.2f} |"
              f" {best:16.2f} | {ratios.min():.2f}-{ratios.max():.2f}        |")


def main() -> None:
    args = _arguments()
    global WIDTH
    WIDTH = args.width
    if args.paired:
        got = {every: paired(args.paired, every) for every in ("auto", 1, 10**9)}  # 10**9:
        print(f"\n{_targets(got, args.paired)}; never sampled (every=10**9) "  # the floor
              f"{got[10**9][0]:.3f}x")
        return
    try:
        import wandb  # noqa: F401
        with_wandb = True
    except ImportError:
        with_wandb = False
        print("note: wandb is not installed (pip install wandb): its rows are skipped")
    if not args.only_shapes:
        full_runs(args.repeats, args.steps, with_wandb)
        costs = log_cost()
        print("\nSession.log, amortised: " + ", ".join(f"{k} {v:.2f} us" for k, v in costs.items()))
    if args.targets and not args.only_shapes:
        # The full runs above swing by several percent between two copies of the same
        # plain loop (memory placement, the shared machine): the targets are checked on one
        # model, watched and paused steps alternating.
        got = {every: paired(args.targets, every) for every in ("auto", 1)}
        print(f"\n{_targets(got, args.targets)}; log() {max(costs.values()):.2f} us at most "
              "(target 2 us)")
    if args.shapes:
        with tempfile.TemporaryDirectory() as workdir:
            run_shapes(args.shapes, args.shape_defaults, workdir, with_wandb,
                       args.shape_defaults_only)


if __name__ == "__main__":
    main()
