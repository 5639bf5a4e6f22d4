// vizdebug dashboard charts, part 1 of 3: pure helpers (no DOM), run in node by the tests;
// their ticks and number formats are chart_ticks.js, shared with the drift explorer.
//
// Why our own charts: the dashboard is redrawn while training runs, and plotly's redraw
// of a panel costs 25-80 ms of the page's main thread however little changed (most of it
// fixed work: defaults, axes, legend, hover setup), several frames per refresh. The
// panels are simple (lines, markers, one heatmap, grouped bars), so they are drawn as one
// SVG string each (chart_panel.js) in a few milliseconds, from the same plotly-shaped
// panel dicts the kernel builds for the static twin (_dashboard_figure.py); and the page
// no longer needs plotly.js at all (4.8 MB).

const VD_FONT = "system-ui,-apple-system,'Segoe UI',sans-serif";
const VD_VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779",
  "#6ece58", "#b5de2b", "#fde725"];

// A pixel position to a tenth of a pixel (without toFixed, which costs most of a long path).
function vdPx(v) { return Math.round(v * 10) / 10; }

// The SVG path of a line through (x[i], y[i]): a gap where a value is missing, not
// finite, or (log scale) not positive; sx, sy map values to pixels.
function vdLinePath(x, y, sx, sy, log) {
  let out = "", pen = false;
  for (let i = 0; i < x.length; i++) {
    const v = y[i];
    if (v === null || !isFinite(v) || (log && v <= 0) || x[i] === null) {
      pen = false;
      continue;
    }
    out += `${pen ? "L" : "M"}${vdPx(sx(x[i]))},${vdPx(sy(v))}`;
    pen = true;
  }
  return out;
}

// Index of the value of sorted xs nearest to v.
function vdNearest(xs, v) {
  let lo = 0, hi = xs.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < v) lo = mid; else hi = mid;
  }
  return Math.abs(xs[lo] - v) <= Math.abs(xs[hi] - v) ? lo : hi;
}

const VD_ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'",
  "&#39;": "'" };

// Text the kernel escaped for plotly's pseudo-HTML (vdLabel), back to plain text.
function vdPlain(text) {
  return String(text ?? "").replace(/<br>/g, " ").replace(/<[^>]*>/g, "")
    .replace(/&(amp|lt|gt|quot|#x27|#39);/g, (m) => VD_ENTITIES[m]).split("%\u200b{").join("%{");
}

// Plain text escaped for an SVG string.
function vdEsc(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;",
    '"': "&quot;", "'": "&#39;" })[c]);
}

// A colour from the kernel's figure, or `fallback` when it is not a plain colour.
function vdColour(value, fallback) {
  return /^(#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,20}|rgba?\([0-9., ]+\))$/.test(value ?? "") ? value : fallback;
}

// A panel title in plotly's pseudo-HTML (<b>, <span style='color:...'>) as SVG tspans;
// anything else is text.
function vdRich(markup) {
  const out = [];
  const bold = [], colour = [];
  for (const token of String(markup ?? "").split(/(<[^>]*>)/)) {
    if (!token) continue;
    const tag = token.match(/^<(\/?)(b|span|br)\b([^>]*)>$/i);
    if (tag) {
      const [, close, name, rest] = tag;
      if (name === "br") { out.push(" "); continue; }
      const stack = name === "b" ? bold : colour;
      if (close) { stack.pop(); continue; }
      const c = (rest.match(/color:\s*([^;'"]+)/) || [])[1];
      stack.push(name === "b" ? true : vdColour(c && c.trim(), null));
      continue;
    }
    const text = vdEsc(vdPlain(token));
    const fill = colour.filter(Boolean).pop();
    const attrs = (bold.length ? ' font-weight="bold"' : "") + (fill ? ` fill="${fill}"` : "");
    out.push(attrs ? `<tspan${attrs}>${text}</tspan>` : text);
  }
  return out.join("");
}

// A value in [0, 1] on viridis, as [r, g, b].
function vdViridis(t) {
  const u = Math.min(1, Math.max(0, t)) * (VD_VIRIDIS.length - 1);
  const i = Math.min(VD_VIRIDIS.length - 2, Math.floor(u)), f = u - i;
  const rgb = (hex) => [1, 3, 5].map((k) => parseInt(hex.slice(k, k + 2), 16));
  const a = rgb(VD_VIRIDIS[i]), b = rgb(VD_VIRIDIS[i + 1]);
  return a.map((v, k) => Math.round(v + f * (b[k] - v)));
}

// The extent of the y values of `traces` whose x lies in [x0, x1] (log: of the positive
// ones, as log10), padded by 5%.
function vdExtent(traces, x0, x1, log) {
  let lo = Infinity, hi = -Infinity;
  for (const t of traces) {
    const xs = t.x || [], ys = t.y || [];
    for (let i = 0; i < ys.length; i++) {
      const v = ys[i];
      if (v === null || !isFinite(v) || xs[i] < x0 || xs[i] > x1 || (log && v <= 0)) continue;
      const w = log ? Math.log10(v) : v;
      if (w < lo) lo = w;
      if (w > hi) hi = w;
    }
  }
  if (!(lo <= hi)) return log ? [-1, 1] : [0, 1];
  const pad = 0.05 * (hi - lo || Math.abs(hi) || 1);
  return [lo - pad, hi + pad];
}

function vdGroup(trace) { return trace.legendgroup ?? trace.name ?? ""; }

// Whether a trace is drawn: its own `visible`, unless the user chose otherwise in the
// legend (`legend`: a Map of legend group to shown or not).
function vdShown(trace, legend) {
  const group = vdGroup(trace);
  if (legend && legend.has(group)) return legend.get(group);
  return trace.visible !== false && trace.visible !== "legendonly";
}
