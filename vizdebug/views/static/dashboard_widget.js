// vizdebug training dashboard: one plotly figure, redrawn in place with Plotly.react.
// plotly.js comes once per page: from window.Plotly if present, else from the shared
// bundle widget (one copy per kernel), never once per dashboard. Smoothing, log scale,
// zoom and hover run here, so they work while the kernel is busy training.

function loadPlotly(model) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__vizdebugPlotly) {
    window.__vizdebugPlotly = (async () => {
      const ref = model.get("bundle") || "";
      const bundle = await model.widget_manager.get_model(ref.replace("IPY_MODEL_", ""));
      // gzip bytes (1.5 MB instead of 4.8); released from the widget state once loaded
      // (see _plotly_bundle.py): a page that comes later asks for them again
      const has = () => { const v = bundle.get("source"); return v && v.byteLength > 0 ? v : null; };
      const packed = has() || await new Promise((resolve) => {
        bundle.on("change:source", () => { if (has()) resolve(has()); });
        bundle.send({ want: "source" });
      });
      const unpacked = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
      const source = await new Response(unpacked).text();
      const amd = window.define;
      window.define = undefined; // plotly's UMD header must set window.Plotly, not define()
      try {
        const script = document.createElement("script");
        script.textContent = source;
        document.head.appendChild(script);
      } finally {
        window.define = amd;
      }
      if (!window.Plotly) throw new Error("vizdebug: plotly.js did not load");
      return window.Plotly;
    })();
  }
  return window.__vizdebugPlotly;
}

function ema(values, weight) {
  if (!weight) return values;
  const out = new Array(values.length);
  let acc = 0, debias = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || !isFinite(v)) { out[i] = v; continue; }
    acc = weight * acc + (1 - weight) * v;
    debias = weight * debias + (1 - weight);
    out[i] = acc / debias;
  }
  return out;
}

function controls(el) {
  el.innerHTML = `
    <div class="vd-dash" style="font-family:system-ui,sans-serif;font-size:13px">
      <div class="vd-bar" style="display:flex;gap:16px;align-items:center;margin:4px 0">
        <b>vizdebug training</b>
        <label>smoothing <input class="vd-smooth" type="range" min="0" max="0.99"
          step="0.01" value="0.6" style="vertical-align:middle"></label>
        <label><input class="vd-log" type="checkbox"> log scale</label>
        <span class="vd-status" style="color:#555"></span>
      </div>
      <div class="vd-plot" style="width:100%"></div>
      <div class="vd-findings"></div>
    </div>`;
  return {
    smooth: el.querySelector(".vd-smooth"), log: el.querySelector(".vd-log"),
    status: el.querySelector(".vd-status"), plot: el.querySelector(".vd-plot"),
    findings: el.querySelector(".vd-findings"),
  };
}

function view(figure, smoothing, logScale) {
  const data = figure.data.map((trace, i) => {
    if (!(trace.meta && trace.meta.smooth)) return trace;
    const raw = figure.data[i - 1];
    return Object.assign({}, trace, { y: ema(raw.y, smoothing), visible: smoothing > 0 });
  });
  const layout = Object.assign({}, figure.layout);
  layout.yaxis = Object.assign({}, layout.yaxis, { type: logScale ? "log" : "linear" });
  return { data, layout };
}

async function render({ model, el }) {
  const ui = controls(el);
  let Plotly;
  try {
    Plotly = await loadPlotly(model);
  } catch (err) {
    ui.status.textContent = String(err);
    return;
  }
  const config = { displaylogo: false, responsive: true };
  const draw = () => {
    const fig = model.get("figure");
    if (!fig || !fig.data) return;
    const v = view(fig, parseFloat(ui.smooth.value), ui.log.checked);
    Plotly.react(ui.plot, v.data, v.layout, config);
    ui.findings.innerHTML = model.get("findings_html"); // escaped by the kernel
    ui.status.textContent = model.get("status");
    ui.plot.dataset.revision = String(model.get("revision"));
  };
  ui.smooth.addEventListener("input", draw);
  ui.log.addEventListener("change", draw);
  // every push bumps the revision: redraw then, even when only the findings or the
  // state changed (a stored run that was interrupted keeps its last figure)
  model.on("change:revision", draw);
  model.on("change:status", () => { ui.status.textContent = model.get("status"); });
  draw();
  return () => {
    model.off("change:revision", draw);
    Plotly.purge(ui.plot);
  };
}

export default { render };
