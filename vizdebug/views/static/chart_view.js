// vizdebug dashboard charts, part 3 of 3: a panel in the page, with what a user does to
// it: hover for values, click a legend entry to hide or show its series, drag across a
// line panel to zoom its steps (double-click: all steps). The zoom and the legend's
// choices stay through the refreshes, as plotly's uirevision kept them; a chart follows
// its own div's width.

// What the pointer at (px, py) is on: {x, y, text, colour} or null.
function vdHoverLine(f, px, py) {
  let best = null;
  for (const t of f.shown) {
    if (t.type !== "scatter" || t.hoverinfo === "skip" || !t.x || !t.x.length) continue;
    const sy = vdScaleOf(f, t), axis = t.yaxis || "y";
    if (!sy) continue;
    const i = vdNearest(t.x, f.xOf(px)), v = t.y[i];
    if (v === null || !isFinite(v) || (f.log && axis === "y" && v <= 0)) continue;
    const d = Math.hypot(f.sx(t.x[i]) - px, sy(v) - py);
    if (d > 24 || (best && d >= best.d)) continue;
    const value = vdFormat(v, axis === "y2" ? f.y2Format : "");
    const xName = (t.hovertemplate || "").startsWith("step") ? "step" : "x";
    const text = t.text && t.text[i] ? vdPlain(t.text[i])
      : `${vdPlain(t.name)} · ${xName} ${t.x[i]}: ${value}`;
    best = { d, x: f.sx(t.x[i]), y: sy(v), text, colour: t.line?.color || t.marker?.color };
  }
  return best;
}

function vdHoverCell(f, px, py) {
  const row = Math.floor((py - f.top) / f.rowHeight);
  const name = f.categories[row];
  if (name === undefined) return null;
  if (f.heat) {
    const col = vdNearest(f.heat.x, f.xOf(px));
    const cell = (t) => (t.z && t.z[row] ? t.z[row][col] : null) ?? null;
    const zero = f.shown.some((t) => t.type === "heatmap" && t !== f.heat && cell(t) !== null);
    const z = cell(f.heat);
    const what = zero ? "gradient exactly 0" : z === null ? "not sampled"
      : `log10 |g| ${z.toFixed(2)}`;
    return { x: px, y: f.sy(row), text: `${vdPlain(name)} · step ${f.heat.x[col]}: ${what}` };
  }
  const slot = Math.floor((py - (f.sy(row) - f.rowHeight * 0.4)) / (f.rowHeight * 0.8 / f.bars.length));
  const t = f.bars[Math.min(Math.max(slot, 0), f.bars.length - 1)];
  if (!t) return null;
  const v = t.x[row];
  const why = t.customdata && t.customdata[row] ? ` (${vdPlain(t.customdata[row])})` : "";
  return { x: px, y: f.sy(row), text: `${vdPlain(name)} · ${vdPlain(t.name)}: ${vdFormat(v, ".0%")}${why}` };
}

// A file to the user's downloads.
function vdSave(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// What the chart shows now as a file: the SVG as drawn (or as `source()` writes it: a
// uPlot panel's, drawn from its spec by chart_panel.js), or that SVG painted on a canvas
// at twice its size, on white, as a PNG.
function vdExport(host, name, kind, source) {
  const text = source ? source() : (host.querySelector("svg.vd-chart-svg") &&
    new XMLSerializer().serializeToString(host.querySelector("svg.vd-chart-svg")));
  if (!text) return;
  const blob = new Blob([text], { type: "image/svg+xml" });
  if (kind === "svg") { vdSave(blob, `${name}.svg`); return; }
  const size = text.match(/<svg[^>]*?width="([\d.]+)"[^>]*?height="([\d.]+)"/) || [0, 600, 300];
  const w = +size[1], h = +size[2];
  const img = new Image(), url = URL.createObjectURL(blob);
  img.onload = () => {
    const canvas = document.createElement("canvas");
    [canvas.width, canvas.height] = [2 * w, 2 * h];
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(img, 0, 0, 2 * w, 2 * h);
    URL.revokeObjectURL(url);
    canvas.toBlob((png) => { if (png) vdSave(png, `${name}.png`); }, "image/png");
  };
  img.src = url;
}

// The chart's two small export buttons, at its bottom right (`source`: as for vdExport).
function vdExportBar(host, name, source) {
  const bar = document.createElement("div");
  bar.className = "vd-export";
  bar.style.cssText = "position:absolute;right:2px;bottom:2px;display:flex;gap:2px;opacity:0.6;z-index:1";
  for (const kind of ["svg", "png"]) {
    const button = document.createElement("button");
    Object.assign(button, { type: "button", textContent: kind.toUpperCase(),
      className: `vd-export-${kind}`, title: `Save this chart as ${kind.toUpperCase()}` });
    button.style.cssText = `font:10px ${VD_FONT};padding:0 4px;border:1px solid #bbb;` +
      "border-radius:3px;background:#fff;color:#333;cursor:pointer";
    button.addEventListener("mousedown", (event) => event.stopPropagation());
    button.addEventListener("click", (event) => { event.stopPropagation(); vdExport(host, name, kind, source); });
    bar.appendChild(button);
  }
  return bar;
}

// A chart in `div`: draw(fig) as often as wanted. `options.onZoom(range, pixels)` hears of
// each drag-zoom ([lo, hi] in x, and the plot's width in pixels) and of each reset (null):
// the dashboard asks the kernel for the points of that range; the chart has already
// zoomed the data it holds, which is all a page without a kernel gets.
function vdChart(div, options = {}) {
  let fig = null, frame = null, drag = null, width = div.clientWidth || 600;
  const state = { zoom: null, legend: new Map() };
  div.innerHTML = `<div class="vd-chart" style="position:relative"></div>`;
  const host = div.firstChild;
  const bar = vdExportBar(host, `vizdebug-${div.dataset.panel || "chart"}`);
  const tip = document.createElement("div");
  tip.className = "vd-tip";
  // dark text on the white tip, whatever the theme's text colour (the chart is a white sheet)
  tip.style.cssText = "position:absolute;display:none;pointer-events:none;background:#fff;color:#222;" +
    `border:1px solid #bbb;border-radius:3px;padding:2px 6px;font:12px ${VD_FONT};` +
    "white-space:nowrap;z-index:2";
  const draw = () => {
    if (!fig) return;
    const out = vdPanelSvg(fig, width, state);
    frame = out.frame;
    host.innerHTML = out.svg;
    host.appendChild(tip);
    host.appendChild(bar);
    div.style.height = `${out.height}px`;
    div.data = fig.data; // as on a plotly div: what is drawn, for tests and the console
    div.layout = fig.layout;
    div.dataset.yscale = frame.log ? "log" : "linear";
    div.dataset.xrange = frame.x.map((v) => +v.toPrecision(6)).join(",");
  };
  const local = (event) => {
    const box = host.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  };
  const inside = ([px, py]) => frame && px >= frame.left && px <= frame.right &&
    py >= frame.top && py <= frame.bottom;
  const part = (name) => host.querySelector(name);
  const hover = (at) => {
    const hit = inside(at) && drag === null
      ? (frame.categories ? vdHoverCell(frame, ...at) : vdHoverLine(frame, ...at)) : null;
    const dot = part(".vd-hover-dot");
    if (!hit) { tip.style.display = "none"; if (dot) dot.setAttribute("display", "none"); return; }
    tip.textContent = hit.text;
    tip.style.display = "block";
    tip.style.left = `${Math.max(0, Math.min(hit.x + 12, width - tip.offsetWidth - 4))}px`;
    tip.style.top = `${Math.max(0, hit.y - 30)}px`;
    if (dot && hit.colour) {
      ["cx", "cy", "fill", "display"].forEach((k, i) => dot.setAttribute(k, [hit.x, hit.y, hit.colour, ""][i]));
    }
  };
  host.addEventListener("click", (event) => {
    const item = event.target.closest(".vd-legend-item");
    if (!item || !fig) return;
    const trace = fig.data.find((t) => vdGroup(t) === item.dataset.group);
    state.legend.set(item.dataset.group, !vdShown(trace, state.legend));
    draw();
  });
  host.addEventListener("mousedown", (event) => {
    const at = local(event);
    if (inside(at) && !frame.categories) drag = at[0];
  });
  host.addEventListener("mousemove", (event) => {
    const at = local(event), box = part(".vd-zoom-box");
    if (drag !== null && box) {
      const a = Math.max(frame.left, Math.min(drag, at[0]));
      const b = Math.min(frame.right, Math.max(drag, at[0]));
      box.setAttribute("x", a);
      box.setAttribute("width", b - a);
      box.setAttribute("display", "");
    }
    hover(at);
  });
  const endDrag = (event) => {
    if (drag === null) return;
    const from = drag, to = local(event)[0];
    drag = null;
    const box = part(".vd-zoom-box");
    if (box) box.setAttribute("display", "none");
    if (Math.abs(to - from) < 5 || !frame) return; // a click, not a drag: the SVG stays
    const a = frame.xOf(Math.max(frame.left, Math.min(from, to)));
    const b = frame.xOf(Math.min(frame.right, Math.max(from, to)));
    if (b > a) state.zoom = [a, b];
    draw();
    if (b > a && options.onZoom) options.onZoom([a, b], frame.right - frame.left);
  };
  host.addEventListener("mouseup", endDrag);
  host.addEventListener("mouseleave", (event) => { tip.style.display = "none"; endDrag(event); });
  host.addEventListener("dblclick", () => {
    const was = state.zoom;
    state.zoom = null;
    draw();
    if (was && options.onZoom) options.onZoom(null, frame ? frame.right - frame.left : 0);
  });
  // Redrawn at the div's new width, once a frame at most (the height is the chart's own,
  // set on the div: a container's resize can never collapse it).
  let pending = 0;
  const resized = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => {
    if (pending) return;
    pending = requestAnimationFrame(() => {
      pending = 0;
      const now = div.clientWidth;
      if (now && now !== width) { width = now; draw(); }
    });
  });
  if (resized) resized.observe(div);
  return {
    draw(next) { fig = next; draw(); },
    zoom() { return state.zoom; },
    purge() { if (resized) resized.disconnect(); host.innerHTML = ""; fig = null; },
  };
}

// The dashboard's panels in rows: the curves alone, then two to a row (the live widget
// and a saved page lay them out alike).
const VD_ROWS = [["curves"], ["grads", "health"], ["timing", "system"]];

function vdPanelGrid() {
  return VD_ROWS.map((row) => `<div class="vd-row" style="display:grid;gap:8px;` +
    `grid-template-columns:${row.length > 1 ? "minmax(0,1.35fr) minmax(0,1fr)" : "minmax(0,1fr)"}">` +
    row.map((name) => `<div class="vd-panel vd-panel-${name}" data-panel="${name}"` +
      ` style="width:100%;min-width:0"></div>`).join("") + "</div>").join("");
}

// A saved page (a report, Dashboard.save): the panels laid out in the element `id`.
function vdDrawStatic(id, panels) {
  const grid = document.getElementById(id);
  if (!grid) return;
  grid.innerHTML = vdPanelGrid();
  grid.querySelectorAll(".vd-panel").forEach((div) => {
    if (panels[div.dataset.panel]) vdChart(div).draw(panels[div.dataset.panel]);
  });
}
