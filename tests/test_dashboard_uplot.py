"""The live line panels on uPlot (views/static/chart_uplot*.js), their pure parts run in
node: the spec's traces as uPlot's aligned columns (a step a trace lacks is spanned, a
missing value breaks the line), the domain of a strip turned into a scale range, the lone
points, which traces uPlot draws, the ranges taken from the SVG chart's frame, titles as
escaped HTML. (The browser tests drive the charts in JupyterLab and Notebook 7.)"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from vizdebug.views import dashboard as dash_module

NODE = shutil.which("node")
STATIC = Path(dash_module.__file__).with_name("static")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def run_js(body: str) -> object:
    names = ("dashboard_state.js", *dash_module.CHART_FILES, "chart_uplot.js", "chart_uplot_view.js")
    script = "".join((STATIC / name).read_text() for name in names)
    script += f"\nconsole.log(JSON.stringify((() => {{ {body} }})(), (k, v) => v === undefined ? 'U' : v));"
    out = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_traces_become_aligned_columns():
    out = run_js("""
      const a = { x: [0, 1, 2, 3], y: [1, null, 3, NaN] }, b = { x: [1, 3], y: [10, 30] };
      const same = { x: a.x, y: [5, 6, 7, 8] };
      const logged = { x: [0, 1, 2], y: [1, -1, 0] }, right = { x: [0, 1, 2], y: [-1, 0, 1], yaxis: "y2" };
      const cols = vdAlign([a, b], false);
      return { x: Array.from(cols[0]), a: Array.from(cols[1]), b: Array.from(cols[2]),
        same: vdAlign([a, same], false).map((c) => Array.from(c)),
        log: vdAlign([logged, right], true).map((c) => Array.from(c)) };""")
    assert out["x"] == [0, 1, 2, 3]
    assert out["a"] == [1, None, 3, None]  # missing and non-finite: breaks
    assert out["b"] == ["U", 10, "U", 30]  # steps b has no point at: spanned
    assert out["same"] == [[0, 1, 2, 3], [1, None, 3, None], [5, 6, 7, 8]]
    assert out["log"][1] == [1, None, None]  # not positive on the log axis: a break
    assert out["log"][2] == [-1, 0, 1]  # the right axis is not logarithmic


def test_ranges_strips_and_lone_points():
    out = run_js("""
      const fig = { data: [
          { type: "scatter", mode: "lines", name: "loss", x: [0, 10, 20], y: [2, 1, 0.5] },
          { type: "scatter", mode: "markers", name: "bad", x: [15], y: [0.5], yaxis: "y3" },
          { type: "scatter", mode: "lines", name: "acc", x: [0, 20], y: [0, 1], yaxis: "y2" },
          { type: "scatter", mode: "lines", fill: "toself", name: "band", x: [0, 1], y: [0, 1] }],
        layout: { yaxis: { range: [0, 2], domain: [0, 0.9] }, yaxis2: { range: [0, 1] },
                  yaxis3: { domain: [0.93, 1] } } };
      const r = vdRanges(fig, { zoom: null, legend: new Map() });
      const zoomed = vdRanges(fig, { zoom: [5, 15], legend: new Map() });
      return { x: r.x, y: r.y, ticks: r.ticks.y, y2: r.y2, y3: r.y3, zx: zoomed.x, zy: zoomed.ticks.y,
        series: fig.data.filter(vdIsSeries).map((t) => t.name),
        lone: vdLone([0, 1, 2, 3, 4, 5], [1, null, 2, null, 3, 4], false, 0, 10),
        loneIn: vdLone([0, 1, 2], [1, null, 2], false, 1.5, 3),
        title: vdRichHtml("<b>Loss</b> <span style='color:#777'>a &lt;b&gt;</span><script>x</script>") };""")
    assert out["x"] == [0, 20]
    assert out["ticks"] == [0, 2]  # the spec's robust range, as the SVG chart keeps it
    assert out["y"][0] == pytest.approx(0) and out["y"][1] == pytest.approx(2 / 0.9)  # room for the strip
    assert out["y2"][1] == pytest.approx(1 / 0.9)
    lo, hi = out["y3"]  # [0, 1] lands on the top strip [0.93, 1] of the plot
    assert (0 - lo) / (hi - lo) == pytest.approx(0.93) and (1 - lo) / (hi - lo) == pytest.approx(1)
    assert out["zx"] == [5, 15] and out["zy"][1] < 2  # zoomed: fitted to the data in view
    assert out["series"] == ["loss", "acc"]  # markers, the strip and bands are drawn by hooks
    assert out["lone"] == [0, 2] and out["loneIn"] == [2]
    assert out["title"] == "<b>Loss</b> <span style=\"color:#777\">a &lt;b&gt;</span>x"
