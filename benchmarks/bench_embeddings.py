"""show_embeddings against the libraries it wraps, on clustered data (10 blobs).

- time to first picture in a cold process (``import vizdebug`` included), UMAP asked for;
- the PCA preview at 2k / 10k / 50k / 100k x 64 and at 10k x 512 (target: under 0.5 s);
- the refined view, from the call to the refined layout in place (``view.timings``; the
  neighbour findings and quality figures follow it), against ``sklearn.manifold.TSNE`` and
  ``umap.UMAP`` called directly (target: within 1.1x);
- what a notebook page carries for 10k points with 8 x 8 thumbnails (target: under 5 MB).

Issue 12's full grid (t-SNE and UMAP at every size) takes hours on a 2-core machine; by
default the refined comparison runs at 2k (t-SNE) and 2k / 10k (UMAP). ``--full`` runs it all
(best of two); ``--no-fits`` skips the fits. On a shared machine the fits' times swing by 2-4x
from run to run, so the figures the view adds to a fit are also timed on their own.
openTSNE is compared when it is installed. Run: ``python benchmarks/bench_embeddings.py``.
``--scale`` measures 10k to 1M points (first picture, bytes, the browser's frames/s) and
``--scale-fits`` the refined layouts at 10k to 1M, ``--scale-lab`` the first picture of 1M
points end to end in JupyterLab (benchmarks/embeddings_scale.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

COLD = """
import time; t = time.perf_counter()
import numpy as np, vizdebug as vd
imported = time.perf_counter() - t
x = np.random.default_rng(0).normal(size=(10000, 64)).astype(np.float32)
view = vd.show_embeddings(x, labels=np.arange(10000) % 10, method="umap")
html = view._static_html()
print(imported, time.perf_counter() - t)
"""


def clustered(n: int, d: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    return (rng.normal(0, 4, (10, d))[y] + rng.normal(0, 1, (n, d))).astype(np.float32), y


def cold_first_picture(cache: str) -> tuple[float, float]:
    """(``import vizdebug`` with numpy, the whole first picture) in a new process. Its
    bytecode is cached in ``cache`` as in any installed package (this machine's
    PYTHONDONTWRITEBYTECODE would otherwise compile every module in each process)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True,
                         check=True, env=env)
    imported, total = map(float, out.stdout.split()[-2:])
    return imported, total


def preview_seconds(n: int, d: int, repeats: int = 3) -> float:
    from vizdebug.analysis.embeddings.project import as_features, pca_layout, unit_box

    x, _ = clustered(n, d)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        unit_box(pca_layout(as_features(x).values))
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def library_seconds(method: str, x: np.ndarray) -> float:
    t = time.perf_counter()
    if method == "tsne":
        from sklearn.manifold import TSNE

        TSNE(init="pca", random_state=0, perplexity=30.0).fit_transform(x)
    else:
        import umap

        umap.UMAP(n_neighbors=15, random_state=0, n_jobs=1).fit_transform(x)
    return time.perf_counter() - t


def refined_seconds(method: str, n: int, repeats: int = 1) -> tuple[float, float, float]:
    """(vizdebug from the call to the refined layout in place, the library alone, vizdebug
    to its figures and findings as well) on the same data, the library first, best of
    ``repeats`` each (a shared machine's load only adds time)."""
    import vizdebug as vd

    x, y = clustered(n)
    ours, theirs, whole = [], [], []
    for _ in range(repeats):
        theirs.append(library_seconds(method, x))
        t = time.perf_counter()
        view = vd.show_embeddings(x, labels=y, method=method).wait()
        whole.append(time.perf_counter() - t)
        assert view.layout_name != "PCA preview", view.error
        ours.append(view.timings["layout"])
    return min(ours), min(theirs), min(whole)


def figures_seconds(n: int) -> float:
    """What the refined view adds to the library's fit: neighbours, findings and the
    quality figures of one layout."""
    from vizdebug.analysis.embeddings.findings import (
        feature_geometry,
        geometry_findings,
        layout_quality,
    )

    x, y = clustered(n)
    layout = np.random.default_rng(0).normal(size=(n, 2))
    t = time.perf_counter()
    geo = feature_geometry(x, y)
    geometry_findings(geo, np.arange(n))
    layout_quality(x, layout, geo)
    return time.perf_counter() - t


def opentsne_seconds(n: int) -> float | None:
    try:
        from openTSNE import TSNE
    except ImportError:
        return None
    x, _ = clustered(n)
    t = time.perf_counter()
    TSNE(random_state=0).fit(x)
    return time.perf_counter() - t


def page_bytes(n: int = 10000) -> dict[str, int]:
    import vizdebug as vd
    from vizdebug import _env

    _env.set_renderer("widget")
    x, y = clustered(n)
    images = np.random.default_rng(0).random((n, 8, 8)).astype(np.float32)
    return view_bytes(vd.show_embeddings(x, labels=y, images=images, method="pca").wait())


def view_bytes(view) -> dict[str, int]:
    """What a notebook page holds of a view: its widget state, its code, its static twin."""
    state = view.widget.get_state()
    esm = len(state.pop("_esm", ""))
    data = sum(len(v) if isinstance(v, (bytes, memoryview)) else len(json.dumps(v, default=str))
               for v in state.values())
    static = len(view._static_bundle("x")["text/html"])
    return {"widget state": data, "widget code": esm, "static twin": static,
            "total": data + esm + static}


def main(full: bool = False) -> dict:
    results: dict = {}

    def record(key: str, value: object) -> None:
        results[key] = value
        print(f"{key}: {value}", flush=True)

    with tempfile.TemporaryDirectory() as cache:
        cold_first_picture(cache)  # writes the bytecode
        colds = sorted(cold_first_picture(cache) for _ in range(5))
    record("cold first picture, UMAP asked, 5 runs: import vizdebug / whole (s)",
           [f"{a:.2f} / {b:.2f}" for a, b in colds])
    for n, d in [(2000, 64), (10000, 64), (50000, 64), (100000, 64), (10000, 512)]:
        record(f"PCA preview {n} x {d} (s)", round(preview_seconds(n, d), 3))
    record("page for 10k points with thumbnails (bytes)", page_bytes())
    for n in (2000, 10000, 100000):
        record(f"figures and findings added to the fit, {n} x 64 (s)",
               round(figures_seconds(n), 2))
    if "--no-fits" in sys.argv:
        return results
    tsne_sizes = [2000, 10000, 50000, 100000] if full else [2000]
    umap_sizes = [2000, 10000, 50000, 100000] if full else [2000, 10000]
    refined_seconds("umap", 500)  # warm numba's cache once: compile time is not fit time
    for method, sizes in (("tsne", tsne_sizes), ("umap", umap_sizes)):
        for n in sizes:
            ours, theirs, whole = refined_seconds(method, n, repeats=2 if full else 1)
            record(f"{method} {n}: vizdebug layout / library (s)",
                   f"{ours:.1f} / {theirs:.1f} = {ours / theirs:.2f}x "
                   f"(figures and findings in at {whole:.1f} s)")
    for n in tsne_sizes:
        seconds = opentsne_seconds(n)
        record(f"openTSNE {n} (s)", "not installed" if seconds is None else round(seconds, 1))
    return results


if __name__ == "__main__":
    if {"--scale", "--scale-fits", "--scale-lab"} & set(sys.argv):  # issue 24: 10k to 1M points
        from embeddings_scale import main as scale_main

        scale_main(lambda key, value: print(f"{key}: {value}", flush=True),
                   fits="--scale-fits" in sys.argv)
    else:
        main(full="--full" in sys.argv)
