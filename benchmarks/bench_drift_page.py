"""What the drift explorer's page weighs and what a slider's redraw costs the browser.

    python benchmarks/bench_drift_page.py                 # this tree
    PYTHONPATH=/tmp/old python benchmarks/bench_drift_page.py   # another tree, same data

The view is the browser test's (tests/browser/test_drift_browser.py): 6,000 rows a side, a
numeric feature with a trend, a categorical one with a new category, a time column (so the
window sliders and the drift-over-time strip are there). Its saved page (``view.save``) is
opened in headless Chromium; each slider is moved ``--reps`` times to alternating positions,
and one move is timed from the input event to the end of the microtasks it queued (uPlot
draws in one) and the layout it forces: the main thread's whole share of a redraw.
Printed: the page's bytes (raw, gzipped, and the script's share), and per slider the median
and the 90th percentile in ms.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import statistics
import tempfile
from pathlib import Path

MOVE_JS = """async ([control, values, reps]) => {
  const el = document.querySelector(`input[data-control=${control}]`);
  const out = [];
  for (let i = 0; i < reps; i++) {
    el.value = values[i % values.length];
    const t0 = performance.now();
    el.dispatchEvent(new Event('input', {bubbles: true}));
    await Promise.resolve();  // the microtasks the redraw queued (uPlot's commit) ran
    await Promise.resolve();
    document.body.offsetHeight;  // and the layout it left to do
    out.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 5));
  }
  return out;
}"""

SELECT_JS = """(mode) => { const s = document.querySelector('select[data-control=mode]');
  s.value = mode; s.dispatchEvent(new Event('change', {bubbles: true})); }"""

MOVES = {"bins": [11, 9, 6, 3], "shift": [0.6, -0.4, 1.2, 0.1], "win0": [18, 4, 12, 0],
         "thr": [0.05, 0.2, 0.3, 0.1]}


def drift_view():
    import numpy as np
    import pandas as pd

    import vizdebug as vd
    rng = np.random.default_rng(0)
    n = 6000
    ref = pd.DataFrame({"temp": rng.normal(20, 2, n), "noise": rng.normal(size=n),
                        "site": rng.choice(["a", "b", "c"], n)})
    cur = pd.DataFrame({"temp": rng.normal(20, 2, n) + np.linspace(0, 3, n),
                        "noise": rng.normal(size=n), "site": rng.choice(["a", "b", "c", "d"], n),
                        "ts": pd.date_range("2025-01-01", periods=n, freq="min")})
    return vd.compare_distributions(ref, cur, time="ts", progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    import vizdebug
    view = drift_view()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        path = view.save(Path(tmp) / "drift.html")
        text = path.read_text(encoding="utf-8")
        scripts = "".join(re.findall(r"<script>(.*?)</script>", text, flags=re.S))
        print(f"tree: {Path(vizdebug.__file__).parent.parent}")
        print(f"page: {len(text.encode()):,} bytes ({len(gzip.compress(text.encode())):,} gzipped),"
              f" of which the script {len(scripts.encode()):,} ({len(gzip.compress(scripts.encode())):,})")
        browser = pw.chromium.launch(executable_path=os.environ.get(
            "VIZDEBUG_CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox", "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1300, "height": 900})
        tab.goto(path.as_uri())
        tab.wait_for_selector(".vd-drift")
        print("\n| slider (mode) | median ms | p90 ms |\n|---|---|---|")
        for mode in ("hist", "ecdf"):
            tab.evaluate(SELECT_JS, mode)
            for control, values in MOVES.items():
                if mode != "hist" and control != "shift":
                    continue
                ms = sorted(tab.evaluate(MOVE_JS, [control, values, args.reps]))
                p90 = ms[int(0.9 * (len(ms) - 1))]
                print(f"| {control} ({mode}) | {statistics.median(ms):.2f} | {p90:.2f} |")
        errors = tab.evaluate("() => document.querySelectorAll('.vd-drift').length")
        assert errors == 1
        browser.close()


if __name__ == "__main__":
    main()
