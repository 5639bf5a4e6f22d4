// Client side of EmbeddingView. Points arrive as float32 bytes; colouring, hover (label,
// prediction, loss, thumbnail), lasso selection and the animated swap from the PCA preview
// to the refined layout all happen here, so they work while the kernel is busy.
// Drawing: regl-scatterplot (vendored, WebGL), in module scope as vdReglScatterplot.
// User strings (class names) only ever go into textContent; info_html is escaped by the
// kernel.
const VD_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
  "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
  "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"];
const VD_NONE = "#bbbbbb";
const VD_LOSS_BINS = 32;
const VD_STRIP_MAX = 48;
const VD_MOVING_AT = 40000;  // more points than this: a fixed sample is drawn while the view moves
const VD_MOVING_POINTS = 25000;  // software WebGL on 2 cores: ~4 frames/s at 100k, 1 per 1-2 s at 1M
const VD_STILL_MS = 200;  // no camera change for this long: the view is still, draw every point

function vdArray(value, Kind) {
  if (!value || !value.byteLength) return null;
  const buf = value.buffer ? value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength) : value;
  return new Kind(buf);
}

function vdLossRamp(t) {  // blue (low) to red (high) through pale yellow
  const a = [44, 123, 182], m = [255, 255, 191], b = [215, 25, 28];
  const [p, q, s] = t < 0.5 ? [a, m, t * 2] : [m, b, (t - 0.5) * 2];
  return "#" + p.map((v, i) => Math.round(v + (q[i] - v) * s).toString(16).padStart(2, "0")).join("");
}

// Class codes arrive as 1, 2 or 4 bytes each (the widest value of the narrow kinds: none).
function vdCodes(model, key) {
  const width = model.get("code_width") || 4;
  const Kind = width === 1 ? Uint8Array : width === 2 ? Uint16Array : Int32Array;
  const raw = vdArray(model.get(key), Kind);
  if (!raw || width === 4) return raw;
  const none = width === 1 ? 255 : 65535, out = new Int32Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw[i] === none ? -1 : raw[i];
  return out;
}

function vdData(model) {
  return {
    x: vdArray(model.get("x"), Float32Array), y: vdArray(model.get("y"), Float32Array),
    rows: vdArray(model.get("rows"), Int32Array), labels: vdCodes(model, "labels"),
    preds: vdCodes(model, "predictions"),
    losses: vdArray(model.get("losses"), Float32Array), names: model.get("class_names"),
  };
}

// One categorical code per point and the colour of each code, for a colouring.
function vdEncoding(d, by) {
  const n = d.x.length, codes = new Float32Array(n);
  const nc = Math.max(1, d.names.length);
  const classColours = Array.from({ length: nc }, (_, i) => VD_PALETTE[i % VD_PALETTE.length]);
  if ((by === "label" && d.labels) || (by === "prediction" && d.preds)) {
    const src = by === "label" ? d.labels : d.preds;
    for (let i = 0; i < n; i++) codes[i] = src[i] >= 0 ? src[i] : nc;
    return { codes, colours: [...classColours, VD_NONE] };
  }
  if (by === "correct" && d.labels && d.preds) {
    for (let i = 0; i < n; i++) codes[i] = d.labels[i] < 0 || d.preds[i] < 0 ? 2 : (d.labels[i] === d.preds[i] ? 0 : 1);
    return { codes, colours: ["#2ca02c", "#d62728", VD_NONE] };
  }
  if (by === "loss" && d.losses) {
    const order = Array.from(d.losses.keys()).filter((i) => Number.isFinite(d.losses[i]));
    order.sort((i, j) => d.losses[i] - d.losses[j]);
    codes.fill(VD_LOSS_BINS);
    order.forEach((i, r) => { codes[i] = Math.min(VD_LOSS_BINS - 1, Math.floor(r * VD_LOSS_BINS / order.length)); });
    const ramp = Array.from({ length: VD_LOSS_BINS }, (_, i) => vdLossRamp(i / (VD_LOSS_BINS - 1)));
    return { codes, colours: [...ramp, VD_NONE] };
  }
  return { codes, colours: [VD_PALETTE[0]] };
}

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
  status.textContent = ` ${model.get("layout_name")}${how ? ` (${how})` : ""}` +
    (busy ? ` \u00b7 ${model.get("stage") || "working"}\u2026 ${secs} s` : "") + (err ? ` \u00b7 ${err}` : "");
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

// regl-scatterplot refuses a draw while one runs (a rejected promise, logged as uncaught):
// one draw at a time, and of those asked for meanwhile only the newest.
function vdDrawQueue() {
  let running = false, next = null;
  const run = (job) => {
    running = true;
    Promise.resolve().then(job).catch((err) => console.debug("vizdebug: draw skipped", err))
      .finally(() => { running = false; if (next) { const j = next; next = null; run(j); } });
  };
  return (job) => { if (running) next = job; else run(job); };
}

// Past VD_MOVING_AT points a software-rendered frame takes a second: while the camera
// moves, a fixed sample is drawn (regl-scatterplot's filter), and every point once it stops.
function vdMovingSample(n) {
  const step = n / VD_MOVING_POINTS, out = new Array(VD_MOVING_POINTS);
  for (let k = 0; k < VD_MOVING_POINTS; k++) out[k] = Math.floor(k * step);
  return out;
}

function vdMotion(s, queue, kept) {
  let timer = null, sample = null;
  s.moving = false;
  const still = () => {
    timer = null;
    s.moving = false;
    queue(() => s.plot.unfilter({ preventEvent: true })  // the filter dropped the rest of it
      .then(() => kept().length && s.plot.select(kept(), { preventEvent: true })));
  };
  return () => {
    if (!s.plot || s.d.x.length <= VD_MOVING_AT || s.transition) return;
    if (!s.moving) {
      s.moving = true;
      sample = sample || vdMovingSample(s.d.x.length);
      queue(() => s.plot.filter(sample, { preventEvent: true }));
    }
    clearTimeout(timer);
    timer = setTimeout(still, VD_STILL_MS);
  };
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
  const draw = (opts) => queue(() => s.plot && s.plot.draw(points()[0], { preventFilterReset: true, zDataType: "categorical", ...opts }));
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
      s.d = vdData(model);
      s.transition = true;
      draw({ transition: true, transitionDuration: 750 });
      queue(() => { s.transition = false; });
    });
  };
  const select = (sel) => {
    if (s.moving) return;  // the moving sample's filter, not the user
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
    queue(fit);
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
  for (const k of ["stage", "busy", "error", "layout_name"]) model.on(`change:${k}`, status);
  s.timer = setInterval(() => { if (model.get("busy")) status(); }, 500);
  showInfo();
}
export default { render };
