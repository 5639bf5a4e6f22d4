"""The browser's statistics (drift.js) against scipy and the Python side, run in node."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from scipy import special, stats

from vizdebug.analysis.drift.stats import adjust_pvalues
from vizdebug.views.drift import _js_source, compare_distributions

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def run_js(expr: str) -> object:
    """Evaluate ``expr`` (which may use ``S``, the helpers) in node; returns its JSON value."""
    code = f"{_js_source()}\nvar S = vdDriftMount.stats;\nconsole.log(JSON.stringify({expr}));"
    out = subprocess.run([NODE], input=code, capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


def test_kolmogorov_and_chi2_tails_match_scipy() -> None:
    lams = [0.2, 0.5, 0.8, 1.0, 1.17, 1.19, 1.5, 2.5, 4.0]
    got = run_js(f"{lams}.map(S.kolmogorovSf)")
    assert np.allclose(got, special.kolmogorov(lams), rtol=1e-9, atol=1e-15)
    cases = [(1, 0.5), (1, 3.84), (4, 2.0), (4, 9.49), (10, 30.0), (29, 10.0), (29, 80.0)]
    got = run_js("[" + ",".join(f"S.gammaQ({k / 2}, {x / 2})" for k, x in cases) + "]")
    assert np.allclose(got, [stats.chi2.sf(x, k) for k, x in cases], rtol=1e-9)


def test_corrections_match_python() -> None:
    p = [0.001, 0.04, 0.03, float("nan"), 0.5, 0.0101]
    for method in ("holm", "bonferroni", "bh", "none"):
        got = run_js(f"S.adjust({json.dumps([x if x == x else None for x in p])}.map(v => v === null ? NaN : v), '{method}')")
        want = adjust_pvalues(np.array(p), method)
        assert np.allclose(np.array(got, dtype=float), want, equal_nan=True), method


def test_binned_window_statistics_approximate_the_exact_ones() -> None:
    rng = np.random.default_rng(0)
    view = compare_distributions({"x": rng.normal(size=20_000), "c": rng.choice(list("abc"), 20_000)},
                                 {"x": rng.normal(0.2, 1, 20_000), "c": rng.choice(list("abcd"), 20_000)})
    num = next(r for r in view.results if r.feature == "x")
    cat = next(r for r in view.results if r.feature == "c")
    sk = num.sketch
    got = run_js(f"S.ksBinned({sk['ref_hist']}, {sk['cur_hist']}, {(sk['hi'] - sk['lo']) / 120}, {sk['ref_std']})")
    assert abs(got["statistic"] - num.statistic) < 0.01  # 120 bins over +-3.3 sigma
    assert got["effect"] == pytest.approx(num.effect_size, abs=0.02)
    c = cat.sketch
    got = run_js(f"S.chi2Counts({c['ref_counts']}, {c['cur_counts']})")
    assert got["statistic"] == pytest.approx(cat.statistic, rel=1e-9)
    assert got["effect"] == pytest.approx(cat.effect_size, rel=1e-9)


def test_what_if_shift_is_detected_like_the_real_test() -> None:
    rng = np.random.default_rng(1)
    ref = rng.normal(size=5000)
    view = compare_distributions({"x": ref}, {"x": rng.normal(size=5000)})
    f = json.dumps(view.data()["features"][0])
    got = run_js(f"[0, 0.07, 0.15, 0.3].map(d => S.whatIf({f}, d, 1, 1))")
    shifted = [compare_distributions({"x": ref}, {"x": ref + d * ref.std()}).results[0] for d in (0, 0.07, 0.15, 0.3)]
    for g, real in zip(got, shifted):
        assert g["statistic"] == pytest.approx(real.statistic, abs=0.01)
        assert g["effect"] == pytest.approx(real.effect_size, abs=0.01)
        assert (g["p_adj"] < 0.05 and g["effect"] >= 0.1) == real.drifted


DOM_STUB = """
function El(tag) { this.tag = tag; this.children = []; this.attrs = {}; this.style = {}; this.listeners = {}; this.textContent = ""; }
El.prototype.setAttribute = function (k, v) { this.attrs[k] = String(v); };
El.prototype.getAttribute = function (k) { return this.attrs[k]; };
El.prototype.appendChild = function (c) { this.children.push(c); return c; };
El.prototype.removeChild = function (c) { this.children.splice(this.children.indexOf(c), 1); return c; };
Object.defineProperty(El.prototype, "firstChild", { get: function () { return this.children[0] || null; } });
El.prototype.addEventListener = function (name, fn) { this.listeners[name] = fn; };
function all(el, tag) { var out = el.tag === tag ? [el] : []; el.children.forEach(function (c) { out = out.concat(all(c, tag)); }); return out; }
var document = { createElement: function (t) { return new El(t); }, createElementNS: function (ns, t) { return new El(t); } };
"""


def test_the_joined_scripts_mount_and_redraw_on_a_slider() -> None:
    """The app in a stub DOM, its charts recorded: it hands each chart a spec (the uPlot
    chart that draws it is driven in a real browser, tests/browser/test_drift_browser.py)."""
    rng = np.random.default_rng(2)
    n = 2000
    view = compare_distributions({"x": rng.normal(size=n), "c": rng.choice(list("ab"), n)},
                                 {"x": rng.normal(1, 1, n), "c": rng.choice(list("abc"), n), "t": np.arange(n)},
                                 time="t", time_buckets=4)
    code = (f"{DOM_STUB}\n{_js_source()}\n"
            "vdLineChart = function (div) { return { draw: function (spec) { div.spec = spec; } }; };\n"
            "var el = new El('div');\n"
            f"vdDriftMount(el, {json.dumps(view.data())}, null);\n"
            "var divs = all(el, 'div'), plot = divs.filter(function (d) { return d.attrs['class'] === 'vd-plot'; })[0];\n"
            "var strip = divs.filter(function (d) { return d.attrs['class'] === 'vd-timeline'; })[0];\n"
            "var before = plot.spec.data.map(function (t) { return t.y.length; }), win = all(el, 'input').filter(function (i) { return i.attrs['data-control'] === 'win1'; })[0];\n"
            "var heights = JSON.stringify(plot.spec.data[1].y);\n"
            "win.value = 0; win.listeners.input();\n"
            "console.log(JSON.stringify({selected: el.attrs['data-selected'], bars: before, "
            "changed: heights !== JSON.stringify(plot.spec.data[1].y), window: strip.spec.layout.shapes[0].x1, "
            "edges: " + json.dumps(view.data()["time"]["edges"]) + ", strip: strip.spec.data[0].y.length, "
            "summary: divs.filter(function (d) { return d.attrs['class'] === 'vd-summary'; })[0].textContent}));")
    out = json.loads(subprocess.run([NODE], input=code, capture_output=True, text=True, timeout=60, check=True).stdout)
    assert out["selected"] == view.results[0].feature == "x"
    assert out["bars"] == [30, 30]  # 30 bins, reference and current
    assert out["changed"] and out["strip"] == 4  # the window's counts; an effect per bucket
    assert out["window"] == out["edges"][1]  # the strip's window: the first bucket only
    assert "window" in out["summary"] and "features drifted" in out["summary"]


def test_the_widget_esm_is_one_valid_module(tmp_path) -> None:
    from vizdebug.views.drift import _widget_class

    path = tmp_path / "drift.mjs"
    path.write_text(_widget_class()._esm)
    code = f"import('{path.as_uri()}').then(m => console.log(typeof m.default.render))"
    out = subprocess.run([NODE, "--input-type=module", "-e", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "function"


def test_psi_follows_the_time_window_like_the_exact_one() -> None:
    """PSI is recomputed for a time window (as the statistic and the effect are), close to
    the exact PSI of the rows in that window; the whole range matches the Python PSI."""
    rng = np.random.default_rng(3)
    n = 8000
    ref = {"x": rng.normal(size=n), "c": rng.choice(list("abc"), n)}
    late = np.arange(n) >= n // 2  # only the second half of the current data drifts
    cur = {"x": rng.normal(size=n) + 0.8 * late, "t": np.arange(n),
           "c": np.where(late, rng.choice(list("abcc"), n), rng.choice(list("abc"), n))}
    view = compare_distributions(ref, cur, time="t", time_buckets=4)
    feats = {f["feature"]: f for f in view.data()["features"]}
    got = run_js(f"[0, 3].map(i => [S.featureStats({json.dumps(feats['x'])}, i, i).psi, "
                 f"S.featureStats({json.dumps(feats['c'])}, i, i).psi])")
    for (x_psi, c_psi), part in zip(got, (np.arange(n) < n // 4, np.arange(n) >= 3 * n // 4)):
        exact = compare_distributions(ref, {k: v[part] for k, v in cur.items() if k != "t"})
        want = {r.feature: r.psi for r in exact.results}
        assert x_psi == pytest.approx(want["x"], rel=0.25, abs=0.01)
        assert c_psi == pytest.approx(want["c"], rel=0.05, abs=1e-3)
    assert got[0][0] < 0.05 < 0.3 < got[1][0]  # the window, not the whole data, decides
    x = view.results[[r.feature for r in view.results].index("x")]
    whole = run_js(f"S.psiBinned({x.sketch['ref_hist']}, {x.sketch['cur_hist']})")
    assert whole == pytest.approx(x.psi, rel=0.15)


def test_tiny_p_values_read_as_a_bound_not_zero() -> None:
    from vizdebug.views.drift import _js_source

    code = f"{_js_source()}\nconsole.log(JSON.stringify([0, 3e-45, 0.0123].map(vdDriftPlots.fmtP)));"
    out = subprocess.run([NODE], input=code, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == ["< 1e-300", "3.00e-45", "0.0123"]
    rng = np.random.default_rng(4)
    view = compare_distributions({"x": rng.normal(size=50_000)}, {"x": rng.normal(3, 1, 50_000)})
    assert view.results[0].p_value == 0.0  # underflows in double precision
    assert "p < 1e-300" in view.findings[0].message
    assert "<td>&lt; 1e-300</td>" in view._table_html()
