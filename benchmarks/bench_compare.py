"""``vd.compare_runs`` over a sweep, side by side with plain ``sqlite3`` + pandas.

Writes two sweeps with the real store (``vd.watch(..., store=)`` and ``session.log``):
100 runs of 10,000 steps and 200 runs of 2,000 steps, 5 metrics per step, each run with a
``config`` (seed, lr). Then, interleaved in every repeat:

- **vizdebug**: ``compare_runs(folder)`` (every run's loss curve at chart resolution,
  extremes kept) and its first picture (the static chart and table, no diagnosis): the
  time to the first picture, and (in a second, traced run) the peak Python memory.
- **sqlite3 + pandas**: what a user writes instead: per run, ``pd.read_sql`` of every loss
  point, then one concatenated frame (no picture drawn: reading alone).

    python benchmarks/bench_compare.py               # 3 repeats
    python benchmarks/bench_compare.py --repeats 1 --small   # 20 x 2,000 and 20 x 500
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd
import torch
from torch import nn

import vizdebug as vd
from vizdebug.views.compare import compare_runs


def write_sweep(folder: Path, runs: int, steps: int) -> None:
    """``runs`` stored runs of ``steps`` steps (5 metrics each), seeds x learning rates."""
    folder.mkdir(parents=True, exist_ok=True)
    model = nn.Linear(2, 1)
    for i in range(runs):
        rng = random.Random(i)
        lr = (0.01, 0.03, 0.1, 0.3)[i % 4]
        session = vd.watch(model, store=str(folder / f"run{i:03d}.sqlite"),
                           config={"seed": i // 4, "lr": lr})
        for step in range(steps):
            loss = 1.0 / (1.0 + lr * step) + rng.random() * 0.02
            session.log(step=step, loss=loss, acc=1.0 - loss / 2, lr=lr, grad_norm=rng.random(),
                        val_loss=loss * 1.1)
        session.close()


def first_picture(folder: Path) -> None:
    view = compare_runs(folder)
    html = view._body(with_findings=False)
    assert len(view.entries) and "<svg" in html


def read_with_pandas(folder: Path) -> None:
    frames = []
    for path in sorted(folder.glob("*.sqlite")):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            frame = pd.read_sql("SELECT step, value FROM scalars WHERE name='loss'", conn)
        frame["run"] = path.stem
        frames.append(frame)
    assert len(pd.concat(frames))


def measured(fn: object, folder: Path) -> tuple[float, float]:
    """Seconds (a plain run) and peak MB of Python memory (a second run, traced: tracing
    slows Python several times, so it is not timed)."""
    start = time.perf_counter()
    fn(folder)  # type: ignore[operator]
    took = time.perf_counter() - start
    tracemalloc.start()
    fn(folder)  # type: ignore[operator]
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return took, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--small", action="store_true", help="small sweeps (a quick check)")
    args = parser.parse_args()
    sweeps = [(20, 2000), (20, 500)] if args.small else [(100, 10_000), (200, 2000)]
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        for runs, steps in sweeps:
            folder = Path(tmp) / f"sweep{runs}x{steps}"
            t = time.perf_counter()
            write_sweep(folder, runs, steps)
            print(f"\n{runs} runs x {steps} steps (5 metrics) written in "
                  f"{time.perf_counter() - t:.0f} s")
            got: dict[str, list[tuple[float, float]]] = {"vizdebug": [], "pandas": []}
            for _ in range(args.repeats):
                got["vizdebug"].append(measured(first_picture, folder))
                got["pandas"].append(measured(read_with_pandas, folder))
            for name, values in got.items():
                secs = statistics.median(v[0] for v in values)
                mb = statistics.median(v[1] for v in values)
                print(f"  {name:9s} median {secs:6.2f} s, peak {mb:7.1f} MB Python memory")
            ratio = (statistics.median(v[0] for v in got["vizdebug"])
                     / statistics.median(v[0] for v in got["pandas"]))
            print(f"  first picture (vizdebug) / reading only (sqlite3+pandas): {ratio:.2f}x")


if __name__ == "__main__":
    main()
