"""The run store's durability bound under a logging rate its writer cannot keep up with.

Real processes log through ``vd.watch(model, store=path)`` and are killed with SIGKILL at
a known time (or close normally); the file they leave is then read with plain ``sqlite3``:

- **lost s**: the kill time minus the log time of the newest stored point (what a crash
  loses; the writer's bound is about 0.5 s, one write interval);
- **stored / logged**: points in the file against points passed to ``log()``;
- **close s**: how long ``session.close()`` took after the same logging.

Loads (each a tight loop in the main thread, the writer starved of the GIL):

- ``tight21``: 21 metrics per ``log()`` call, nothing else (millions of points a second);
- ``gil50``: 50 metrics per step and 1 ms of work that holds the GIL (one C call) per step;
- ``light3``: 3 metrics per step and the same 1 ms of work (a rate the writer keeps up
  with: nothing may be dropped there).

With ``--old DIR`` (a checkout of an earlier commit, e.g. ``git worktree add /tmp/old
HEAD``) the same loads run against it, side by side.

    python benchmarks/bench_durability.py --old /tmp/old          # ~2 minutes
    python benchmarks/bench_durability.py --seconds 4 --loads gil50
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOADS = {"tight21": (21, 0.0), "gil50": (50, 1e-3), "light3": (3, 1e-3)}

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch, vizdebug as vd
path, metrics, work, mode, seconds = sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], float(sys.argv[6])
def took(n):
    t = time.perf_counter(); sum(range(n)); return time.perf_counter() - t
n = 1000
while work and took(n) < work:  # a C call of about `work` seconds that holds the GIL
    n *= 2
if work:
    n = int(n * work / min(took(n) for _ in range(5)))
names = [f"metric{i}" for i in range(metrics)]
session = vd.watch(torch.nn.Linear(2, 1), store=path)
start = time.time()
print(json.dumps({"start": start}), flush=True)
calls, next_note, i = 0, start + 0.1, 0
while True:
    if work:
        sum(range(n))
    session.log(**dict.fromkeys(names, float(i)))
    i += 1
    if i % 64 == 0:
        now = time.time()
        if now >= next_note:
            print(json.dumps({"points": i * metrics, "at": now}), flush=True)
            next_note = now + 0.1
        if mode == "close" and now - start >= seconds:
            break
t = time.perf_counter(); session.close(); took = time.perf_counter() - t
print(json.dumps({"points": i * metrics, "close_s": took}), flush=True)
"""


def _stored(path: Path) -> dict[str, float]:
    conn = sqlite3.connect(str(path), timeout=30)
    try:
        count, newest = conn.execute("SELECT count(*), max(time) FROM scalars").fetchone()
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()
    return {"stored": count, "newest": newest or 0.0,
            "dropped": json.loads(meta.get("dropped_points", "0") or "0"),
            "state": json.loads(meta.get("state", '"?"'))}


def _child(root: Path, path: Path, load: str, mode: str, seconds: float) -> subprocess.Popen:
    metrics, work = LOADS[load]
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(path), str(metrics), str(work), mode,
         str(seconds)], stdout=subprocess.PIPE, text=True, cwd=str(root))


def killed(root: Path, load: str, seconds: float, workdir: Path) -> dict[str, float]:
    """Log for ``seconds``, SIGKILL, read what the file kept."""
    path = workdir / f"kill-{load}-{time.time_ns()}.sqlite"
    child = _child(root, path, load, "kill", seconds)
    start = json.loads(child.stdout.readline())["start"]
    time.sleep(max(0.0, start + seconds - time.time()))
    killed_at = time.time()
    os.kill(child.pid, signal.SIGKILL)
    out, _ = child.communicate(timeout=60)
    notes = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    logged = notes[-1]["points"] if notes else 0
    got = _stored(path)
    return {"lost_s": killed_at - got["newest"] if got["newest"] else seconds,
            "logged": logged, "stored": got["stored"], "dropped": got["dropped"]}


def closed(root: Path, load: str, seconds: float, workdir: Path) -> dict[str, float]:
    """Log for ``seconds``, then ``close()``; how long it took and what was kept."""
    path = workdir / f"close-{load}-{time.time_ns()}.sqlite"
    child = _child(root, path, load, "close", seconds)
    out, _ = child.communicate(timeout=600)
    last = json.loads(out.splitlines()[-1])
    got = _stored(path)
    return {"close_s": last["close_s"], "logged": last["points"], "stored": got["stored"],
            "dropped": got["dropped"], "state": got["state"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0, help="logging time per run")
    parser.add_argument("--old", type=Path, help="an earlier checkout to compare with")
    parser.add_argument("--loads", nargs="*", default=list(LOADS), choices=list(LOADS))
    args = parser.parse_args(argv)
    roots = {"this": ROOT, **({"old": args.old.resolve()} if args.old else {})}
    print(f"| load | code | lost s at SIGKILL ({args.seconds:g} s) | stored / logged (kill) "
          "| close() s | stored / logged (close) | dropped (close) | state |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for load in args.loads:
            for name, root in roots.items():
                k = killed(root, load, args.seconds, Path(tmp))
                c = closed(root, load, args.seconds, Path(tmp))
                print(f"| {load} | {name} | {k['lost_s']:.2f} | {k['stored']:,} / "
                      f"{k['logged']:,} | {c['close_s']:.2f} | {c['stored']:,} / "
                      f"{c['logged']:,} | {c['dropped']:,} | {c['state']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
