// vizdebug dashboard charts, the line panels on uPlot, part 1 of 2: a panel dict (the chart
// spec, views/chart_spec.py) as uPlot's aligned columns, scales, axes and draw hooks. The
// live dashboard's line panels (curves, timing, system) are drawn by uPlot 1.6.32
// (static/vendor): a redraw of the curves is setData on a kept chart, 3 ms where our SVG
// string took 9-12 (benchmarks/README.md). What uPlot does not draw is drawn here on its
// canvas from the same spec: epoch marks and notes, marker symbols (the non-finite crosses,
// the off-scale triangles), lone points, the zoom's min/max bands. The ranges are the SVG
// chart's own (vdFrame: the robust y range, the zoom's fit), the ticks chart_ticks.js's.
// The drift explorer's overlays and strip and the embedding timeline's quality curve are
// drawn by the same code from the same spec: vertical bars (uPlot.paths.bars, overlaid or
// grouped), named ticks, windows and reference levels.

// The spec's line traces that uPlot draws as series (markers alone, bands and the
// non-finite strip are drawn by the hooks).
function vdIsSeries(t) {
  return (t.type === "scatter" && (t.mode || "lines").includes("lines") && t.fill !== "toself" &&
    (t.yaxis || "y") !== "y3") || vdIsColumn(t);
}

// A vertical bar trace (a histogram's bins, categories by index).
function vdIsColumn(t) { return t.type === "bar" && t.orientation === "v"; }

// uPlot's bar paths for the k-th of the vertical bar series: overlaid, each bar its
// trace's width; grouped, two to a slot side by side (align -1 / 1 put a bar's right or
// left edge at its x), more centred and narrower.
function vdColumnPaths(fig, series, t) {
  const cols = series.filter(vdIsColumn), k = cols.indexOf(t), xs = t.x || [];
  const spacing = xs.length > 1 ? Math.abs(xs[1] - xs[0]) || 1 : 1;
  const share = Math.min(1, (t.width ?? 0.8 * spacing) / spacing);
  if (fig.layout.barmode !== "group" || cols.length < 2) {
    return uPlot.paths.bars({ size: [share * 0.98, Infinity, 1], align: 0 });
  }
  const align = cols.length === 2 ? (k === 0 ? -1 : 1) : 0;
  return uPlot.paths.bars({ size: [share / cols.length, Infinity, 1], align });
}

// Aligned columns: one x (the union of the series' steps) and a y per series. A step a
// series has no point at is `undefined` (uPlot draws the line across it); a missing or
// non-finite value, or one not positive on a log axis, is `null` (a break in the line).
function vdAlign(traces, log) {
  const first = traces.length ? traces[0].x || [] : [];
  const n = first.length;
  const same = traces.every((t) => {
    const x = t.x || [];
    if (x === first) return true;
    if (x.length !== n) return false;
    for (let i = 0; i < n; i++) if (x[i] !== first[i]) return false;
    return true;
  });
  let xs = first, at = null;
  if (!same) {
    const all = new Set();
    for (const t of traces) for (const v of t.x || []) if (v !== null) all.add(v);
    xs = Float64Array.from(all).sort();
    at = new Map();
    for (let i = 0; i < xs.length; i++) at.set(xs[i], i);
  }
  const cols = traces.map((t) => {
    const logged = log && (t.yaxis || "y") === "y", ys = t.y || [], tx = t.x || [];
    const col = new Array(xs.length);  // holes read as undefined: spanned
    for (let i = 0; i < tx.length; i++) {
      const v = ys[i];
      const ok = v !== null && v !== undefined && isFinite(v) && !(logged && v <= 0);
      if (same) col[i] = ok ? v : null;
      else if (tx[i] !== null) col[at.get(tx[i])] = ok ? v : null;
    }
    return col;
  });
  return [xs, ...cols];
}

// A range [lo, hi] that puts [a, b] on the `domain` part of the plot's height (the
// curves' main axis leaves the top strip to the non-finite marks).
function vdDomainRange(a, b, domain) {
  const [d0, d1] = domain || [0, 1];
  const span = (b - a) / ((d1 - d0) || 1);
  return [a - d0 * span, b + (1 - d1) * span];
}

// The scales' ranges from the SVG chart's frame (the same y ranges, the same zoom fit):
// {x, y, y2, y3: the ranges uPlot is given; ticks: the ranges that carry ticks}.
function vdRanges(fig, state) {
  const f = vdFrame(fig, { left: 0, right: 1, top: 0, bottom: 1 }, state);
  const domain = (fig.layout.yaxis || {}).domain || [0, 1];
  const main = vdDomainRange(f.y[0], f.y[1], domain);
  const given = (fig.layout.xaxis || {}).range;  // a histogram's edges, categories' slots
  const out = { x: given && !state.zoom ? given : f.x, log: f.log, frame: f,
    y: f.log ? main.map((v) => Math.pow(10, v)) : main, ticks: { y: f.y } };
  if (f.y2) { out.y2 = vdDomainRange(f.y2[0], f.y2[1], domain); out.ticks.y2 = f.y2; }
  const d3 = f.y3 ? f.y3.domain : [0.93, 1];
  out.y3 = vdDomainRange(0, 1, d3);
  return out;
}

function vdUplotFont(size) { return `${size}px ${VD_FONT}`; }

// An axis whose ticks are those of view.ranges (read at draw time), labelled by
// chart_ticks.js.
function vdAxisOf(view, key, layout, opts) {
  const axis = layout[key === "x" ? "xaxis" : key === "y" ? "yaxis" : "yaxis2"] || {};
  const named = axis.tickvals && axis.ticktext;  // dates, categories by index
  const splits = (u) => {
    const r = view.ranges;
    if (key === "x" && named) return axis.tickvals.filter((v) => v >= r.x[0] && v <= r.x[1]);
    if (key === "x") {
      const w = u.bbox.width / uPlot.pxRatio;
      return vdTicks(r.x[0], r.x[1], Math.max(2, Math.min(7, Math.floor(w / 80))));
    }
    const t = r.ticks[key];
    if (!t) return [];
    if (key === "y" && r.log) {  // within less than one 1-2-5 step: round values in between
      const decades = vdLogTicks(t[0], t[1]).map((v) => Math.pow(10, v));
      return decades.length >= 2 ? decades
        : vdTicks(Math.pow(10, t[0]), Math.pow(10, t[1]), 4).filter((v) => v > 0);
    }
    return vdTicks(t[0], t[1], key === "y" ? 6 : 5);
  };
  const format = key === "y" ? undefined : axis.tickformat;
  // every split labelled (uPlot's own filter of a log axis blanks those it would not have
  // chosen, as nulls, which vdTickLabels cannot format)
  const numbers = (u, vals) => {
    const labels = vdTickLabels(vals.filter((v) => v !== null), format);
    let k = 0;
    return vals.map((v) => (v === null ? "" : labels[k++]));
  };
  const values = named ? (u, vals) => vals.map((v) => vdPlain(axis.ticktext[axis.tickvals.indexOf(v)] ?? ""))
    : numbers;
  return Object.assign({ scale: key, splits, filter: (u, vals) => vals, values,
    label: vdPlain((axis.title || {}).text || ""), labelSize: 16, labelFont: vdUplotFont(11),
    font: vdUplotFont(11), stroke: "#444", gap: 4, ticks: { show: false },
    grid: { show: key !== "y2", stroke: "#eee", width: 1 } }, opts);
}

// Canvas helpers: a value to device pixels, within the plot.
function vdPos(u, v, scale) { return u.valToPos(v, scale, true); }

function vdMarker(ctx, symbol, x, y, size, colour) {
  const r = size / 2 * uPlot.pxRatio;
  ctx.beginPath();
  if (symbol === "x") {
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2 * uPlot.pxRatio;
    ctx.moveTo(x - r, y - r); ctx.lineTo(x + r, y + r);
    ctx.moveTo(x - r, y + r); ctx.lineTo(x + r, y - r);
    ctx.stroke();
    return;
  }
  if (symbol === "triangle-up" || symbol === "triangle-down") {
    const s = symbol === "triangle-up" ? -1 : 1;
    ctx.moveTo(x - r, y - s * r * 0.6); ctx.lineTo(x + r, y - s * r * 0.6); ctx.lineTo(x, y + s * r);
    ctx.closePath();
  } else {
    ctx.arc(x, y, r * 0.7, 0, 2 * Math.PI);
  }
  ctx.fillStyle = colour;
  ctx.fill();
}

function vdScaleKey(t) { return (t.yaxis || "y") === "y" ? "y" : t.yaxis; }

// Over the grid, below the lines: the epoch boundaries and the zoom's min/max bands.
function vdDrawBelow(u, view) {
  const { fig, ranges } = view, ctx = u.ctx, box = u.bbox, [x0, x1] = ranges.x;
  ctx.save();
  ctx.globalAlpha = 1;
  ctx.beginPath();
  ctx.rect(box.left, box.top, box.width, box.height);
  ctx.clip();
  for (const s of fig.layout.shapes || []) {
    ctx.strokeStyle = vdColour(s.line?.color, "#d0d0d0");
    ctx.lineWidth = uPlot.pxRatio;
    ctx.setLineDash(s.line?.dash === "solid" ? [] : [2 * uPlot.pxRatio, 3 * uPlot.pxRatio]);
    if (s.xref === "paper" && s.yref === "y" && s.y0 !== null && s.y0 !== undefined) {  // a level
      const py = Math.round(vdPos(u, s.y0, "y")) + 0.5;
      ctx.beginPath(); ctx.moveTo(box.left, py); ctx.lineTo(box.left + box.width, py); ctx.stroke();
      continue;
    }
    if (s.xref !== "x") continue;
    if (s.type === "rect") {  // a window: the part of it in view, filled
      const a = vdPos(u, Math.max(s.x0, x0), "x"), b = vdPos(u, Math.min(s.x1, x1), "x");
      if (!(b > a)) continue;
      ctx.globalAlpha = s.opacity ?? 0.5;
      ctx.fillStyle = vdColour(s.fillcolor, "#ffe0b2");
      ctx.fillRect(a, box.top, b - a, box.height);
      ctx.globalAlpha = 1;
      continue;
    }
    if (s.type !== "line" || !(s.x0 >= x0 && s.x0 <= x1)) continue;
    const px = Math.round(vdPos(u, s.x0, "x")) + 0.5;
    ctx.beginPath(); ctx.moveTo(px, box.top); ctx.lineTo(px, box.top + box.height); ctx.stroke();
  }
  ctx.setLineDash([]);
  for (const t of view.shown) {
    if (t.type !== "scatter" || t.fill !== "toself" || !t.x || !t.x.length) continue;
    const key = vdScaleKey(t), log = ranges.log && key === "y";
    ctx.beginPath();
    let pen = false;
    t.x.forEach((x, i) => {
      const v = t.y[i];
      if (v === null || !isFinite(v) || (log && v <= 0)) return;
      const px = vdPos(u, x, "x"), py = vdPos(u, v, key);
      if (pen) ctx.lineTo(px, py); else { ctx.moveTo(px, py); pen = true; }
    });
    ctx.closePath();
    ctx.globalAlpha = t.opacity ?? 0.2;
    ctx.fillStyle = vdColour(t.line?.color || t.marker?.color, "#444");
    ctx.fill();
    ctx.globalAlpha = 1;
  }
  ctx.restore();
}

// Over the lines: markers, lone points of a line, the notes, the strip's label, the words
// of an empty panel.
function vdDrawAbove(u, view) {
  const { fig, ranges } = view, ctx = u.ctx, box = u.bbox, [x0, x1] = ranges.x, px = uPlot.pxRatio;
  ctx.save();
  ctx.setLineDash([]);  // a dotted series leaves its dash on the context
  ctx.beginPath();
  ctx.rect(box.left, box.top - 6 * px, box.width, box.height + 12 * px);
  ctx.clip();
  for (const t of view.shown) {
    if (t.type !== "scatter" || !t.x || !t.y || t.fill === "toself") continue;
    const key = vdScaleKey(t), log = ranges.log && key === "y", mode = t.mode || "lines";
    const colour = vdColour(t.line?.color || t.marker?.color, "#444");
    ctx.globalAlpha = t.opacity ?? 1;
    if (mode.includes("markers")) {
      const symbols = t.marker?.symbol, size = t.marker?.size ?? 6, mc = vdColour(t.marker?.color, colour);
      for (let i = 0; i < t.x.length; i++) {
        const v = t.y[i];
        if (v === null || !isFinite(v) || (log && v <= 0) || t.x[i] < x0 || t.x[i] > x1) continue;
        vdMarker(ctx, Array.isArray(symbols) ? symbols[i] : symbols, vdPos(u, t.x[i], "x"),
          vdPos(u, v, key), size, mc);
      }
    } else if (mode.includes("lines")) {
      for (const i of vdLone(t.x, t.y, log, x0, x1)) {
        vdMarker(ctx, "circle", vdPos(u, t.x[i], "x"), vdPos(u, t.y[i], key), 6, colour);
      }
    }
  }
  ctx.globalAlpha = 1;
  ctx.restore();
  ctx.save();
  ctx.textBaseline = "alphabetic";
  for (const a of fig.layout.annotations || []) {
    ctx.fillStyle = vdColour(a.font?.color, "#777");
    if (a.xref === "paper" && a.yref === "paper") {  // an empty panel says why
      ctx.font = vdUplotFont(12 * px);
      ctx.textAlign = "center";
      String(a.text).split("<br>").forEach((line, i) => {
        ctx.fillText(vdPlain(line), box.left + a.x * box.width, box.top + (1 - a.y) * box.height + 16 * px * i);
      });
    } else if (a.xref === "x" && a.x >= x0 && a.x <= x1 && vdPos(u, a.x, "x") < box.left + box.width - 30 * px) {
      ctx.font = vdUplotFont(9 * px);
      ctx.textAlign = "left";
      ctx.fillText(vdPlain(a.text), Math.round(vdPos(u, a.x, "x")) + 2 * px, box.top + box.height - 3 * px);
    }
  }
  const y3 = fig.layout.yaxis3;
  if (y3 && view.shown.some((t) => t.yaxis === "y3")) {
    ctx.font = vdUplotFont(11 * px);
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.fillStyle = vdColour(y3.tickfont?.color, "#c62828");
    ctx.fillText("non-finite", box.left - 6 * px, vdPos(u, 0.5, "y3"));
  }
  ctx.restore();
}

// What a chart must be made again for (the rest is setData and setSeries): the series,
// their looks and axes, the log scale, the axes shown, the height.
function vdUplotKey(fig, series, height, ranges) {
  const l = fig.layout;
  return JSON.stringify([height, (l.yaxis || {}).type, !!ranges.y2, !(l.xaxis && l.xaxis.visible === false),
    l.barmode, (l.xaxis || {}).ticktext, series.map((t) => [t.type, t.name, t.yaxis, t.line?.color,
      t.marker?.color, t.line?.width, t.line?.dash, t.opacity])]);
}

// uPlot's options for a panel. `view`: what the hooks read at draw time ({fig, shown, ranges}).
function vdUplotOpts(fig, series, view, width, height) {
  const l = fig.layout, m = l.margin || {}, log = (l.yaxis || {}).type === "log";
  const axesShown = !(l.xaxis && l.xaxis.visible === false);
  const y2 = !!view.ranges.y2;  // a right axis only when a shown trace is on it
  const left = Math.max(24, (m.l ?? 60) - 16), right = Math.max(24, (m.r ?? 20) - 16);
  const range = (key) => () => view.ranges[key] || [0, 1];
  return {
    width, height, legend: { show: false }, padding: [6, y2 ? 0 : (m.r ?? 20), 0, 0],
    cursor: { x: false, y: false, points: { show: false }, drag: { x: true, y: false, setScale: false },
      bind: { dblclick: () => null } },
    select: { show: true },
    scales: { x: { time: false, range: range("x") }, y: { distr: log ? 3 : 1, log: 10, range: range("y") },
      y2: { range: range("y2") }, y3: { range: range("y3") } },
    axes: [
      vdAxisOf(view, "x", l, { show: axesShown, size: Math.max(24, (m.b ?? 40) - 16) }),
      vdAxisOf(view, "y", l, { show: axesShown, size: left }),
      ...(y2 ? [vdAxisOf(view, "y2", l, { side: 1, size: right, show: axesShown })] : []),
    ],
    series: [{}, ...series.map((t) => vdIsColumn(t) ? {
      label: vdPlain(t.name), scale: vdScaleKey(t), points: { show: false }, width: 0,
      stroke: vdColour(t.marker?.color, "#444"), fill: vdColour(t.marker?.color, "#444"),
      alpha: t.opacity ?? 1, paths: vdColumnPaths(fig, series, t),
    } : {
      label: vdPlain(t.name), scale: vdScaleKey(t), spanGaps: false, points: { show: false },
      stroke: vdColour(t.line?.color || t.marker?.color, "#444"), width: t.line?.width ?? 2,
      alpha: t.opacity ?? 1, dash: t.line?.dash === "dot" ? [3, 3] : t.line?.dash === "dash" ? [6, 4] : undefined,
    })],
    hooks: { drawAxes: [(u) => vdDrawBelow(u, view)], draw: [(u) => vdDrawAbove(u, view)] },
  };
}
