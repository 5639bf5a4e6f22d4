// vizdebug dashboard: the browser's half of the delta protocol (_dashboard_delta.py).
// Pure functions, no DOM, no plotly: a panel's current state is its snapshot with the
// delta applied. Run in node by tests/test_dashboard.py.

function vdPatchArray(old, patch) {
  const keep = patch.keep;
  if (patch.rows) {
    return patch.rows.map((row, i) => (old && old[i] ? old[i].slice(0, keep) : []).concat(row));
  }
  return (old || []).slice(0, keep).concat(patch.tail);
}

function vdPatchTrace(old, patch) {
  if (patch.full) return patch.full;
  const out = Object.assign({}, old);
  for (const key of Object.keys(patch.arrays)) out[key] = vdPatchArray(old[key], patch.arrays[key]);
  return out;
}

// The panel as it is now: `snap` is the snapshot's panel, `patch` the delta's (or none).
function vdApplyPanelDelta(snap, patch) {
  if (!patch) return snap;
  const data = snap.data.slice(0, patch.count);
  for (const [i, tracePatch] of patch.traces) data[i] = vdPatchTrace(snap.data[i], tracePatch);
  return { data, layout: patch.layout || snap.layout };
}

// Every panel now, or null when the delta belongs to another snapshot than the one held.
function vdCurrentPanels(snapshot, delta) {
  if (!snapshot || !snapshot.panels) return null;
  if (delta && delta.base !== undefined && delta.base !== snapshot.rev) return null;
  const patches = (delta && delta.panels) || {};
  const out = {};
  for (const name of Object.keys(snapshot.panels)) {
    out[name] = vdApplyPanelDelta(snapshot.panels[name], patches[name]);
  }
  return out;
}

// The smoothed twin of each raw training curve, computed here so the slider answers
// without the kernel (same debiased EMA as vizdebug.analysis.curves.ema_smooth).
function vdEma(values, weight) {
  if (!weight) return values;
  const out = new Array(values.length);
  let acc = 0, debias = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || !isFinite(v)) { out[i] = v; continue; }
    acc = weight * acc + (1 - weight) * v;
    debias = weight * debias + (1 - weight);
    out[i] = acc / debias;
  }
  return out;
}

// The curves panel as drawn: smoothing and the log scale applied (a log axis drops the
// robust range, which was cut for a linear one). On the main axis the smoothing runs on
// values held within that range, as the kernel's does (_dashboard_curves._line_traces): a
// spike off the scale would drag a long tail through the curve in view.
function vdCurvesView(panel, smoothing, logScale) {
  const range = (panel.layout.yaxis || {}).range;
  const data = panel.data.map((trace, i) => {
    if (!(trace.meta && trace.meta.smooth)) return trace;
    let y = panel.data[i - 1].y;
    if (range && (trace.yaxis || "y") === "y") {
      y = y.map((v) => (v === null || !isFinite(v) ? v : Math.min(Math.max(v, range[0]), range[1])));
    }
    // its steps are the raw trace's: after a zoom those are the kernel's points there
    return Object.assign({}, trace, { x: panel.data[i - 1].x, y: vdEma(y, smoothing),
      visible: smoothing > 0 });
  });
  const layout = Object.assign({}, panel.layout);
  const yaxis = Object.assign({}, layout.yaxis, { type: logScale ? "log" : "linear" });
  if (logScale) { delete yaxis.range; yaxis.autorange = true; }
  layout.yaxis = yaxis;
  return { data, layout };
}

// The curves panel with the kernel's answer to a zoom (views/_dashboard_zoom.py: the
// "zoomed" message) drawn in: each metric's points inside [lo, hi] are the answer's (the
// real points, or one per bucket of steps with the bucket's lowest and highest value as a
// band under the line), its points outside stay the page's. A metric the answer does not
// name keeps the page's points.
function vdMergeZoomed(panel, zoomed) {
  const byName = new Map((zoomed.series || []).map((s) => [s.label ?? s.name, s]));
  const bands = [];
  const data = panel.data.map((trace) => {
    const s = trace.meta && trace.meta.raw ? byName.get(trace.name) : null;
    if (!s) return trace;
    const x = [], y = [];
    const keep = (from) => (trace.x || []).forEach((v, i) => {
      if (from(v)) { x.push(v); y.push(trace.y[i]); }
    });
    keep((v) => v < zoomed.lo);
    s.x.forEach((v, i) => { x.push(v); y.push(s.y[i]); });
    keep((v) => v > zoomed.hi);
    if (!s.exact && s.ymin && s.ymax) {
      const at = s.x.map((_, i) => i).filter((i) => s.ymin[i] !== null && s.ymax[i] !== null);
      bands.push({ type: "scatter", mode: "lines", fill: "toself", hoverinfo: "skip",
        name: trace.name, legendgroup: trace.legendgroup, showlegend: false,
        yaxis: trace.yaxis, xaxis: trace.xaxis, opacity: 0.2,
        line: { color: (trace.line || {}).color, width: 0 },
        x: at.map((i) => s.x[i]).concat(at.map((i) => s.x[i]).reverse()),
        y: at.map((i) => s.ymax[i]).concat(at.map((i) => s.ymin[i]).reverse()) });
    }
    return Object.assign({}, trace, { x, y, mode: s.x.length < 40 ? "lines+markers" : trace.mode });
  });
  return { data: bands.concat(data), layout: panel.layout };
}

// A name as the kernel writes it into plotly text (vizdebug.views._dashboard_curves.label).
function vdLabel(text) {
  const map = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" };
  return String(text).replace(/[&<>"']/g, (c) => map[c]).split("%{").join("%\u200b{");
}

// Which rows of a layer panel belong to a finding's layer: the heatmap's rows are
// parameters ("features.2.weight"), the health bars' modules ("features.2 (Conv2d)").
function vdLayerRows(labels, name) {
  const own = vdLabel(name);
  const module = name.includes(".") ? vdLabel(name.slice(0, name.lastIndexOf("."))) : null;
  const rows = [];
  labels.forEach((y, i) => {
    if (y === own || y.startsWith(own + ".") || y.startsWith(own + " (") ||
        (module !== null && y.startsWith(module + " ("))) rows.push(i);
  });
  return rows;
}

// A panel with a finding's evidence marked (target: evidence_target(finding) from the
// kernel, or null): the layer's rows boxed in the layer panels, the metric's curves
// drawn thick while the others fade. Returns the panel unchanged when nothing matches.
function vdHighlight(name, panel, target) {
  if (!target || !panel.data.length) return panel;
  if (target.kind === "layer" && (name === "grads" || name === "health")) {
    const rows = vdLayerRows(panel.data[0].y || [], target.name);
    if (!rows.length) return panel;
    const boxes = rows.map((i) => ({
      type: "rect", xref: "paper", x0: 0, x1: 1, yref: "y", y0: i - 0.5, y1: i + 0.5,
      line: { color: "#d81b60", width: 3 }, fillcolor: "rgba(0,0,0,0)",
    }));
    const layout = Object.assign({}, panel.layout, { shapes: (panel.layout.shapes || []).concat(boxes) });
    return { data: panel.data, layout };
  }
  if (target.kind === "metric" && name === "curves") {
    const own = vdLabel(target.name);
    if (!panel.data.some((t) => t.name === own)) return panel;
    const data = panel.data.map((t) => (t.name === own
      ? Object.assign({}, t, { line: Object.assign({}, t.line, { width: 4 }), opacity: 1 })
      : Object.assign({}, t, { opacity: 0.15 })));
    return { data, layout: panel.layout };
  }
  return panel;
}

const vdDashState = { vdPatchArray, vdApplyPanelDelta, vdCurrentPanels, vdEma, vdCurvesView,
  vdHighlight, vdMergeZoomed };
