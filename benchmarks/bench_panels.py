"""What the issue-23 panels cost: the optimizer-settings tap on the training loop, and the
layer/optimizer panels and the epoch table in the dashboard's HTML area.

1. The hyper tap (``collect/taps/hyper.py``) runs after every optimizer step the clock
   counts. A small MLP trains watched (``every="auto"``, the default) with the tap on and
   with it taken off the clock's listeners, the two interleaved step by step in pairs
   (the same model, the same batches), so machine noise hits both alike. Reported: the
   median ratio of the paired step times, and the tap's own cost per call measured alone.
   What users use instead: nothing is recorded of momentum and weight decay by the
   session otherwise; TensorBoard / W&B users log ``optimizer.param_groups[i]["lr"]``
   by hand each step, which is timed beside it (one ``float()`` read per group).
2. ``panels_html`` and ``epochs_html`` on a long run (the dashboard redraws them at most
   every 10 s while training runs): milliseconds per call and bytes.

    python benchmarks/bench_panels.py                 # 4000 paired steps, 3000-step run
    python benchmarks/bench_panels.py --steps 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 10))


def paired_overhead(steps: int) -> dict[str, float]:
    import torch

    import vizdebug as vd

    model = _model(torch)
    opt = torch.optim.SGD([{"params": model[0].parameters()},
                           {"params": list(model[2].parameters()) + list(model[4].parameters()),
                            "lr": 0.01}], lr=0.05, momentum=0.9, weight_decay=1e-4)
    x, y = torch.randn(32, 32), torch.randint(0, 10, (32,))
    session = vd.watch(model)
    listeners = session.hooks.clock.after_optimizer_step
    tap = session.hyper.on_step

    def step() -> float:
        start = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        session.log(loss=loss.detach())
        return time.perf_counter() - start

    for _ in range(200):  # warm up
        step()
    ratios, on_times, off_times = [], [], []
    for i in range(steps):
        order = (True, False) if i % 2 else (False, True)
        pair = {}
        for on in order:
            if on and tap not in listeners:
                listeners.append(tap)
            elif not on and tap in listeners:
                listeners.remove(tap)
            pair[on] = step()
        on_times.append(pair[True])
        off_times.append(pair[False])
        ratios.append(pair[True] / pair[False])
    if tap not in listeners:
        listeners.append(tap)
    reads = len(session.hyper.trace)
    session.close()
    # the tap's call alone at a step it does not read (the common case), and at one it reads
    hyper = session.hyper
    hyper.sampling = lambda: False
    hyper._last = 10**12  # (never due)
    n = 200_000
    start = time.perf_counter()
    for _ in range(n):
        hyper.on_step()
    skip_us = (time.perf_counter() - start) / n * 1e6
    hyper.sampling = lambda: True
    hyper.optimizer = lambda: opt
    start = time.perf_counter()
    for _ in range(20_000):
        hyper.on_step()
    read_us = (time.perf_counter() - start) / 20_000 * 1e6
    start = time.perf_counter()
    for _ in range(20_000):
        [float(g["lr"]) for g in opt.param_groups]
    by_hand_us = (time.perf_counter() - start) / 20_000 * 1e6
    return {"median ratio on/off": statistics.median(ratios),
            "median step on (ms)": 1000 * statistics.median(on_times),
            "median step off (ms)": 1000 * statistics.median(off_times),
            "reads kept": reads, "tap call, no read (us)": skip_us,
            "tap call with a read of 2 groups (us)": read_us,
            "by hand: lr of 2 groups (us)": by_hand_us}


def panel_costs(steps: int) -> dict[str, float]:
    import torch

    import vizdebug as vd
    from vizdebug.views.epochs_table import epochs_html
    from vizdebug.views.panels_static import panels_html

    model = _model(torch)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    x, y = torch.randn(32, 32), torch.randint(0, 10, (32,))
    with vd.watch(model, every=5) as session:
        for i in range(steps):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            session.log(loss=loss.detach())
            if (i + 1) % 100 == 0:
                session.log(val_loss=float(loss.detach()), epoch=i // 100)
    rec = session.records()
    out = {}
    for name, draw in (("panels_html", lambda: panels_html(rec, session)),
                       ("epochs_html", lambda: epochs_html(rec))):
        draw()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            html = draw()
            times.append(time.perf_counter() - start)
        out[f"{name} (ms, median of 5)"] = 1000 * statistics.median(times)
        out[f"{name} (KB)"] = len(html) / 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4000, help="paired steps")
    parser.add_argument("--run", type=int, default=3000, help="steps of the long run")
    args = parser.parse_args()
    for title, figures in (("hyper tap, paired", paired_overhead(args.steps)),
                           (f"panels on a {args.run}-step run", panel_costs(args.run))):
        print(f"== {title}")
        for key, value in figures.items():
            print(f"  {key:40s} {value:10.4g}")


if __name__ == "__main__":
    main()
