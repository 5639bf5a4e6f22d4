// vizdebug drift explorer, part 2 of 3: the SVG charts (overlays of one feature and the
// drift-over-time strip), drawn from the sketches. Needs vdDriftStats (drift_stats.js).
// User strings only ever reach the page through textContent (never innerHTML).
var vdDriftPlots = (function (S) {
  "use strict";
  var sum = S.sum, cdfAt = S.cdfAt, featureStats = S.featureStats;
  var NS = "http://www.w3.org/2000/svg";
  var REF = "#1f77b4", CUR = "#ff7f0e", WHATIF = "#2ca02c";

  function h(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function s(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
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


  function axes(svg, W, H, pad, xlo, xhi, ylo, yhi, isDate, ylabel) {
    svg.appendChild(s("line", { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, stroke: "#888" }));
    svg.appendChild(s("line", { x1: pad.l, y1: pad.t, x2: pad.l, y2: H - pad.b, stroke: "#888" }));
    // round ticks and their labels: chart_ticks.js, the dashboard's (dates: five even steps)
    var xt = isDate ? [0, 1, 2, 3, 4].map(function (i) { return xlo + (xhi - xlo) * i / 4; }) : vdTicks(xlo, xhi, 5);
    var xl = isDate ? null : vdTickLabels(xt);
    var dayOnly = isDate && xhi - xlo > 2 * 86400000;
    xt.forEach(function (xv, i) {
      var x = pad.l + (xv - xlo) / (xhi - xlo || 1) * (W - pad.l - pad.r);
      var anchor = isDate ? (i === 0 ? "start" : i === xt.length - 1 ? "end" : "middle") : "middle";
      svg.appendChild(s("line", { x1: x, x2: x, y1: H - pad.b, y2: H - pad.b + 3, stroke: "#888" }));
      svg.appendChild(s("text", { x: x, y: H - pad.b + 14, "text-anchor": anchor, "font-size": 10, fill: "#444" }, isDate ? fmtX(xv, isDate, dayOnly) : xl[i]));
    });
    var yt = vdTicks(ylo, yhi, 4), yl = vdTickLabels(yt);
    yt.forEach(function (yv, k) {
      var y = H - pad.b - (yv - ylo) / (yhi - ylo || 1) * (H - pad.t - pad.b);
      svg.appendChild(s("text", { x: pad.l - 4, y: y + 3, "text-anchor": "end", "font-size": 10, fill: "#444" }, yl[k]));
    });
    svg.appendChild(s("text", { x: 4, y: 10, "font-size": 10, fill: "#444" }, ylabel));
  }
  function legend(svg, W, items) {
    items.forEach(function (it, i) {
      var x = W - 230 + i * 78;
      svg.appendChild(s("rect", { x: x, y: 4, width: 10, height: 10, fill: it[1], opacity: 0.7 }));
      svg.appendChild(s("text", { x: x + 13, y: 13, "font-size": 10 }, it[0]));
    });
  }
  function path(pts) { return pts.map(function (p, i) { return (i ? "L" : "M") + p[0].toFixed(1) + "," + p[1].toFixed(1); }).join(""); }

  var PLOT = { W: 560, H: 300, pad: { l: 46, r: 14, t: 22, b: 24 } };

  // one numeric feature as a histogram, a density or ECDFs (with the what-if series)
  function drawNumeric(svg, f, st, cur, wi, isDate) {
    var W = PLOT.W, H = PLOT.H;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    if (st.mode === "ecdf") drawEcdf(svg, f.sketch, st, cur, wi, isDate);
    else if (st.mode === "density") drawDensity(svg, f.sketch, cur, wi, st, isDate, W, H, PLOT.pad);
    else drawHist(svg, f.sketch, st, cur, wi, isDate);
  }
  function drawEcdf(svg, sk, st, cur, wi, isDate) {
    var W = PLOT.W, H = PLOT.H, pad = PLOT.pad;
    var X = function (v) { return pad.l + (v - sk.lo) / (sk.hi - sk.lo) * (W - pad.l - pad.r); };
    var series = [[sk.ref_q, REF, "reference"]];
    if (!st.windowed) series.push([sk.cur_q, CUR, "current"]);
    if (wi) series.push([wi.q, WHATIF, "what-if"]);
    axes(svg, W, H, pad, sk.lo, sk.hi, 0, 1, isDate, "ECDF");
    var line = function (pts, colour, name) {
      svg.appendChild(s("path", { d: path(pts), fill: "none", stroke: colour, "stroke-width": 2, "stroke-dasharray": name === "what-if" ? "5,3" : "", "data-series": name }));
    };
    series.forEach(function (se) {
      line(se[0].map(function (v, i) { return [X(Math.min(Math.max(v, sk.lo), sk.hi)), H - pad.b - i / (se[0].length - 1) * (H - pad.t - pad.b)]; }), se[1], se[2]);
    });
    if (st.windowed) { // the window's ECDF from its binned counts, at the bin edges
      var n = sum(cur) || 1, acc = 0, pts = [[X(sk.lo), H - pad.b]];
      cur.forEach(function (c, i) { acc += c; pts.push([X(sk.lo + (sk.hi - sk.lo) * (i + 1) / 120), H - pad.b - acc / n * (H - pad.t - pad.b)]); });
      line(pts, CUR, "current");
      series.splice(1, 0, [cur, CUR, "current"]);
    }
    legend(svg, W, series.map(function (x) { return [x[2], x[1]]; }));
  }
  // the 120 fine bins summed into st.bins bars per side, and the what-if shares per bar
  function coarseBins(sk, st, cur, wi) {
    var k = 120 / st.bins, rb = [], cb = [], wb = null;
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
    return { rb: rb, cb: cb, wb: wb, nr: sum(rb) || 1, nc: sum(cb) || 1 };
  }
  function drawHist(svg, sk, st, cur, wi, isDate) {
    var W = PLOT.W, H = PLOT.H, pad = PLOT.pad, c = coarseBins(sk, st, cur, wi), ymax = 0;
    for (var i = 0; i < st.bins; i++) ymax = Math.max(ymax, c.rb[i] / c.nr, c.cb[i] / c.nc, c.wb ? c.wb[i] : 0);
    ymax = ymax * 1.08 || 1;
    axes(svg, W, H, pad, sk.lo, sk.hi, 0, ymax, isDate, "share of rows per bin");
    var bw = (W - pad.l - pad.r) / st.bins, Y = function (v) { return H - pad.b - v / ymax * (H - pad.t - pad.b); };
    var g = s("g", { "class": "vd-bars" });
    for (i = 0; i < st.bins; i++) {
      var lo = sk.lo + (sk.hi - sk.lo) * i / st.bins, hi = sk.lo + (sk.hi - sk.lo) * (i + 1) / st.bins;
      var tip = "[" + fmtX(lo, isDate) + ", " + fmtX(hi, isDate) + "): reference " + fmt(100 * c.rb[i] / c.nr, 2) + "%, current " + fmt(100 * c.cb[i] / c.nc, 2) + "%";
      [[c.rb[i] / c.nr, REF], [c.cb[i] / c.nc, CUR]].forEach(function (v) {
        var r = s("rect", { x: pad.l + i * bw, y: Y(v[0]), width: Math.max(bw - 0.5, 0.5), height: H - pad.b - Y(v[0]), fill: v[1], opacity: 0.45 });
        r.appendChild(s("title", {}, tip)); g.appendChild(r);
      });
    }
    svg.appendChild(g);
    if (c.wb) svg.appendChild(s("path", { d: path(c.wb.map(function (v, i) { return [pad.l + (i + 0.5) * bw, Y(v)]; })), fill: "none", stroke: WHATIF, "stroke-width": 2, "stroke-dasharray": "5,3", "data-series": "what-if" }));
    legend(svg, W, [["reference", REF], ["current", CUR]].concat(c.wb ? [["what-if", WHATIF]] : []));
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
  function drawDensity(svg, sk, cur, wi, st, isDate, W, H, pad) {
    var sigma = Math.max(0.5, 60 / st.bins), series = [[smooth(sk.ref_hist, sigma), REF, "reference"], [smooth(cur, sigma), CUR, "current"]];
    if (wi) {
      var fine = []; for (var i = 0; i < 120; i++) fine.push(cdfAt(wi.q, sk.lo + (sk.hi - sk.lo) * (i + 1) / 120) - cdfAt(wi.q, sk.lo + (sk.hi - sk.lo) * i / 120));
      series.push([smooth(fine.map(function (v) { return v * 1e6; }), sigma), WHATIF, "what-if"]);
    }
    var ymax = 0; series.forEach(function (se) { se[0].forEach(function (v) { ymax = Math.max(ymax, v); }); });
    ymax = ymax * 1.08 || 1;
    axes(svg, W, H, pad, sk.lo, sk.hi, 0, ymax, isDate, "density (share per 1/120 of the range)");
    series.forEach(function (se) {
      var pts = se[0].map(function (v, i) { return [pad.l + (i + 0.5) / 120 * (W - pad.l - pad.r), H - pad.b - v / ymax * (H - pad.t - pad.b)]; });
      svg.appendChild(s("path", { d: path(pts), fill: "none", stroke: se[1], "stroke-width": 2, "stroke-dasharray": se[2] === "what-if" ? "5,3" : "", "data-series": se[2] }));
    });
    legend(svg, W, series.map(function (x) { return [x[2], x[1]]; }));
  }

  function drawCategorical(svg, f, cur) {
    var sk = f.sketch, n = sk.categories.length, W = 560, H = 300, pad = { l: 46, r: 10, t: 20, b: 70 };
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var nr = sum(sk.ref_counts) || 1, nc = sum(cur) || 1, ymax = 0;
    for (var i = 0; i < n; i++) ymax = Math.max(ymax, sk.ref_counts[i] / nr, cur[i] / nc);
    ymax = ymax * 1.08 || 1;
    svg.appendChild(s("line", { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, stroke: "#888" }));
    for (var t = 0; t <= 4; t++) svg.appendChild(s("text", { x: pad.l - 4, y: H - pad.b - (H - pad.t - pad.b) * t / 4 + 3, "text-anchor": "end", "font-size": 10 }, fmt(ymax * t / 4, 2)));
    var bw = (W - pad.l - pad.r) / n, Y = function (v) { return H - pad.b - v / ymax * (H - pad.t - pad.b); };
    var g = s("g", { "class": "vd-bars" });
    for (i = 0; i < n; i++) {
      var tip = sk.categories[i] + ": reference " + fmt(100 * sk.ref_counts[i] / nr, 2) + "%, current " + fmt(100 * cur[i] / nc, 2) + "%" + (sk.unseen[i] ? " (new)" : "");
      [[sk.ref_counts[i] / nr, REF, 0], [cur[i] / nc, CUR, 1]].forEach(function (v) {
        var r = s("rect", { x: pad.l + i * bw + v[2] * bw * 0.45 + bw * 0.05, y: Y(v[0]), width: bw * 0.45, height: H - pad.b - Y(v[0]), fill: v[1], opacity: 0.75 });
        r.appendChild(s("title", {}, tip)); g.appendChild(r);
      });
      var x = pad.l + (i + 0.5) * bw, label = sk.categories[i] + (sk.unseen[i] ? " (new)" : "");
      g.appendChild(s("text", { x: x, y: H - pad.b + 10, "font-size": 10, transform: "rotate(35 " + x + " " + (H - pad.b + 10) + ")", fill: sk.unseen[i] ? "#c62828" : "#333", "class": "vd-cat" }, label.length > 18 ? label.slice(0, 17) + "…" : label));
    }
    svg.appendChild(g);
    legend(svg, W, [["reference", REF], ["current", CUR]]);
  }

  function drawTimeline(svg, f, data, st) {
    var tm = data.time, nb = tm.edges.length - 1, W = 560, H = 120, pad = { l: 46, r: 14, t: 18, b: 20 };
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var vals = [], flags = [];
    for (var t = 0; t < nb; t++) {
      var b = featureStats(f, t, t);
      vals.push(b.effect); flags.push(b.p * data.features.length < st.alpha && b.effect >= st.thr);
    }
    var ymax = Math.max(st.thr * 1.5, Math.max.apply(null, vals.filter(isFinite).concat([0]))) * 1.1;
    axes(svg, W, H, pad, tm.edges[0], tm.edges[nb], 0, ymax, tm.is_datetime, "effect per time bucket (≈)");
    var X = function (i) { return pad.l + (i + 0.5) / nb * (W - pad.l - pad.r); }, Y = function (v) { return H - pad.b - Math.min(v, ymax) / ymax * (H - pad.t - pad.b); };
    svg.appendChild(s("rect", { x: pad.l + st.win[0] / nb * (W - pad.l - pad.r), y: pad.t, width: (st.win[1] - st.win[0] + 1) / nb * (W - pad.l - pad.r), height: H - pad.t - pad.b, fill: "#ffe0b2", opacity: 0.5, "class": "vd-window" }));
    svg.appendChild(s("line", { x1: pad.l, x2: W - pad.r, y1: Y(st.thr), y2: Y(st.thr), stroke: "#c62828", "stroke-dasharray": "4,3" }));
    var pts = []; vals.forEach(function (v, i) { if (isFinite(v)) pts.push([X(i), Y(v)]); });
    svg.appendChild(s("path", { d: path(pts), fill: "none", stroke: CUR, "stroke-width": 2 }));
    vals.forEach(function (v, i) {
      if (!isFinite(v)) return;
      var c = s("circle", { cx: X(i), cy: Y(v), r: flags[i] ? 3.5 : 2, fill: flags[i] ? "#c62828" : CUR });
      c.appendChild(s("title", {}, fmtX(tm.edges[i], tm.is_datetime) + ": effect ≈ " + fmt(v) + (flags[i] ? " (drifted on its own)" : " (not significant on its own)")));
      svg.appendChild(c);
    });
  }

  return { h: h, s: s, fmt: fmt, fmtP: fmtP, fmtX: fmtX, drawNumeric: drawNumeric, drawCategorical: drawCategorical, drawTimeline: drawTimeline };
})(vdDriftStats);
