"""Embeddings at scale (issue 24), run by ``python benchmarks/bench_embeddings.py --scale``:

- the kernel's first picture (``EmbeddingView.from_arrays`` to the widget's state) at 10k /
  100k / 1M x 64, today's code against the pre-issue path (full randomized PCA, the sorting
  duplicate count and the float64 collapse check), interleaved, best of two;
- the bytes the widget state carries at 1M points, against 16 bytes a point before;
- in headless Chromium (software WebGL), the widget's ESM on a stand-in model: render to
  points drawn, and frames/s while the camera moves, today's script against the one before
  this issue, interleaved;
- refined layouts: vizdebug's fit on a sample plus placement, against plain
  ``umap.UMAP().fit_transform`` / openTSNE on every point.

The fits at 100k and 1M take minutes on 2 cores: ``--scale-fits`` runs them.
"""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OLD_JS = "3c94fdd~1"  # the commit before this issue's scatter changes


def clustered(n: int, d: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    return (rng.normal(0, 4, (10, d))[y] + rng.normal(0, 1, (n, d))).astype(np.float32), y


@contextmanager
def before_issue():
    """The kernel path as it was: every row through the exact definitions."""
    from vizdebug.analysis.embeddings import pca, project

    saved = pca.PCA_FIT_ROWS, project.FAST_ROWS
    pca.PCA_FIT_ROWS = project.FAST_ROWS = 10**12
    try:
        yield
    finally:
        pca.PCA_FIT_ROWS, project.FAST_ROWS = saved


def first_picture_seconds(x: np.ndarray, y: np.ndarray) -> float:
    from vizdebug import _env
    from vizdebug.analysis.embeddings.project import duplicate_count
    from vizdebug.views.embeddings import EmbeddingView

    _env.set_renderer("widget")
    start = EmbeddingView.start
    EmbeddingView.start = lambda self: self  # no worker: its threads would share the GIL
    try:
        t = time.perf_counter()
        EmbeddingView.from_arrays(x, labels=y, method="pca").widget.get_state()
        duplicate_count(x)  # the worker's first step, which the old picture waited behind
        return time.perf_counter() - t
    finally:
        EmbeddingView.start = start


def kernel_first_picture(record) -> None:
    for n in (10_000, 100_000, 1_000_000):
        x, y = clustered(n)
        now, old = [], []
        for _ in range(2):
            now.append(first_picture_seconds(x, y))
            with before_issue():
                old.append(first_picture_seconds(x, y))
        record(f"kernel first picture {n:,} x 64: now / before (s)",
               f"{min(now):.2f} / {min(old):.2f} (before / now = {min(old) / min(now):.1f})")


def bytes_at(n: int) -> dict[str, int]:
    from vizdebug import _env
    from vizdebug.views.embeddings import EmbeddingView

    _env.set_renderer("widget")
    x, y = clustered(n, d=8)
    w = EmbeddingView.from_arrays(x, labels=y, predictions=y, method="pca").widget
    sent = {k: len(getattr(w, k)) for k in ("x", "y", "rows", "labels", "predictions")}
    sent["total"] = sum(sent.values())
    sent["before (4 int32/float32 arrays + predictions)"] = 20 * n
    return sent


def browser_figures(record, sizes=(10_000, 100_000, 1_000_000)) -> None:
    old = subprocess.run(["git", "show", f"{OLD_JS}:vizdebug/views/static/embeddings_widget.js"],
                         cwd=ROOT, capture_output=True, text=True)
    if old.returncode != 0:
        record("browser figures", f"skipped: no git history ({old.stderr.strip()})")
        return
    for n in sizes:
        rows = {"now": [], "before": []}
        for _ in range(2):
            for which in ("now", "before"):
                rows[which].append(_browser_run(n, old.stdout if which == "before" else None))
        for which, runs in rows.items():
            first = min(r[0] for r in runs)
            fps = max(r[1] for r in runs)
            record(f"browser {n:,} points, {which}: render to drawn / frames/s moving",
                   f"{first:.2f} s / {fps:.1f}")


FPS_JS = """(seconds) => { const p = window.vdHosts[0].host.__vdPlot; const cam = p.get('camera');
  let draws = 0; p.subscribe('draw', () => { draws++; });
  const t0 = performance.now(); window.vdFps = undefined;
  const step = () => { cam.pan([0.003, 0.002]); p.redraw();
    if (performance.now() - t0 < seconds * 1000) requestAnimationFrame(step);
    else window.vdFps = draws / ((performance.now() - t0) / 1000); };
  step(); }"""


def _browser_run(n: int, old_js: str | None) -> tuple[float, float]:
    sys.path.insert(0, str(ROOT))
    from tests.browser.lab import offline_page
    from tests.browser.scatter_harness import mount
    from vizdebug import _env
    from vizdebug.views import embeddings_stream
    from vizdebug.views import embeddings_widgets as ew
    from vizdebug.views.embeddings import EmbeddingView

    _env.set_renderer("widget")
    saved, asset, stream_at = ew._asset, ew._asset.__wrapped__, embeddings_stream.STREAM_AT
    if old_js is not None:  # the script before, with every point in the first state
        ew._asset = lambda name: (old_js if name == "embeddings_widget.js" else
                                  "" if name == ew._POINTS else asset(name))
        embeddings_stream.STREAM_AT = 10**12
    ew.embedding_widget.cache_clear()
    try:
        x, y = clustered(n, d=8)
        widget = EmbeddingView.from_arrays(x, labels=y, method="pca").widget
    finally:
        ew._asset, embeddings_stream.STREAM_AT = saved, stream_at
        ew.embedding_widget.cache_clear()
    with offline_page() as page:
        page.goto("about:blank")
        mount(page, [widget])
        page.wait_for_function("() => { const p = window.vdHosts[0].host.__vdPlot;"
                               " return p && p.get('isPointsDrawn'); }", timeout=300_000, polling=20)
        first = page.evaluate("() => (performance.now() - window.vdHosts[0].t0) / 1000")
        page.wait_for_timeout(1000)
        page.evaluate(FPS_JS, 4)
        page.wait_for_function("() => window.vdFps !== undefined", timeout=120_000)
        return first, page.evaluate("() => window.vdFps")


def trust(x: np.ndarray, layout: np.ndarray, m: int = 2000) -> float:
    """sklearn's trustworthiness (k=5) on a fixed sample of ``m`` points."""
    from sklearn.manifold import trustworthiness

    from vizdebug.analysis.embeddings.quality import sample_positions

    q = sample_positions(len(x), m, seed=3)
    return float(trustworthiness(x[q], layout[q], n_neighbors=5))


def _sampled(x: np.ndarray, method: str, placements: tuple[str, ...], record, label: str) -> None:
    """``method`` fitted on vizdebug's fixed sample once, the rest placed each way: the
    fit's time, each placement's, and the trustworthiness of each whole layout."""
    from vizdebug.analysis.embeddings import scale

    n = len(x)
    limit = scale.FIT_LIMIT[method]
    pick = scale.sample_positions(n, limit, seed=0)
    shift, reach = scale._affine(x[pick])
    xs = scale._apply(x[pick], shift, reach)
    rest = np.setdiff1d(np.arange(n), pick)
    t = time.perf_counter()
    fitted, library, how = scale._fit_sample(xs, method, {}, lambda _m: None, "library")
    fit = time.perf_counter() - t
    for placement in placements:
        t = time.perf_counter()
        place = library if placement == "library" else scale.NeighbourPlacement(xs, fitted)
        name = how if placement == "library" else "our neighbours"
        layout = np.empty((n, 2))
        layout[pick] = fitted
        for start in range(0, len(rest), scale.PLACE_CHUNK):
            part = rest[start:start + scale.PLACE_CHUNK]
            layout[part] = place(scale._apply(x[part], shift, reach))
        placed = time.perf_counter() - t
        record(f"{label} {n:,} x 64: fit on {limit:,} + place {len(rest):,} {name}",
               f"{fit:.0f} s + {placed:.1f} s = {fit + placed:.0f} s, trustworthiness "
               f"{trust(x, layout):.3f}")


def refined_figures(record, sizes=(10_000, 100_000, 1_000_000)) -> None:
    """Side by side in one process: plain UMAP ``fit_transform`` and openTSNE on every
    point (up to 100k), against the sampled fit with the rest placed by our neighbours
    and by the library's own transform (100k; at 1M ours only), with trustworthiness."""
    import umap

    x, _ = clustered(2000)
    t = time.perf_counter()
    umap.UMAP(random_state=0, n_jobs=1).fit(x).transform(x[:100])  # numba compiles: not fit time
    record("UMAP first fit + transform in this process, 2k (s, numba compiling)",
           round(time.perf_counter() - t, 1))
    try:
        from openTSNE import TSNE
    except ImportError:
        TSNE = None
        record("openTSNE", "not installed")
    for n in sizes:
        x, _ = clustered(n)
        if n > 10_000:  # the sampled paths first: the plain fits at 100k take many minutes
            both = ("neighbours", "library") if n <= 100_000 else ("neighbours",)
            _sampled(x, "umap", both, record, "UMAP")
            if TSNE is not None:
                _sampled(x, "tsne", both, record, "t-SNE (openTSNE)")
        if n <= 100_000:
            t = time.perf_counter()
            layout = umap.UMAP(random_state=0, n_jobs=1).fit_transform(x)
            record(f"plain UMAP fit_transform {n:,} x 64", f"{time.perf_counter() - t:.0f} s, "
                   f"trustworthiness {trust(x, layout):.3f}")
        if TSNE is not None and n <= 100_000:
            t = time.perf_counter()
            layout = np.asarray(TSNE(random_state=0, n_jobs=1).fit(x))
            record(f"openTSNE on all {n:,} x 64", f"{time.perf_counter() - t:.0f} s, "
                   f"trustworthiness {trust(x, layout):.3f}")


def main(record, fits: bool) -> None:
    if "--scale-lab" in sys.argv:  # the first picture end to end in JupyterLab
        lab_first_picture(record)
        return
    if fits:  # the refined layouts alone: an hour on 2 shared cores (--sizes 100000,1000000)
        sizes = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--sizes=")), None)
        refined_figures(record, *([tuple(int(v) for v in sizes.split(","))] if sizes else []))
        return
    kernel_first_picture(record)
    record("bytes in the widget state at 1M points", bytes_at(1_000_000))
    browser_figures(record)
    record("TensorBoard projector's limit", "100,000 points (LIMIT_NUM_POINTS in "
           "plugins/projector/vz_projector/data-provider-server.ts; tensorflow/tensorboard#773)")


LAB_SETUP = """
import numpy as np, vizdebug as vd
from vizdebug.views import embeddings_stream
rng = np.random.default_rng(0)
y = rng.integers(0, 10, 1_000_000)
x = (rng.normal(0, 4, (10, 64))[y] + rng.normal(0, 1, (1_000_000, 64))).astype(np.float32)
warm = vd.show_embeddings(x[:2000], labels=y[:2000], method="pca")  # the widget's code, once
warm
"""
LAB_TIMED = "view = vd.show_embeddings(x, labels=y, method='pca')\nview"
LAB_RUN_JS = """async (limit) => {
  const nb = window.jupyterapp.shell.currentWidget;
  nb.content.activeCellIndex = 1;
  const t0 = performance.now();
  window.jupyterapp.commands.execute('notebook:run-cell');
  let first = null;
  return await new Promise((resolve) => {
    const tick = () => {
      const el = nb.content.widgets[1].node.querySelector('.vd-emb');
      const p = el && el.parentElement.__vdPlot;
      const n = p && p.get('isPointsDrawn') ? p.get('points').length : 0, now = performance.now() - t0;
      if (n && first === null) first = [now / 1000, n];
      if (n >= 1000000 || now > limit * 1000) { resolve({ first, all: n >= 1000000 ? now / 1000 : null }); return; }
      setTimeout(tick, 10);
    };
    tick();
  });
}"""


def lab_first_picture(record, runs: int = 2) -> None:
    """In JupyterLab (headless Chromium, software WebGL), a cell showing 1M x 64 points: from
    running it to the first points drawn and to all 1M drawn, streamed (a 100k sample first)
    against every point in the first state (``STREAM_AT`` raised: the path before), in one
    kernel, interleaved. The setup cell has shown a small view: the widget's code is loaded."""
    import tempfile

    import nbformat

    sys.path.insert(0, str(ROOT))
    from tests.browser.lab import JupyterLab

    root = Path(tempfile.mkdtemp(prefix="vd-scale-lab-"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(LAB_SETUP), nbformat.v4.new_code_cell(LAB_TIMED)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "scale.ipynb")
    rows: dict[str, list] = {"streamed": [], "all in the first state": []}
    with JupyterLab(root) as lab:
        page = lab.open("scale.ipynb")
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-cell')")
        page.wait_for_timeout(1000)
        _kernel(page, "pass")  # queued behind the setup cell: it has run
        for k in range(runs):
            for mode in (("streamed", "all in the first state") if k % 2 == 0 else
                         ("all in the first state", "streamed")):
                limit = "200_000" if mode == "streamed" else "10**9"
                _kernel(page, f"embeddings_stream.STREAM_AT = {limit}; import gc; gc.collect()")
                page.evaluate("() => { const nb = window.jupyterapp.shell.currentWidget;"
                              " nb.content.activeCellIndex = 1;"
                              " window.jupyterapp.commands.execute('notebook:clear-cell-output'); }")
                page.wait_for_timeout(1500)
                rows[mode].append(page.evaluate(LAB_RUN_JS, 120))
                _kernel(page, "view.wait(5)")
                page.wait_for_timeout(3000)
    for mode, got in rows.items():
        record(f"JupyterLab, 1M x 64 points, {mode}: run to first points drawn / to all 1M",
               "; ".join(f"{r['first'][0]:.2f} s ({r['first'][1]:,} points) / "
                         f"{r['all']:.2f} s" if r["first"] and r["all"] else str(r) for r in got))


def _kernel(page, code: str) -> str:
    return page.evaluate("""(code) => new Promise((resolve) => {
      const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
      const f = k.requestExecute({code}); let out = '';
      f.onIOPub = (m) => { if (m.header.msg_type === 'stream') out += m.content.text; };
      f.done.then(() => resolve(out)); })""", code)
