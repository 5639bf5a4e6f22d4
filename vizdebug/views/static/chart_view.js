// vizdebug dashboard charts, part 3 of 3: an SVG panel (the heatmap, the grouped bars) in
// the page, with what a user does to it: hover for values, click a legend entry to hide or
// show its series; the legend's choices stay through the refreshes, as plotly's uirevision
// kept them; a chart follows its own div's width. The line panels are uPlot charts
// (chart_uplot_view.js), live and on saved pages; their SVG and PNG export is drawn here.

// What the pointer at (px, py) is on (a heatmap cell, a bar): {x, y, text} or null.
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

// An SVG chart (a heatmap or grouped bars) in `div`: draw(fig) as often as wanted.
function vdChart(div) {
  let fig = null, frame = null, width = div.clientWidth || 600;
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
  };
  const hover = (event) => {
    const box = host.getBoundingClientRect();
    const px = event.clientX - box.left, py = event.clientY - box.top;
    const inside = frame && frame.categories && px >= frame.left && px <= frame.right &&
      py >= frame.top && py <= frame.bottom;
    const hit = inside ? vdHoverCell(frame, px, py) : null;
    if (!hit) { tip.style.display = "none"; return; }
    tip.textContent = hit.text;
    tip.style.display = "block";
    tip.style.left = `${Math.max(0, Math.min(hit.x + 12, width - tip.offsetWidth - 4))}px`;
    tip.style.top = `${Math.max(0, hit.y - 30)}px`;
  };
  host.addEventListener("click", (event) => {
    const item = event.target.closest(".vd-legend-item");
    if (!item || !fig) return;
    const trace = fig.data.find((t) => vdGroup(t) === item.dataset.group);
    state.legend.set(item.dataset.group, !vdShown(trace, state.legend));
    draw();
  });
  host.addEventListener("mousemove", hover);
  host.addEventListener("mouseleave", () => { tip.style.display = "none"; });
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
