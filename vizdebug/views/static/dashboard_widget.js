// vizdebug training dashboard: one small chart per panel. A refresh from the kernel is a
// delta (dashboard_state.js); only the panels it changed are redrawn, one per task, the
// slow panels less often. The line panels (curves, timing, system) are uPlot charts kept
// between refreshes (chart_uplot*.js: setData, ~3 ms for the curves); the heatmap and the
// grouped bars are our own SVG charts (chart_core.js, chart_panel.js, chart_view.js); the
// page needs no plotly.js. Smoothing, log scale, zoom and hover run here, so they work
// while the kernel is busy training.

// The panels drawn by uPlot (the others: vdChart).
const VD_LINE_PANELS = new Set(["curves", "timing", "system"]);

const VD_BADGE = { error: ["#c62828", "#fff"], warning: ["#f9a825", "#222"], info: ["#e3f2fd", "#0d47a1"] };

function controls(el) {
  el.innerHTML = `
    <div class="vd-dash" style="font-family:system-ui,sans-serif;font-size:13px;width:100%">
      <style>.vd-dash .vd-evidence-target{cursor:pointer;text-decoration:underline dotted}
        ${VD_UPLOT_CSS}</style>
      <div class="vd-bar" style="display:flex;gap:16px;align-items:center;margin:4px 0;flex-wrap:wrap">
        <b>vizdebug training</b>
        <button class="vd-badge" type="button" style="display:none;border:0;border-radius:10px;
          padding:2px 10px;font-size:12px;font-weight:600;cursor:pointer"></button>
        <span class="vd-status" style="color:var(--jp-ui-font-color2,#555)"></span>
        <label style="margin-left:auto">smoothing <input class="vd-smooth" type="range" min="0"
          max="0.99" step="0.01" value="0.6" style="vertical-align:middle"></label>
        <label><input class="vd-log" type="checkbox"> log scale</label>
      </div>
      <div class="vd-grid" style="display:flex;flex-direction:column;gap:4px">${vdPanelGrid()}</div>
      <div class="vd-findings"></div>
    </div>`;
  const panels = {};
  el.querySelectorAll(".vd-panel").forEach((div) => { panels[div.dataset.panel] = div; });
  return {
    smooth: el.querySelector(".vd-smooth"), log: el.querySelector(".vd-log"),
    status: el.querySelector(".vd-status"), badge: el.querySelector(".vd-badge"),
    grid: el.querySelector(".vd-grid"), findings: el.querySelector(".vd-findings"), panels,
  };
}

// Main-thread time of each redraw, as User Timing entries ("vizdebug:panel:<name>#<rev>",
// the revision of the kernel's refresh it draws), when the page asks for them
// (window.__vizdebugProfile = true): the browser tests read them, and so can a user's
// performance panel.
function timed(name, rev, fn) {
  if (!window.__vizdebugProfile) return fn();
  const start = performance.now();
  try {
    return fn();
  } finally {
    performance.measure(`vizdebug:${name}#${rev}`, { start, end: performance.now() });
  }
}

function showBadge(ui, badge) {
  if (!badge || !badge.code) {
    ui.badge.style.display = "none";
    return;
  }
  const [background, color] = VD_BADGE[badge.severity] || VD_BADGE.info;
  Object.assign(ui.badge.style, { background, color });
  ui.badge.style.display = "inline-block";
  ui.badge.textContent = `${badge.severity === "error" ? "\u2716" : "\u26a0"} ${badge.code}` +
    (badge.more ? ` +${badge.more}` : "");
  ui.badge.title = badge.title || "";
}

// The panels that change slowly or matter less are redrawn at most this often (ms);
// the learning curves follow the refreshes (the kernel sends ~2-3 a second).
const VD_GAP_MS = { curves: 250, timing: 1000, grads: 1000, health: 1000, system: 1000 };

// The zoom of the learning curves, asked of the kernel (the protocol is in
// views/_dashboard_zoom.py): a drag sends {kind: "zoom", panel, lo, hi, points}, a
// double-click {kind: "zoom", panel, reset: true}; the answer ("zoomed", for the range
// asked last) is drawn in over the page's points. Until it comes (or if it never does:
// the kernel busy or gone) the chart shows the page's own points of that range.
function zoomer(model, redraw, div) {
  let want = null, got = null;
  const ask = (range, pixels) => {
    got = null;
    delete div.dataset.zoomed;
    if (!range) {
      want = null;
      model.send({ kind: "zoom", panel: "curves", reset: true });
      redraw();  // the page's own points again (the chart still holds the answer's)
      return;
    }
    want = { lo: Math.max(0, Math.floor(range[0])), hi: Math.max(0, Math.ceil(range[1])) };
    model.send({ kind: "zoom", panel: "curves", lo: want.lo, hi: want.hi,
      points: Math.max(16, Math.round(pixels)) });
  };
  const heard = (msg) => {
    if (!msg || msg.kind !== "zoomed" || msg.panel !== "curves" || !want || msg.error) return;
    if (msg.lo !== want.lo || msg.hi !== want.hi) return;  // an answer to an older zoom
    got = msg;
    div.dataset.zoomed = `${msg.lo}-${msg.hi}`;  // the kernel's points are drawn (for tests)
    redraw();
  };
  model.on("msg:custom", heard);
  return {
    ask,
    apply: (panel) => (got ? vdMergeZoomed(panel, got) : panel),
    stop: () => model.off("msg:custom", heard),
  };
}

// Redraws the panels marked dirty, one per task.
function painter(ui, zoom) {
  const dirty = new Set(Object.keys(ui.panels));
  const drawnAt = new Map(), charts = new Map();
  let panels = null, rev = 0, timer = 0, due = Infinity, target = null;
  const draw = (name) => timed(`panel:${name}`, rev, () => {
    let fig = panels[name];
    if (name === "curves") {
      fig = vdCurvesView(zoom.apply(fig), parseFloat(ui.smooth.value), ui.log.checked);
    }
    fig = vdHighlight(name, fig, target);
    if (!charts.has(name)) {
      const make = VD_LINE_PANELS.has(name) ? vdLineChart : vdChart;
      charts.set(name, make(ui.panels[name], name === "curves" ? { onZoom: zoom.ask } : {}));
    }
    charts.get(name).draw(fig);
    drawnAt.set(name, performance.now());
  });
  const schedule = (ms) => {
    const at = performance.now() + ms;
    if (!dirty.size || at >= due) return;
    clearTimeout(timer);
    due = at;
    timer = setTimeout(next, ms);
  };
  const next = () => {
    due = Infinity;
    if (!panels) return;
    let wait = Infinity;
    for (const name of dirty) {
      const left = (drawnAt.get(name) ?? -1e9) + (VD_GAP_MS[name] || 0) - performance.now();
      if (left <= 0) {
        dirty.delete(name);
        draw(name);
        schedule(0); // the next panel in a task of its own
        return;
      }
      wait = Math.min(wait, left);
    }
    if (wait < Infinity) schedule(wait);
  };
  return {
    update(state, changed, revision) {
      if (!state) return; // a delta for a snapshot not here yet: the next one will be
      // `changed` is relative to the previous revision: after a gap, redraw everything
      const names = revision === rev + 1 ? changed : Object.keys(state);
      panels = state;
      rev = revision;
      for (const name of names) dirty.add(name);
      schedule(0);
    },
    drawNow(name) { if (panels) { dirty.delete(name); draw(name); } },
    // mark a finding's evidence (null: none); the panel that shows it, if one does
    highlight(next) {
      target = next;
      if (!panels) return null;
      const names = next && next.kind === "metric" ? ["curves"] : ["grads", "health"];
      ["curves", "grads", "health"].forEach((n) => this.drawNow(n));
      return names.map((n) => ui.panels[n]).find((div) => div.data && div.data.length) || null;
    },
    stop() { charts.forEach((chart) => chart.purge()); },
  };
}

// A click on a finding that points at a layer or a metric (findings.evidence_target, in
// the row's data-kind / data-name) marks it in the panels and brings it into view; a
// second click on the same finding clears the mark.
function showEvidence(event, ui, paint) {
  const row = event.target.closest(".vd-finding");
  const span = row && row.querySelector(".vd-evidence-target");
  const kind = span && span.dataset.kind;
  if (kind !== "layer" && kind !== "metric") return;
  const same = ui.findings.querySelector(".vd-evidence-on") === row;
  ui.findings.querySelectorAll(".vd-evidence-on").forEach((r) => {
    r.classList.remove("vd-evidence-on");
    r.style.outline = "";
  });
  const where = paint.highlight(same ? null : { kind, name: span.dataset.name });
  if (same) return;
  row.classList.add("vd-evidence-on");
  row.style.outline = "2px solid #d81b60";
  if (where) where.scrollIntoView({ block: "center" });
}

function render({ model, el }) {
  const ui = controls(el);
  let paint = null;
  const zoom = zoomer(model, () => paint.drawNow("curves"), ui.panels.curves);
  paint = painter(ui, zoom);
  const onDelta = () => {
    const delta = model.get("delta") || {};
    const state = timed("delta", delta.rev, () => vdCurrentPanels(model.get("snapshot"), delta));
    paint.update(state, delta.changed || [], delta.rev);
  };
  const onText = () => {
    ui.findings.innerHTML = model.get("findings_html"); // escaped by the kernel
    ui.status.textContent = model.get("status");
    showBadge(ui, model.get("badge"));
    ui.grid.dataset.revision = String(model.get("revision"));
  };
  const onCurves = () => timed("click", "click", () => paint.drawNow("curves"));
  ui.smooth.addEventListener("input", onCurves);
  ui.log.addEventListener("change", onCurves);
  ui.badge.addEventListener("click", () => ui.findings.scrollIntoView({ block: "start" }));
  ui.findings.addEventListener("click", (event) => showEvidence(event, ui, paint));
  model.on("change:delta", onDelta);
  model.on("change:revision", onText);
  model.on("change:status", onText);
  onText();
  const delta = model.get("delta") || {};
  paint.update(vdCurrentPanels(model.get("snapshot"), delta), Object.keys(ui.panels), delta.rev);
  return () => {
    model.off("change:delta", onDelta);
    model.off("change:revision", onText);
    model.off("change:status", onText);
    zoom.stop();
    paint.stop();
  };
}

export default { render };
