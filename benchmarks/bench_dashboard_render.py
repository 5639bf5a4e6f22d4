"""What redrawing a dashboard panel costs the page's main thread: vizdebug's SVG charts
beside plotly.js (``Plotly.react``, what a plotly-based live view such as a FigureWidget
does), on the same panel dicts, in the same headless Chromium.

    python benchmarks/bench_dashboard_render.py            # 3000 steps, 4 metrics
    python benchmarks/bench_dashboard_render.py --steps 300

The panels come from a real session (a small model, its loader tapped, four logged
metrics, gradients sampled every 2 steps); each of ten successive states (one more step each) is drawn in
turn, 30 times, and the median time of one draw is reported per panel, synchronous work
plus the layout it forces. plotly is not a dependency of vizdebug: ``pip install plotly``
for its column (without it, only vizdebug's is measured).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

import numpy as np
import torch

import vizdebug as vd
from vizdebug.views._dashboard_figure import dashboard_panels
from vizdebug.views.dashboard import _charts_js, _live

STATE_JS = Path(vd.__file__).parent / "views" / "static" / "dashboard_state.js"

DRAW_JS = """async ([kind, name]) => {
  const S = window.STATES, div = document.getElementById("panel");
  const fig = (i) => { const p = S[i % S.length][name];
    return name === "curves" ? vdCurvesView(p, 0.6, false) : p; };
  div.innerHTML = "";
  let chart = null;
  const draw = (f) => {
    if (kind === "vizdebug") { chart = chart || vdChart(div); chart.draw(f); }
    else Plotly.react(div, f.data, f.layout, {displaylogo: false});
    div.getBoundingClientRect();  // the layout the draw forces
  };
  draw(fig(0));
  const times = [];
  for (let r = 1; r <= 30; r++) {
    const f = fig(r);
    const t = performance.now();
    draw(f);
    times.push(performance.now() - t);
    await new Promise((done) => requestAnimationFrame(() => setTimeout(done, 5)));
  }
  if (kind === "plotly") Plotly.purge(div);
  return times;
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


def page(panels: list[dict], with_plotly: bool) -> str:
    plotly = ""
    if with_plotly:
        from plotly.offline import get_plotlyjs

        plotly = f"<script>{get_plotlyjs()}</script>"
    return (f"<html><body><div id='panel' style='width:1000px'></div>{plotly}"
            f"<script>{STATE_JS.read_text()}\n{_charts_js()}\n"
            f"window.STATES = {json.dumps(panels)};</script></body></html>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    args = parser.parse_args()
    try:
        import plotly  # noqa: F401
        kinds = ["vizdebug", "plotly"]
    except ImportError:
        kinds = ["vizdebug"]
        print("plotly is not installed: measuring vizdebug's charts only")
    from playwright.sync_api import sync_playwright

    panels = states(args.steps)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        path = Path(tmp) / "page.html"
        path.write_text(page(panels, "plotly" in kinds), encoding="utf-8")
        browser = pw.chromium.launch(executable_path=os.environ.get(
            "VIZDEBUG_CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox", "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1200, "height": 900})
        tab.goto(path.as_uri())
        print(f"\n{args.steps} steps, 4 metrics; median ms per redraw (sync work + layout)\n")
        print("| panel | " + " | ".join(kinds) + (" | plotly / vizdebug |" if len(kinds) > 1 else " |"))
        print("|---" * (len(kinds) + 1 + (len(kinds) > 1)) + "|")
        for name in panels[0]:
            medians = [statistics.median(tab.evaluate(DRAW_JS, [kind, name])) for kind in kinds]
            ratio = f" | {medians[1] / medians[0]:.1f}x" if len(medians) > 1 else ""
            print(f"| {name} | " + " | ".join(f"{m:.1f}" for m in medians) + ratio + " |")
        browser.close()


if __name__ == "__main__":
    main()
