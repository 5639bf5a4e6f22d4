// Shared by every vizdebug widget. A view is displayed as two outputs: static HTML first
// (for nbconvert, GitHub, a closed kernel), then the live widget. Once the widget has
// rendered, it hides its own static twin with a style rule placed inside its own element
// (the `el` anywidget hands to render): no walk through the front end's DOM, so it works
// wherever the two outputs share a document (JupyterLab, Notebook 7, VS Code, nbconvert
// pages with live widgets). Where a widget fails to render, its twin stays visible.
function vdHideFallback(model, el) {
  const id = String(model.get("fallback_id") || "");
  if (!/^[0-9a-f]{8,64}$/.test(id) || el.dataset.vdTwinShown === "1") return;
  let style = el.querySelector(":scope > style.vd-twin-hider");
  if (!style) {
    style = document.createElement("style");
    style.className = "vd-twin-hider";
    el.appendChild(style);
  }
  style.textContent = '.vd-static-fallback[data-vd-fallback="' + id + '"]{display:none !important}';
}

// A widget that cannot draw here (no WebGL, say) shows its static twin again.
function vdShowFallback(model, el) {
  el.dataset.vdTwinShown = "1";
  el.querySelectorAll(":scope > style.vd-twin-hider").forEach((s) => s.remove());
}
