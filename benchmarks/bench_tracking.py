"""What ``Session.track_embeddings`` costs: training with the digits CNN watched, with and
without its penultimate layer tracked on a probe of 2,000 images once per epoch.

Paired and interleaved (plain, tracked, plain, tracked...), one thread, medians of the
per-epoch times. Two epoch sizes: digits' own training split (1,347 images, so the probe is
larger than the epoch) and the same images repeated with noise to 60,000 (an MNIST-sized
epoch). Also timed on its own: one probe pass through the tracker against the bare
``model.eval(); with torch.no_grad(): model(probe)`` it cannot avoid (what vizdebug adds:
pausing the hooks, saving and restoring modes and RNGs, the hook, the copy to float32).

Run: ``python benchmarks/bench_tracking.py`` (``--quick``: fewer repeats).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import vizdebug as vd
from tests.digits_runs import SmallCNN, digits_split

PROBE = 2000
LAYER = "head.0"  # the flattened pooled features the classifier reads (512 per image)


def data(n_train: int) -> tuple[TensorDataset, torch.Tensor]:
    xtr, ytr, xva, _ = digits_split(0)
    x = torch.as_tensor(xtr, dtype=torch.float32).reshape(-1, 1, 8, 8)
    y = torch.as_tensor(ytr)
    g = torch.Generator().manual_seed(0)
    if n_train > len(x):
        reps = -(-n_train // len(x))
        x = x.repeat(reps, 1, 1, 1)[:n_train]
        x = x + 0.1 * torch.randn(x.shape, generator=g)
        y = y.repeat(reps)[:n_train]
    pool = torch.as_tensor(np.concatenate([xva, xtr]), dtype=torch.float32).reshape(-1, 1, 8, 8)
    return TensorDataset(x, y), pool[torch.arange(PROBE) % len(pool)]


def epoch_seconds(dataset: TensorDataset, probe: torch.Tensor, track: bool,
                  epochs: int) -> list[float]:
    torch.manual_seed(0)
    model = SmallCNN()
    loader = DataLoader(dataset, batch_size=64, shuffle=True,
                        generator=torch.Generator().manual_seed(0))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    session = vd.watch(model, loader=loader)
    if track:
        session.track_embeddings(LAYER, probe)
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        for x, y in loader:  # the frame is taken when this pass ends: inside the timing
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        times.append(time.perf_counter() - start)
    session.close()
    assert not track or len(session.embedding_frames()) == epochs + 1
    return times[1:]  # the first epoch warms up


def paired(n_train: int, rounds: int, epochs: int) -> tuple[float, float]:
    dataset, probe = data(n_train)
    plain, tracked = [], []
    for _ in range(rounds):
        plain += epoch_seconds(dataset, probe, False, epochs)
        tracked += epoch_seconds(dataset, probe, True, epochs)
    return float(np.median(plain)), float(np.median(tracked))


def probe_pass(repeats: int) -> tuple[float, float]:
    """One tracker pass vs the bare forward over the same probe, medians."""
    from vizdebug.collect.taps.embeddings import probe_features

    _, probe = data(0)
    torch.manual_seed(0)
    model = SmallCNN()
    session = vd.watch(model)
    session.track_embeddings(LAYER, probe)
    bare, tracked = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        model.eval()
        with torch.no_grad():
            for s in range(0, PROBE, 256):
                model(probe[s:s + 256])
        model.train()
        bare.append(time.perf_counter() - t)
        t = time.perf_counter()
        with session.paused():
            probe_features(model, model.head[0], probe, False, LAYER)
        tracked.append(time.perf_counter() - t)
    session.close()
    return float(np.median(bare)), float(np.median(tracked))


def main() -> None:
    quick = "--quick" in sys.argv
    torch.set_num_threads(1)
    bare, through = probe_pass(5 if quick else 15)
    print(f"one pass over a {PROBE} probe: bare forward {bare * 1e3:.1f} ms, through the "
          f"tracker {through * 1e3:.1f} ms ({through / bare:.2f}x)")
    for n_train, rounds, epochs in ((1347, 3 if quick else 6, 4), (60_000, 1, 3)):
        plain, tracked = paired(n_train, rounds, epochs)
        print(f"epoch of {n_train:>6} images: watched {plain:.3f} s, watched + tracked "
              f"{tracked:.3f} s per epoch: {tracked / plain:.3f}x "
              f"({(tracked - plain) / plain * 100:+.1f}%); one probe pass is "
              f"{through / plain * 100:.1f}% of the epoch")


if __name__ == "__main__":
    main()
