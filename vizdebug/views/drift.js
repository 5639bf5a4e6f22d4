// vizdebug drift explorer: draws from precomputed sketches, in the browser, in SVG.
// No plotly, no kernel round trip: every slider answers from the sketches alone.
// User strings only ever reach the page through textContent (never innerHTML).
var vdDriftMount = (function () {
  "use strict";
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
  function fmtX(x, isDate, dayOnly) {
    if (!isDate) return fmt(x, 3);
    var iso = new Date(x).toISOString();
    return dayOnly ? iso.slice(0, 10) : iso.slice(0, 16).replace("T", " ");
  }

  // ---- statistics (approximations from sketches; Python gives the exact ones) ----
  function kolmogorovSf(lam) {
    if (lam <= 0) return 1;
    if (lam < 1.18) {
      var t = 0, v = Math.PI * Math.PI / (8 * lam * lam);
      for (var k = 1; k < 20; k += 2) t += Math.exp(-k * k * v);
      return Math.min(1, Math.max(0, 1 - Math.sqrt(2 * Math.PI) / lam * t));
    }
    var r = 0;
    for (var j = 1; j < 100; j++) {
      var term = Math.exp(-2 * j * j * lam * lam);
      r += (j % 2 ? 1 : -1) * term;
      if (term < 1e-300) break;
    }
    return Math.min(1, Math.max(0, 2 * r));
  }
  function lnGamma(z) {
    var c = [76.18009172947146, -86.50532032941677, 24.01409824083091,
      -1.231739572450155, 0.1208650973866179e-2, -0.5395239384953e-5];
    var x = z, y = z, tmp = x + 5.5, ser = 1.000000000190015;
    tmp -= (x + 0.5) * Math.log(tmp);
    for (var i = 0; i < 6; i++) ser += c[i] / ++y;
    return -tmp + Math.log(2.5066282746310005 * ser / x);
  }
  function gammaQ(a, x) { // regularized upper incomplete gamma
    if (x <= 0) return 1;
    var gln = lnGamma(a);
    if (x < a + 1) {
      var ap = a, sum = 1 / a, del = sum;
      for (var n = 0; n < 500; n++) { ap += 1; del *= x / ap; sum += del; if (Math.abs(del) < Math.abs(sum) * 1e-14) break; }
      return Math.max(0, 1 - sum * Math.exp(-x + a * Math.log(x) - gln));
    }
    var b = x + 1 - a, c = 1e300, d = 1 / b, hh = d;
    for (var i = 1; i < 500; i++) {
      var an = -i * (i - a); b += 2;
      d = an * d + b; if (Math.abs(d) < 1e-300) d = 1e-300;
      c = b + an / c; if (Math.abs(c) < 1e-300) c = 1e-300;
      d = 1 / d; var dl = d * c; hh *= dl; if (Math.abs(dl - 1) < 1e-14) break;
    }
    return Math.exp(-x + a * Math.log(x) - gln) * hh;
  }
  function sum(a) { var t = 0; for (var i = 0; i < a.length; i++) t += a[i]; return t; }
  function ksBinned(r, c, width, refStd) {
    var nr = sum(r), nc = sum(c), fr = 0, fc = 0, d = 0, w = 0;
    for (var i = 0; i < r.length; i++) {
      fr += r[i] / nr; fc += c[i] / nc;
      d = Math.max(d, Math.abs(fr - fc)); w += Math.abs(fr - fc) * width;
    }
    var en = Math.round(nr * nc / (nr + nc));
    return { statistic: d, p: kolmogorovSf(Math.sqrt(en) * d), effect: refStd > 0 ? w / refStd : (w > 0 ? Infinity : 0), n: nc };
  }
  function chi2Counts(r, c) {
    var nr = sum(r), nc = sum(c), n = nr + nc, chi = 0, k = 0, js = 0;
    for (var i = 0; i < r.length; i++) {
      var t = r[i] + c[i]; if (t === 0) continue; k++;
      var er = nr * t / n, ec = nc * t / n;
      chi += (r[i] - er) * (r[i] - er) / er + (c[i] - ec) * (c[i] - ec) / ec;
      var p = r[i] / nr, q = c[i] / nc, m = (p + q) / 2;
      if (p > 0) js += p * Math.log2(p / m) / 2;
      if (q > 0) js += q * Math.log2(q / m) / 2;
    }
    return { statistic: chi, p: k < 2 ? 1 : gammaQ((k - 1) / 2, chi / 2), effect: Math.sqrt(Math.max(0, js)), n: nc };
  }
  function adjust(ps, method) {
    var idx = [], m = 0, out = ps.map(function () { return NaN; });
    ps.forEach(function (p, i) { if (!isNaN(p)) { idx.push(i); m++; } });
    if (method === "none") return ps.slice();
    if (method === "bonferroni") { idx.forEach(function (i) { out[i] = Math.min(1, ps[i] * m); }); return out; }
    idx.sort(function (a, b) { return ps[a] - ps[b]; });
    if (method === "holm") {
      var run = 0;
      idx.forEach(function (i, r) { run = Math.max(run, (m - r) * ps[i]); out[i] = Math.min(1, run); });
    } else { // Benjamini-Hochberg
      var best = 1;
      for (var r = m - 1; r >= 0; r--) { best = Math.min(best, ps[idx[r]] * m / (r + 1)); out[idx[r]] = best; }
    }
    return out;
  }
  function windowSum(rows, i0, i1) {
    var out = rows[0].map(function () { return 0; });
    for (var t = i0; t <= i1; t++) for (var j = 0; j < out.length; j++) out[j] += rows[t][j];
    return out;
  }
  // CDF of a quantile sketch q (evenly spaced probabilities) at x, linear in between
  function cdfAt(q, x) {
    var n = q.length;
    if (x < q[0]) return 0;
    if (x >= q[n - 1]) return 1;
    var lo = 0, hi = n - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (q[mid] <= x) lo = mid; else hi = mid; }
    var f = q[hi] > q[lo] ? (x - q[lo]) / (q[hi] - q[lo]) : 1;
    return (lo + f) / (n - 1);
  }
  function whatIf(f, shift, scale, nFeatures) {
    var sk = f.sketch, q = sk.ref_q, m = sk.ref_mean, sd = sk.ref_std || 1;
    var q2 = q.map(function (v) { return m + scale * (v - m) + shift * sd; });
    var d = 0, w = 0, grid = q.concat(q2);
    grid.forEach(function (x) { d = Math.max(d, Math.abs(cdfAt(q, x) - cdfAt(q2, x))); });
    for (var i = 0; i < q.length; i++) w += Math.abs(q[i] - q2[i]);
    w /= q.length;
    var en = Math.round(f.n_ref * f.n_cur / (f.n_ref + f.n_cur));
    var p = kolmogorovSf(Math.sqrt(en) * d);
    return { q: q2, statistic: d, p: p, p_adj: Math.min(1, p * nFeatures), effect: sk.ref_std > 0 ? w / sk.ref_std : 0 };
  }

  // ---- drawing ----
  function niceTicks(lo, hi, n) {
    var span = hi - lo;
    if (!(span > 0)) return [lo];
    var raw = span / n, mag = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / mag;
    var step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag, out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
  function axes(svg, W, H, pad, xlo, xhi, ylo, yhi, isDate, ylabel) {
    svg.appendChild(s("line", { x1: pad.l, y1: H - pad.b, x2: W - pad.r, y2: H - pad.b, stroke: "#888" }));
    svg.appendChild(s("line", { x1: pad.l, y1: pad.t, x2: pad.l, y2: H - pad.b, stroke: "#888" }));
    var xt = isDate ? [0, 1, 2, 3, 4].map(function (i) { return xlo + (xhi - xlo) * i / 4; }) : niceTicks(xlo, xhi, 5);
    var dayOnly = isDate && xhi - xlo > 2 * 86400000;
    xt.forEach(function (xv, i) {
      var x = pad.l + (xv - xlo) / (xhi - xlo || 1) * (W - pad.l - pad.r);
      var anchor = isDate ? (i === 0 ? "start" : i === xt.length - 1 ? "end" : "middle") : "middle";
      svg.appendChild(s("line", { x1: x, x2: x, y1: H - pad.b, y2: H - pad.b + 3, stroke: "#888" }));
      svg.appendChild(s("text", { x: x, y: H - pad.b + 14, "text-anchor": anchor, "font-size": 10, fill: "#444" }, fmtX(xv, isDate, dayOnly)));
    });
    niceTicks(ylo, yhi, 4).forEach(function (yv) {
      var y = H - pad.b - (yv - ylo) / (yhi - ylo || 1) * (H - pad.t - pad.b);
      svg.appendChild(s("text", { x: pad.l - 4, y: y + 3, "text-anchor": "end", "font-size": 10, fill: "#444" }, fmt(yv, 2)));
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

  function drawNumeric(svg, f, st, cur, wi, isDate) {
    var W = 560, H = 300, pad = { l: 46, r: 14, t: 22, b: 24 }, sk = f.sketch;
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    var X = function (v) { return pad.l + (v - sk.lo) / (sk.hi - sk.lo) * (W - pad.l - pad.r); };
    if (st.mode === "ecdf") {
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
      return;
    }
    if (st.mode === "density") { drawDensity(svg, sk, cur, wi, st, isDate, W, H, pad); return; }
    var k = 120 / st.bins, rb = [], cb = [];
    for (var i = 0; i < st.bins; i++) {
      var a = 0, b = 0; for (var j = i * k; j < (i + 1) * k; j++) { a += sk.ref_hist[j]; b += cur[j]; }
      rb.push(a); cb.push(b);
    }
    var nr = sum(rb) || 1, nc = sum(cb) || 1, ymax = 0;
    for (i = 0; i < st.bins; i++) ymax = Math.max(ymax, rb[i] / nr, cb[i] / nc);
    var wb = null;
    if (wi) {
      wb = []; for (i = 0; i < st.bins; i++) {
        var e0 = sk.lo + (sk.hi - sk.lo) * i / st.bins, e1 = sk.lo + (sk.hi - sk.lo) * (i + 1) / st.bins;
        wb.push(cdfAt(wi.q, e1) - cdfAt(wi.q, e0)); ymax = Math.max(ymax, wb[i]);
      }
    }
    ymax = ymax * 1.08 || 1;
    axes(svg, W, H, pad, sk.lo, sk.hi, 0, ymax, isDate, "share of rows per bin");
    var bw = (W - pad.l - pad.r) / st.bins, Y = function (v) { return H - pad.b - v / ymax * (H - pad.t - pad.b); };
    var g = s("g", { "class": "vd-bars" });
    for (i = 0; i < st.bins; i++) {
      var lo = sk.lo + (sk.hi - sk.lo) * i / st.bins, hi = sk.lo + (sk.hi - sk.lo) * (i + 1) / st.bins;
      var tip = "[" + fmtX(lo, isDate) + ", " + fmtX(hi, isDate) + "): reference " + fmt(100 * rb[i] / nr, 2) + "%, current " + fmt(100 * cb[i] / nc, 2) + "%";
      [[rb[i] / nr, REF], [cb[i] / nc, CUR]].forEach(function (v) {
        var r = s("rect", { x: pad.l + i * bw, y: Y(v[0]), width: Math.max(bw - 0.5, 0.5), height: H - pad.b - Y(v[0]), fill: v[1], opacity: 0.45 });
        r.appendChild(s("title", {}, tip)); g.appendChild(r);
      });
    }
    svg.appendChild(g);
    if (wb) svg.appendChild(s("path", { d: path(wb.map(function (v, i) { return [pad.l + (i + 0.5) * bw, Y(v)]; })), fill: "none", stroke: WHATIF, "stroke-width": 2, "stroke-dasharray": "5,3", "data-series": "what-if" }));
    legend(svg, W, [["reference", REF], ["current", CUR]].concat(wb ? [["what-if", WHATIF]] : []));
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

  // ---- per-feature stats for the current window ----
  var DATA = null;
  function featureStats(f, i0, i1) {
    var sk = f.sketch;
    if (f.test === "none") return { statistic: NaN, p: NaN, effect: NaN, n: 0, cur: null };
    if (f.kind === "numeric" || f.kind === "datetime") {
      var cur = sk.bucket_hist ? windowSum(sk.bucket_hist, i0, i1) : sk.cur_hist;
      var r = ksBinned(sk.ref_hist, cur, (sk.hi - sk.lo) / 120, sk.ref_std); r.cur = cur; return r;
    }
    var cc = sk.bucket_counts ? windowSum(sk.bucket_counts, i0, i1) : sk.cur_counts;
    var c = chi2Counts(sk.ref_counts, cc); c.cur = cc; return c;
  }

  function mount(el, data, model) {
    DATA = data;
    var feats = data.features, nb = data.time ? data.time.edges.length - 1 : 0;
    var st = { sel: 0, alpha: data.alpha, thr: data.effect_threshold, bins: 30, mode: "hist", win: [0, Math.max(nb - 1, 0)], shift: 0, scale: 1, windowed: false };
    while (el.firstChild) el.removeChild(el.firstChild);
    var root = h("div", { "class": "vd-drift" }); el.appendChild(root);
    var summary = h("div", { "class": "vd-summary", style: "font-weight:600;margin:4px 0" }); root.appendChild(summary);
    var controls = h("div", { "class": "vd-controls", style: "display:flex;flex-wrap:wrap;gap:6px 18px;margin:4px 0 8px 0;font-size:12px" }); root.appendChild(controls);
    function slider(name, label, min, max, step, value, show) {
      var box = h("label", { style: "display:flex;align-items:center;gap:4px" }), out = h("span", { style: "min-width:3.5em" });
      var inp = h("input", { type: "range", min: min, max: max, step: step, "data-control": name }); inp.value = value;
      box.appendChild(h("span", {}, label)); box.appendChild(inp); box.appendChild(out); controls.appendChild(box);
      var upd = function () { out.textContent = show(Number(inp.value)); }; upd();
      inp.addEventListener("input", function () { upd(); onControl(name, Number(inp.value)); });
      return inp;
    }
    var DIV = [4, 5, 6, 8, 10, 12, 15, 20, 24, 30, 40, 60, 120];
    slider("bins", "bins", 0, DIV.length - 1, 1, DIV.indexOf(30), function (v) { return DIV[v]; });
    var ALPHAS = [0.0001, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2];
    if (ALPHAS.indexOf(st.alpha) < 0) { ALPHAS.push(st.alpha); ALPHAS.sort(function (a, b) { return a - b; }); }
    slider("alpha", "α", 0, ALPHAS.length - 1, 1, ALPHAS.indexOf(st.alpha), function (v) { return fmt(ALPHAS[v], 2); });
    slider("thr", "effect ≥", 0.01, 0.5, 0.01, st.thr, function (v) { return fmt(v, 2); });
    slider("shift", "what-if shift (σ)", -2, 2, 0.01, 0, function (v) { return (v > 0 ? "+" : "") + v.toFixed(2); });
    slider("scale", "what-if scale ×", 0.5, 2, 0.01, 1, function (v) { return v.toFixed(2); });
    var modeSel = h("select", { "data-control": "mode" });
    [["hist", "histogram"], ["density", "density"], ["ecdf", "ECDF"]].forEach(function (o) { modeSel.appendChild(h("option", { value: o[0] }, o[1])); });
    modeSel.addEventListener("change", function () { st.mode = modeSel.value; redraw(); });
    controls.appendChild(modeSel);
    var winOut = null;
    if (nb) {
      var t0 = slider("win0", "window from", 0, nb - 1, 1, 0, function (v) { return fmtX(data.time.edges[v], data.time.is_datetime); });
      var t1 = slider("win1", "to", 0, nb - 1, 1, nb - 1, function (v) { return fmtX(data.time.edges[v + 1], data.time.is_datetime); });
      winOut = [t0, t1];
    }
    var body = h("div", { style: "display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap" }); root.appendChild(body);
    var tableBox = h("div", { style: "max-height:420px;overflow:auto;flex:1 1 470px;font-size:11px" }); body.appendChild(tableBox);
    var plotBox = h("div", { style: "flex:1 1 520px;max-width:640px" }); body.appendChild(plotBox);
    var title = h("div", { "class": "vd-plot-title", style: "font-weight:600" }); plotBox.appendChild(title);
    var svg = s("svg", { "class": "vd-plot", width: "100%", role: "img" }); plotBox.appendChild(svg);
    var tsvg = nb ? s("svg", { "class": "vd-timeline", width: "100%" }) : null; if (tsvg) plotBox.appendChild(tsvg);
    var info = h("div", { "class": "vd-whatif vd-note", style: "font-size:12px;color:#333;margin-top:4px" }); plotBox.appendChild(info);

    function sync(name, value) { if (model) { model.set(name, value); model.save_changes(); } }
    function onControl(name, v) {
      if (name === "bins") { st.bins = DIV[v]; sync("bins", st.bins); }
      if (name === "alpha") { st.alpha = ALPHAS[v]; sync("alpha", st.alpha); }
      if (name === "thr") { st.thr = v; sync("effect_threshold", v); }
      if (name === "shift") { st.shift = v; sync("shift", v); }
      if (name === "scale") { st.scale = v; sync("scale", v); }
      if (name === "win0" || name === "win1") {
        st.win = name === "win0" ? [v, Math.max(v, st.win[1])] : [Math.min(v, st.win[0]), v];
        winOut[0].value = st.win[0]; winOut[1].value = st.win[1];
        sync("window", st.win);
      }
      redraw();
    }

    function rows() {
      st.windowed = nb > 0 && (st.win[0] > 0 || st.win[1] < nb - 1);
      var res = feats.map(function (f) {
        if (!st.windowed) return { f: f, statistic: f.statistic, p: f.p_value, effect: f.effect_size, n: f.n_cur, cur: f.kind === "numeric" || f.kind === "datetime" ? f.sketch.cur_hist : (f.sketch.cur_counts || null) };
        var r = featureStats(f, st.win[0], st.win[1]); r.f = f; return r;
      });
      var adj = adjust(res.map(function (r) { return r.p; }), data.correction);
      res.forEach(function (r, i) { r.p_adj = adj[i]; r.drifted = r.p_adj < st.alpha && r.effect >= st.thr; });
      return res;
    }

    function redraw() {
      var t = performance.now(), res = rows(), nd = res.filter(function (r) { return r.drifted; }).length;
      summary.textContent = nd + " of " + res.length + " features drifted · α = " + fmt(st.alpha, 2) + " (" + data.correction + ") and effect ≥ " + fmt(st.thr, 2) +
        (st.windowed ? " · window " + fmtX(data.time.edges[st.win[0]], data.time.is_datetime) + " – " + fmtX(data.time.edges[st.win[1] + 1], data.time.is_datetime) + " (≈ from binned sketches)" : "");
      drawTable(res);
      var r = res[st.sel], f = r.f, isDate = f.kind === "datetime";
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      title.textContent = f.feature + " — " + f.kind + ", " + f.test + " " + fmt(r.statistic) + ", p(adj) " + fmt(r.p_adj, 2) + ", " + f.effect_metric + " " + fmt(r.effect) + (r.drifted ? " · DRIFTED" : "");
      var wi = null, numeric = f.kind === "numeric" || f.kind === "datetime";
      if (f.test === "none") svg.appendChild(s("text", { x: 20, y: 40, "font-size": 12 }, f.note || "no values to compare"));
      else if (numeric) {
        if (st.shift !== 0 || st.scale !== 1) wi = whatIf(f, st.shift, st.scale, res.length);
        drawNumeric(svg, f, st, r.cur, wi, isDate);
      } else drawCategorical(svg, f, r.cur);
      if (tsvg && f.test !== "none") drawTimeline(tsvg, f, data, st);
      info.textContent = whatIfText(f, wi, numeric);
      el.setAttribute("data-redraw-ms", (performance.now() - t).toFixed(1));
      el.setAttribute("data-selected", f.feature);
    }

    function whatIfText(f, wi, numeric) {
      if (!numeric || f.test === "none") return "What-if shifts apply to numeric features.";
      var min = minimalShift(f, st.scale, res_len());
      var floor = "Smallest shift of the reference that would be flagged at these sample sizes (n = " + f.n_ref + " vs " + f.n_cur + "): " + (min === null ? "none up to 3σ" : "±" + min.toFixed(2) + "σ") + ".";
      if (!wi) return floor + " Move the what-if sliders to see a hypothetical change.";
      return "What-if: the reference shifted " + (st.shift >= 0 ? "+" : "") + st.shift.toFixed(2) + "σ and scaled ×" + st.scale.toFixed(2) + " → KS D ≈ " + fmt(wi.statistic) + ", p ≈ " + fmt(wi.p, 2) + " (Bonferroni-adjusted " + fmt(wi.p_adj, 2) + "), normed Wasserstein ≈ " + fmt(wi.effect) + ": " + (wi.p_adj < st.alpha && wi.effect >= st.thr ? "WOULD be flagged" : "would NOT be flagged") + ". " + floor;
    }
    function res_len() { return feats.length; }
    var shiftCache = {};
    function minimalShift(f, scale, m) { // coarse 0.05-sigma steps, then 0.01 within the step
      var key = [f.feature, scale, st.alpha, st.thr].join("|");
      if (key in shiftCache) return shiftCache[key];
      var hit = function (d) { var w = whatIf(f, d, scale, m); return w.p_adj < st.alpha && w.effect >= st.thr; };
      var found = null;
      for (var d = 0; d <= 3.0001 && found === null; d += 0.05) if (hit(d)) found = d;
      if (found !== null) for (var e = Math.max(0, found - 0.04); e <= found; e += 0.01) if (hit(e)) { found = e; break; }
      shiftCache[key] = found;
      return found;
    }

    function drawTable(res) {
      while (tableBox.firstChild) tableBox.removeChild(tableBox.firstChild);
      var tb = h("table", { "class": "vd-table vd-drift-table" }), head = h("tr");
      ["feature", "kind", "test", "stat", "p (adj)", "effect", "PSI", "missing", "drifted"].forEach(function (c) { head.appendChild(h("th", {}, c)); });
      tb.appendChild(head);
      res.forEach(function (r, i) {
        var f = r.f, tr = h("tr", { "data-feature-index": i, style: "cursor:pointer;" + (i === st.sel ? "outline:2px solid #1565c0;" : "") + (r.drifted ? "background:#fff3e0" : "") });
        [f.feature, f.kind, f.test, fmt(r.statistic), fmt(r.p_adj, 2), fmt(r.effect), fmt(f.psi), fmt(100 * f.missing_ref, 2) + "→" + fmt(100 * f.missing_cur, 2) + "%", r.drifted ? "yes" : "no"]
          .forEach(function (c) { tr.appendChild(h("td", {}, c)); });
        tr.addEventListener("click", function () { st.sel = i; sync("selected", f.feature); redraw(); });
        tb.appendChild(tr);
      });
      tableBox.appendChild(tb);
    }

    if (model) model.on("change:selected", function () {
      var name = model.get("selected"), i = feats.findIndex(function (f) { return f.feature === name; });
      if (i >= 0 && i !== st.sel) { st.sel = i; redraw(); }
    });
    redraw();
  }
  // the statistics helpers, for tests (tests/test_drift_js.py runs them in node)
  mount.stats = { kolmogorovSf: kolmogorovSf, gammaQ: gammaQ, adjust: adjust, ksBinned: ksBinned, chi2Counts: chi2Counts, whatIf: whatIf };
  return mount;
})();
