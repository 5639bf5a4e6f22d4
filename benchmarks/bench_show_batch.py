"""show_batch vs a matplotlib subplot grid, 64 float images 3 x 224 x 224; and show_batch
of wide tables (2 rows x 100k / 1M features) vs pandas' own notebook display.

Kernel-side time and payload bytes, interleaved repeats in one run, medians and ratios.
Run: ``python benchmarks/bench_show_batch.py`` (``--wide`` for the wide tables only).
"""

from __future__ import annotations

import io
import json
import statistics
import time

import numpy as np


def make_images(n: int = 64, size: int = 224, seed: int = 0) -> np.ndarray:
    """Photo-like float images: smooth colour fields plus texture, standardised."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    imgs = np.empty((n, 3, size, size), dtype=np.float32)
    for i in range(n):
        for c in range(3):
            a, b, p = rng.uniform(1, 6, size=3)
            imgs[i, c] = 0.5 + 0.35 * np.sin(a * xx * np.pi + p) * np.cos(b * yy * np.pi)
    imgs += rng.normal(0, 0.05, imgs.shape).astype(np.float32)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    return ((imgs - mean[None, :, None, None]) / std[None, :, None, None]).astype(np.float32)


def run_vizdebug(x, mean, std) -> int:
    import vizdebug as vd
    from vizdebug import _env

    _env.set_renderer("widget")
    view = vd.show_batch(x, mean=mean, std=std)
    bundle = view._repr_mimebundle_()
    state = view.widget.get_state()
    return len(json.dumps(bundle)) + len(json.dumps(state, default=str))


def run_matplotlib(x, mean, std) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(8, 8, figsize=(12, 12))
    for ax, img in zip(axes.ravel(), x):
        shown = np.clip(img.transpose(1, 2, 0) * std + mean, 0, 1)
        ax.imshow(shown)
        ax.axis("off")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=72)
    plt.close(fig)
    return len(buf.getvalue())


def main(repeats: int = 5) -> dict:
    import torch

    x = torch.from_numpy(make_images())
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    run_vizdebug(x[:2], mean, std)  # warm imports (PIL, anywidget) outside the timing
    run_matplotlib(x[:2].numpy(), np.array(mean), np.array(std))
    times: dict[str, list[float]] = {"vizdebug": [], "matplotlib": []}
    sizes: dict[str, int] = {}
    for _ in range(repeats):
        for name, fn, arg in (("vizdebug", run_vizdebug, (x, mean, std)),
                              ("matplotlib", run_matplotlib,
                               (x.numpy(), np.array(mean), np.array(std)))):
            t = time.perf_counter()
            sizes[name] = fn(*arg)
            times[name].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "vizdebug_s": med["vizdebug"], "matplotlib_s": med["matplotlib"],
        "time_ratio": med["vizdebug"] / med["matplotlib"],
        "vizdebug_payload_bytes": sizes["vizdebug"], "matplotlib_png_bytes": sizes["matplotlib"],
    }
    print("show_batch, 64 float images 3x224x224 (median of", repeats, "interleaved runs)")
    print(f"  vizdebug show_batch + mime bundle + widget state: {med['vizdebug'] * 1e3:7.0f} ms, "
          f"payload {sizes['vizdebug'] / 1e6:.2f} MB")
    print(f"  matplotlib 8x8 subplots saved to PNG:             {med['matplotlib'] * 1e3:7.0f} ms, "
          f"PNG {sizes['matplotlib'] / 1e6:.2f} MB")
    print(f"  time ratio vizdebug / matplotlib: {result['time_ratio']:.3f} (target <= 0.33)")
    return result


def run_wide(x: np.ndarray) -> int:
    """show_batch of a wide table, with its mime bundle and widget state: payload bytes."""
    return run_vizdebug(x, None, None)


def run_pandas(x: np.ndarray) -> int:
    """What a notebook shows for the same table as a DataFrame (truncated to 20 columns)."""
    import pandas as pd

    return len(pd.DataFrame(x)._repr_html_())


def wide(widths: tuple[int, ...] = (100_000, 1_000_000), repeats: int = 3) -> dict:
    """Time and payload of show_batch on 2 x ``width`` tables, beside pandas' display."""
    rng = np.random.default_rng(0)
    run_wide(rng.random((2, 10)))  # warm imports
    result = {}
    for width in widths:
        x = rng.random((2, width))
        times: dict[str, list[float]] = {"vizdebug": [], "pandas": []}
        sizes: dict[str, int] = {}
        for _ in range(repeats):
            for name, fn in (("vizdebug", run_wide), ("pandas", run_pandas)):
                t = time.perf_counter()
                sizes[name] = fn(x)
                times[name].append(time.perf_counter() - t)
        med = {k: statistics.median(v) for k, v in times.items()}
        result[width] = {"vizdebug_s": med["vizdebug"], "pandas_s": med["pandas"],
                         "vizdebug_payload_bytes": sizes["vizdebug"]}
        print(f"show_batch of 2 x {width:,} features (median of {repeats}): vizdebug "
              f"{med['vizdebug'] * 1e3:6.0f} ms, payload {sizes['vizdebug'] / 1e3:.0f} kB; "
              f"pandas DataFrame._repr_html_ {med['pandas'] * 1e3:6.0f} ms")
    return result


if __name__ == "__main__":
    import sys

    if "--wide" not in sys.argv:
        main()
    wide()
