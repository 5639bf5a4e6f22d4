// Client side of BatchView: pages arrive as trusted HTML rendered (and escaped) by the
// kernel; paging through captured pages happens here, so it works while the kernel is busy.
function render({ model, el }) {
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

  let shown = -1;
  let shownCount = -1;
  function draw() {
    const pages = model.get("pages");
    const i = model.get("page");
    if (i !== shown || pages.length !== shownCount) {
      body.innerHTML = pages[i] || "";
      shown = i;
      shownCount = pages.length;
    }
    const more = model.get("more");
    label.textContent = ` batch ${i + 1} of ${pages.length}${more ? "+" : ""} `;
    prev.disabled = i <= 0;
    next.disabled = i >= pages.length - 1 && !more;
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
    if (i < model.get("pages").length - 1) {
      pending = null;
      go(i + 1);
    } else if (model.get("more") && pending === null) {
      seq += 1;
      pending = { seq: seq, from: i };
      status.textContent = " loading the next batch\u2026";
      model.send({ type: "more", seq: seq });
    }
  });
  model.on("change:answered", () => {
    const asked = pending;
    if (asked === null || model.get("answered") !== asked.seq) return;
    pending = null;
    if (model.get("page") === asked.from && asked.from + 1 < model.get("pages").length) go(asked.from + 1);
    draw();
  });
  model.on("change:pages", draw);
  model.on("change:page", draw);
  model.on("change:more", draw);
  model.on("change:status", draw);
  draw();
}
export default { render };
