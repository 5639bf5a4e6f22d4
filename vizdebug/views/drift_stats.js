// vizdebug drift explorer, part 1 of 3: the browser's statistics, approximated from the
// precomputed sketches (Python gives the exact ones). Pure functions, no DOM: tests run them
// in node (tests/test_drift_js.py). views/drift.py joins drift_stats.js, drift_plots.js and
// drift.js in that order into one script (an anywidget ESM is one module string).
var vdDriftStats = (function () {
  "use strict";
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
  // population stability index of two count vectors over the same bins (as drift.py: each
  // share floored at 1e-4)
  function psiCounts(r, c) {
    var nr = Math.max(sum(r), 1), nc = Math.max(sum(c), 1), out = 0;
    for (var i = 0; i < r.length; i++) {
      var pr = Math.max(r[i] / nr, 1e-4), pc = Math.max(c[i] / nc, 1e-4);
      out += (pc - pr) * Math.log(pc / pr);
    }
    return out;
  }
  // PSI over the reference's deciles, from two histograms on the same fine bins: each
  // fine bin joins the decile its reference mass sits in (drift.py uses exact deciles)
  function psiBinned(r, c, groups) {
    var k = groups || 10, nr = sum(r), gr = [], gc = [], before = 0;
    for (var g = 0; g < k; g++) { gr.push(0); gc.push(0); }
    for (var i = 0; i < r.length; i++) {
      var at = nr > 0 ? Math.min(k - 1, Math.floor(k * (before + r[i] / 2) / nr)) : 0;
      gr[at] += r[i]; gc[at] += c[i]; before += r[i];
    }
    return psiCounts(gr, gc);
  }
  // mTotal: how many features were tested in all, where only some are on the page (the
  // missing ones count as less significant: conservative for holm and bh, exact for bonferroni)
  function adjust(ps, method, mTotal) {
    var idx = [], m = 0, out = ps.map(function () { return NaN; });
    ps.forEach(function (p, i) { if (!isNaN(p)) { idx.push(i); m++; } });
    m = Math.max(m, mTotal || 0);
    if (method === "none") return ps.slice();
    if (method === "bonferroni") { idx.forEach(function (i) { out[i] = Math.min(1, ps[i] * m); }); return out; }
    idx.sort(function (a, b) { return ps[a] - ps[b]; });
    if (method === "holm") {
      var run = 0;
      idx.forEach(function (i, r) { run = Math.max(run, (m - r) * ps[i]); out[i] = Math.min(1, run); });
    } else { // Benjamini-Hochberg
      var best = 1;
      for (var r = idx.length - 1; r >= 0; r--) { best = Math.min(best, ps[idx[r]] * m / (r + 1)); out[idx[r]] = best; }
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


  // a feature's statistics over time buckets i0..i1 (the whole data without buckets)
  function featureStats(f, i0, i1) {
    var sk = f.sketch;
    if (f.test === "none") return { statistic: NaN, p: NaN, effect: NaN, psi: NaN, n: 0, cur: null };
    if (f.kind === "numeric" || f.kind === "datetime") {
      var cur = sk.bucket_hist ? windowSum(sk.bucket_hist, i0, i1) : sk.cur_hist;
      var r = ksBinned(sk.ref_hist, cur, (sk.hi - sk.lo) / 120, sk.ref_std);
      r.cur = cur; r.psi = psiBinned(sk.ref_hist, cur); return r;
    }
    var cc = sk.bucket_counts ? windowSum(sk.bucket_counts, i0, i1) : sk.cur_counts;
    var c = chi2Counts(sk.ref_counts, cc); c.cur = cc; c.psi = psiCounts(sk.ref_counts, cc); return c;
  }

  return {
    kolmogorovSf: kolmogorovSf, gammaQ: gammaQ, sum: sum, ksBinned: ksBinned, chi2Counts: chi2Counts,
    adjust: adjust, cdfAt: cdfAt, whatIf: whatIf, featureStats: featureStats,
    psiCounts: psiCounts, psiBinned: psiBinned
  };
})();
