// Client side of CompareRuns: the controls ask the kernel to redraw (chart and table come
// back as HTML it rendered and escaped); a click on a column header sorts the table here,
// so sorting works while the kernel is busy.
function vdOption(select, value, label) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = label;
  select.appendChild(o);
}

function vdSelect(model, trait, items, blank) {
  const s = document.createElement("select");
  s.className = `vd-compare-${trait}`;
  if (blank !== null) vdOption(s, "", blank);
  for (const item of model.get(items)) vdOption(s, item, item);
  s.value = model.get(trait);
  s.addEventListener("change", () => { model.set(trait, s.value); model.save_changes(); });
  return s;
}

function vdCellValue(td) {
  const text = td.textContent.replace(" ★ baseline", "").trim();
  const n = Number(text);
  return text === "–" ? null : Number.isFinite(n) && text !== "" ? n : text;
}

function vdSortTable(table, col, state) {
  const body = table.tBodies[0];
  const dir = state.col === col ? -state.dir : 1;
  state.col = col;
  state.dir = dir;
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = vdCellValue(a.cells[col]), y = vdCellValue(b.cells[col]);
    if (x === null || y === null) return (x === null) - (y === null);
    return (x < y ? -1 : x > y ? 1 : 0) * dir;
  });
  for (const r of rows) body.appendChild(r);
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "vd-compare-widget";
  const bar = document.createElement("div");
  bar.style.cssText = "display:flex;gap:8px;align-items:center;flex-wrap:wrap;margin:4px 0;font:12px system-ui,sans-serif";
  const label = (text, node) => {
    const l = document.createElement("label");
    l.textContent = `${text} `;
    l.appendChild(node);
    return l;
  };
  const filter = document.createElement("input");
  filter.className = "vd-compare-query";
  filter.placeholder = "filter: lr=0.1 seed";
  filter.value = model.get("query");
  filter.addEventListener("change", () => { model.set("query", filter.value); model.save_changes(); });
  const status = document.createElement("span");
  status.className = "vd-compare-status";
  status.style.color = "#666";
  bar.append(label("metric", vdSelect(model, "metric", "metrics", null)),
    label("group by", vdSelect(model, "group_by", "config_keys", "(none)")),
    label("baseline", vdSelect(model, "baseline", "runs", "(none)")), filter, status);
  const body = document.createElement("div");
  body.className = "vd-compare-body";
  root.append(bar, body);
  el.appendChild(root);
  const sortState = { col: -1, dir: 1 };
  function draw() {
    body.innerHTML = model.get("body_html");
    const table = body.querySelector("table.vd-compare-table");
    if (!table) return;
    for (const th of table.tHead.rows[0].cells) {
      th.style.cursor = "pointer";
      th.title = "sort";
      th.addEventListener("click", () => vdSortTable(table, th.cellIndex, sortState));
    }
    if (sortState.col >= 0) {
      sortState.dir = -sortState.dir;
      vdSortTable(table, sortState.col, sortState);
    }
  }
  const showStatus = () => { status.textContent = model.get("status"); };
  model.on("change:body_html", draw);
  model.on("change:status", showStatus);
  draw();
  showStatus();
}

export default { render };
