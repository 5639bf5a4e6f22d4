// vizdebug dashboard charts, the line panels on uPlot, part 2 of 2: a line panel in the
// page with what a user does to it, as vdChart (chart_view.js) does for the SVG panels:
// hover for values, a legend entry hides or shows its series, a drag across the plot zooms
// its steps (double-click: all steps), export as SVG or PNG (both drawn from the spec by
// the SVG renderer, chart_panel.js: uPlot's canvas has no SVG form), the div's width
// followed. The chart is kept between refreshes: a redraw is setData (and setSeries for
// the legend's choices); it is made again only when its series or axes change.

// A title in the kernel's pseudo-HTML (<b>, <br>, <span style='color:...'>) as HTML:
// those tags only, all text escaped.
function vdRichHtml(markup) {
  const out = [];
  for (const token of String(markup ?? "").split(/(<[^>]*>)/)) {
    if (!token) continue;
    const tag = token.match(/^<(\/?)(b|span|br)\b([^>]*)>$/i);
    if (!tag) { out.push(vdEsc(vdPlain(token))); continue; }
    const [, close, name, rest] = tag;
    if (name.toLowerCase() === "br") out.push(" ");
    else if (close) out.push(`</${name.toLowerCase()}>`);
    else if (name.toLowerCase() === "b") out.push("<b>");
    else {
      const c = vdColour(((rest.match(/color:\s*([^;'"]+)/) || [])[1] || "").trim(), null);
      out.push(c ? `<span style="color:${c}">` : "<span>");
    }
  }
  return out.join("");
}

// The legend as HTML: one entry per legend group (a click toggles its series).
function vdLegendHtml(fig, legend) {
  const rows = vdLegendRows(fig, legend, Infinity);
  return (rows[0] || []).map((item) => {
    const dash = item.dash ? ' stroke-dasharray="3,3"' : "";
    return `<span class="vd-legend-item" data-group="${vdEsc(item.group)}" title="${vdEsc(item.full)}" ` +
      `style="cursor:pointer;opacity:${item.on ? 1 : 0.4};display:inline-flex;align-items:center;gap:4px;` +
      `margin-left:10px;white-space:nowrap"><svg width="20" height="8" aria-hidden="true"><line x1="0" x2="20" ` +
      `y1="4" y2="4" stroke="${item.colour}" stroke-width="2"${dash}/></svg>` +
      `<span class="vd-legend-text">${vdEsc(item.text)}</span></span>`;
  }).join("");
}

// What the pointer at (px, py) (CSS pixels in the plot) is on: {x, y, text, colour} or null.
function vdUplotHover(u, view, px, py) {
  let best = null;
  const xAt = u.posToVal(px, "x");
  for (const t of view.shown) {
    const column = vdIsColumn(t);  // a bar: the pointer anywhere over its slot
    if ((t.type !== "scatter" && !column) || t.hoverinfo === "skip" || t.fill === "toself" || !t.x || !t.x.length) continue;
    const key = vdScaleKey(t);
    if (!view.ranges[key]) continue;
    const i = vdNearest(t.x, xAt), v = t.y[i];
    if (v === null || !isFinite(v) || (view.ranges.log && key === "y" && v <= 0)) continue;
    const x = u.valToPos(t.x[i], "x"), y = u.valToPos(v, key);
    const d = column ? Math.abs(x - px) : Math.hypot(x - px, y - py);
    if (d > 24 || (best && d >= best.d)) continue;
    const value = vdFormat(v, key === "y2" ? (view.fig.layout.yaxis2 || {}).tickformat : "");
    const xName = (t.hovertemplate || "").startsWith("step") ? "step" : "x";
    const text = t.text && t.text[i] ? vdPlain(t.text[i]) : `${vdPlain(t.name)} · ${xName} ${t.x[i]}: ${value}`;
    best = { d, x, y, text, colour: vdColour(t.line?.color || t.marker?.color, "#444") };
  }
  return best;
}

const VD_TIP_CSS = "position:absolute;display:none;pointer-events:none;background:#fff;color:#222;" +
  "border:1px solid #bbb;border-radius:3px;padding:2px 6px;white-space:nowrap;z-index:2;font:12px ";

// A line chart in `div`, drawn by uPlot: draw(fig) as often as wanted; options.onZoom as
// for vdChart (the dashboard asks the kernel for the points of the range); vertical bar
// traces (the drift explorer's) are drawn as bars.
function vdLineChart(div, options = {}) {
  let u = null, key = "", series = [], width = div.clientWidth || 600, drag = false;
  const state = { zoom: null, legend: new Map() };
  const view = { fig: null, shown: [], ranges: null };
  div.innerHTML = `<div class="vd-chart vd-chart-uplot" style="position:relative;background:#fff;color:#444;` +
    `font:11px ${VD_FONT}"><div class="vd-chart-head" style="display:flex;align-items:flex-start;` +
    `gap:8px;padding:4px 4px 0"><span class="vd-chart-title" style="font-size:13px;flex:0 1 auto"></span>` +
    `<span class="vd-legend" style="margin-left:auto;display:flex;flex-wrap:wrap;justify-content:flex-end;` +
    `row-gap:2px"></span></div><div class="vd-uplot"></div></div>`;
  const host = div.firstChild, head = host.firstChild, plot = host.lastChild;
  const title = head.firstChild, legendEl = head.lastChild;
  const tip = document.createElement("div"), dot = document.createElement("div");
  tip.className = "vd-tip";
  tip.style.cssText = VD_TIP_CSS + VD_FONT;
  dot.className = "vd-hover-dot";
  dot.style.cssText = "position:absolute;display:none;pointer-events:none;width:8px;height:8px;" +
    "margin:-5px 0 0 -5px;border-radius:50%;border:1.5px solid #fff;z-index:2";
  const svgNow = () => vdPanelSvg(view.fig, width, state).svg;  // what export writes
  host.append(tip, dot);
  // export draws the spec with the SVG panels (chart_panel.js), which know the dashboard's
  // traces only: the drift and embedding charts go without (options.exportable false)
  if (options.exportable !== false) host.append(vdExportBar(host, `vizdebug-${div.dataset.panel || "chart"}`, svgNow));
  // the title's and legend's row, measured only when their text or the width changed (a
  // read of offsetHeight after a write forces the whole page's layout: in JupyterLab that
  // cost more than the chart's redraw)
  let headText = null, headAt = 0;
  const setHead = (text) => {
    if (text[0] === headText?.[0] && text[1] === headText?.[1]) return;
    headText = text;
    [title.innerHTML, legendEl.innerHTML] = text;
    headAt = 0;
  };
  const plotHeight = () => {
    if (!headAt) headAt = Math.max(((view.fig.layout.margin || {}).t ?? 34) - 6, head.offsetHeight);
    return Math.max(80, (view.fig.layout.height || 300) - headAt);
  };
  const hideTip = () => { tip.style.display = "none"; dot.style.display = "none"; };
  const local = (event) => {
    const box = u.over.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  };
  const hover = (event) => {
    if (!u || drag) { hideTip(); return; }
    const [px, py] = local(event), hit = vdUplotHover(u, view, px, py);
    if (!hit) { hideTip(); return; }
    const base = u.over.getBoundingClientRect(), outer = host.getBoundingClientRect();
    const x = hit.x + base.left - outer.left, y = hit.y + base.top - outer.top;
    tip.textContent = hit.text;
    tip.style.display = "block";
    tip.style.left = `${Math.max(0, Math.min(x + 12, width - tip.offsetWidth - 4))}px`;
    tip.style.top = `${Math.max(0, y - 30)}px`;
    Object.assign(dot.style, { display: "block", left: `${x}px`, top: `${y}px`, background: hit.colour });
  };
  const zoomed = (self) => {  // uPlot's drag ended: our zoom, and the kernel asked
    const sel = self.select;
    if (sel.width < 5) return;
    const a = self.posToVal(sel.left, "x"), b = self.posToVal(sel.left + sel.width, "x");
    self.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    if (!(b > a)) return;
    state.zoom = [a, b];
    draw();
    if (options.onZoom) options.onZoom([a, b], self.bbox.width / uPlot.pxRatio);
  };
  const make = () => {
    if (u) u.destroy();
    const opts = vdUplotOpts(view.fig, series, view, width, plotHeight());
    opts.hooks.setSelect = [zoomed];
    u = new uPlot(opts, vdAlign(series, view.ranges.log), plot);
    u.over.classList.add("vd-plot-area");
    u.over.addEventListener("mousedown", () => { drag = true; hideTip(); });
    u.over.addEventListener("mousemove", hover);
    u.over.addEventListener("mouseleave", hideTip);
    u.over.addEventListener("dblclick", () => {
      const was = state.zoom;
      state.zoom = null;
      draw();
      if (was && options.onZoom) options.onZoom(null, u.bbox.width / uPlot.pxRatio);
    });
    div.uplot = u;  // the library's own state, for tests and the console
  };
  const draw = () => {
    const fig = view.fig;
    if (!fig) return;
    view.shown = fig.data.filter((t) => vdShown(t, state.legend));
    view.ranges = vdRanges(fig, state);
    setHead([vdRichHtml(fig.layout.title?.text), fig.layout.showlegend ? vdLegendHtml(fig, state.legend) : ""]);
    series = fig.data.filter(vdIsSeries);
    const next = vdUplotKey(fig, series, plotHeight(), view.ranges);
    const data = vdAlign(series, view.ranges.log);
    if (next !== key || !u) { key = next; make(); }
    u.batch(() => {
      series.forEach((t, i) => {
        const on = vdShown(t, state.legend);
        if (u.series[i + 1].show !== on) u.setSeries(i + 1, { show: on }, false);
      });
      u.setData(data);
    });
    div.data = fig.data;  // as on a plotly div: what is drawn, for tests and the console
    div.layout = fig.layout;
    div.dataset.yscale = view.ranges.log ? "log" : "linear";
    div.dataset.xrange = view.ranges.x.map((v) => +v.toPrecision(6)).join(",");
    div.dataset.series = String(u.series.filter((s, i) => i && s.show).length);
  };
  host.addEventListener("click", (event) => {
    const item = event.target.closest(".vd-legend-item");
    if (!item || !view.fig) return;
    const trace = view.fig.data.find((t) => vdGroup(t) === item.dataset.group);
    state.legend.set(item.dataset.group, !vdShown(trace, state.legend));
    draw();
  });
  const dropped = () => { drag = false; };
  document.addEventListener("mouseup", dropped, true);
  let pending = 0;  // the div's new width, once a frame at most (the height is the chart's)
  const resized = typeof ResizeObserver === "undefined" ? null : new ResizeObserver(() => {
    if (pending) return;
    pending = requestAnimationFrame(() => {
      pending = 0;
      const now = div.clientWidth;
      if (now && now !== width && u) { width = now; headAt = 0; u.setSize({ width, height: plotHeight() }); }
    });
  });
  if (resized) resized.observe(div);
  return {
    draw(next) { view.fig = next; draw(); },
    zoom() { return state.zoom; },
    purge() {
      if (resized) resized.disconnect();
      document.removeEventListener("mouseup", dropped, true);
      if (u) u.destroy();
      u = null;
      host.innerHTML = "";
      view.fig = null;
    },
  };
}

// A saved page (a report, Dashboard.save): the panels laid out in the element `id`, drawn
// as the live widget draws them (the line panels by uPlot, the heatmap and the bars as our
// SVG), with its smoothing and log scale controls; a drag zooms within the saved points.
// What the element held (the kernel's SVG picture, for a page that runs no script) is
// replaced.
function vdDrawStatic(id, panels) {
  const grid = document.getElementById(id);
  if (!grid) return;
  grid.innerHTML = `<div class="vd-bar" style="display:flex;gap:16px;align-items:center;margin:2px 0;` +
    `justify-content:flex-end;flex-wrap:wrap"><label>smoothing <input class="vd-smooth" type="range" ` +
    `min="0" max="0.99" step="0.01" value="0.6" style="vertical-align:middle"></label><label>` +
    `<input class="vd-log" type="checkbox"> log scale</label></div>${vdPanelGrid()}`;
  const smooth = grid.querySelector(".vd-smooth"), log = grid.querySelector(".vd-log");
  const svgOnly = (fig) => fig.data.some((t) => t.type === "heatmap" || (t.type === "bar" && t.orientation !== "v"));
  let curves = null;
  grid.querySelectorAll(".vd-panel").forEach((div) => {
    const fig = panels[div.dataset.panel];
    if (!fig) return;
    const chart = (svgOnly(fig) ? vdChart : vdLineChart)(div);
    if (div.dataset.panel !== "curves") { chart.draw(fig); return; }
    curves = () => chart.draw(vdCurvesView(fig, parseFloat(smooth.value), log.checked));
    curves();
  });
  if (!curves) { grid.querySelector(".vd-bar").remove(); return; }
  smooth.addEventListener("input", curves);
  log.addEventListener("change", curves);
}
