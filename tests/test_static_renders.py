"""Static renders (reports, nbconvert pages, static twins) that show what the view holds:
any number of views share a page, the all-NaN loss is said in words, captions are whole
and placed apart, the embedding picture and its caption agree, glyphs need no emoji font."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.findings import Finding, Findings, findings_html
from vizdebug.views import dashboard as dashboard_module
from vizdebug.views._dashboard_figure import dashboard_panels, twin_figure
from vizdebug.views._figure_svg import figure_svg
from vizdebug.views.dashboard import Dashboard

from .test_dashboard import small_session

NODE = shutil.which("node")
SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)

# Every classic script of a page, run one after another in one global scope (as a page
# runs them); the names of the errors each threw. A null element stands in for the DOM.
_RUN_SCRIPTS = """
const vm = require("vm");
const scripts = JSON.parse(require("fs").readFileSync(0, "utf8"));
const context = vm.createContext({document: {getElementById: () => null},
  // what uPlot reads as it loads (the screen's pixel ratio and its media query)
  navigator: {userAgent: ""}, devicePixelRatio: 1, CustomEvent: class {},
  addEventListener() {}, dispatchEvent() {},
  matchMedia: () => ({matches: false, addListener() {}, addEventListener() {}})});
context.window = context;  // as in a page: the global object is `window`
const errors = [];
for (const code of scripts) {
  try { vm.runInContext(code, context); } catch (e) { errors.push(`${e.name}: ${e.message}`); }
}
console.log(JSON.stringify(errors));
"""


def _script_errors(page: str) -> list[str]:
    scripts = SCRIPT.findall(page)
    assert scripts, "the page has no inline script"
    out = subprocess.run([NODE, "-e", _RUN_SCRIPTS], input=json.dumps(scripts),
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_two_dashboards_scripts_share_one_page(tmp_path):
    sessions = [small_session(12)[1] for _ in range(2)]
    for s in sessions:
        s.close()
    page = vd.report(sessions, tmp_path / "two.html", progress=False).read_text()
    assert page.count("vdDrawStatic(") >= 2
    assert _script_errors(page) == []
    uplot = (Path(dashboard_module.__file__).with_name("static") /
             dashboard_module.UPLOT_FILES[0]).read_text(encoding="utf-8")
    assert page.count(uplot) == 1  # the charts' library once, for both dashboards
    # fragments joined by hand keep both copies: the second is idle, not an error
    twice = "".join(Dashboard.from_session(s, live=False).to_html() for s in sessions)
    assert twice.count(uplot) == 2 and _script_errors(twice) == []
    # and each draws into its own element, also when one view is rendered twice (a
    # session renders through a short-lived dashboard, whose id() comes round again)
    dash = Dashboard.from_session(sessions[0], live=False)
    page = vd.report([dash, dash, sessions[1]], tmp_path / "three.html",
                     progress=False).read_text()
    targets = re.findall(r"vdDrawStatic\('([^']+)'", page)
    assert len(targets) == 3 and len(set(targets)) == 3
    assert all(page.count(f'id="{t}"') == 1 for t in targets)


def test_a_saved_dashboard_shows_its_final_state_without_a_script(tmp_path):
    """A page that runs no script (GitHub, nbconvert without JS): the element the script
    draws the charts into holds the static twin's pictures of the same final state."""
    _, session = small_session(40, every=2)
    session.close()
    page = session.dashboard().save(tmp_path / "dash.html").read_text(encoding="utf-8")
    div = re.search(r'<div id="(vd-dash-[0-9a-f]+)" class="vd-saved-charts"[^>]*>(.*?)'
                    r"<!--vd-once:", page, re.S)
    assert div, "no chart element"
    assert re.findall(r"vdDrawStatic\('([^']+)'", page) == [div.group(1)]
    pictures = div.group(2)
    assert pictures.count("<svg") == 5 and "Learning curves" in html.unescape(pictures)
    assert "val_loss" in pictures and "<script" not in pictures
    assert pictures.strip() in Dashboard(session, live=False)._twin_html()  # the twin's own


# -- the embedding legend, and the picture's caption -------------------------------------------
def _swatches(fragment: str) -> list[str]:
    legend = re.search(r'<div class="vd-emb-legend"[^>]*>(.*?)</div>', fragment, re.S)
    assert legend, "no legend in the static picture"
    return re.findall(r"<i ([^>]*)>", legend.group(1))


def test_the_embedding_legend_draws_its_swatches_without_the_widgets_stylesheet():
    # a report and an nbconvert page carry the fragment alone: the swatch must size itself
    x = np.random.default_rng(0).normal(size=(30, 4))
    view = vd.show_embeddings(x, labels=np.arange(30) % 3, method="pca").wait(30)
    swatches = _swatches(view.to_html())
    assert len(swatches) == 3
    for attrs in swatches:
        style = re.search(r'style="([^"]*)"', attrs).group(1).replace(" ", "")
        assert "display:inline-block" in style and "width:" in style and "height:" in style


class _Refined:
    """Holds the embedding worker between the refined layout's swap and its figures (the
    window in which a report or a twin update may render the view)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, cls: type, step: str) -> None:
        self.swapped, self.go = threading.Event(), threading.Event()
        original = getattr(cls, step)

        def held(view: Any, *args: Any) -> Any:
            self.swapped.set()
            assert self.go.wait(60)
            return original(view, *args)

        monkeypatch.setattr(cls, step, held)


def test_the_static_picture_and_its_caption_come_from_one_state(monkeypatch):
    from vizdebug.views.embeddings import EmbeddingView
    from vizdebug.views.embeddings_data import point_colours, scatter_png

    hold = _Refined(monkeypatch, EmbeddingView, "_analyse")
    x = np.random.default_rng(1).normal(size=(60, 5))
    view = vd.show_embeddings(x, labels=np.arange(60) % 2, method="tsne", perplexity=10)
    view._drawn.set()
    try:
        assert hold.swapped.wait(60)
        fragment = view.to_html()
        assert view.layout_name == "t-SNE" and not view.done
        tsne = scatter_png(view.layout, point_colours(view.classes, None, len(view.layout)))
        assert tsne in fragment  # the picture is the t-SNE layout ...
        assert "PCA preview" not in fragment  # ... and nothing calls it the preview
        assert "layout: t-SNE" in fragment
    finally:
        hold.go.set()
    view.wait(60)


def test_the_timeline_picture_and_its_caption_come_from_one_state(monkeypatch):
    from vizdebug.records import EmbeddingFrame
    from vizdebug.views.embedding_timeline import EmbeddingTimelineView, show_embedding_frames

    hold = _Refined(monkeypatch, EmbeddingTimelineView, "_trust")
    rng = np.random.default_rng(2)
    frames = [EmbeddingFrame("fc", s, s, rng.normal(size=(40, 5)).astype(np.float32))
              for s in range(2)]
    view = show_embedding_frames(frames, labels=np.arange(40) % 2, method="tsne",
                                 perplexity=8)
    view._drawn.set()
    try:
        assert hold.swapped.wait(120)
        fragment = view.to_html()
        assert view.layout_name == "t-SNE" and not view.done
        assert "PCA preview" not in fragment and "layout: t-SNE" in fragment
    finally:
        hold.go.set()
    view.wait(60)


# -- the dashboard's static twin -----------------------------------------------------------------
def _nan_session(steps: int = 44):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    session = vd.watch(model, every=1, on_anomaly="ignore")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        opt.zero_grad()
        x = torch.randn(16, 4)
        x[0, 0] = float("nan")
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        session.log(loss=loss)
    session.close()
    return session


def test_an_all_nan_run_is_said_in_words_not_drawn_on_an_invented_axis():
    session = _nan_session(44)
    panels = dashboard_panels(session.records(), session.system.array())
    notes = {name: " ".join(a["text"] for a in p["layout"].get("annotations") or []
                            if a.get("xref") == "paper") for name, p in panels.items()}
    assert "loss: all 44 values NaN" in notes["curves"]
    assert "NaN" in notes["grads"] and "NaN" in notes["health"]
    for name in ("curves", "grads", "health"):  # no axis made up for values that are none
        assert panels[name]["layout"]["yaxis"].get("visible") is False
    twin = Dashboard(session, live=False)._twin_html()
    assert "loss: all 44 values NaN" in twin
    # the live chart and the saved page draw the same words (and no y ticks)
    assert "loss: all 44 values NaN" in _node_panel_svg(panels["curves"])


def _node_panel_svg(panel: dict) -> str:
    static = Path(dashboard_module.__file__).with_name("static")
    script = "".join((static / name).read_text() for name in dashboard_module.CHART_FILES)
    script += ('\nconst fig = JSON.parse(require("fs").readFileSync(0, "utf8"));\n'
               "console.log(vdPanelSvg(fig, 800, {zoom: null, legend: new Map()}).svg);")
    out = subprocess.run([NODE, "-e", script], input=json.dumps(panel), capture_output=True,
                         text=True, timeout=60, check=True)
    return out.stdout


def _text_rows(svg: str) -> dict[str, float]:
    return {html.unescape(t): float(y) for y, t in
            re.findall(r'<text x="[\d.]+" y="([\d.]+)"[^>]*>([^<]+)</text>', svg)}


def test_the_colour_scale_caption_sits_clear_of_the_heatmaps_axis_title():
    _, session = small_session(30)
    session.close()
    panel = dashboard_panels(session.records(), session.system.array())["grads"]
    figure = twin_figure(panel)
    svg = figure_svg(figure, width=560)
    rows = _text_rows(svg)
    caption = next(y for t, y in rows.items() if t.startswith("colour: "))
    title = rows["step"]
    assert caption - title >= 11  # a line of 10-11 px text apart, not on top of each other
    assert caption <= figure["layout"]["height"] - 2  # and inside the picture


# -- findings ------------------------------------------------------------------------------------
def test_the_evidence_mark_needs_no_emoji_font():
    found = Findings([Finding("dead-units", "warning", "half the units are dead",
                              where="features.2")])
    page = findings_html(found)
    assert "vd-evidence-target" in page
    assert "&#128269;" not in page and not any(ord(c) > 0xFFFF for c in page)
    target = re.search(r'<span class="vd-evidence-target"[^>]*>(.*?)</span>', page, re.S)
    assert "<svg" in target.group(1) and "layer features.2" in target.group(1)


def test_a_lone_point_is_drawn_as_a_dot_not_left_out():
    # a short run's one system sample, and a value between two NaNs: no line has length
    from vizdebug.records import TrainingRecords

    rec = TrainingRecords(scalars={"loss": (np.arange(60), np.r_[np.nan, 0.5, np.nan,
                                                                 np.linspace(1, 0.2, 57)])})
    panels = dashboard_panels(rec, np.array([[100.0, 12.0, 300.0, np.nan]]))
    system = figure_svg(twin_figure(panels["system"]), width=560)
    assert system.count("<circle") == 2  # RSS and CPU, one sample each
    curves = figure_svg(twin_figure(panels["curves"]))
    assert curves.count("<circle") == 2  # the raw and the smoothed value at step 1
    if NODE is not None:
        # the browser's SVG (a line panel's export) draws them too
        assert _node_panel_svg(panels["system"]).count("<circle") == 2
        assert _node_panel_svg(panels["curves"]).count("<circle") == 2


def test_a_paged_grid_shown_twice_pages_itself():
    # the paging script finds its grid by id: two copies must not share one
    view = vd.show_batch(np.random.default_rng(3).random((8, 1, 8, 8)), n=4)
    view.next()
    page = view.to_html() + view.to_html()
    ids = re.findall(r'<div id="([^"]+)" class="vd-batch-static"', page)
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(page.count(f"vdPage_{i}(-1)") == 1 for i in ids)


def test_tick_labels_of_a_narrow_range_are_all_different():
    # 413.475, 413.5, 413.525 MiB: four significant digits write "413.5" three times
    from vizdebug.records import TrainingRecords

    t = np.arange(4.0)
    system = np.c_[t, [10.0, 20, 30, 40], [413.47, 413.52, 413.55, 413.56], np.full(4, np.nan)]
    panel = dashboard_panels(TrainingRecords(), system)["system"]
    svg = figure_svg(twin_figure(panel), width=560)
    left = [html.unescape(t) for t in re.findall(r'text-anchor="end" fill="#444">([^<]+)</text>', svg)]
    assert len(left) >= 3 and len(set(left)) == len(left), left
    if NODE is not None:
        live = _node_panel_svg(panel)
        ticks = re.findall(r'dy="0.32em" text-anchor="end">([^<]+)</text>', live)
        assert len(ticks) >= 3 and len(set(ticks)) == len(ticks), ticks
