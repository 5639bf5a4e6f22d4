// vizdebug drift explorer, part 2 of 3: the charts (overlays of one feature and the
// drift-over-time strip) as chart specs (views/chart_spec.py) built from the sketches, and
// drawn by the dashboard's uPlot chart (vdLineChart, static/chart_uplot*.js): the same
// spec views/_drift_figure.py builds for the static twin (tests/test_drift_figure.py holds
// the two to one spec). A slider's redraw is a new spec handed to the kept chart (setData).
// Needs vdDriftStats (drift_stats.js). User strings reach the spec escaped (vdEsc) and the
// page as text (never innerHTML).
var vdDriftPlots = (function (S) {
  "use strict";
  var sum = S.sum, cdfAt = S.cdfAt, featureStats = S.featureStats;
  var REF = "#1f77b4", CUR = "#ff7f0e", WHATIF = "#2ca02c", FINE = 120;

  function h(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fmt(x, d) {
    if (x === null || x === undefined || isNaN(x)) return "–";
    if (!isFinite(x)) return x > 0 ? "∞" : "-∞";
    var a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(d === undefined ? 1 : d);
    return String(Number(x.toPrecision(d === undefined ? 3 : d + 1)));
  }
  // a p-value: below what a double holds it is 0, shown as the bound it is under
  function fmtP(p) { return p < 1e-300 ? "< 1e-300" : fmt(p, 2); }  // format_p's rule
  function fmtX(x, isDate, dayOnly) {
    if (!isDate) return fmt(x, 3);
    var iso = new Date(x).toISOString();
    return dayOnly ? iso.slice(0, 10) : iso.slice(0, 16).replace("T", " ");
  }
  function esc(text) {  // as Python's html.escape: the spec's text is escaped
    return String(text).replace(/[&<>"']/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" }[c];
    });
  }
  function maxOf(lists) {
    var m = 1e-12;
    lists.forEach(function (l) { l.forEach(function (v) { if (v > m) m = v; }); });
    return m;
  }
  function shares(counts) { var n = sum(counts) || 1; return counts.map(function (c) { return c / n; }); }

  // the layout every overlay shares (views/_drift_figure.py's _layout)
  function layout(xRange, ymax, yTitle) {
    return { height: 300, margin: { l: 50, r: 14, t: 30, b: 30 }, showlegend: true, legend: { orientation: "h" },
      xaxis: { range: xRange }, yaxis: { range: [0, ymax], title: { text: yTitle } } };
  }
  function dateTicks(axis, lo, hi) {  // even steps, named as dates
    var ticks = [0, 1, 2, 3].map(function (i) { return lo + (hi - lo) * i / 4; });  // the last label would overrun the edge
    axis.tickvals = ticks;
    axis.ticktext = ticks.map(function (v) { return fmtX(v, true, hi - lo > 2 * 86400000); });
  }
  function bar(name, x, y, colour, opacity, text) {
    return { type: "bar", orientation: "v", name: name, x: x, y: y, marker: { color: colour }, opacity: opacity, text: text };
  }
  function line(name, x, y, colour, dashed) {
    return { type: "scatter", mode: "lines", name: name, x: x, y: y,
      line: { color: colour, width: 2, dash: dashed ? "dash" : "solid" } };
  }

  // the 120 fine bins summed into st.bins bars per side, and the what-if shares per bar
  function coarseBins(sk, st, cur, wi) {
    var k = FINE / st.bins, rb = [], cb = [], wb = null;
    for (var i = 0; i < st.bins; i++) {
      var a = 0, b = 0; for (var j = i * k; j < (i + 1) * k; j++) { a += sk.ref_hist[j]; b += cur[j]; }
      rb.push(a); cb.push(b);
    }
    if (wi) {
      wb = []; for (i = 0; i < st.bins; i++) {
        var e0 = sk.lo + (sk.hi - sk.lo) * i / st.bins, e1 = sk.lo + (sk.hi - sk.lo) * (i + 1) / st.bins;
        wb.push(cdfAt(wi.q, e1) - cdfAt(wi.q, e0));
      }
    }
    return { rb: shares(rb), cb: shares(cb), wb: wb };
  }
  function histSpec(sk, st, cur, wi, isDate) {
    var c = coarseBins(sk, st, cur, wi), width = (sk.hi - sk.lo) / st.bins, x = [], text = [];
    var label = function (v) { return fmtX(v, isDate, sk.hi - sk.lo > 2 * 86400000); };
    for (var i = 0; i < st.bins; i++) {
      x.push(sk.lo + width * (i + 0.5));
      text.push("[" + label(sk.lo + width * i) + ", " + label(sk.lo + width * (i + 1)) + "): reference " +
        fmt(100 * c.rb[i], 2) + "%, current " + fmt(100 * c.cb[i], 2) + "%" + (c.wb ? ", what-if " + fmt(100 * c.wb[i], 2) + "%" : ""));
    }
    var data = [bar("reference", x, c.rb, REF, 0.45, text), bar("current", x, c.cb, CUR, 0.45, text)];
    data.forEach(function (t) { t.width = width; });
    if (c.wb) data.push(line("what-if", x, c.wb, WHATIF, true));
    var spec = { data: data, layout: layout([sk.lo, sk.hi], maxOf([c.rb, c.cb].concat(c.wb ? [c.wb] : [])) * 1.08, "share of rows per bin") };
    spec.layout.barmode = "overlay";
    if (isDate) dateTicks(spec.layout.xaxis, sk.lo, sk.hi);
    return spec;
  }

  // a kernel density from the 120 fine bins; the bins slider sets the bandwidth
  function smooth(counts, sigma) {
    var n = sum(counts) || 1, out = [], r = Math.ceil(3 * sigma);
    for (var i = 0; i < counts.length; i++) {
      var t = 0, wsum = 0;
      for (var j = Math.max(0, i - r); j <= Math.min(counts.length - 1, i + r); j++) {
        var w = Math.exp(-0.5 * (i - j) * (i - j) / (sigma * sigma)); t += w * counts[j]; wsum += w;
      }
      out.push(t / wsum / n);
    }
    return out;
  }
  function densitySpec(sk, st, cur, wi, isDate) {
    var sigma = Math.max(0.5, 60 / st.bins), x = [];
    for (var i = 0; i < FINE; i++) x.push(sk.lo + (sk.hi - sk.lo) * (i + 0.5) / FINE);
    var data = [line("reference", x, smooth(sk.ref_hist, sigma), REF), line("current", x, smooth(cur, sigma), CUR)];
    if (wi) {
      var fine = x.map(function (_, i) { return 1e6 * (cdfAt(wi.q, sk.lo + (sk.hi - sk.lo) * (i + 1) / FINE) - cdfAt(wi.q, sk.lo + (sk.hi - sk.lo) * i / FINE)); });
      data.push(line("what-if", x, smooth(fine, sigma), WHATIF, true));
    }
    var spec = { data: data, layout: layout([sk.lo, sk.hi], maxOf(data.map(function (t) { return t.y; })) * 1.08, "density (share per 1/120 of the range)") };
    if (isDate) dateTicks(spec.layout.xaxis, sk.lo, sk.hi);
    return spec;
  }
  function ecdfSpec(sk, st, cur, wi, isDate) {
    var clamp = function (v) { return Math.min(Math.max(v, sk.lo), sk.hi); };
    var quantiles = function (name, q, colour, dashed) {
      return line(name, q.map(clamp), q.map(function (_, i) { return i / (q.length - 1); }), colour, dashed);
    };
    var data = [quantiles("reference", sk.ref_q, REF)];
    if (!st.windowed) data.push(quantiles("current", sk.cur_q, CUR));
    else {  // the window's ECDF from its binned counts, at the bin edges
      var n = sum(cur) || 1, acc = 0, xs = [sk.lo], ys = [0];
      cur.forEach(function (c, i) { acc += c; xs.push(sk.lo + (sk.hi - sk.lo) * (i + 1) / FINE); ys.push(acc / n); });
      data.push(line("current", xs, ys, CUR));
    }
    if (wi) data.push(quantiles("what-if", wi.q, WHATIF, true));
    var spec = { data: data, layout: layout([sk.lo, sk.hi], 1.02, "ECDF") };
    if (isDate) dateTicks(spec.layout.xaxis, sk.lo, sk.hi);
    return spec;
  }

  function categoricalSpec(sk, cur) {
    var names = sk.categories.map(String), unseen = sk.unseen || names.map(function () { return false; });
    var rs = shares(sk.ref_counts), cs = shares(cur), x = names.map(function (_, i) { return i; });
    var text = names.map(function (n, i) {
      return esc(n) + ": reference " + fmt(100 * rs[i], 2) + "%, current " + fmt(100 * cs[i], 2) + "%" + (unseen[i] ? " (new)" : "");
    });
    var spec = { data: [bar("reference", x, rs, REF, 0.75, text), bar("current", x, cs, CUR, 0.75, text)],
      layout: layout([-0.5, names.length - 0.5], maxOf([rs, cs]) * 1.08, "share of rows") };
    spec.layout.barmode = "group";
    var step = Math.max(1, Math.ceil(names.length / 12)), shown = x.filter(function (i) { return i % step === 0; });
    spec.layout.xaxis.tickvals = shown;
    spec.layout.xaxis.ticktext = shown.map(function (i) {
      return esc(names[i].slice(0, 17) + (names[i].length > 17 ? "…" : "") + (unseen[i] ? " (new)" : ""));
    });
    return spec;
  }

  // one feature's overlay: a histogram, a density or ECDFs (with the what-if series) of a
  // numeric feature, shares per category of the others
  function overlaySpec(f, st, cur, wi) {
    var numeric = f.kind === "numeric" || f.kind === "datetime", isDate = f.kind === "datetime";
    if (!numeric) return categoricalSpec(f.sketch, cur);
    if (st.mode === "ecdf") return ecdfSpec(f.sketch, st, cur, wi, isDate);
    if (st.mode === "density") return densitySpec(f.sketch, st, cur, wi, isDate);
    return histSpec(f.sketch, st, cur, wi, isDate);
  }
  function noteSpec(text) {  // an empty chart that says why
    return { data: [], layout: { height: 300, margin: { l: 50, r: 14, t: 30, b: 30 }, xaxis: { visible: false },
      annotations: [{ text: esc(text), xref: "paper", yref: "paper", x: 0.5, y: 0.5, showarrow: false }] } };
  }

  // the effect of each time bucket on its own, the window and the threshold marked
  function timelineSpec(f, data, st) {
    var tm = data.time, nb = tm.edges.length - 1, x = [], ys = [], text = [], fx = [], fy = [];
    for (var t = 0; t < nb; t++) {
      var b = featureStats(f, t, t), on = b.p * data.features.length < st.alpha && b.effect >= st.thr;
      x.push((tm.edges[t] + tm.edges[t + 1]) / 2);
      ys.push(isFinite(b.effect) ? b.effect : null);
      text.push(fmtX(tm.edges[t], tm.is_datetime) + ": effect ≈ " + fmt(b.effect) + (on ? " (drifted on its own)" : " (not significant on its own)"));
      if (on && isFinite(b.effect)) { fx.push(x[t]); fy.push(b.effect); }
    }
    var ymax = Math.max(st.thr * 1.5, maxOf([ys.filter(function (v) { return v !== null; })])) * 1.1;
    var spec = { data: [
      { type: "scatter", mode: "lines+markers", name: "effect per bucket", x: x, y: ys, text: text,
        line: { color: CUR, width: 2 }, marker: { color: CUR, size: 4 } },
      { type: "scatter", mode: "markers", name: "drifted on its own", x: fx, y: fy, hoverinfo: "skip",
        marker: { color: "#c62828", size: 7 } }],
    layout: { height: 130, margin: { l: 50, r: 14, t: 22, b: 24 }, showlegend: true, legend: { orientation: "h" },
      xaxis: { range: [tm.edges[0], tm.edges[nb]] }, yaxis: { range: [0, ymax], title: { text: "effect (≈)" } },
      shapes: [
        { type: "rect", xref: "x", yref: "paper", x0: tm.edges[st.win[0]], x1: tm.edges[st.win[1] + 1], y0: 0, y1: 1,
          fillcolor: "#ffe0b2", opacity: 0.5, line: { width: 0 } },
        { type: "line", xref: "paper", yref: "y", x0: 0, x1: 1, y0: st.thr, y1: st.thr, line: { color: "#c62828", dash: "dash" } }] } };
    if (tm.is_datetime) dateTicks(spec.layout.xaxis, tm.edges[0], tm.edges[nb]);
    return spec;
  }

  return { h: h, fmt: fmt, fmtP: fmtP, fmtX: fmtX, overlaySpec: overlaySpec, noteSpec: noteSpec, timelineSpec: timelineSpec };
})(vdDriftStats);
