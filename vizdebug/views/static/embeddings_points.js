// Points of the embedding views, shared by EmbeddingView and the timeline (their scripts
// follow this one): trait bytes read as typed arrays, the colour encoding of a colouring,
// one draw at a time, and the fixed sample drawn while the camera moves.
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
    total: model.get("total") || 0,  // a big set's first state holds a sample of its points
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

// regl-scatterplot refuses a draw while one runs (a rejected promise, logged as uncaught):
// one job at a time, in order. A job waiting is replaced by a newer one of its kind only
// ("draw", "fit", "filter"): a draw asked for meanwhile must not drop the unfilter that
// ends a move (the sample would stay filtered, and a selection keep only its part of it).
function vdDrawQueue() {
  let running = false;
  const waiting = [];
  const run = (job) => {
    running = true;
    Promise.resolve().then(job).catch((err) => console.debug("vizdebug: draw skipped", err))
      .finally(() => { running = false; if (waiting.length) run(waiting.shift().job); });
  };
  return (job, kind = "draw") => {
    if (!running) { run(job); return; }
    const at = waiting.findIndex((w) => w.kind === kind);
    if (at >= 0) waiting.splice(at, 1);
    waiting.push({ kind, job });
  };
}

// Past VD_MOVING_AT points a software-rendered frame takes a second: while the camera
// moves, a fixed sample is drawn (regl-scatterplot's filter), and every point once it stops.
// The filter deselects what it hides, and its job may run after the camera stopped (queued
// behind a slow draw): selection events of these jobs are ignored (s.quiet), and the
// selection kept in the model is put back once every point is drawn again.
function vdMovingSample(n) {
  const step = n / VD_MOVING_POINTS, out = new Array(VD_MOVING_POINTS);
  for (let k = 0; k < VD_MOVING_POINTS; k++) out[k] = Math.floor(k * step);
  return out;
}

function vdMotion(s, queue, kept) {
  let timer = null, sample = null;
  s.moving = false;
  s.quiet = 0;  // jobs of this motion running: the selection events they cause are not the user's
  const quiet = (job) => () => {
    s.quiet++;
    return Promise.resolve().then(job).finally(() => { s.quiet--; });
  };
  const still = () => {
    timer = null;
    s.moving = false;
    queue(quiet(() => s.plot.unfilter({ preventEvent: true })  // the filter dropped the rest of it
      .then(() => kept().length && s.plot.select(kept(), { preventEvent: true }))), "filter");
  };
  return () => {
    if (!s.plot || s.d.x.length <= VD_MOVING_AT || s.transition) return;
    if (!s.moving) {
      s.moving = true;
      if (!sample || sample.n !== s.d.x.length) sample = { n: s.d.x.length, points: vdMovingSample(s.d.x.length) };
      const points = sample.points;
      queue(quiet(() => s.plot.filter(points, { preventEvent: true })), "filter");
    }
    clearTimeout(timer);
    timer = setTimeout(still, VD_STILL_MS);
  };
}
