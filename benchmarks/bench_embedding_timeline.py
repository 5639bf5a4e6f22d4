"""show_embedding_frames: how far points move between aligned frames, what an epoch costs,
and what the page weighs.

- alignment: four frames of clustered data (2k x 64) whose class centres drift a little per
  frame; mean distance a point moves from one frame to the next (in RMS radii of the
  picture) and seconds per frame for (a) PCA + Procrustes (the preview), (b) t-SNE fitted
  afresh per frame then Procrustes, (c) t-SNE initialised from the previous frame's layout
  (what the view does), with each picture's trustworthiness;
- an epoch update: ``view.append(frame)`` on a 2k probe, from the call to the refined
  layout in place (target: under 2 s), and to the preview;
- the page for 10k points x 3 frames with 8 x 8 thumbnails (target: under 5 MB).

Run: ``python benchmarks/bench_embedding_timeline.py [--n 2000]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from bench_embeddings import view_bytes


def drifting(n: int, d: int = 64, frames: int = 4, seed: int = 0):
    """Frames of 10 clusters whose centres drift by a tenth of their spread per frame."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    centres = rng.normal(0, 4, (10, d))
    noise = rng.normal(0, 1, (n, d))
    out = []
    for _ in range(frames):
        out.append((centres[y] + noise).astype(np.float32))
        centres = centres + rng.normal(0, 0.4, centres.shape)
        noise = noise + rng.normal(0, 0.1, noise.shape)
    return out, y


def _moves(layouts: list[np.ndarray]) -> float:
    from vizdebug.analysis.embeddings.align import normalised

    shown = [normalised(v) for v in layouts]
    return float(np.mean([np.sqrt(((a - b) ** 2).sum(axis=1)).mean()
                          for a, b in zip(shown, shown[1:])]))


def alignment(n: int) -> dict[str, str]:
    from vizdebug.analysis.embeddings.align import (
        aligned_previews,
        follow_layout,
        layout_trust,
        procrustes_onto,
    )

    frames, _ = drifting(n)
    results = {}
    t = time.perf_counter()
    previews = aligned_previews(frames)
    results["PCA + Procrustes"] = (previews, (time.perf_counter() - t) / len(frames))
    fresh, follow, times = [], [], {"fresh": [], "follow": []}
    for x in frames:
        t = time.perf_counter()
        layout = follow_layout(x, None, "tsne")
        fresh.append(procrustes_onto(layout, fresh[-1]) if fresh else layout)
        times["fresh"].append(time.perf_counter() - t)
        t = time.perf_counter()
        follow.append(follow_layout(x, follow[-1] if follow else None, "tsne"))
        times["follow"].append(time.perf_counter() - t)
    results["t-SNE afresh + Procrustes"] = (fresh, float(np.mean(times["fresh"][1:])))
    results["t-SNE from the previous frame"] = (follow, float(np.mean(times["follow"][1:])))
    return {name: f"moves {_moves(layouts):.3f} RMS radii per frame, {seconds:.2f} s per frame, "
                  f"trustworthiness {np.mean([layout_trust(x, v) for x, v in zip(frames, layouts)]):.3f}"
            for name, (layouts, seconds) in results.items()}


def epoch_update(n: int) -> dict[str, float]:
    from vizdebug.records import EmbeddingFrame
    from vizdebug.views.embedding_timeline import show_embedding_frames

    frames, y = drifting(n)
    records = [EmbeddingFrame("fc", 100 * i, i, x) for i, x in enumerate(frames)]
    view = show_embedding_frames(records[:3], labels=y, method="tsne").wait()
    t = time.perf_counter()
    view.append([records[3]])
    preview = time.perf_counter() - t
    view.wait()
    return {"preview (s)": round(preview, 3), "refined layout (s)": view.timings["layouts"],
            "with its figures (s)": round(time.perf_counter() - t, 2)}


def page_bytes(n: int = 10000, frames: int = 3) -> dict[str, int]:
    from vizdebug import _env
    from vizdebug.records import EmbeddingFrame
    from vizdebug.views.embedding_timeline import show_embedding_frames

    _env.set_renderer("widget")
    xs, y = drifting(n, frames=frames)
    images = np.random.default_rng(0).random((n, 8, 8)).astype(np.float32)
    records = [EmbeddingFrame("fc", i, i, x) for i, x in enumerate(xs)]
    return view_bytes(show_embedding_frames(records, labels=y, images=images, method="pca").wait())


def main() -> dict:
    n = int(sys.argv[sys.argv.index("--n") + 1]) if "--n" in sys.argv else 2000
    results: dict = {}

    def record(key: str, value: object) -> None:
        results[key] = value
        print(f"{key}: {value}", flush=True)

    record("page for 10k points x 3 frames with thumbnails (bytes)", page_bytes())
    record(f"epoch update, {n} x 64, t-SNE", epoch_update(n))
    for name, text in alignment(n).items():
        record(f"alignment {n} x 64, {name}", text)
    return results


if __name__ == "__main__":
    main()
