"""The dashboard's own SVG charts (views/static/chart_*.js), run in node: the pure parts
(ticks, number formats, paths, text), and every panel of a real session drawn to a
well-formed SVG in which user text is text, never markup. (The browser test drives them
in JupyterLab: hover, legend, zoom, and what a refresh costs.)"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.views import dashboard as dash_module
from vizdebug.views._dashboard_figure import dashboard_panels
from vizdebug.views.dashboard import _live

NODE = shutil.which("node")
STATIC = Path(dash_module.__file__).with_name("static")
EVIL = "<img src=x onerror=alert(1)>_loss"
SVG = "{http://www.w3.org/2000/svg}"

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def run_js(body: str, data: object = None) -> object:
    script = "".join((STATIC / name).read_text() for name in
                     ("dashboard_state.js", *dash_module.CHART_FILES, "chart_uplot.js",
                      "chart_uplot_view.js"))
    script += '\nconst input = JSON.parse(require("fs").readFileSync(0, "utf8"));\n'
    script += f"console.log(JSON.stringify((() => {{ {body} }})()));"
    out = subprocess.run([NODE, "-e", script], input=json.dumps(data), capture_output=True,
                         text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_ticks_formats_and_paths():
    out = run_js("""return {
      ticks: vdTicks(0, 1, 5), odd: vdTicks(0.0641, 0.9, 5), log: vdLogTicks(-1, 0.5),
      formats: [vdFormat(1234567), vdFormat(0.000012), vdFormat(0.1 + 0.2), vdFormat(0.456, ".0%"),
                vdFormat(null), vdFormat(NaN)],
      path: vdLinePath([0, 1, 2, 3, 4], [1, null, 2, NaN, 3], (x) => x * 10, (y) => 100 - y, false),
      logPath: vdLinePath([0, 1, 2], [1, -1, 10], (x) => x, (y) => y, true),
      nearest: [vdNearest([0, 10, 20, 30], 14), vdNearest([0, 10, 20, 30], 16), vdNearest([5], 99)],
    };""")
    assert out["ticks"] == [0, 0.2, 0.4, 0.6, 0.8, 1]
    assert out["odd"] == [0.2, 0.4, 0.6, 0.8]  # round values, not 0.064, 0.243...
    assert out["log"] == pytest.approx([-1, np.log10(0.2), np.log10(0.5), 0, np.log10(2)])
    assert out["formats"] == ["1.235e6", "1.2e-5", "0.3", "46%", "null", "NaN"]
    assert out["path"] == "M0,99M20,98M40,97"  # a gap at each missing or non-finite value
    assert out["logPath"] == "M0,1M2,10"  # a log axis skips what is not positive
    assert out["nearest"] == [1, 2, 0]


def test_text_is_unescaped_for_reading_and_escaped_for_svg():
    out = run_js("""return {
      plain: vdPlain(input.label), esc: vdEsc(vdPlain(input.label)),
      rich: vdRich("<b>Data wait</b> <span style='color:#c62828'>red</span> &lt;i&gt;"),
      hostile: vdRich("<span style='color:url(javascript:x)'>t</span>"),
      colours: [vdColour("#abc", "x"), vdColour("rgba(1, 2, 3, 0.5)", "x"), vdColour("red\\"/>", "x")],
    };""", {"label": "&lt;img src=x onerror=alert(1)&gt;_loss %\u200b{y}"})
    assert out["plain"] == EVIL + " %{y}"
    assert out["esc"] == "&lt;img src=x onerror=alert(1)&gt;_loss %{y}"
    assert out["rich"] == ('<tspan font-weight="bold">Data wait</tspan> '
                           '<tspan fill="#c62828">red</tspan> &lt;i&gt;')
    assert out["hostile"] == "t"  # a colour that is not a plain colour is dropped
    assert out["colours"] == ["#abc", "rgba(1, 2, 3, 0.5)", "x"]


def _panels(nan_at: int | None = 150) -> dict:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    session = vd.watch(model, every=2)
    session.system.stop()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(200):
        opt.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        session.log(**{"loss": float("nan") if step == nan_at else loss, EVIL: loss,
                       "acc": step / 200})
        if step % 50 == 49:
            session.log(val_loss=loss.item() * 1.1, epoch=step // 50)
    panels = _live(dashboard_panels(session.records(), session.system.array()))
    session.close()
    return panels


def _texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)  # well-formed, or this raises
    assert not [e for e in root.iter() if e.tag in (f"{SVG}img", "img", f"{SVG}script")]
    return ["".join(e.itertext()) for e in root.iter(f"{SVG}text")]


def test_every_panel_draws_as_well_formed_svg_with_user_text_as_text():
    panels = _panels()
    out = run_js("""const state = () => ({zoom: null, legend: new Map()});
    const drawn = {};
    for (const [name, panel] of Object.entries(input)) {
      const fig = name === "curves" ? vdCurvesView(panel, 0.6, false) : panel;
      const {svg, height, frame} = vdPanelSvg(fig, 900, state());
      drawn[name] = {svg, height, categories: frame.categories, shown: frame.shown.length};
    }
    return drawn;""", panels)
    assert set(out) == {"curves", "grads", "health", "timing", "system"}
    curves = _texts(out["curves"]["svg"])
    assert EVIL in curves and "Learning curves" in curves and "non-finite" in curves
    assert "accuracy" in curves and "step" in curves
    assert out["grads"]["categories"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    grads = _texts(out["grads"]["svg"])
    assert "0.weight" in grads and "log10 |g|" in grads
    health = _texts(out["health"]["svg"])
    assert {"dead units", "saturated", "exact zeros"} <= set(health)
    # empty panels say why (no loader tapped, the system sampler stopped)
    assert any("No loader tapped" in t for t in _texts(out["timing"]["svg"]))


def test_legend_choices_zoom_and_log_scale():
    panels = _panels(nan_at=None)
    out = run_js("""const fig = vdCurvesView(input.curves, 0.6, false);
    const base = vdPanelSvg(fig, 900, {zoom: null, legend: new Map()});
    const lr = fig.data.find((t) => t.name.startsWith("lr"));
    const shownLr = vdPanelSvg(fig, 900, {zoom: null, legend: new Map([[lr.legendgroup, true]])});
    const noLoss = vdPanelSvg(fig, 900, {zoom: null, legend: new Map([["loss", false]])});
    const zoomed = vdPanelSvg(fig, 900, {zoom: [50, 100], legend: new Map()});
    const log = vdPanelSvg(vdCurvesView(input.curves, 0.6, true), 900, {zoom: null, legend: new Map()});
    const names = (o) => o.frame.shown.map((t) => t.name);
    // the hover of the uPlot chart that draws this panel, its pixel maps the frame's
    const f = base.frame, view = {fig, shown: f.shown, ranges: vdRanges(fig, {zoom: null,
      legend: new Map()})};
    const u = {posToVal: (px) => f.xOf(px),
               valToPos: (v, key) => (key === "x" ? f.sx(v) : vdScaleOf(f, {yaxis: key})(v))};
    return {base: names(base), lr: names(shownLr), noLoss: names(noLoss), x: zoomed.frame.x,
            full: base.frame.x, log: log.frame.log, hover: vdUplotHover(u, view,
              f.sx(100), f.sy(fig.data[0].y[fig.data[0].x.indexOf(100)]))};
    """, panels)
    assert not any(n.startswith("lr") for n in out["base"])  # legend-only until clicked
    assert any(n.startswith("lr") for n in out["lr"])
    assert "loss" not in out["noLoss"] and EVIL.replace("<", "&lt;").replace(">", "&gt;") \
        in out["noLoss"]
    assert out["x"] == [50, 100] and out["full"] == [0, 199]
    assert out["log"] is True
    assert out["hover"]["text"].endswith("step 100: " + out["hover"]["text"].split(": ")[-1])
    assert "step 100" in out["hover"]["text"]


def test_the_kernels_zoom_answer_is_drawn_in_over_the_pages_points():
    """The zoom protocol end to end below the browser: the kernel's answer to a drag
    (views/_dashboard_zoom.answer_zoom, bucketed with its min-max band) merged into the
    live curves panel by the widget's vdMergeZoomed, smoothed and drawn."""
    from vizdebug.views._dashboard_zoom import answer_zoom

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    session = vd.watch(model, every=10)
    session.system.stop()
    for step in range(600):
        session.log(loss=float(np.sin(step / 7.0) + 2.0))
    panel = _live(dashboard_panels(session.records(), np.empty((0, 4))))["curves"]
    answer = answer_zoom(session, {"kind": "zoom", "panel": "curves", "lo": 100, "hi": 400,
                                   "points": 40})
    session.close()
    loss = next(s for s in answer["series"] if s["label"] == "loss")
    assert not loss["exact"] and len(loss["x"]) <= 60  # buckets, with their band
    out = run_js("""
      const merged = vdMergeZoomed(input.panel, input.answer);
      const view = vdCurvesView(merged, 0.6, false);
      return { data: merged.data, smooth: view.data.filter((t) => t.meta && t.meta.smooth),
               svg: vdPanelSvg(view, 800, { zoom: [100, 400], legend: new Map() }).svg,
               stale: vdMergeZoomed(input.panel, { lo: 0, hi: 1, series: [] }).data.length };
    """, {"panel": panel, "answer": answer})
    band, raw = out["data"][0], next(t for t in out["data"] if t.get("meta", {}).get("raw"))
    assert band["fill"] == "toself" and band["hoverinfo"] == "skip"
    assert len(band["x"]) == 2 * len(loss["x"])  # the highs out, the lows back
    inside = [x for x in raw["x"] if 100 <= x <= 400]
    assert inside == loss["x"]  # the kernel's points inside the range
    page = next(t for t in panel["data"] if t.get("meta", {}).get("raw"))
    assert [x for x in raw["x"] if x < 100] == [x for x in page["x"] if x < 100]
    assert [x for x in raw["x"] if x > 400] == [x for x in page["x"] if x > 400]
    assert len(out["smooth"][0]["y"]) == len(raw["y"])  # each smoothed curve follows its own
    assert re.search(r'Z" fill="#[0-9a-f]{6}" stroke="none"', out["svg"])
    assert out["stale"] == len(panel["data"])  # an answer naming nothing changes nothing
