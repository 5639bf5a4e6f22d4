// Client side of EmbeddingTimelineView. Loaded after embeddings_widget.js (its helpers:
// vdArray, vdEl, vdEncoding, vdControls, vdSelectTools, vdShowTip, vdStrip, vdLegend,
// vdCreatePlot, vdNoWebGL, vdStatus). Every frame's layout arrives once as float32 bytes
// (frame f holds points f*n .. f*n+n-1); the epoch slider, the curve's marker, hover,
// colouring and selection run here, so they work while the kernel is busy.
const VDT_CURVE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c"];
const VDT_SVG = "http://www.w3.org/2000/svg";

function vdtData(model) {
  const n = model.get("n_points");
  const xs = vdArray(model.get("xs"), Float32Array), ys = vdArray(model.get("ys"), Float32Array);
  return {
    n, xs, ys, frames: xs ? Math.floor(xs.length / Math.max(1, n)) : 0,
    rows: vdArray(model.get("rows"), Int32Array), labels: vdArray(model.get("labels"), Int32Array),
    predsAll: vdArray(model.get("predictions"), Int32Array),
    preds: null, losses: null, names: model.get("class_names"), x: null, y: null,
  };
}

function vdtAt(d, f) {  // views of frame f's coordinates (no copy)
  const k = Math.max(0, Math.min(d.frames - 1, f));
  d.x = d.xs.subarray(k * d.n, (k + 1) * d.n);
  d.y = d.ys.subarray(k * d.n, (k + 1) * d.n);
  d.preds = d.predsAll && d.predsAll.subarray(k * d.n, (k + 1) * d.n);  // each frame's own
  return k;
}

function vdtFrameName(model, f) {
  const steps = model.get("steps"), epochs = model.get("epochs");
  const epoch = epochs[f] >= 0 ? ` \u00b7 epoch ${epochs[f]}` : "";
  return `step ${steps[f]}${epoch} (${f + 1} of ${steps.length})`;
}

function vdtSvg(tag, attrs, text) {
  const e = document.createElementNS(VDT_SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// The separability curve: one line per figure in [0, 1], the current frame marked.
function vdtCurve(host, curve, frames, f) {
  const W = 260, H = 130, left = 28, top = 8, w = W - 36, h = H - 30;
  const at = (i, v) => [left + (w * i) / Math.max(1, frames - 1), top + h * (1 - v)];
  const svg = vdtSvg("svg", { width: W, height: H, class: "vd-emb-curve" });
  svg.append(vdtSvg("rect", { x: left, y: top, width: w, height: h, fill: "none", stroke: "#ccc" }),
    vdtSvg("text", { x: 2, y: top + 8, "font-size": 10 }, "1"),
    vdtSvg("text", { x: 2, y: top + h, "font-size": 10 }, "0"));
  Object.entries(curve || {}).forEach(([name, values], k) => {
    const colour = VDT_CURVE_COLOURS[k % VDT_CURVE_COLOURS.length];
    const pts = values.map((v, i) => (v === null ? null : at(i, v))).filter((p) => p);
    if (pts.length) {
      svg.append(vdtSvg("polyline", { points: pts.map((p) => p.join(",")).join(" "), fill: "none", stroke: colour, "stroke-width": 1.5 }));
      const v = values[f];
      if (v !== null && v !== undefined) {
        const [cx, cy] = at(f, v);
        svg.append(vdtSvg("circle", { cx, cy, r: 3.5, fill: colour }));
      }
    }
    const label = values[f] === null || values[f] === undefined ? "" : ` ${values[f].toFixed(3)}`;
    svg.append(vdtSvg("text", { x: left + 4 + 120 * k, y: H - 4, "font-size": 10, fill: colour }, name + label));
  });
  const x = at(f, 0)[0];
  svg.append(vdtSvg("line", { x1: x, x2: x, y1: top, y2: top + h, stroke: "#d62728", class: "vd-emb-now" }));
  host.replaceChildren(svg);
}

function vdtSlider(model, frames) {
  const row = vdEl("div", "vd-emb-bar vd-emb-timebar");
  const slider = vdEl("input", "vd-emb-slider");
  Object.assign(slider, { type: "range", min: "0", max: String(Math.max(0, frames - 1)), step: "1" });
  slider.value = String(Math.min(model.get("frame"), frames - 1));
  slider.style.flex = "1 1 240px";
  const label = vdEl("span", "vd-emb-frame");
  row.append(vdEl("span", "", `layer ${model.get("layer")} `), slider, label);
  return { row, slider, label };
}

function vdtRender({ model, el }) {
  const s = { d: vdtData(model), plot: null, mouse: [0, 0], frame: 0, drawing: false, want: null };
  s.frame = vdtAt(s.d, model.get("frame"));
  const ui = vdBuild(el, model, s.d);
  const time = vdtSlider(model, s.d.frames);
  ui.bar.after(time.row);
  ui.curve = vdEl("div", "vd-emb-curvebox");
  ui.side.before(ui.curve);
  const t0 = Date.now();
  const points = () => {
    const enc = vdEncoding(s.d, model.get("color_by"));
    return [{ x: s.d.x, y: s.d.y, valueA: enc.codes }, enc.colours];
  };
  const options = (transition) => ({ transition, transitionDuration: 300, preventFilterReset: true, zDataType: "categorical" });
  const show = (f, transition) => {  // one draw in flight; the latest frame asked wins
    s.want = f;
    if (!s.plot || s.drawing) return;
    s.frame = vdtAt(s.d, s.want);
    s.want = null;
    s.drawing = true;
    s.plot.draw(points()[0], options(transition)).finally(() => {
      s.drawing = false;
      if (s.want !== null && s.want !== s.frame) show(s.want, false);
    });
  };
  const marks = () => {
    const f = Number(time.slider.value);
    time.label.textContent = vdtFrameName(model, f);
    vdtCurve(ui.curve, model.get("curve"), s.d.frames, f);
  };
  const recolour = () => {
    ui.pick.value = model.get("color_by");
    vdLegend(ui.legend, s.d, model.get("color_by"));
    if (!s.plot) return;
    const [pts, colours] = points();
    s.plot.set({ pointColor: colours, colorBy: "valueA" });
    s.plot.draw(pts, options(false));
  };
  time.slider.addEventListener("input", () => {
    marks();
    show(Number(time.slider.value), true);
    clearTimeout(s.saveTimer);  // tell Python where the slider is, once it rests
    s.saveTimer = setTimeout(() => { model.set("frame", Number(time.slider.value)); model.save_changes(); }, 200);
  });
  const relayout = () => {  // refined layouts replace the previews, or frames were added
    const atEnd = Number(time.slider.value) >= Number(time.slider.max);
    s.d = vdtData(model);
    time.slider.max = String(Math.max(0, s.d.frames - 1));
    if (atEnd) time.slider.value = time.slider.max;  // following the newest frame
    marks();
    s.frame = vdtAt(s.d, Number(time.slider.value));
    if (s.plot) s.plot.draw(points()[0], { ...options(true), transitionDuration: 750 });
  };
  vdWire(model, el, ui, s, { recolour, relayout, t0, layoutKeys: ["xs"] });
  model.on("change:curve", marks);
  marks();
  recolour();
  vdtStart(model, el, ui, s, recolour, 0);
  return () => { clearInterval(s.timer); clearTimeout(s.saveTimer); if (s.plot) s.plot.destroy(); };
}

function vdtStart(model, el, ui, s, recolour, tries) {
  if (!el.isConnected || ui.stage.clientWidth === 0) {
    if (tries < 200) setTimeout(() => vdtStart(model, el, ui, s, recolour, tries + 1), 50);
    return;
  }
  try { s.plot = vdCreatePlot(ui.canvas, s.d.n); } catch (err) { vdNoWebGL(model, el, ui, err); return; }
  s.plot.set({ lassoType: "rectangle" });  // shift-drag draws a box
  el.__vdPlot = s.plot;  // for tests and debugging in the console
  el.__vdTimeline = s;
  s.plot.subscribe("pointOver", (i) => vdShowTip(ui.tip, s.d, model.get("thumbs"), i, s.mouse));
  s.plot.subscribe("pointOut", () => { ui.tip.style.display = "none"; });
  const select = (sel) => {
    model.set("selected", sel);
    model.save_changes();
    vdStrip(ui.strip, s.d, model.get("thumbs"), sel);
  };
  s.plot.subscribe("select", ({ points: sel }) => select(Array.from(sel)));
  s.plot.subscribe("deselect", () => select([]));
  recolour();
}

export default { render: vdtRender };
