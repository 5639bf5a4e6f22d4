// vizdebug dashboard charts, part 2 of 3: one panel dict (plotly-shaped, from
// _dashboard_figure.py) as one SVG string: the heatmap and grouped-bar panels as the page
// shows them (vdChart), and any panel as its SVG export (the line panels are drawn by
// uPlot, whose canvas has no SVG form; vdFrame's ranges are theirs too). What the panels
// use is drawn: scatter lines and markers on a main axis (linear or log), a right axis and
// the non-finite band; a heatmap with its colour bar; horizontal grouped bars on
// categories; epoch lines, notes, shapes; a legend. Pure apart from the heatmap's image
// (a canvas, when there is a document).

// Where everything goes: the plot's pixel frame and a scale per axis. `categories`: the
// rows of a heatmap or bar panel (the first at the top), else the y axis is numeric.
function vdFrame(fig, box, state) {
  const layout = fig.layout;
  const shown = fig.data.filter((t) => vdShown(t, state.legend));
  const onAxis = (axis) => shown.filter((t) => (t.yaxis || "y") === axis);
  const heat = shown.find((t) => t.type === "heatmap");
  // horizontal bars are rows of categories; vertical ones (drift's) are drawn as series
  const bars = shown.filter((t) => t.type === "bar" && t.orientation !== "v");
  const rows = fig.data.find((t) => t.type === "heatmap" || (t.type === "bar" && t.orientation !== "v"));
  const f = { left: box.left, right: box.right, top: box.top, bottom: box.bottom, shown,
    heat, bars, categories: rows ? rows.y || [] : null };
  const lin = (a, b, p, q) => (v) => p + (v - a) * (q - p) / ((b - a) || 1);
  let x0 = Infinity, x1 = -Infinity;
  if (heat && heat.x && heat.x.length) {  // cells centred on their x, as plotly draws them
    const d = heat.x.length > 1 ? heat.x[1] - heat.x[0] : 1;
    [x0, x1] = [heat.x[0] - d / 2, heat.x[heat.x.length - 1] + d / 2];
  } else if (bars.length || rows) {
    [x0, x1] = (layout.xaxis || {}).range || [0, 1];
  } else {
    for (const t of shown) for (const v of t.x || []) if (v !== null) { x0 = Math.min(x0, v); x1 = Math.max(x1, v); }
    if (!(x0 <= x1)) { x0 = 0; x1 = 1; }
    if (x0 === x1) { x0 -= 1; x1 += 1; }
    if (state.zoom) [x0, x1] = state.zoom;
  }
  f.x = [x0, x1];
  f.sx = lin(x0, x1, f.left, f.right);
  f.xOf = lin(f.left, f.right, x0, x1);
  if (f.categories) {
    const n = Math.max(f.categories.length, 1), h = (f.bottom - f.top) / n;
    f.rowHeight = h;
    f.sy = (i) => f.top + (i + 0.5) * h;
    f.ymid = (f.top + f.bottom) / 2;
    return f;
  }
  const yaxis = layout.yaxis || {}, domain = yaxis.domain || [0, 1];
  const log = yaxis.type === "log";
  let yr = !log && yaxis.range && !state.zoom ? yaxis.range : vdExtent(onAxis("y"), x0, x1, log);
  if (!log && yaxis.range && state.zoom) {  // zoomed: fit the data in view, within the cut
    const fit = vdExtent(onAxis("y"), x0, x1, false);
    yr = [Math.max(fit[0], yaxis.range[0]), Math.min(fit[1], yaxis.range[1])];
    if (!(yr[0] < yr[1])) yr = yaxis.range;
  }
  const py = (d) => f.bottom - d * (f.bottom - f.top);
  const main = lin(yr[0], yr[1], py(domain[0]), py(domain[1]));
  Object.assign(f, { log, y: yr, ymid: py((domain[0] + domain[1]) / 2),
    sy: log ? (v) => main(Math.log10(v)) : main });
  const y2 = layout.yaxis2;
  if (y2 && onAxis("y2").length) {
    f.y2 = y2.range || vdExtent(onAxis("y2"), x0, x1, false);
    f.y2Format = y2.tickformat;
    f.sy2 = lin(f.y2[0], f.y2[1], py(domain[0]), py(domain[1]));
  }
  const y3 = layout.yaxis3;
  if (y3 && onAxis("y3").length) {
    f.y3 = y3;
    f.sy3 = lin(0, 1, py(y3.domain[0]), py(y3.domain[1]));
  }
  return f;
}

function vdAxisTitle(layout, axis) {
  return vdEsc(vdPlain(((layout[axis] || {}).title || {}).text || ""));
}

function vdAxes(layout, f, parts) {
  const w = f.right - f.left;
  const xfmt = (layout.xaxis || {}).tickformat;
  const xt = vdTicks(f.x[0], f.x[1], Math.max(2, Math.min(7, Math.floor(w / 80))));
  const xl = vdTickLabels(xt, xfmt);
  xt.forEach((v, i) => {
    const px = vdPx(f.sx(v));
    parts.push(`<line x1="${px}" x2="${px}" y1="${f.top}" y2="${f.bottom}" stroke="#eee"/>`,
      `<text x="${px}" y="${f.bottom + 15}" text-anchor="middle">${xl[i]}</text>`);
  });
  parts.push(`<text x="${(f.left + f.right) / 2}" y="${f.bottom + 33}" text-anchor="middle">` +
    `${vdAxisTitle(layout, "xaxis")}</text>`);
  if (f.categories) {
    const room = Math.max(4, Math.floor((f.left - 8) / 5.6)); // ~5.6 px a 10 px character
    f.categories.forEach((name, i) => {
      let text = vdPlain(name);
      if (text.length > room) text = `\u2026${text.slice(text.length - room + 1)}`;
      parts.push(`<text x="${f.left - 6}" y="${Math.round(f.sy(i))}" dy="0.32em" font-size="10" ` +
        `text-anchor="end">${vdEsc(text)}</text>`);
    });
    return;
  }
  const yt = (f.log ? vdLogTicks(f.y[0], f.y[1]) : vdTicks(f.y[0], f.y[1], 6))
    .map((v) => (f.log ? Math.pow(10, v) : v));
  const yl = vdTickLabels(yt);
  yt.forEach((value, i) => {
    const py = vdPx(f.sy(value));
    parts.push(`<line x1="${f.left}" x2="${f.right}" y1="${py}" y2="${py}" stroke="#eee"/>`,
      `<text x="${f.left - 6}" y="${py}" dy="0.32em" text-anchor="end">${yl[i]}</text>`);
  });
  parts.push(`<text transform="translate(${f.left - 46},${f.ymid}) rotate(-90)" ` +
    `text-anchor="middle">${vdAxisTitle(layout, "yaxis")}</text>`);
  if (f.y2) {
    const t2 = vdTicks(f.y2[0], f.y2[1], 5), l2 = vdTickLabels(t2, f.y2Format);
    t2.forEach((v, i) => {
      parts.push(`<text x="${f.right + 6}" y="${Math.round(f.sy2(v))}" dy="0.32em">${l2[i]}</text>`);
    });
    parts.push(`<text transform="translate(${f.right + 50},${f.ymid}) rotate(90)" ` +
      `text-anchor="middle">${vdAxisTitle(layout, "yaxis2")}</text>`);
  }
  if (f.y3) {
    parts.push(`<text x="${f.left - 6}" y="${Math.round(f.sy3(0.5))}" dy="0.32em" text-anchor="end" ` +
      `fill="${vdColour(f.y3.tickfont?.color, "#c62828")}">non-finite</text>`);
  }
}

// Epoch lines and their labels, boxes round rows (a finding's evidence), notes.
function vdMarks(layout, f, parts) {
  const inX = (v) => v >= f.x[0] && v <= f.x[1];
  for (const s of layout.shapes || []) {
    const colour = vdColour(s.line?.color, "#d0d0d0");
    if (s.type === "line" && s.xref === "x" && inX(s.x0)) {
      const px = vdPx(f.sx(s.x0));
      parts.push(`<line x1="${px}" x2="${px}" y1="${f.bottom}" y2="${f.top}" stroke="${colour}" ` +
        `stroke-dasharray="2,3"/>`);
    } else if (s.type === "rect" && s.xref === "paper" && f.categories) {
      const y0 = f.sy(s.y0) - f.rowHeight / 2, y1 = f.sy(s.y1) - f.rowHeight / 2;
      parts.push(`<rect class="vd-mark" x="${f.left + 1}" y="${y0}" width="${f.right - f.left - 2}" ` +
        `height="${y1 - y0}" fill="none" stroke="${colour}" stroke-width="${s.line?.width ?? 2}"/>`);
    }
  }
  for (const a of layout.annotations || []) {
    const fill = vdColour(a.font?.color, "#777");
    if (a.xref === "paper" && a.yref === "paper") {  // an empty panel says why
      String(a.text).split("<br>").forEach((line, i) => {
        parts.push(`<text x="${f.left + a.x * (f.right - f.left)}" y="${f.bottom - a.y *
          (f.bottom - f.top) + 16 * i}" text-anchor="middle" font-size="12" fill="${fill}">` +
          `${vdEsc(vdPlain(line))}</text>`);
      });
    } else if (a.xref === "x" && inX(a.x) && f.sx(a.x) < f.right - 30) { // room for its text
      parts.push(`<text x="${Math.round(f.sx(a.x)) + 2}" y="${f.bottom - 3}" font-size="9" ` +
        `fill="${fill}">${vdEsc(vdPlain(a.text))}</text>`);
    }
  }
}

function vdSymbol(symbol, x, y, size, colour) {
  const r = size / 2;
  if (symbol === "x") {
    return `<path d="M${x - r},${y - r}L${x + r},${y + r}M${x - r},${y + r}L${x + r},${y - r}" ` +
      `stroke="${colour}" stroke-width="2"/>`;
  }
  if (symbol === "triangle-up" || symbol === "triangle-down") {
    const s = symbol === "triangle-up" ? -1 : 1;
    return `<path d="M${x - r},${y - s * r * 0.6}L${x + r},${y - s * r * 0.6}L${x},${y + s * r}Z" ` +
      `fill="${colour}"/>`;
  }
  return `<circle cx="${x}" cy="${y}" r="${r * 0.7}" fill="${colour}"/>`;
}

function vdScaleOf(f, trace) {
  const axis = trace.yaxis || "y";
  return axis === "y2" ? f.sy2 : axis === "y3" ? f.sy3 : f.sy;
}

// Points with no drawable neighbour, within [x0, x1]: a line through one point has no
// length, so each is drawn as a dot (a metric logged once, the one system sample of a
// short run, a value between two NaNs) instead of not at all (by uPlot's hooks and here).
function vdLone(x, y, log, x0, x1) {
  const out = [];
  let prev = false, cur = false;
  for (let i = 0; i < y.length; i++) {
    if (i === 0) { const v = y[0]; cur = v !== null && isFinite(v) && !(log && v <= 0) && x[0] !== null; }
    const w = y[i + 1];
    const next = i + 1 < y.length && w !== null && isFinite(w) && !(log && w <= 0) && x[i + 1] !== null;
    if (cur && !prev && !next && x[i] >= x0 && x[i] <= x1) out.push(i);
    prev = cur;
    cur = next;
  }
  return out;
}

function vdLines(f, parts) {
  for (const t of f.shown) {
    const sy = vdScaleOf(f, t);
    if (t.type !== "scatter" || !sy || !t.x || !t.y) continue;
    const colour = vdColour(t.line?.color || t.marker?.color, "#444");
    const mode = t.mode || "lines", log = f.log && (t.yaxis || "y") === "y";
    parts.push(`<g opacity="${t.opacity ?? 1}">`);
    if (t.fill === "toself") {  // a band: the outline filled, no line
      parts.push(`<path d="${vdLinePath(t.x, t.y, f.sx, sy, log)}Z" fill="${colour}" stroke="none"/></g>`);
      continue;
    }
    if (mode.includes("lines")) {
      const dash = t.line?.dash === "dot" ? ' stroke-dasharray="3,3"' : "";
      parts.push(`<path d="${vdLinePath(t.x, t.y, f.sx, sy, log)}" fill="none" stroke="${colour}" ` +
        `stroke-width="${t.line?.width ?? 2}" stroke-linejoin="round"${dash}/>`);
      if (!mode.includes("markers")) {
        for (const i of vdLone(t.x, t.y, log, -Infinity, Infinity)) {
          parts.push(vdSymbol("circle", vdPx(f.sx(t.x[i])), vdPx(sy(t.y[i])), 6, colour));
        }
      }
    }
    if (mode.includes("markers")) {
      const symbols = t.marker?.symbol, size = t.marker?.size ?? 6;
      const mc = vdColour(t.marker?.color, colour);
      for (let i = 0; i < t.x.length; i++) {
        const v = t.y[i];
        if (v === null || !isFinite(v) || (log && v <= 0) || t.x[i] < f.x[0] || t.x[i] > f.x[1]) continue;
        parts.push(vdSymbol(Array.isArray(symbols) ? symbols[i] : symbols,
          vdPx(f.sx(t.x[i])), vdPx(sy(v)), size, mc));
      }
    }
    parts.push("</g>");
  }
}

// The heatmap as an image of one pixel per cell (null: transparent), and the rows drawn
// over it by a second, one-colour heatmap (the exact zeros).
function vdHeatImage(f, layers) {
  if (typeof document === "undefined" || !f.heat) return "";
  const rows = f.categories.length, cols = (f.heat.x || []).length;
  if (!rows || !cols) return "";
  const canvas = document.createElement("canvas");
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext("2d"), img = ctx.createImageData(cols, rows);
  for (const { trace, colour } of layers) {
    for (let r = 0; r < rows; r++) {
      const row = trace.z[r] || [];
      for (let c = 0; c < cols; c++) {
        const v = row[c];
        if (v === null || v === undefined || !isFinite(v)) continue;
        const rgb = colour(v), k = 4 * (r * cols + c);
        img.data.set([rgb[0], rgb[1], rgb[2], 255], k);
      }
    }
  }
  ctx.putImageData(img, 0, 0);
  return `<image href="${canvas.toDataURL()}" x="${f.sx(f.x[0])}" y="${f.top}" ` +
    `width="${f.right - f.left}" height="${f.bottom - f.top}" preserveAspectRatio="none" ` +
    `style="image-rendering:pixelated"/>`;
}

function vdHeatmap(f, parts, uid) {
  const traces = f.shown.filter((t) => t.type === "heatmap" && t.z);
  if (!traces.length) return;
  const main = traces[0];
  let lo = Infinity, hi = -Infinity;
  for (const row of main.z) for (const v of row) if (v !== null && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!(lo <= hi)) { lo = 0; hi = 1; }
  if (lo === hi) { lo -= 0.5; hi += 0.5; }
  f.zRange = [lo, hi];
  const layers = traces.map((trace, i) => {
    const scale = trace.colorscale;
    const fixed = i > 0 && Array.isArray(scale) ? scale[0][1] : null;
    const rgb = fixed && /^#[0-9a-f]{6}$/i.test(fixed) ? [1, 3, 5].map((k) => parseInt(fixed.slice(k, k + 2), 16)) : null;
    return { trace, colour: rgb ? () => rgb : (v) => vdViridis((v - lo) / (hi - lo)) };
  });
  parts.push(vdHeatImage(f, layers));
  if (main.showscale === false) return;
  const x = f.right + 14, h = f.bottom - f.top;
  const stops = VD_VIRIDIS.map((c, i) => `<stop offset="${i / (VD_VIRIDIS.length - 1)}" stop-color="${c}"/>`);
  parts.push(`<defs><linearGradient id="vd-viridis-${uid}" x1="0" y1="1" x2="0" y2="0">${stops.join("")}` +
    `</linearGradient></defs><rect x="${x}" y="${f.top}" width="10" height="${h}" fill="url(#vd-viridis-${uid})"/>`);
  for (const v of vdTicks(lo, hi, 5)) {
    parts.push(`<text x="${x + 14}" y="${Math.round(f.bottom - (v - lo) / (hi - lo) * h)}" ` +
      `dy="0.32em">${vdFormat(v)}</text>`);
  }
  const title = vdEsc(vdPlain(main.colorbar?.title?.text || ""));
  parts.push(`<text transform="translate(${x + 58},${f.ymid}) rotate(90)" text-anchor="middle">` +
    `${title}</text>`);
}

// Horizontal bars grouped per category: each shown trace its own slice of the row.
function vdBars(f, parts) {
  const n = f.bars.length;
  f.bars.forEach((t, k) => {
    const colour = vdColour(t.marker?.color, "#444");
    const slot = (f.rowHeight * 0.8) / n;
    (t.x || []).forEach((v, i) => {
      if (v === null || !isFinite(v) || v <= 0) return;
      const y = f.sy(i) - f.rowHeight * 0.4 + k * slot;
      const x0 = f.sx(Math.max(f.x[0], 0));
      parts.push(`<rect x="${x0}" y="${vdPx(y)}" width="${Math.max(0, f.sx(Math.min(v, f.x[1])) - x0)}" ` +
        `height="${vdPx(slot)}" fill="${colour}"/>`);
    });
  });
}

// Pixels `text` takes at 11 px in the charts' font: measured where there is a canvas,
// else ~6.6 px a character.
let vdMeasure = null;
function vdTextWidth(text) {
  if (vdMeasure === null) {
    const canvas = typeof document === "undefined" ? null : document.createElement("canvas");
    vdMeasure = (canvas && canvas.getContext("2d")) || false;
    if (vdMeasure) vdMeasure.font = `11px ${VD_FONT}`;
  }
  return vdMeasure ? Math.ceil(vdMeasure.measureText(text).width) : 6.6 * text.length;
}

// The legend: one entry per legend group, in rows of at most `room` pixels.
function vdLegendRows(fig, legend, room) {
  const seen = new Map();
  for (const t of fig.data) {
    if (t.showlegend === false || seen.has(vdGroup(t))) continue;
    seen.set(vdGroup(t), t);
  }
  const rows = [[]];
  let used = 0;
  for (const [group, t] of seen) {
    const text = vdPlain(t.name);
    const item = { group, full: text, text: text.length > 40 ? `${text.slice(0, 39)}\u2026` : text,
      colour: vdColour(t.line?.color || t.marker?.color, "#444"), bar: t.type === "bar",
      dash: t.line?.dash === "dot", on: vdShown(t, legend) };
    item.w = 30 + vdTextWidth(item.text);
    if (used + item.w > room && rows[rows.length - 1].length) { rows.push([]); used = 0; }
    rows[rows.length - 1].push(item);
    used += item.w;
  }
  return rows[0].length ? rows : [];
}

function vdLegendSvg(rows, x, y, alignRight) {
  const parts = [];
  rows.forEach((row, r) => {
    let at = alignRight ? x - row.reduce((s, item) => s + item.w, 0) : x;
    const base = y + 18 * r;
    for (const item of row) {
      const key = item.bar
        ? `<rect x="${at + 6}" y="${base - 6}" width="10" height="10" fill="${item.colour}"/>`
        : `<line x1="${at + 2}" x2="${at + 22}" y1="${base - 1}" y2="${base - 1}" stroke="${item.colour}" ` +
          `stroke-width="2"${item.dash ? ' stroke-dasharray="3,3"' : ""}/>`;
      parts.push(`<g class="vd-legend-item" data-group="${vdEsc(item.group)}" style="cursor:pointer" ` +
        `opacity="${item.on ? 1 : 0.4}"><title>${vdEsc(item.full)}</title>` +
        `<rect x="${at}" y="${base - 9}" width="${item.w - 4}" ` +
        `height="16" fill="transparent"/>${key}<text class="vd-legend-text" x="${at + 26}" ` +
        `y="${base + 3}">${vdEsc(item.text)}</text></g>`);
      at += item.w;
    }
  });
  return parts.join("");
}

// The whole panel: {svg, frame, height}. `state`: {zoom, legend} kept by the view.
function vdPanelSvg(fig, width, state) {
  const layout = fig.layout, m = layout.margin || {};
  const bottomLegend = layout.showlegend && (layout.legend?.y ?? 1) < 0;
  const legend = layout.showlegend
    ? vdLegendRows(fig, state.legend, bottomLegend ? width - 20 : width * 0.7) : [];
  const above = bottomLegend ? 0 : Math.max(0, legend.length - 1) * 18;
  const below = bottomLegend ? 18 * legend.length + 8 : 0;
  const height = (layout.height || 300) + above + below;
  const scale = fig.data.some((t) => t.type === "heatmap" && t.showscale !== false);
  const box = { left: m.l ?? 60, top: (m.t ?? 34) + above,
    right: width - (m.r ?? 20) - (scale ? 76 : 0), bottom: height - (m.b ?? 40) - below };
  const f = vdFrame(fig, box, state);
  const parts = [`<svg class="vd-chart-svg" xmlns="http://www.w3.org/2000/svg" width="${width}" ` +
    `height="${height}" font-family="${VD_FONT}" font-size="11" fill="#444" ` +
    `style="display:block;user-select:none">`,
  // a white sheet, as plotly's paper: dark text must stay legible on a dark theme
  `<rect width="${width}" height="${height}" fill="#fff"/>`,
  `<text x="4" y="18" font-size="13">${vdRich(layout.title?.text)}</text>`];
  if (!(layout.xaxis && layout.xaxis.visible === false)) vdAxes(layout, f, parts);
  const uid = Math.random().toString(36).slice(2, 9); // ids unique among the page's charts
  vdHeatmap(f, parts, uid);
  vdBars(f, parts);
  vdMarks(layout, f, parts);
  const clip = `vd-clip-${uid}`;
  parts.push(`<clipPath id="${clip}"><rect x="${f.left}" y="${f.top - 6}" width="${f.right - f.left}" ` +
    `height="${f.bottom - f.top + 12}"/></clipPath><g clip-path="url(#${clip})">`);
  vdLines(f, parts);
  parts.push("</g>");
  if (legend.length) {
    parts.push(bottomLegend ? vdLegendSvg(legend, f.left, f.bottom + 38, false)
      : vdLegendSvg(legend, f.right, 12, true));
  }
  parts.push(`<rect class="vd-plot-area" x="${f.left}" y="${f.top}" width="${f.right - f.left}" ` +
    `height="${f.bottom - f.top}" fill="transparent"/>`, "</svg>");
  return { svg: parts.join(""), frame: f, height };
}
