"""The dashboard below the browser: figure content, escaping, throttling, live updates."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug._env import set_renderer
from vizdebug.records import TrainingRecords
from vizdebug.views import dashboard as dash_module
from vizdebug.views._dashboard_delta import DeltaEncoder, patch_size, state_size
from vizdebug.views._dashboard_figure import (
    MAX_POINTS,
    dashboard_panels,
    epoch_marks,
    saturation_meaning,
    twin_figure,
)
from vizdebug.views.dashboard import Dashboard, _live

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
EVIL = "<img src=x onerror=alert(1)>_loss"


@pytest.fixture
def widget_mode():
    set_renderer("widget")
    yield
    set_renderer(None)


def small_session(steps: int = 30, every: int = 1, **log_extra):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    session = vd.watch(model, every=every)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        opt.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        session.log(loss=loss, **log_extra)
        if step % 10 == 9:
            session.log(val_loss=loss.item() * 1.1, epoch=step // 10)
    return model, session


# -- the figure ---------------------------------------------------------------------------
def test_figure_has_every_panel_in_one_figure():
    _, session = small_session()
    panels = dashboard_panels(session.records(), session.system.array())
    session.close()
    kinds = {name: {t["type"] for t in p["data"]} for name, p in panels.items()}
    assert kinds["grads"] == {"heatmap"} and kinds["health"] == {"bar"}
    names = [t["name"] for t in panels["curves"]["data"]]
    assert "loss" in names and "val_loss" in names
    heat = panels["grads"]["data"][0]
    assert heat["y"] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    # each panel has its own legend or none: the health keys are not among the curves'
    assert panels["curves"]["layout"]["showlegend"] and panels["health"]["layout"]["showlegend"]
    assert not {"dead units", "saturated"} & set(names)
    json.dumps(panels, allow_nan=False)  # JSON-safe: NaN became null


def test_long_curves_are_downsampled_but_keep_spikes_and_nans():
    steps = np.arange(200_000)
    values = np.exp(-steps / 50_000.0)
    values[12_345], values[150_000] = 99.0, np.nan
    rec = TrainingRecords(scalars={"loss": (steps, values)})
    panels = dashboard_panels(rec, np.empty((0, 4)))
    raw, smooth, marks, spike = panels["curves"]["data"]
    assert len(raw["x"]) <= MAX_POINTS + 2
    assert 99.0 in raw["y"] and 12_345 in raw["x"]
    assert marks["name"] == "loss non-finite" and marks["x"] == [150_000]
    assert marks["text"] == ["loss was NaN at step 150000"] and marks["yaxis"] == "y3"
    assert smooth["meta"] == {"smooth": True}
    # the spike is off the robust range, marked at its edge
    low, high = panels["curves"]["layout"]["yaxis"]["range"]
    assert high < 2 and spike["x"] == [12_345] and "99 at step 12345" in spike["text"][0]


def test_epoch_marks_follow_logged_epochs():
    rec = TrainingRecords(scalars={"epoch": (np.array([9, 19, 29]), np.array([0.0, 1.0, 2.0]))})
    assert epoch_marks(rec) == [(19, 1), (29, 2)]
    many = TrainingRecords(scalars={"epoch": (np.arange(200) * 7, np.arange(200.0))})
    assert [e for _, e in epoch_marks(many)] == list(range(20, 200, 20))  # not a fence


def test_user_strings_are_escaped_in_figure_findings_and_static_html():
    model = torch.nn.ModuleDict({EVIL: torch.nn.Linear(2, 2)})
    session = vd.watch(model, every=1)
    model[EVIL](torch.randn(3, 2)).sum().backward()
    session.log(**{EVIL: float("nan"), "loss": 1.0})
    session.log(**{EVIL: 1.0, "loss": 1.0})
    dash = Dashboard.from_session(session)
    fig = dashboard_panels(session.records(), np.empty((0, 4)))
    text = json.dumps(fig)
    assert EVIL not in text and "&lt;img src=x onerror=alert(1)&gt;_loss" in text
    html_out = dash.to_html()
    assert EVIL not in html_out
    widget = dash.widget
    assert EVIL not in widget.findings_html and "nonfinite-loss" in widget.findings_html
    session.close()


# -- the widget ---------------------------------------------------------------------------
def test_mimebundle_has_static_html_and_the_widget(widget_mode):
    _, session = small_session()
    dash = session.dashboard(live=False)
    bundle = dash._repr_mimebundle_()
    assert WIDGET_MIME in bundle and "text/html" in bundle
    assert "Training dashboard" in bundle["text/html"]
    widget = dash.widget
    assert widget.snapshot["panels"]["curves"]["data"] and widget.status.startswith("step 30")
    # the page draws its own charts: no plotly.js travels with the widget
    assert not any(isinstance(v, bytes) and len(v) > 100_000 for v in widget.get_state().values())
    assert "Plotly" not in widget._esm
    session.close()


def test_refresh_pushes_only_when_something_changed():
    _, session = small_session()
    session.system.stop()  # its 1 Hz samples would count as news
    dash = Dashboard.from_session(session, live=False, min_interval=0.0, budget=1e9)
    _ = dash.widget  # builds and pushes once
    assert dash.refreshes == 1
    assert dash.refresh() is False
    session.log(loss=0.1)  # the training loop's own log() pushes the news
    assert dash.refreshes == 2
    assert dash.refresh() is False
    session.close()


def test_refresh_is_throttled():
    _, session = small_session()
    dash = Dashboard.from_session(session, live=False, min_interval=60.0)
    _ = dash.widget
    session.log(loss=0.1)
    assert dash.refresh() is False and dash.refreshes == 1
    assert dash.refresh(force=True) is True
    session.close()


def test_interval_keeps_view_cost_under_budget():
    _, session = small_session(steps=2)
    dash = Dashboard.from_session(session, live=False, min_interval=0.25, budget=0.02)
    dash._last_cost = 0.001
    assert dash.next_interval() == 0.25
    dash._last_cost = 0.1  # a slow refresh: wait 100x as long (half the 2% budget)
    assert dash.next_interval() == pytest.approx(10.0)
    session.close()


def test_updates_while_training_runs_in_another_thread_and_stays_cheap():
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    session = vd.watch(model, every=5)
    dash = Dashboard.from_session(session, min_interval=0.2)
    _ = dash.widget  # builds the widget, starts the refresh thread
    revisions = []
    done = threading.Event()

    def train():
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        start = time.perf_counter()
        while time.perf_counter() - start < 3.0:
            opt.zero_grad()
            loss = model(torch.randn(64, 32)).pow(2).mean()
            loss.backward()
            opt.step()
            session.log(loss=loss)
        done.set()

    worker = threading.Thread(target=train)
    t0 = time.perf_counter()
    worker.start()
    while not done.is_set():
        revisions.append(dash.widget.revision)
        time.sleep(0.1)
    worker.join()
    elapsed = time.perf_counter() - t0
    assert len(set(revisions)) >= 3  # the figure changed several times during training
    assert dash.refreshes <= elapsed / 0.2 + 2  # throttled
    assert dash.kernel_seconds / elapsed < 0.02
    session.close()
    time.sleep(0.5)
    assert "closed" in dash.widget.status  # the final state was pushed


def test_failure_is_shown_and_last_state_kept():
    model = torch.nn.Linear(2, 1)
    with pytest.raises(ZeroDivisionError), vd.watch(model) as session:
        dash = session.dashboard(live=False)
        _ = dash.widget
        session.log(loss=1.0)
        _ = 1 / 0
    assert "failed: ZeroDivisionError" in dash.widget.status
    assert dash.widget.snapshot["panels"]["curves"]["data"]


def test_a_displayed_dashboard_needs_no_reference_to_stay_live():
    import gc

    _, session = small_session(steps=2)
    widget = session.dashboard(live=False, min_interval=0.0, budget=1e9).widget
    gc.collect()  # `display(session.dashboard())` keeps no reference to the view
    before = widget.revision
    session.log(loss=0.5)
    assert widget.revision > before
    session.close()
    assert "closed" in widget.status


# -- the delta protocol: what a refresh sends, and the browser's half of it in node -------
NODE = shutil.which("node")
STATE_JS = Path(dash_module.__file__).with_name("static") / "dashboard_state.js"


def _states(steps: int = 900, every: int = 150):
    """Panel states of a real session as the widget sees them, every ``every`` steps."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    session = vd.watch(model, every=3)
    session.system.stop()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    states = []
    for step in range(steps):
        opt.zero_grad()
        loss = model(torch.randn(16, 4)).pow(2).mean()
        loss.backward()
        opt.step()
        session.log(loss=float("nan") if step == 400 else loss, acc=step / steps)
        if step % every == every - 1:
            states.append(_live(dashboard_panels(session.records(), session.system.array())))
    session.close()
    return states


def test_a_refresh_sends_the_new_points_and_names_the_changed_panels():
    *_, before, after = _states(steps=600, every=30)
    enc = DeltaEncoder()
    snap, first = enc.encode(before)
    assert snap["panels"] == before and first["base"] == first["rev"] == 1
    snap, delta = enc.encode(after)
    assert snap is None and delta["base"] == 1
    assert "system" not in delta["changed"] and "curves" in delta["changed"]
    (index, patch), *_ = delta["panels"]["curves"]["traces"]
    assert index == 0 and patch["arrays"]["x"]["keep"] == 570  # the old points stay
    assert patch["arrays"]["x"]["tail"] == list(range(570, 600))
    assert patch_size(delta["panels"]) < 0.1 * state_size(after)
    assert enc.encode(after)[1]["changed"] == []  # nothing new, nothing to redraw
    assert enc.encode(after, renew=True)[0]["rev"] == 4  # the final state: a snapshot


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_browser_rebuilds_every_state_from_snapshot_and_delta():
    states = _states(steps=2600, every=60)  # crosses MAX_POINTS: the buckets widen
    enc, messages = DeltaEncoder(), []
    for panels in states:
        messages.append(enc.encode(panels))
    patched = sum(snap is None for snap, _ in messages)
    assert patched >= 10 and patched < len(messages)  # both kinds of message are checked
    script = STATE_JS.read_text() + """
    const messages = JSON.parse(require("fs").readFileSync(0, "utf8"));
    let snapshot = null;
    const out = messages.map(([snap, delta]) => {
      if (snap) snapshot = snap;
      return vdCurrentPanels(snapshot, delta);
    });
    out.push(vdCurrentPanels({rev: 1, panels: {}}, {base: 2}));  // another snapshot's delta
    console.log(JSON.stringify(out));
    """
    run = subprocess.run([NODE, "-e", script], input=json.dumps(messages), capture_output=True,
                         text=True, timeout=60, check=True)
    rebuilt = json.loads(run.stdout)
    assert rebuilt[-1] is None
    assert rebuilt[:-1] == json.loads(json.dumps(states))


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_a_findings_evidence_is_marked_in_its_panel():
    """findings.evidence_target names a layer or a metric; the browser boxes the layer's
    rows (parameters in the heatmap, the module among the health bars) or thickens the
    metric's curve. Names reach plotly escaped, and are matched escaped."""
    grads = {"data": [{"y": ["conv.weight", "conv.bias", "&lt;b&gt;.weight"]}], "layout": {}}
    health = {"data": [{"y": ["conv (Conv2d)", "&lt;b&gt; (Linear)"]}], "layout": {}}
    curves = {"data": [{"name": "loss", "line": {"width": 1}}, {"name": "val_loss", "line": {}}],
              "layout": {}}
    script = STATE_JS.read_text() + f"""
    const g = {json.dumps(grads)}, h = {json.dumps(health)}, c = {json.dumps(curves)};
    const rows = (p) => (p.layout.shapes || []).map((s) => s.y0 + 0.5);
    console.log(JSON.stringify([
      rows(vdHighlight("grads", g, {{kind: "layer", name: "conv"}})),
      rows(vdHighlight("health", h, {{kind: "layer", name: "conv"}})),
      rows(vdHighlight("grads", g, {{kind: "layer", name: "<b>.weight"}})),
      rows(vdHighlight("health", h, {{kind: "layer", name: "<b>.weight"}})),
      rows(vdHighlight("grads", g, {{kind: "layer", name: "fc"}})),
      vdHighlight("curves", c, {{kind: "metric", name: "val_loss"}}).data.map((t) => [t.line.width, t.opacity]),
      vdHighlight("curves", c, null) === c,
    ]));
    """
    run = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60,
                         check=True)
    assert json.loads(run.stdout) == [[0, 1], [0], [2], [1], [], [[1, 0.15], [4, 1]], True]


def test_legibility_zero_gradients_saturation_and_the_static_picture():
    grads = np.zeros((3, 2, 3))
    grads[:, 0, 0] = 0.5  # a.weight has gradients, b.weight exactly zero ones
    rec = TrainingRecords(grads=grads, grad_steps=np.arange(3), param_paths=["a.weight", "b.weight"],
                          scalars={"loss": (np.arange(100), np.r_[5000.0, np.linspace(2, 1, 99)])})
    panels = dashboard_panels(rec, np.empty((0, 4)))
    heat, zero = panels["grads"]["data"]
    assert heat["z"][1] == [None] * 3 and zero["z"] == [[None] * 3, [0.0] * 3]  # not a blank
    assert "exactly 0" in panels["grads"]["layout"]["title"]["text"]
    assert "no flat region" in saturation_meaning("Linear") and "0.99" in saturation_meaning("Tanh")
    twin = twin_figure(panels["curves"])
    low, high = panels["curves"]["layout"]["yaxis"]["range"]
    assert high < 3 and max(v for v in twin["data"][0]["y"] if v is not None) == high


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_an_early_spike_drags_no_tail_through_the_smoothed_curve():
    """Smoothing runs on values held within the robust range, in the kernel (the static
    twin) and in the browser (the slider) alike: the smoothed loss right after a spike of
    5,000 is near the loss, not a tail from the top of the scale."""
    y = np.r_[5000.0, np.linspace(2, 1, 199)]
    rec = TrainingRecords(scalars={"loss": (np.arange(200), y)})
    panels = _live(dashboard_panels(rec, np.empty((0, 4))))
    full = dashboard_panels(rec, np.empty((0, 4)))["curves"]
    low, high = full["layout"]["yaxis"]["range"]
    smooth = full["data"][1]
    assert smooth["meta"] == {"smooth": True} and max(smooth["y"][3:]) <= high
    script = STATE_JS.read_text() + f"""
    const view = vdCurvesView({json.dumps(panels["curves"])}, 0.6, false);
    console.log(JSON.stringify(view.data[1].y));"""
    run = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60,
                         check=True)
    assert json.loads(run.stdout) == pytest.approx(smooth["y"])
