"""A long run: a million steps logging 5 scalars per step, with the sampled layer
statistics of ``vd.watch`` defaults, written to a run file; then opened, drawn, diagnosed.

Side by side in the same process: the same loop with no vizdebug (the cost per step of
watching and storing is the difference), and the same scalars written with plain
``sqlite3`` (one ``executemany`` per 1,000 steps, what a hand-rolled logger does).

Prints: seconds per step of each loop, the run file's size, and the time to
``open_run`` + ``scalars()``, ``records()``, the dashboard's static HTML, ``findings()``.

    python benchmarks/bench_long_run.py                  # 1,000,000 steps
    python benchmarks/bench_long_run.py --steps 100000   # a quicker reading
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from torch import nn

import vizdebug as vd


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))


def train(steps: int, log: object, model: nn.Module | None = None) -> float:
    """The loop; ``log(step, loss)`` is what each variant does with the step's scalars."""
    model = model or _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    start = time.perf_counter()
    for step in range(steps):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        log(step, loss)  # type: ignore[operator]
    return time.perf_counter() - start


def plain(steps: int, _: Path) -> float:
    return train(steps, lambda step, loss: None)


def with_sqlite(steps: int, path: Path) -> float:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE s (step INTEGER, name TEXT, value REAL)")
    rows: list[tuple] = []

    def log(step: int, loss: torch.Tensor) -> None:
        v = float(loss)
        rows.extend((step, n, v) for n in ("loss", "acc", "lr", "grad_norm", "val"))
        if len(rows) >= 5000:
            conn.executemany("INSERT INTO s VALUES (?, ?, ?)", rows)
            conn.commit()
            rows.clear()

    took = train(steps, log)
    conn.close()
    return took


def with_vizdebug(steps: int, path: Path) -> float:
    model = _model()
    session = vd.watch(model, store=str(path))

    def log(step: int, loss: torch.Tensor) -> None:
        v = float(loss)
        session.log(step=step, loss=v, acc=v, lr=0.01, grad_norm=v, val=v)

    took = train(steps, log, model)
    session.close()
    return took


def timed(what: str, fn: object) -> object:
    start = time.perf_counter()
    out = fn()  # type: ignore[operator]
    print(f"  {what:34s} {time.perf_counter() - start:8.2f} s")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "long.sqlite"
        per = {}
        for name, fn in (("plain loop", plain), ("sqlite3 by hand", with_sqlite),
                         ("vd.watch + store", with_vizdebug)):
            took = fn(args.steps, Path(tmp) / "hand.sqlite" if fn is with_sqlite else run)
            per[name] = took / args.steps
            print(f"{name:18s} {took:8.1f} s  {per[name] * 1e6:7.1f} us/step")
        for name in ("sqlite3 by hand", "vd.watch + store"):
            extra = (per[name] - per["plain loop"]) * 1e6
            print(f"  {name}: +{extra:.1f} us/step over the plain loop "
                  f"({per[name] / per['plain loop']:.2f}x)")
        size = sum(os.path.getsize(p) for p in Path(tmp).glob("long.sqlite*"))
        print(f"run file: {size / 1e6:.1f} MB for {args.steps:,} steps x 5 scalars")
        opened = timed("open_run + scalars()", lambda: vd.open_run(run).scalars())
        print(f"  ({len(opened):,} rows read back: scalars() returns every point)")
        stored = vd.open_run(run)
        timed("records()", stored.records)
        timed("dashboard static HTML (to_html)", stored.to_html)
        found = timed("findings()", stored.findings)
        print(f"  findings: {found.summary()}")  # type: ignore[union-attr]


if __name__ == "__main__":
    main()
