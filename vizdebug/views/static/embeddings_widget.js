// Client side of EmbeddingView. Points arrive as float32 bytes; colouring, hover (label,
// prediction, loss, thumbnail), lasso selection and the animated swap from the PCA preview
// to the refined layout all happen here, so they work while the kernel is busy.
// Drawing: regl-scatterplot (vendored, WebGL), in module scope as vdReglScatterplot.
// Typed arrays, colourings, the draw queue and the moving sample: embeddings_points.js
// (before this script). A big set's first state holds a sample: vdAskRest, vdArriving.
// User strings (class names) only ever go into textContent; info_html is escaped by the
// kernel.
const VD_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
  "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"];
const VD_NONE = "#bbbbbb";
const VD_LOSS_BINS = 32;
const VD_STRIP_MAX = 48;

function vdEl(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function vdControls(model, d) {
  const bar = vdEl("div", "vd-emb-bar");
  const pick = vdEl("select", "vd-emb-colour");
  const options = [["label", d.labels], ["prediction", d.preds], ["loss", d.losses],
    ["correct", d.labels && d.preds], ["none", true]];
  for (const [name, ok] of options) {
    if (!ok) continue;
    const o = vdEl("option", "", name === "correct" ? "correct / wrong" : name);
    o.value = name;
    pick.append(o);
  }
  pick.value = model.get("color_by");
  const lasso = vdEl("button", "vd-emb-lasso", "lasso select");
  const box = vdEl("button", "vd-emb-box", "box select");
  box.title = lasso.title = "or shift-drag in the plot (a box unless the lasso is on)";
  const clear = vdEl("button", "vd-emb-clear", "clear selection");
  const reset = vdEl("button", "vd-emb-reset", "reset view");
  reset.title = "fit every point in the view again (or double-click with the lasso off)";
  const suspects = vdEl("button", "vd-emb-suspects");
  const status = vdEl("span", "vd-emb-status");
  bar.append(vdEl("span", "", "colour by "), pick, box, lasso, clear, reset, suspects, status);
  return { bar, pick, lasso, box, clear, reset, suspects, status };
}

function vdTooltipText(d, i) {
  const lines = [`#${d.rows ? d.rows[i] : i}`];
  const name = (codes) => (codes && codes[i] >= 0 ? String(d.names[codes[i]]) : null);
  if (d.labels) lines.push(`label: ${name(d.labels) ?? "none"}`);
  if (d.preds) lines.push(`prediction: ${name(d.preds) ?? "none"}`);
  if (d.losses) lines.push(`loss: ${Number.isFinite(d.losses[i]) ? d.losses[i].toPrecision(4) : "none"}`);
  return lines;
}

function vdShowTip(tip, d, thumbs, i, at) {
  tip.replaceChildren();
  if (thumbs[i]) {
    const img = vdEl("img");
    img.src = thumbs[i];
    tip.append(img);
  }
  for (const line of vdTooltipText(d, i)) tip.append(vdEl("div", "", line));
  tip.dataset.point = String(i);
  tip.style.left = `${at[0] + 14}px`;
  tip.style.top = `${at[1] + 14}px`;
  tip.style.display = "block";
}

function vdStrip(strip, d, thumbs, points) {
  strip.replaceChildren();
  if (!points.length) return;
  strip.append(vdEl("div", "vd-note", `${points.length} selected (view.selected in Python)`));
  for (const i of points.slice(0, VD_STRIP_MAX)) {
    const cell = vdEl("figure", "vd-emb-cell");
    if (thumbs[i]) { const img = vdEl("img"); img.src = thumbs[i]; cell.append(img); }
    cell.append(vdEl("figcaption", "", vdTooltipText(d, i).slice(0, 2).join(" ")));
    strip.append(cell);
  }
  if (points.length > VD_STRIP_MAX) strip.append(vdEl("span", "vd-note", `+${points.length - VD_STRIP_MAX} more`));
}

function vdStatus(model, status, t0) {
  const busy = model.get("busy");
  const err = model.get("error");
  const secs = ((Date.now() - t0) / 1000).toFixed(0);  // the browser's clock: kernels may be remote
  status.classList.toggle("vd-emb-busy", busy);
  const how = model.get("layout_how");
  status.textContent = ` ${model.get("layout_name")}${how ? ` (${how})` : ""}` + vdArriving(model) +
    (busy ? ` \u00b7 ${model.get("stage") || "working"}\u2026 ${secs} s` : "") + (err ? ` \u00b7 ${err}` : "");
}

// A big set's first state holds a fixed sample; the rest comes once it is drawn.
function vdArriving(model) {
  const total = model.get("total") || 0, have = ((model.get("x") || {}).byteLength || 0) / 4;
  if (total <= have) return "";
  const fmt = (v) => v.toLocaleString("en-US");
  return ` \u00b7 ${fmt(have)} of ${fmt(total)} points drawn (a fixed random sample), the rest arriving`;
}

function vdAskRest(model, s) {  // once per view, after its first draw
  if (s.asked || !s.d.total || s.d.x.length >= s.d.total) return;
  s.asked = true;
  model.send({ kind: "rest" });
}

function vdBuild(el, model, d) {
  const ui = vdControls(model, d);
  for (const name of ["stage", "tip", "legend", "strip", "side"]) ui[name] = vdEl("div", `vd-emb-${name}`);
  ui.canvas = vdEl("canvas", "vd-emb-canvas");
  ui.stage.append(ui.canvas, ui.tip);
  const left = vdEl("div", "vd-emb-left");
  left.append(ui.stage, ui.legend);
  const main = vdEl("div", "vd-emb-main");
  main.append(left, ui.side);
  const root = vdEl("div", "vd-emb");
  root.append(ui.bar, main, ui.strip);
  el.appendChild(root);
  return ui;
}

function vdLegend(legend, d, by) {
  legend.replaceChildren();
  const src = by === "label" ? d.labels : by === "prediction" ? d.preds : null;
  if (!src) return;
  const present = [...new Set(src)].filter((c) => c >= 0).sort((a, b) => a - b);
  for (const i of present.slice(0, 30)) {  // classes of this colouring only
    const key = vdEl("span", "vd-emb-key");
    const sw = vdEl("i");
    sw.style.background = VD_PALETTE[i % VD_PALETTE.length];
    key.append(sw, document.createTextNode(String(d.names[i])));
    legend.append(key);
  }
  if (present.length > 30) legend.append(vdEl("span", "vd-note", `+${present.length - 30} more classes`));
}

// Chromium keeps 16 WebGL contexts a page and silently drops the oldest. The first
// VD_OWN_CONTEXTS views each have their own (a shared one costs about half the frame rate
// in software WebGL); later ones draw through one shared renderer, owned by a hidden host
// plot so that no view's destroy takes it away. A lost context marks its views, which
// redraw on a click.
const VD_OWN_CONTEXTS = 8;

function vdShared() {
  const g = globalThis;
  if (!g.__vdScatter || g.__vdScatter.lost) {
    const host = vdReglScatterplot.createScatterplot({ canvas: document.createElement("canvas"), width: 1, height: 1 });
    const shared = { host, renderer: host.get("renderer"), lost: false };
    shared.renderer.canvas.addEventListener("webglcontextlost", () => { shared.lost = true; });
    g.__vdScatter = shared;
  }
  return g.__vdScatter;
}

function vdCreatePlot(canvas, n) {
  const own = (globalThis.__vdScatterOwn = globalThis.__vdScatterOwn || new Set());
  const options = {
    canvas, width: "auto", height: "auto", pointSize: n > 50000 ? 2 : n > 5000 ? 3 : n > 500 ? 5 : 7,
    opacity: n > 20000 ? 0.7 : 0.9, backgroundColor: "#ffffff", lassoColor: "#333333",
    pointColorHover: "#000000", pointColorActive: "#000000", showReticle: false,
  };
  if (own.size >= VD_OWN_CONTEXTS) options.renderer = vdShared().renderer;
  const plot = vdReglScatterplot.createScatterplot(options);
  if (!options.renderer) {
    own.add(plot);
    plot.subscribe("destroy", () => own.delete(plot));
  }
  return plot;
}

// Camera changes while the user's pointer or wheel acts are theirs: the view is no longer
// the fitted one, and a resize leaves it alone.
function vdTouch(stage, s) {
  let wheel = null;
  const up = () => { s.touching = false; };
  stage.addEventListener("pointerdown", () => { s.touching = true; });
  window.addEventListener("pointerup", up);
  stage.addEventListener("wheel", () => {
    s.touching = true;
    clearTimeout(wheel);
    wheel = setTimeout(() => { s.touching = false; }, 300);
  }, { passive: true });
  return () => window.removeEventListener("pointerup", up);
}

// No WebGL here (a locked-down browser, a page without a software fallback): say so and
// show the static picture the view came with.
function vdNoWebGL(model, el, ui, err) {
  ui.status.textContent = ` cannot draw here: WebGL is not available (${err.message}); showing the static picture`;
  ui.stage.style.display = "none";
  vdShowFallback(model, el);
}

function vdLostNote(ui, redraw) {
  const note = vdEl("button", "vd-emb-lost", "this view lost its WebGL context: click to redraw");
  note.addEventListener("click", () => { note.remove(); redraw(); });
  ui.stage.append(note);
}

function render({ model, el }) {
  const s = { d: vdData(model), plot: null, mouse: [0, 0], pending: false, fitted: true };
  const ui = vdBuild(el, model, s.d);
  const t0 = Date.now();
  const queue = vdDrawQueue();
  // one job per draw, its follow-up inside it: the queue keeps only the newest job waiting
  const draw = (opts, { moving = false, after = null } = {}) => queue(() => {
    if (!s.plot) return null;
    s.transition = moving;
    return s.plot.draw(points()[0], { preventFilterReset: true, zDataType: "categorical", ...opts })
      .then(() => { vdAskRest(model, s); return after && after(); })
      .finally(() => { s.transition = false; });
  });
  const points = () => {
    const enc = vdEncoding(s.d, model.get("color_by"));
    return [{ x: s.d.x, y: s.d.y, valueA: enc.codes }, enc.colours];
  };
  const recolour = () => {
    ui.pick.value = model.get("color_by");
    vdLegend(ui.legend, s.d, model.get("color_by"));
    if (!s.plot) return;
    s.plot.set({ pointColor: points()[1], colorBy: "valueA" });
    draw({});
  };
  const relayout = () => {  // x and y change together: one animated draw per frame
    if (s.pending) return;
    s.pending = true;
    requestAnimationFrame(() => {
      s.pending = false;
      const before = s.d.x.length;
      s.d = vdData(model);
      const kept = () => model.get("selected");
      if (s.d.x.length !== before) {  // the rest of a big set: drawn at once, the selection kept
        draw({}, { after: () => kept().length && s.plot.select(kept(), { preventEvent: true }) });
      } else {
        draw({ transition: true, transitionDuration: 750 }, { moving: true });
      }
    });
  };
  const select = (sel) => {
    if (s.moving || s.quiet) return;  // the moving sample's filter, not the user
    model.set("selected", sel);
    model.save_changes();
    vdStrip(ui.strip, s.d, model.get("thumbs"), sel);
  };
  const fit = () => { if (s.plot) { s.fitted = true; s.plot.zoomToArea({ x: -1, y: -1, width: 2, height: 2 }, { transition: false }); } };
  const start = (tries) => {
    if (!el.isConnected || ui.stage.clientWidth === 0) {
      if (tries < 200) setTimeout(() => start(tries + 1), 50);
      return;
    }
    try { s.plot = vdCreatePlot(ui.canvas, s.d.x.length); } catch (err) { vdNoWebGL(model, el, ui, err); return; }
    s.plot.set({ lassoType: "rectangle" });  // shift-drag draws a box
    el.__vdPlot = s.plot;  // for tests and debugging in the console
    el.__vdState = s;
    s.plot.subscribe("pointOver", (i) => vdShowTip(ui.tip, s.d, model.get("thumbs"), i, s.mouse));
    s.plot.subscribe("pointOut", () => { ui.tip.style.display = "none"; });
    s.plot.subscribe("select", ({ points: sel }) => select(Array.from(sel)));
    s.plot.subscribe("deselect", () => select([]));
    const moved = vdMotion(s, queue, () => model.get("selected"));
    s.plot.subscribe("view", () => { moved(); if (s.touching) s.fitted = false; });
    s.plot.get("renderer").canvas.addEventListener("webglcontextlost", s.lost);
    recolour();
    queue(fit, "fit");
  };
  s.lost = (e) => vdLostNote(ui, () => {  // a fresh canvas and plot on a fresh context
    e.target.removeEventListener("webglcontextlost", s.lost);
    if (s.plot) s.plot.destroy();
    s.plot = null;
    const canvas = vdEl("canvas", "vd-emb-canvas");
    ui.canvas.replaceWith(canvas);
    ui.canvas = canvas;
    start(0);
  });
  // the stage shrinks or grows with the page: refit, unless the user zoomed in
  s.resize = new ResizeObserver(() => { if (s.plot && s.fitted) requestAnimationFrame(fit); });
  s.resize.observe(ui.stage);
  const untouch = vdTouch(ui.stage, s);
  ui.reset.addEventListener("click", fit);
  vdWire(model, el, ui, s, { recolour, relayout, t0 });
  recolour();
  start(0);
  return () => {
    clearInterval(s.timer);
    s.resize.disconnect();
    untouch();
    if (s.plot) s.plot.destroy();
  };
}

// Box and lasso: a button makes a plain drag select with that shape; off again, a plain
// drag pans and a shift-drag draws a box.
function vdSelectTools(ui, s) {
  const tools = [[ui.box, "rectangle"], [ui.lasso, "freeform"]];
  for (const [button, shape] of tools) {
    button.addEventListener("click", () => {
      if (!s.plot) return;
      const on = !button.classList.contains("vd-on");
      for (const [other] of tools) other.classList.toggle("vd-on", on && other === button);
      s.plot.set({ mouseMode: on ? "lasso" : "panZoom", lassoType: on ? shape : "rectangle" });
    });
  }
}

// shared by the timeline view (its script follows this one): `layoutKeys` are the synced
// traits whose change means new positions
function vdWire(model, el, ui, s, { recolour, relayout, t0, layoutKeys = ["x", "y"] }) {
  const status = () => vdStatus(model, ui.status, t0);
  const showInfo = () => { ui.side.innerHTML = model.get("info_html"); status(); };
  // a notebook reads shift + mouse down as "extend the cell selection" and then swallows
  // the mouse moves: keep the box's shift-drag to the plot
  ui.stage.addEventListener("mousedown", (e) => { if (e.shiftKey) e.stopPropagation(); });
  ui.stage.addEventListener("mousemove", (e) => {
    const r = ui.stage.getBoundingClientRect();
    s.mouse = [e.clientX - r.left, e.clientY - r.top];
  });
  ui.pick.addEventListener("change", () => { model.set("color_by", ui.pick.value); model.save_changes(); recolour(); });
  vdSelectTools(ui, s);
  ui.clear.addEventListener("click", () => s.plot && s.plot.deselect());
  const suspects = () => {
    const n = model.get("suspects").length;
    ui.suspects.textContent = `select label-noise suspects (${n})`;
    ui.suspects.style.display = n ? "" : "none";
  };
  ui.suspects.addEventListener("click", () => s.plot && s.plot.select(model.get("suspects")));
  model.on("change:suspects", suspects);
  suspects();
  for (const k of layoutKeys) model.on(`change:${k}`, relayout);
  model.on("change:color_by", recolour);
  model.on("change:info_html", showInfo);
  for (const k of ["stage", "busy", "error", "layout_name", "total", ...layoutKeys]) model.on(`change:${k}`, status);
  s.timer = setInterval(() => { if (model.get("busy")) status(); }, 500);
  showInfo();
}
export default { render };
