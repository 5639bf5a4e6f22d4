"""The drift explorer's overlays and the embedding timeline's quality curve are chart specs
(views/chart_spec.py): they validate against the schema, the static renderer draws them
(views/_figure_svg.py), and the browser's builders (drift_plots.js, embedding_timeline.js)
make the same spec from the same numbers (run in node)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

import vizdebug as vd
from vizdebug.views import chart_spec
from vizdebug.views._drift_figure import overlay_figure, overlay_spec
from vizdebug.views._embedding_curve import curve_spec
from vizdebug.views._figure_svg import figure_svg

VALIDATOR = jsonschema.Draft202012Validator(chart_spec.schema())
EVIL = "<img src=x onerror=alert(1)>"
VIEWS = Path(vd.__file__).parent / "views"


def _view() -> vd.views.drift.DriftView:
    rng = np.random.default_rng(0)
    n = 3000
    ref = pd.DataFrame({"temp": rng.normal(20, 2, n), "site": rng.choice(["a", "b", EVIL], n)})
    cur = pd.DataFrame({"temp": rng.normal(21, 2, n), "site": rng.choice(["a", "b", EVIL, "d"], n),
                        "ts": pd.date_range("2025-01-01", periods=n, freq="min")})
    return vd.compare_distributions(ref, cur, time="ts", progress=False)


def _errors(spec: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
            for e in VALIDATOR.iter_errors(spec)]


def test_the_overlays_and_the_curve_are_specs_the_static_renderer_draws():
    view = _view()
    sketches = {r.feature: (r.kind, r.sketch) for r in view.results}
    specs = {name: overlay_spec(kind, sketch) for name, (kind, sketch) in sketches.items()}
    specs |= {f"{name} 60 bins": overlay_spec(kind, sketch, 60)
              for name, (kind, sketch) in sketches.items() if kind == "numeric"}
    specs["curve"] = curve_spec({"kNN accuracy": [0.4, None, 0.9], EVIL: [0.5, 0.6]}, [0, 10, 30], 2)
    assert {n: _errors(s) for n, s in specs.items() if _errors(s)} == {}
    numeric = specs["temp"]["data"]
    assert [t["name"] for t in numeric] == ["reference", "current"]
    assert len(numeric[0]["x"]) == 30 and abs(sum(numeric[0]["y"]) - 1) < 1e-9
    assert len(specs["temp 60 bins"]["data"][1]["y"]) == 60
    site = specs["site"]
    assert site["layout"]["barmode"] == "group" and "(new)" in " ".join(site["layout"]["xaxis"]["ticktext"])
    for name, spec in specs.items():
        svg = figure_svg(spec, width=560)
        assert "<img" not in svg, name  # user strings escaped
    drawn = figure_svg(specs["temp"], width=560)
    assert drawn.count("<rect") >= 2 * 30 - 4  # a bar per bin and side (empty ones may be 0 high)
    curve = figure_svg(specs["curve"], width=320)
    assert "polyline" in curve and "#d62728" in curve  # the lines and the current frame's mark


def test_the_static_twin_draws_the_overlays_from_their_specs():
    page = _view()._static_html()
    assert page.count('class="vd-static-overlay"') == 2  # two features, both sketched
    assert page.count("vd-figure-svg") == 2 and EVIL not in page


def test_bad_bins_are_refused_with_what_would_work():
    view = _view()
    with pytest.raises(ValueError, match="divide 120, got 7"):
        overlay_spec("numeric", view.results[0].sketch, 7)
    assert overlay_figure("x", "numeric", {}, "") == ""


def test_a_date_feature_gets_named_ticks():
    rng = np.random.default_rng(1)
    t0 = pd.Timestamp("2025-01-01")
    ref = pd.DataFrame({"when": t0 + pd.to_timedelta(rng.uniform(0, 10, 500), unit="D")})
    cur = pd.DataFrame({"when": t0 + pd.to_timedelta(rng.uniform(3, 13, 500), unit="D")})
    r = vd.compare_distributions(ref, cur, progress=False).results[0]
    spec = overlay_spec(r.kind, r.sketch)
    assert _errors(spec) == []
    assert re.fullmatch(r"2025-01-\d\d", spec["layout"]["xaxis"]["ticktext"][0])
    assert len(spec["layout"]["xaxis"]["tickvals"]) == 4


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_browser_builds_the_same_overlay_spec_as_python():
    view = _view()
    features = view.data()["features"]
    js = "\n".join((VIEWS / name).read_text(encoding="utf-8")
                   for name in ("static/chart_ticks.js", "drift_stats.js", "drift_plots.js"))
    script = js + f"""
const feats = {json.dumps(features)};
const st = {{bins: 30, mode: "hist", windowed: false, win: [0, 0], shift: 0, scale: 1}};
const out = feats.map((f) => vdDriftPlots.overlaySpec(f, st,
  f.kind === "numeric" || f.kind === "datetime" ? f.sketch.cur_hist : f.sketch.cur_counts, null));
console.log(JSON.stringify(out));
"""
    done = subprocess.run(["node"], input=script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    browser = json.loads(done.stdout)
    for f, spec in zip(view.results, browser):
        mine = overlay_spec(f.kind, f.sketch)
        assert _errors(spec) == [], f.feature
        assert [t["name"] for t in spec["data"]] == [t["name"] for t in mine["data"]]
        for a, b in zip(spec["data"], mine["data"]):
            assert np.allclose(a["x"], b["x"]) and np.allclose(a["y"], b["y"]), f.feature
            assert a.get("width") == pytest.approx(b.get("width")) if "width" in b else True
        assert spec["layout"]["barmode"] == mine["layout"]["barmode"]
        assert np.allclose(spec["layout"]["yaxis"]["range"], mine["layout"]["yaxis"]["range"])
        assert spec["layout"]["xaxis"].get("ticktext") == mine["layout"]["xaxis"].get("ticktext")


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_browser_builds_the_same_curve_spec_as_python():
    curve = {"kNN accuracy": [0.4, None, 0.9], "trustworthiness": [0.7, 0.8]}
    steps = [0, 10, 30]
    timeline = (VIEWS / "static" / "embedding_timeline.js").read_text(encoding="utf-8")
    script = "\n".join([(VIEWS / "static" / "chart_core.js").read_text(encoding="utf-8"),
                        timeline.replace("export default { render: vdtRender };", ""),
                        f"console.log(JSON.stringify([0, 2].map((f) => vdtCurveSpec("
                        f"{json.dumps(curve)}, {steps}, f))));"])
    done = subprocess.run(["node"], input=script, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for frame, spec in zip((0, 2), json.loads(done.stdout)):
        assert spec == curve_spec(curve, steps, frame)
        assert _errors(spec) == []


def test_the_timeline_curve_round_trips_through_figure_and_to_frame():
    pytest.importorskip("plotly")
    from vizdebug.records import EmbeddingFrame

    rng = np.random.default_rng(0)
    labels = np.arange(90) % 3
    x = rng.normal(size=(90, 6)).astype(np.float32)
    frames = [EmbeddingFrame("fc", 50 * s, s, x + labels[:, None] * s) for s in range(3)]
    view = vd.show_embedding_frames(frames, labels=labels, method="pca").wait()
    frame = view.to_frame()
    assert frame["step"].tolist() == [0, 50, 100] and frame["knn"].iloc[-1] > 0.9
    fig = view.figure()
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [t.name for t in lines] == ["kNN accuracy", "trustworthiness"]
    assert list(lines[0].x) == [0, 50, 100]
    assert np.allclose(lines[0].y, frame["knn"].round(4)) and np.allclose(lines[1].y, frame["trust"].round(4))
    assert fig.layout.shapes[0].x0 == 100  # the last frame marked
