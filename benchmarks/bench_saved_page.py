"""The first draw of saved pages (reports, ``Dashboard.save``) in headless Chromium, pages
side by side: each page opened afresh in turn, ``--rounds`` times, offline.

``python benchmarks/bench_saved_page.py old.html new.html [--rounds 7]``

Per page: its bytes (and gzipped), and the medians over the rounds of the time to
DOMContentLoaded (the inline scripts run while the page is parsed, so this holds their
draw), of the CPU time in script (Chrome's ``ScriptDuration``) and in all main-thread tasks
(``TaskDuration``) up to two frames after the load, and the charts drawn (uPlot canvases,
our SVG charts) as a check that the page drew."""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser.lab import CHROMIUM, CHROMIUM_FLAGS

SETTLED = """() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
  const nav = performance.getEntriesByType("navigation")[0];
  done({dcl: nav.domContentLoadedEventEnd, uplot: document.querySelectorAll(".uplot").length,
        svg: document.querySelectorAll("svg.vd-chart-svg").length});
})))"""


def measure(pw, page_path: Path) -> dict:
    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
    try:
        context = browser.new_context(offline=True, viewport={"width": 1280, "height": 1000})
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                      else r.abort())
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(page_path.resolve().as_uri())
        out = page.evaluate(SETTLED)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        out["script"] = 1000 * metrics["ScriptDuration"]
        out["task"] = 1000 * metrics["TaskDuration"]
        return out
    finally:
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    runs: dict[Path, list[dict]] = {p: [] for p in args.pages}
    with sync_playwright() as pw:
        for _ in range(args.rounds):
            for p in args.pages:  # interleaved: the same minutes for every page
                runs[p].append(measure(pw, p))
    print("| page | bytes (gzipped) | DOMContentLoaded ms | script ms | tasks ms | charts (uPlot / SVG) |")
    print("|---|---|---|---|---|---|")
    for p, rows in runs.items():
        data = p.read_bytes()
        dcl, script, task = (statistics.median(r[k] for r in rows) for k in ("dcl", "script", "task"))
        print(f"| {p.name} | {len(data):,} ({len(gzip.compress(data)):,}) | {dcl:.0f} | "
              f"{script:.0f} | {task:.0f} | {rows[-1]['uplot']} / {rows[-1]['svg']} |")


if __name__ == "__main__":
    main()
