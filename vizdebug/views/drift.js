// vizdebug drift explorer, part 3 of 3: the app (table, controls, redraw). It draws from
// precomputed sketches, in the browser, with the dashboard's uPlot charts (vdLineChart):
// no kernel round trip, so every slider answers from the sketches alone. Needs
// vdDriftStats, vdDriftPlots and the charts (static/chart_*.js, uPlot, VD_UPLOT_CSS).
// User strings only ever reach the page through textContent (never innerHTML).
var vdDriftMount = (function (S, P) {
  "use strict";
  var h = P.h, fmt = P.fmt, fmtP = P.fmtP, fmtX = P.fmtX;
  var adjust = S.adjust, featureStats = S.featureStats, whatIf = S.whatIf;
  var overlaySpec = P.overlaySpec, noteSpec = P.noteSpec, timelineSpec = P.timelineSpec;

  var BINS = [4, 5, 6, 8, 10, 12, 15, 20, 24, 30, 40, 60, 120];
  var ALPHAS = [0.0001, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2];

  // the page: summary line, controls, table beside the selected feature's plots
  function layout(el, nb) {
    while (el.firstChild) el.removeChild(el.firstChild);
    var ui = {}, root = h("div", { "class": "vd-drift" }); el.appendChild(root);
    root.appendChild(h("style", {}, VD_UPLOT_CSS));  // uPlot's own, in the view (a shadow root has its own styles)
    ui.summary = root.appendChild(h("div", { "class": "vd-summary", style: "font-weight:600;margin:4px 0" }));
    ui.controls = root.appendChild(h("div", { "class": "vd-controls", style: "display:flex;flex-wrap:wrap;gap:6px 18px;margin:4px 0 8px 0;font-size:12px" }));
    var body = root.appendChild(h("div", { style: "display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap" }));
    ui.tableBox = body.appendChild(h("div", { style: "max-height:420px;overflow:auto;flex:1 1 470px;font-size:11px" }));
    var plotBox = body.appendChild(h("div", { style: "flex:1 1 520px;max-width:640px" }));
    ui.title = plotBox.appendChild(h("div", { "class": "vd-plot-title", style: "font-weight:600" }));
    ui.plot = plotBox.appendChild(h("div", { "class": "vd-plot", role: "img" }));
    ui.tplot = nb ? plotBox.appendChild(h("div", { "class": "vd-timeline", style: "margin-top:4px" })) : null;
    ui.chart = vdLineChart(ui.plot, { exportable: false });
    ui.tchart = nb ? vdLineChart(ui.tplot, { exportable: false }) : null;
    ui.info = plotBox.appendChild(h("div", { "class": "vd-whatif vd-note", style: "font-size:12px;color:var(--jp-ui-font-color1,#333);margin-top:4px" }));
    return ui;
  }

  function slider(app, name, label, range, value, show) {
    var box = h("label", { style: "display:flex;align-items:center;gap:4px" }), out = h("span", { style: "min-width:3.5em" });
    var inp = h("input", { type: "range", min: range[0], max: range[1], step: range[2], "data-control": name }); inp.value = value;
    box.appendChild(h("span", {}, label)); box.appendChild(inp); box.appendChild(out); app.ui.controls.appendChild(box);
    var upd = function () { out.textContent = show(Number(inp.value)); }; upd();
    inp.addEventListener("input", function () { upd(); onControl(app, name, Number(inp.value)); });
    return inp;
  }

  function buildControls(app) {
    var st = app.st, tm = app.data.time, alphas = app.alphas;
    slider(app, "bins", "bins", [0, BINS.length - 1, 1], BINS.indexOf(30), function (v) { return BINS[v]; });
    slider(app, "alpha", "α", [0, alphas.length - 1, 1], alphas.indexOf(st.alpha), function (v) { return fmt(alphas[v], 2); });
    slider(app, "thr", "effect ≥", [0.01, 0.5, 0.01], st.thr, function (v) { return fmt(v, 2); });
    slider(app, "shift", "what-if shift (σ)", [-2, 2, 0.01], 0, function (v) { return (v > 0 ? "+" : "") + v.toFixed(2); });
    slider(app, "scale", "what-if scale ×", [0.5, 2, 0.01], 1, function (v) { return v.toFixed(2); });
    var modeSel = h("select", { "data-control": "mode" });
    [["hist", "histogram"], ["density", "density"], ["ecdf", "ECDF"]].forEach(function (o) { modeSel.appendChild(h("option", { value: o[0] }, o[1])); });
    modeSel.addEventListener("change", function () { st.mode = modeSel.value; redraw(app); });
    app.ui.controls.appendChild(modeSel);
    if (!app.nb) return;
    app.winInputs = [
      slider(app, "win0", "window from", [0, app.nb - 1, 1], 0, function (v) { return fmtX(tm.edges[v], tm.is_datetime); }),
      slider(app, "win1", "to", [0, app.nb - 1, 1], app.nb - 1, function (v) { return fmtX(tm.edges[v + 1], tm.is_datetime); })
    ];
  }

  function sync(app, name, value) { if (app.model) { app.model.set(name, value); app.model.save_changes(); } }

  function onControl(app, name, v) {
    var st = app.st;
    if (name === "bins") { st.bins = BINS[v]; sync(app, "bins", st.bins); }
    if (name === "alpha") { st.alpha = app.alphas[v]; sync(app, "alpha", st.alpha); }
    if (name === "thr") { st.thr = v; sync(app, "effect_threshold", v); }
    if (name === "shift") { st.shift = v; sync(app, "shift", v); }
    if (name === "scale") { st.scale = v; sync(app, "scale", v); }
    if (name === "win0" || name === "win1") {
      st.win = name === "win0" ? [v, Math.max(v, st.win[1])] : [Math.min(v, st.win[0]), v];
      app.winInputs[0].value = st.win[0]; app.winInputs[1].value = st.win[1];
      sync(app, "window", st.win);
    }
    redraw(app);
  }

  // every feature's statistics for the current window and decision settings
  function rows(app) {
    var st = app.st;
    st.windowed = app.nb > 0 && (st.win[0] > 0 || st.win[1] < app.nb - 1);
    var res = app.data.features.map(function (f) {
      if (!st.windowed) return { f: f, statistic: f.statistic, p: f.p_value, effect: f.effect_size, psi: f.psi, n: f.n_cur, cur: f.kind === "numeric" || f.kind === "datetime" ? f.sketch.cur_hist : (f.sketch.cur_counts || null) };
      var r = featureStats(f, st.win[0], st.win[1]); r.f = f; return r;
    });
    // unwindowed, the kernel's correction over every column is exact; a window re-tests
    // the drawn columns and corrects over all of them
    var adj = st.windowed ? adjust(res.map(function (r) { return r.p; }), app.data.correction, app.data.tested)
      : app.data.features.map(function (f) { return f.p_adjusted === null ? NaN : f.p_adjusted; });
    res.forEach(function (r, i) { r.p_adj = adj[i]; r.drifted = r.p_adj < st.alpha && r.effect >= st.thr; });
    return res;
  }

  function summaryText(app, res) {
    var st = app.st, tm = app.data.time, nd = res.filter(function (r) { return r.drifted; }).length;
    var more = (app.data.total || res.length) - res.length;
    return nd + (more > 0 ? " of the " + res.length + " drawn (of " + app.data.total + ")" : " of " + res.length) + " features drifted · α = " + fmt(st.alpha, 2) + " (" + app.data.correction + ") and effect ≥ " + fmt(st.thr, 2) +
      (st.windowed ? " · window " + fmtX(tm.edges[st.win[0]], tm.is_datetime) + " – " + fmtX(tm.edges[st.win[1] + 1], tm.is_datetime) + " (≈ from binned sketches)" : "");
  }

  function redraw(app) {
    var t = performance.now(), st = app.st, ui = app.ui, res = rows(app);
    ui.summary.textContent = summaryText(app, res);
    drawTable(app, res);
    var r = res[st.sel], f = r.f, wi = null, numeric = f.kind === "numeric" || f.kind === "datetime";
    ui.title.textContent = f.feature + " — " + f.kind + ", " + f.test + " " + fmt(r.statistic) + ", p(adj) " + fmtP(r.p_adj) + ", " + f.effect_metric + " " + fmt(r.effect) + (r.drifted ? " · DRIFTED" : "");
    if (f.test === "none") ui.chart.draw(noteSpec(f.note || "no values to compare"));
    else {
      if (numeric && (st.shift !== 0 || st.scale !== 1)) wi = whatIf(f, st.shift, st.scale, res.length);
      ui.chart.draw(overlaySpec(f, st, r.cur, wi));
    }
    if (ui.tchart) ui.tchart.draw(f.test === "none" ? noteSpec("") : timelineSpec(f, app.data, st));
    ui.info.textContent = whatIfText(app, f, wi, numeric);
    app.el.setAttribute("data-redraw-ms", (performance.now() - t).toFixed(1));
    app.el.setAttribute("data-selected", f.feature);
  }

  function whatIfText(app, f, wi, numeric) {
    var st = app.st;
    if (!numeric || f.test === "none") return "What-if shifts apply to numeric features.";
    var min = minimalShift(app, f, st.scale, app.data.features.length);
    var floor = "Smallest shift of the reference that would be flagged at these sample sizes (n = " + f.n_ref + " vs " + f.n_cur + "): " + (min === null ? "none up to 3σ" : "±" + min.toFixed(2) + "σ") + ".";
    if (!wi) return floor + " Move the what-if sliders to see a hypothetical change.";
    return "What-if: the reference shifted " + (st.shift >= 0 ? "+" : "") + st.shift.toFixed(2) + "σ and scaled ×" + st.scale.toFixed(2) + " → KS D ≈ " + fmt(wi.statistic) + ", p ≈ " + fmtP(wi.p) + " (Bonferroni-adjusted " + fmtP(wi.p_adj) + "), normed Wasserstein ≈ " + fmt(wi.effect) + ": " + (wi.p_adj < st.alpha && wi.effect >= st.thr ? "WOULD be flagged" : "would NOT be flagged") + ". " + floor;
  }

  function minimalShift(app, f, scale, m) { // coarse 0.05-sigma steps, then 0.01 within the step
    var st = app.st, key = [f.feature, scale, st.alpha, st.thr].join("|");
    if (key in app.shiftCache) return app.shiftCache[key];
    var hit = function (d) { var w = whatIf(f, d, scale, m); return w.p_adj < st.alpha && w.effect >= st.thr; };
    var found = null;
    for (var d = 0; d <= 3.0001 && found === null; d += 0.05) if (hit(d)) found = d;
    if (found !== null) for (var e = Math.max(0, found - 0.04); e <= found; e += 0.01) if (hit(e)) { found = e; break; }
    app.shiftCache[key] = found;
    return found;
  }

  function drawTable(app, res) {
    var st = app.st, box = app.ui.tableBox;
    while (box.firstChild) box.removeChild(box.firstChild);
    var tb = h("table", { "class": "vd-table vd-drift-table" }), head = h("tr");
    ["feature", "kind", "test", "stat", "p (adj)", "effect", "PSI", "missing", "drifted"].forEach(function (c) { head.appendChild(h("th", {}, c)); });
    tb.appendChild(head);
    res.forEach(function (r, i) {
      // a drifted row: a translucent orange over whatever the theme paints, the theme's text colour on it
      var f = r.f, tr = h("tr", { "data-feature-index": i, "class": r.drifted ? "vd-drifted" : "", style: "cursor:pointer;" + (i === st.sel ? "outline:2px solid #1565c0;" : "") + (r.drifted ? "background:rgba(255,152,0,0.2)" : "") });
      [f.feature, f.kind, f.test, fmt(r.statistic), fmtP(r.p_adj), fmt(r.effect), fmt(r.psi), fmt(100 * f.missing_ref, 2) + "→" + fmt(100 * f.missing_cur, 2) + "%", r.drifted ? "yes" : "no"]
        .forEach(function (c) { tr.appendChild(h("td", {}, c)); });
      tr.addEventListener("click", function () { st.sel = i; sync(app, "selected", f.feature); redraw(app); });
      tb.appendChild(tr);
    });
    box.appendChild(tb);
    if (app.data.more_note) box.appendChild(h("div", { "class": "vd-note", style: "margin-top:4px" }, app.data.more_note));
  }

  function mount(el, data, model) {
    var nb = data.time ? data.time.edges.length - 1 : 0, alphas = ALPHAS.slice();
    if (alphas.indexOf(data.alpha) < 0) { alphas.push(data.alpha); alphas.sort(function (a, b) { return a - b; }); }
    var app = {
      el: el, data: data, model: model, nb: nb, alphas: alphas, shiftCache: {}, winInputs: null, ui: layout(el, nb),
      st: { sel: 0, alpha: data.alpha, thr: data.effect_threshold, bins: 30, mode: "hist", win: [0, Math.max(nb - 1, 0)], shift: 0, scale: 1, windowed: false }
    };
    buildControls(app);
    if (model) model.on("change:selected", function () {
      var name = model.get("selected"), i = data.features.findIndex(function (f) { return f.feature === name; });
      if (i >= 0 && i !== app.st.sel) { app.st.sel = i; redraw(app); }
    });
    redraw(app);
  }
  // the statistics helpers, for tests (tests/test_drift_js.py runs them in node)
  mount.stats = S;
  return mount;
})(vdDriftStats, vdDriftPlots);
