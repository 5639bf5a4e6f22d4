"""vizdebug's overhead on a ``torch.compile``'d model (issue 25), in one run.

Two copies of one MLP (same weights), each compiled with the same backend; one is watched
with ``vd.watch(compiled, every=...)``. Their training steps alternate (A B, B A, ...) and
each is timed in this thread's CPU time, so the shared machine's drift hits both alike.
Reported: the graphs and graph breaks dynamo made for each (a counting backend wraps the
real one), the median steady step of each and their ratio.

    python benchmarks/overhead_compiled.py [--backend inductor] [--steps 400] [--every auto]
"""

from __future__ import annotations

import argparse
import copy
import json
import time

import numpy as np
import torch
from torch import nn

import vizdebug as vd

CLOCK = time.thread_time


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


class Counting:
    """A backend that counts the graphs dynamo hands the real one."""

    def __init__(self, backend: str) -> None:
        from torch._dynamo import lookup_backend

        self.inner, self.graphs = lookup_backend(backend), 0

    def __call__(self, gm: torch.fx.GraphModule, example: list) -> object:
        self.graphs += 1
        return self.inner(gm, example)


def _breaks() -> int:
    from torch._dynamo.utils import counters

    return sum(counters["graph_break"].values())


def _step(run: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor,
          session: object = None) -> float:
    start = CLOCK()
    loss = nn.functional.cross_entropy(run(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if session is not None:
        session.log(loss=loss)
    return CLOCK() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--every", default="auto")
    args = parser.parse_args()
    every = args.every if args.every == "auto" else int(args.every)
    torch.manual_seed(0)
    plain = _model()
    watched = copy.deepcopy(plain)
    runs, found = {}, {}
    for name, model in (("plain", plain), ("vizdebug", watched)):
        backend = Counting(args.backend)
        run = torch.compile(model, backend=backend)
        session = vd.watch(run, every=every) if name == "vizdebug" else None
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        runs[name] = [run, opt, session, backend, 0, []]
    g = torch.Generator().manual_seed(1)
    batches = [(torch.randn(128, 64, generator=g), torch.randint(0, 10, (128,), generator=g))
               for _ in range(16)]
    for i in range(args.steps):
        order = ("plain", "vizdebug") if i % 2 == 0 else ("vizdebug", "plain")
        for name in order:
            run, opt, session, _, _, times = runs[name]
            before = _breaks()  # (each step's graph breaks are its own model's)
            times.append(_step(run, opt, *batches[i % len(batches)], session))
            runs[name][4] += _breaks() - before
    for name, (_, _, session, backend, breaks, times) in runs.items():
        steady = np.asarray(times[len(times) // 4:]) * 1e3
        found[name] = {"graphs": backend.graphs, "graph_breaks": breaks,
                       "median_step_ms": round(float(np.median(steady)), 4)}
        if session is not None:
            found[name]["findings"] = session.findings().codes
            session.close()
    found["ratio"] = round(found["vizdebug"]["median_step_ms"]
                           / found["plain"]["median_step_ms"], 3)
    found["settings"] = {"backend": args.backend, "steps": args.steps, "every": every,
                         "torch": torch.__version__}
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
