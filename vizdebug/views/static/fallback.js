// Shared by every vizdebug widget. A view is displayed as two outputs: static HTML first
// (for nbconvert, GitHub, a closed kernel) and then the live widget. Once the widget
// renders, it hides its own static twin, found by id among the preceding siblings of
// the output that holds the widget.
// The widget's element is attached to the page only after render() returns, so the
// search is retried on later frames for a few seconds.
function vdFindFallback(el, sel) {
  let node = el;
  for (let depth = 0; node && depth < 12; depth++) {
    for (let sib = node.previousElementSibling; sib; sib = sib.previousElementSibling) {
      if (sib.matches(sel) || sib.querySelector(sel)) return sib;
    }
    node = node.parentElement;
  }
  return null;
}

function vdHideFallback(model, el, tries = 0) {
  const id = model.get("fallback_id");
  if (!id) return;
  const twin = el.isConnected ? vdFindFallback(el, '[data-vd-fallback="' + id + '"]') : null;
  if (twin) {
    twin.style.display = "none";
  } else if (tries < 120) {
    setTimeout(() => vdHideFallback(model, el, tries + 1), 50);
  }
}
