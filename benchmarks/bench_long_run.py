"""A long run: a million steps logging 5 scalars per step, with the sampled layer
statistics of ``vd.watch`` defaults, written to a run file; then opened, drawn, diagnosed.

Side by side in the same process: the same loop with no vizdebug (the cost per step of
watching and storing is the difference), and the same scalars written with plain
``sqlite3`` (one ``executemany`` per 1,000 steps, what a hand-rolled logger does).

Prints: seconds per step of each loop (wall, and the process's CPU time, every thread
counted: on a shared machine the CPU figure is the steadier), the run file's size, then, from a fresh
``open_run``: the open, the first picture (the dashboard's static twin: records, findings,
SVG), ``findings()``, a zoom into step 900,000 (of a million; 90% of the run) as the
dashboard's page asks it, the whole run at 1,000 points (``scalars(points=1000)``), and
``scalars()`` of every point (what a user reading the file with pandas gets).

    python benchmarks/bench_long_run.py                  # 1,000,000 steps
    python benchmarks/bench_long_run.py --steps 100000   # a quicker reading
    python benchmarks/bench_long_run.py --steps 100000 --paired /tmp/old --repeats 3
    python benchmarks/bench_long_run.py --file /tmp/long.sqlite   # the vd.watch loop, kept

``--paired TREE``: the write cost only, interleaved: each repeat runs the plain loop and
the ``vd.watch`` loop in a fresh process with this tree's vizdebug and with ``TREE``'s (a
``git worktree add /tmp/old <commit>``), in alternating order, and prints each overhead
and their ratio (the machine is shared: pairs, not absolute numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, sys.argv[sys.argv.index("--tree") + 1] if "--tree" in sys.argv  # --paired
                else str(Path(__file__).resolve().parents[1]))

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
    with_vizdebug.writer_cpu = session.store.cpu_seconds  # type: ignore[attr-defined]
    return took


def timed(what: str, fn: object) -> object:
    start = time.perf_counter()
    out = fn()  # type: ignore[operator]
    print(f"  {what:44s} {time.perf_counter() - start:8.3f} s")
    return out


def write_only(steps: int) -> None:
    """The plain loop and the vd.watch loop once each: one JSON line of seconds per step."""
    with tempfile.TemporaryDirectory() as tmp:
        plain_s = plain(steps, Path(tmp)) / steps
        vd_s = with_vizdebug(steps, Path(tmp) / "long.sqlite") / steps
    print(json.dumps({"plain": plain_s, "vd": vd_s, "tree": vd.__file__,
                      "writer_cpu": with_vizdebug.writer_cpu / steps}))  # type: ignore[attr-defined]


def paired(steps: int, old: str, repeats: int) -> None:
    """Interleaved write cost of this tree against ``old`` (fresh processes)."""
    here = str(Path(__file__).resolve().parents[1])
    got: dict[str, list[float]] = {"old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    for k in range(repeats):
        for label in (("old", "new") if k % 2 == 0 else ("new", "old")):
            tree = old if label == "old" else here
            out = subprocess.run([sys.executable, __file__, "--steps", str(steps), "--write-only",
                                  "--tree", tree], capture_output=True, text=True, check=True)
            line = json.loads(out.stdout.strip().splitlines()[-1])
            extra = (line["vd"] - line["plain"]) * 1e6
            got[label].append(extra)
            cpu[label].append(line["writer_cpu"] * 1e6)
            print(f"  {label}: plain {line['plain'] * 1e6:6.1f} us/step, vd.watch + store "
                  f"{line['vd'] * 1e6:6.1f} us/step (+{extra:.1f} us); the writer thread's "
                  f"CPU {line['writer_cpu'] * 1e6:.1f} us/step [{line['tree']}]")
    for what, values in (("overhead (wall)", got), ("writer CPU", cpu)):
        old_m, new_m = statistics.median(values["old"]), statistics.median(values["new"])
        print(f"median {what}: old {old_m:.1f} us/step, new {new_m:.1f} us/step "
              f"(new/old {new_m / old_m:.2f}x)")


def read_back(run: Path, steps: int) -> None:
    """Open, draw, diagnose and zoom the stored run, each from what the previous left
    (pandas imported first, as in a notebook: its import is not the run's cost)."""
    import pandas  # noqa: F401

    from vizdebug.views._dashboard_zoom import answer_zoom
    from vizdebug.views.dashboard import Dashboard

    stored = timed("open_run", lambda: vd.open_run(run))
    twin = timed("first picture (dashboard twin: records+findings)",
                 lambda: Dashboard(stored, live=False)._twin_html())
    print(f"  ({len(twin):,} characters of SVG/HTML)")  # type: ignore[arg-type]
    found = timed("findings()", stored.findings)
    print(f"  findings: {found.summary()}")  # type: ignore[union-attr]
    at = steps * 9 // 10
    for lo, hi in ((at - 400, at + 400), (at - 50_000, at + 50_000)):
        reply = timed(f"zoom {lo:,}..{hi:,} (1,000 px)", lambda lo=lo, hi=hi: answer_zoom(
            stored, {"kind": "zoom", "panel": "curves", "lo": lo, "hi": hi, "points": 1000}))
        series = reply["series"][0]  # type: ignore[index]
        print(f"  ({len(reply['series'])} series; {series['name']}: {len(series['x'])} "  # type: ignore[index]
              f"points, exact={series['exact']})")
    reset = timed("zoom reset (whole run, 1,000 px)", lambda: answer_zoom(
        stored, {"kind": "zoom", "panel": "curves", "reset": True, "points": 1000}))
    print(f"  ({len(reset['series'][0]['x'])} buckets of the first series)")  # type: ignore[index]
    few = timed("scalars(points=1000), every metric", lambda: stored.scalars(points=1000))
    print(f"  ({len(few):,} rows)")  # type: ignore[arg-type]
    every = timed("scalars(), every point", lambda: vd.open_run(run).scalars())
    print(f"  ({len(every):,} rows: every point as a DataFrame)")  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--write-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    parser.add_argument("--paired", metavar="TREE", help="interleaved write cost against TREE")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--file", type=Path, help="write the vd.watch loop alone into FILE "
                        "(kept; if it exists, only read it back)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.write_only:
        return write_only(args.steps)
    if args.paired:
        return paired(args.steps, args.paired, args.repeats)
    if args.file:  # the vd.watch loop alone into FILE (unless it exists), then the reads
        if not args.file.exists():
            cpu = time.process_time()
            took = with_vizdebug(args.steps, args.file)
            cpu = time.process_time() - cpu
            print(f"vd.watch + store {took:8.1f} s  {took / args.steps * 1e6:7.1f} us/step "
                  f"(process CPU {cpu / args.steps * 1e6:.1f} us/step)")
        size = sum(os.path.getsize(p) for p in args.file.parent.glob(args.file.name + "*"))
        print(f"run file: {size / 1e6:.1f} MB")
        return read_back(args.file, args.steps)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "long.sqlite"
        plain(min(args.steps, 2000), Path(tmp))  # warm-up (torch's first calls), not counted
        per, cpu = {}, {}  # wall, and the process's CPU (every thread: the writer's too)
        for name, fn in (("plain loop", plain), ("sqlite3 by hand", with_sqlite),
                         ("vd.watch + store", with_vizdebug)):
            began = time.process_time()
            took = fn(args.steps, Path(tmp) / "hand.sqlite" if fn is with_sqlite else run)
            per[name] = took / args.steps
            cpu[name] = (time.process_time() - began) / args.steps
            print(f"{name:18s} {took:8.1f} s  {per[name] * 1e6:7.1f} us/step  "
                  f"(process CPU {cpu[name] * 1e6:.1f} us/step)")
        for name in ("sqlite3 by hand", "vd.watch + store"):
            extra = (per[name] - per["plain loop"]) * 1e6
            extra_cpu = (cpu[name] - cpu["plain loop"]) * 1e6
            print(f"  {name}: +{extra:.1f} us/step over the plain loop "
                  f"({per[name] / per['plain loop']:.2f}x); CPU +{extra_cpu:.1f} us/step "
                  f"({cpu[name] / cpu['plain loop']:.2f}x)")
        size = sum(os.path.getsize(p) for p in Path(tmp).glob("long.sqlite*"))
        print(f"run file: {size / 1e6:.1f} MB for {args.steps:,} steps x 5 scalars")
        with sqlite3.connect(run) as conn:
            rows = conn.execute("SELECT count(*) FROM envelope").fetchone()[0]
        print(f"  (of which the envelope: {rows:,} rows)")
        read_back(run, args.steps)


if __name__ == "__main__":
    main()
