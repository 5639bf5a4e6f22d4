"""What drawing the dashboard costs the page's main thread: vizdebug's SVG charts (what the
line panels were drawn with before issue 23, still their SVG export, and what the heatmap
and the bars use) beside vizdebug's line panels on uPlot (``static/chart_uplot*.js``
over the vendored uPlot 1.6.32: what the live widget draws now) and plotly.js
(``Plotly.react``, what a plotly-based live view such as a FigureWidget does), on the same
panels, in the same headless Chromium, interleaved.

    python benchmarks/bench_dashboard_render.py            # 3000 steps, 4 metrics
    python benchmarks/bench_dashboard_render.py --steps 300 --big 200000

Four measurements:

1. per panel: each of ten successive states (one step more each) drawn in turn, 30 times;
   the median ms of one redraw (synchronous work, the microtasks it queues (uPlot draws in
   one) and the layout it forces). The uPlot column is the port itself (``vdLineChart``:
   the chart kept and handed the new state, its columns aligned, epoch marks, notes,
   markers and legend drawn), not the bare library; the heatmap and the grouped bars are
   ours in both columns.
2. one refresh: every panel redrawn in one go, the figure the 16 ms budget is about.
3. a long series (1M points by default) on the uPlot port: the first draw, then a zoom to
   a tenth of it (our SVG line chart's drag-zoom is gone: benchmarks/README.md has its
   figures from before).
4. page weight: the bytes each engine's script adds to a page, raw and gzipped.

The panels come from a real session (a small model, its loader tapped, four logged
metrics, gradients sampled every 2 steps). plotly is not a dependency of vizdebug:
``pip install plotly`` for its column (without it, vizdebug and uPlot are measured).
Timings on a shared machine are noisy: the engines are measured in alternation, so a
ratio within one run is worth more than a figure across runs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np
import torch

import vizdebug as vd
from vizdebug.views._dashboard_figure import dashboard_panels
from vizdebug.views.dashboard import UPLOT_CSS, UPLOT_FILES, _charts_js, _live

STATIC = Path(vd.__file__).parent / "views" / "static"
STATE_JS = STATIC / "dashboard_state.js"
UPLOT_JS = "\n".join((STATIC / name).read_text(encoding="utf-8") for name in UPLOT_FILES)
UPLOT_STYLE = (STATIC / UPLOT_CSS).read_text(encoding="utf-8")
LINE_PANELS = ("curves", "timing", "system")

SETTLE_JS = "() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 5)))"

# One engine draws one panel (or all) `reps` times over the states; ms per draw.
DRAW_JS = """async ([kind, names, reps]) => {
  const S = window.STATES, host = document.getElementById("host");
  host.innerHTML = "";
  const divs = {}, charts = {};
  for (const name of names) {
    const div = document.createElement("div");
    div.style.width = "1000px";
    host.appendChild(div);
    divs[name] = div;
  }
  const fig = (i, name) => { const p = S[i % S.length][name];
    return name === "curves" ? vdCurvesView(p, 0.6, false) : p; };
  const drawOne = (i, name) => {
    const f = fig(i, name), div = divs[name];
    if (kind === "plotly") { Plotly.react(div, f.data, f.layout, {displaylogo: false}); return; }
    const make = kind === "uplot" && LINE.includes(name) ? vdLineChart : vdChart;
    charts[name] = charts[name] || make(div);
    charts[name].draw(f);
  };
  const drawAll = async (i) => {
    for (const name of names) drawOne(i, name);
    await Promise.resolve(); await Promise.resolve();  // uPlot commits in a microtask
    host.getBoundingClientRect();  // the layout the draw forces
  };
  await drawAll(0);
  const times = [];
  for (let r = 1; r <= reps; r++) {
    const t = performance.now();
    await drawAll(r);
    times.push(performance.now() - t);
    await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 5)));
  }
  for (const name of names) {
    if (kind === "plotly") Plotly.purge(divs[name]);
    else if (charts[name]) charts[name].purge();
  }
  return times;
}"""

# A long random walk: the first draw, then a zoom to the tenth in the middle (the drag a
# user makes, on the uPlot port; its mouseup is called as setSelect).
BIG_JS = """async ([kind, n]) => {
  const host = document.getElementById("host");
  host.innerHTML = "<div id='big' style='width:1000px'></div>";
  const div = host.firstChild;
  let s = 1, v = 0;
  const x = new Float64Array(n), y = new Float64Array(n);
  for (let i = 0; i < n; i++) { s = (s * 16807) % 2147483647; v += s / 2147483647 - 0.5;
    x[i] = i; y[i] = v; }
  const settle = async () => { await Promise.resolve(); await Promise.resolve();
    div.getBoundingClientRect(); };
  const out = {};
  const fig = { data: [{ type: "scatter", mode: "lines", name: "walk", x: Array.from(x),
    y: Array.from(y), line: { color: "#1f77b4", width: 1 } }],
    layout: { xaxis: { title: { text: "step" } }, yaxis: {}, height: 260 } };
  let t = performance.now();
  const chart = vdLineChart(div);
  chart.draw(fig);
  await settle();
  out.draw = performance.now() - t;
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 5)));
  await frame();
  const area = div.querySelector(".vd-plot-area"), box = area.getBoundingClientRect();
  const ev = (type, fx) => area.dispatchEvent(new MouseEvent(type, { bubbles: true,
    clientX: box.left + box.width * fx, clientY: box.top + box.height * 0.5 }));
  ev("mousedown", 0.45); await frame(); ev("mousemove", 0.5); await frame();
  ev("mousemove", 0.55); await frame();
  t = performance.now();  // what uPlot's mouseup calls (its handlers ignore synthetic drags)
  div.uplot.setSelect({ left: 0.45 * box.width, width: 0.1 * box.width, top: 0, height: box.height });
  await settle();
  out.zoom = performance.now() - t;
  out.zoomed = div.dataset.xrange;
  chart.purge();
  return out;
}"""


def states(steps: int) -> list[dict]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                                torch.nn.ReLU(), torch.nn.Linear(32, 2))
    data = torch.utils.data.TensorDataset(torch.randn(32 * 50, 8))
    loader = torch.utils.data.DataLoader(data, batch_size=32)
    session = vd.watch(model, loader=loader, every=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.02)
    out = []
    batches = iter(())
    for step in range(steps + 10):
        xb = next(batches, None)
        if xb is None:
            batches = iter(loader)
            xb = next(batches)
        opt.zero_grad()
        loss = model(xb[0]).pow(2).mean()
        loss.backward()
        opt.step()
        session.log(loss=loss, acc=min(1.0, step / steps), grad_scale=float(np.random.rand()),
                    aux_loss=loss.item() * 0.5)
        if step % 100 == 99:
            session.log(val_loss=loss.item() * 1.1, epoch=step // 100)
        if step >= steps:
            out.append(_live(dashboard_panels(session.records(), session.system.array())))
    session.close()
    return out


def engine_scripts(with_plotly: bool) -> dict[str, str]:
    """Each engine's script (and style) as a page must carry it."""
    out = {"vizdebug": _charts_js(),
           "uplot": _charts_js() + UPLOT_JS + UPLOT_STYLE}
    if with_plotly:
        from plotly.offline import get_plotlyjs

        out["plotly"] = get_plotlyjs()
    return out


def page(panels: list[dict], scripts: dict[str, str]) -> str:
    plotly = f"<script>{scripts['plotly']}</script>" if "plotly" in scripts else ""
    return (f"<html><head><style>{UPLOT_STYLE}</style></head>"
            f"<body><div id='host'></div>{plotly}"
            f"<script>{STATE_JS.read_text()}\n{_charts_js()}\n{UPLOT_JS}\n"
            f"const LINE = {json.dumps(LINE_PANELS)};\n"
            f"window.STATES = {json.dumps(panels)};</script></body></html>")


def _ratio_row(label: str, values: list[float], digits: int = 1) -> str:
    ratios = " | ".join(f"{v / values[0]:.2f}x" for v in values[1:])
    return f"| {label} | " + " | ".join(f"{v:.{digits}f}" for v in values) + f" | {ratios} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--big", type=int, default=1_000_000, help="points of the long series")
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()
    try:
        import plotly  # noqa: F401
        kinds = ["vizdebug", "uplot", "plotly"]
    except ImportError:
        kinds = ["vizdebug", "uplot"]
        print("plotly is not installed: measuring vizdebug's charts and uPlot only")
    from playwright.sync_api import sync_playwright

    panels = states(args.steps)
    scripts = engine_scripts("plotly" in kinds)
    head = "| what | " + " | ".join(kinds) + " | " + " | ".join(f"{k} / vizdebug" for k in kinds[1:])
    rule = "|---" * (2 * len(kinds)) + "|"
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        path = Path(tmp) / "page.html"
        path.write_text(page(panels, scripts), encoding="utf-8")
        browser = pw.chromium.launch(executable_path=os.environ.get(
            "VIZDEBUG_CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox", "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1200, "height": 900})
        tab.goto(path.as_uri())
        print(f"\n{args.steps} steps, 4 metrics; median ms per redraw (sync work, microtasks, "
              "layout); engines interleaved\n")
        print(head + " |")
        print(rule)
        for names in [[name] for name in panels[0]] + [list(panels[0])]:
            samples = {kind: [] for kind in kinds}
            for _ in range(3):  # interleaved rounds
                for kind in kinds:
                    samples[kind] += tab.evaluate(DRAW_JS, [kind, names, args.reps // 3])
                    tab.evaluate(SETTLE_JS)
            label = names[0] if len(names) == 1 else "one refresh (all five panels)"
            if len(names) == 1 and names[0] not in LINE_PANELS:
                label += " (ours in the uPlot column)"
            print(_ratio_row(label, [statistics.median(samples[k]) for k in kinds]))
        # our SVG line chart's drag-zoom is gone (the line panels are uPlot's, live and
        # saved): its figures are in benchmarks/README.md, measured before it went
        big = ["uplot"]
        print(f"\n{args.big:,}-point series, ms (first draw, then a zoom to a tenth)\n")
        print("| what | uplot |\n|---|---|")
        results = {k: [] for k in big}
        for _ in range(2):
            for kind in big:
                results[kind].append(tab.evaluate(BIG_JS, [kind, args.big]))
        spans = {k: [float(b) - float(a) for a, b in (r["zoomed"].split(",") for r in results[k])]
                 for k in big}  # each drag zoomed to about a tenth
        assert all(0.05 * args.big < v < 0.15 * args.big for k in big for v in spans[k]), spans
        for what in ("draw", "zoom"):
            print(f"| {what} | {min(r[what] for r in results['uplot']):.0f} |")
        browser.close()
    print("\npage weight, bytes the engine's script adds to a page\n")
    print("| engine | raw | gzipped |\n|---|---|---|")
    for kind, text in scripts.items():
        raw = text.encode("utf-8")
        print(f"| {kind} | {len(raw):,} | {len(gzip.compress(raw)):,} |")


if __name__ == "__main__":
    main()
