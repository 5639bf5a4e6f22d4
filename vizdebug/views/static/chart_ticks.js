// vizdebug's one tick and number-format module for the browser: every chart that makes
// ticks (the dashboard's panels, the drift explorer's overlays) takes them from here, and
// vizdebug/views/_ticks.py is its Python twin for the static pictures (tests/test_ticks.py
// runs both on the same ranges and asks for the same ticks and labels). Plain functions,
// no DOM.

// About n round values in [lo, hi] (steps of 1, 2 or 5 times a power of ten).
function vdTicks(lo, hi, n) {
  if (!(isFinite(lo) && isFinite(hi)) || hi <= lo) return isFinite(lo) ? [lo] : [];
  const raw = (hi - lo) / Math.max(n, 1);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = mag * ([1, 2, 5, 10].find((m) => m * mag >= raw) || 10);
  const out = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) {
    out.push(parseFloat((k * step).toPrecision(12)));
  }
  return out;
}

// Ticks of a log axis over [lo, hi] given as log10 values: decades, and 2 and 5 times
// them when the range spans few decades.
function vdLogTicks(lo, hi) {
  const out = [];
  const mults = hi - lo < 2.5 ? [1, 2, 5] : [1];
  for (let d = Math.floor(lo); d <= Math.ceil(hi); d++) {
    for (const m of mults) {
      const v = Math.log10(m) + d;
      if (v >= lo - 1e-9 && v <= hi + 1e-9) out.push(v);
    }
  }
  const every = Math.ceil(out.length / 8);
  return out.filter((_, i) => i % every === 0);
}

// A number as plotly's "~g" and ".0%" tick formats write it.
function vdFormat(v, format) {
  if (v === null || v === undefined || !isFinite(v)) return String(v);
  if (format === ".0%") return `${Math.round(v * 100)}%`;
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-4)) {
    return v.toExponential(3).replace(/\.?0+e/, "e").replace("e+", "e");
  }
  return String(parseFloat(v.toPrecision(4)));
}

// Tick labels that tell neighbours apart: more digits where vdFormat writes two alike
// (413.475, 413.5 and 413.525 are all "413.5" to four digits).
function vdTickLabels(values, format) {
  let labels = values.map((v) => vdFormat(v, format));
  for (let d = 5; d <= 12 && format !== ".0%" && new Set(labels).size < labels.length; d++) {
    labels = values.map((v) => String(parseFloat(v.toPrecision(d))));
  }
  return labels;
}
