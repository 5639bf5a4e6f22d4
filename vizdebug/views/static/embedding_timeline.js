// Client side of EmbeddingTimelineView. Loaded after embeddings_widget.js (its helpers:
// vdArray, vdEl, vdEncoding, vdControls, vdSelectTools, vdShowTip, vdStrip, vdLegend,
// vdCreatePlot, vdNoWebGL, vdStatus) and the dashboard's charts (vdLineChart on uPlot). Every frame's layout arrives once as float32 bytes
// (frame f holds points f*n .. f*n+n-1); the epoch slider, the curve's marker, hover,
// colouring and selection run here, so they work while the kernel is busy.
const VDT_CURVE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c"];

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

// The quality curve as a chart spec (views/chart_spec.py): one line per figure in [0, 1]
// over the frames' steps, the current frame marked. The spec views/embeddings_data.py's
// curve_spec builds for the static twin (tests/test_drift_figure.py holds them to one).
function vdtCurveSpec(curve, steps, f) {
  const data = [], now = [], at = f >= 0 && f < steps.length ? steps[f] : null;
  Object.entries(curve || {}).forEach(([name, values], k) => {
    const color = VDT_CURVE_COLOURS[k % VDT_CURVE_COLOURS.length], label = vdEsc(name);
    const y = values.map((v) => (v === null || v === undefined || Number.isNaN(v) ? null : v));
    data.push({ type: "scatter", mode: "lines", name: label, x: steps.slice(0, y.length), y,
      line: { color, width: 1.5 }, hovertemplate: "step %{x}: %{y}" });
    const v = f >= 0 && f < y.length ? y[f] : null;
    data.push({ type: "scatter", mode: "markers", name: label, showlegend: false, hoverinfo: "skip",
      x: [at], y: [v], marker: { color, size: 7 } });
    now.push(v === null ? `${label} \u2013` : `${label} ${v.toFixed(3)}`);
  });
  const shapes = at === null ? [] : [{ type: "line", xref: "x", yref: "paper", x0: at, x1: at, y0: 0, y1: 1,
    line: { color: "#d62728", dash: "solid" } }];
  return { data, layout: { height: 150, margin: { l: 34, r: 8, t: 26, b: 24 }, showlegend: true,
    legend: { orientation: "h" }, shapes, title: { text: at === null ? "" : `step ${at}: ${now.join(" \u00b7 ")}` },
    xaxis: {}, yaxis: { range: [0, 1.02] } } };
}

// The curve drawn by the dashboard's uPlot chart (kept: a slider move is setData), the
// frame's figures in words under it.
function vdtCurve(ui, curve, steps, f) {
  if (!ui.curveChart) {
    const box = vdEl("div", "vd-emb-curve");
    ui.curvePlot = vdEl("div", "vd-emb-curve-plot");
    ui.curveNow = vdEl("div", "vd-emb-now vd-note");
    box.append(ui.curvePlot, ui.curveNow);
    ui.curve.replaceChildren(box);
    ui.curveChart = vdLineChart(ui.curvePlot, { exportable: false });
  }
  const spec = vdtCurveSpec(curve, steps, f);
  ui.curveNow.textContent = vdPlain(spec.layout.title.text);
  ui.curveChart.draw({ data: spec.data, layout: { ...spec.layout, title: undefined } });
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
    vdtCurve(ui, model.get("curve"), model.get("steps"), f);
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
  return () => {
    clearInterval(s.timer); clearTimeout(s.saveTimer);
    if (s.plot) s.plot.destroy();
    if (ui.curveChart) ui.curveChart.purge();
  };
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
