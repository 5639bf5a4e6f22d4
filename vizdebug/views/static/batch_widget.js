// Client side of BatchView: pages arrive as trusted HTML rendered (and escaped) by the
// kernel; paging through captured pages happens here, so it works while the kernel is busy.
// The pages known when the widget was built come in its `pages` state; each later page is
// sent once, as a custom message {type: "pages", start, html: [...]}, and kept here in one
// store per model (shared by every view of it): a Next never resends the pages read so far.
// `count` is how many pages the kernel holds; a store that lacks some (a page reloaded
// while the kernel lives, whose state holds only the first pages) asks for them once.
const stores = new WeakMap();

function storeOf(model) {
  let store = stores.get(model);
  if (store) return store;
  store = { pages: (model.get("pages") || []).slice(), views: new Set(), asked: -1 };
  model.on("msg:custom", (msg) => {
    if (!msg || msg.type !== "pages" || !Array.isArray(msg.html)) return;
    msg.html.forEach((h, k) => { store.pages[msg.start + k] = h; });
    store.views.forEach((draw) => draw());
  });
  stores.set(model, store);
  return store;
}

function render({ model, el }) {
  const store = storeOf(model);
  const root = document.createElement("div");
  root.className = "vd-batch-widget";
  const nav = document.createElement("div");
  nav.className = "vd-nav";
  const prev = document.createElement("button");
  prev.textContent = "\u25C0 Previous";
  prev.className = "vd-prev";
  const next = document.createElement("button");
  next.textContent = "Next \u25B6";
  next.className = "vd-next";
  const label = document.createElement("span");
  label.className = "vd-page-label";
  const status = document.createElement("span");
  status.className = "vd-status";
  nav.append(prev, label, next, status);
  const body = document.createElement("div");
  body.className = "vd-page";
  root.append(nav, body);
  el.appendChild(root);

  const count = () => Math.max(model.get("count") || 0, store.pages.length);
  let shown = -1;
  let shownHtml = null;
  function draw() {
    const n = count();
    const i = model.get("page");
    const missing = store.pages.findIndex((p) => p === undefined);
    const first = missing >= 0 ? missing : store.pages.length;
    if (first < n && store.asked !== first) {
      store.asked = first;  // once per gap: the answer fills it
      model.send({ type: "resend", start: first });
    }
    const html = store.pages[i];
    if (i !== shown || html !== shownHtml) {
      body.innerHTML = html === undefined ? "<div class='vd-note'>loading\u2026</div>" : html;
      shown = i;
      shownHtml = html;
    }
    const more = model.get("more");
    label.textContent = ` batch ${i + 1} of ${n}${more ? "+" : ""} `;
    prev.disabled = i <= 0;
    next.disabled = i >= n - 1 && !more;
    status.textContent = model.get("status");
  }
  // A Next at the last page asks the kernel for a batch (request `seq`); the page moves
  // when the kernel answers that request, unless the user paged elsewhere meanwhile.
  let seq = Math.floor(Math.random() * 1e9);
  let pending = null;
  function go(i) { model.set("page", i); model.save_changes(); }
  prev.addEventListener("click", () => {
    pending = null;
    const i = model.get("page");
    if (i > 0) go(i - 1);
  });
  next.addEventListener("click", () => {
    const i = model.get("page");
    if (i < count() - 1) {
      pending = null;
      go(i + 1);
    } else if (model.get("more") && pending === null) {
      seq += 1;
      pending = { seq: seq, from: i };
      status.textContent = " loading the next batch\u2026";
      model.send({ type: "more", seq: seq });
    }
  });
  const onAnswer = () => {
    const asked = pending;
    if (asked === null || model.get("answered") !== asked.seq) return;
    pending = null;
    if (model.get("page") === asked.from && asked.from + 1 < count()) go(asked.from + 1);
    draw();
  };
  model.on("change:answered", onAnswer);
  for (const name of ["count", "page", "more", "status"]) model.on("change:" + name, draw);
  store.views.add(draw);
  draw();
  return () => {
    store.views.delete(draw);
    model.off("change:answered", onAnswer);
    for (const name of ["count", "page", "more", "status"]) model.off("change:" + name, draw);
  };
}
export default { render };
