"""The embedding widget's real ESM in a plain Chromium page, on a small stand-in for the
anywidget model (``get``/``set``/``on``/``save_changes``), fed the trait values the kernel
would send (bytes as DataViews, as ipywidgets hands them over).

No kernel and no JupyterLab: this drives the scatter itself (draw calls, resize, reset,
lost WebGL contexts, frame rates while panning), fast. The kernel-to-page path is tested
in JupyterLab by test_embeddings_browser.py.
"""

from __future__ import annotations

import base64
from typing import Any

MOUNT_JS = """async ({esm, states, width}) => {
  const decode = (v) => {
    if (!(v && v.__b64 !== undefined)) return v;
    const bin = atob(v.__b64), u = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    return new DataView(u.buffer);
  };
  class Model {
    constructor(state) { this.s = {}; this.h = {}; for (const k in state) this.s[k] = decode(state[k]); }
    get(k) { return this.s[k]; }
    set(k, v) { this.s[k] = decode(v); (this.h['change:' + k] || []).forEach((f) => f()); }
    on(e, f) { (this.h[e] = this.h[e] || []).push(f); }
    off() {}
    save_changes() {}
    send(content) { window.vdSent.push(content); }  // custom messages to the kernel
  }
  window.vdDecode = decode;
  window.vdSent = [];
  const url = URL.createObjectURL(new Blob([esm], { type: 'text/javascript' }));
  const mod = (await import(url)).default;
  window.vdModels = [];
  window.vdHosts = [];
  window.vdErrors = window.vdErrors || [];
  for (const state of states) {
    const host = document.createElement('div');
    host.className = 'vd-host';
    host.style.width = width + 'px';
    document.body.append(host);
    const model = new Model(state);
    const t0 = performance.now();
    mod.render({ model, el: host });
    window.vdModels.push(model);
    window.vdHosts.push({ host, t0 });
  }
  return states.length;
}"""

ERRORS_JS = """() => {
  window.vdErrors = [];
  window.addEventListener('unhandledrejection', (e) => window.vdErrors.push(String(e.reason)));
  window.addEventListener('error', (e) => window.vdErrors.push(String(e.message)));
  const warn = console.warn.bind(console), error = console.error.bind(console);
  console.warn = (...a) => { window.vdErrors.push('warn: ' + a.join(' ')); warn(...a); };
  console.error = (...a) => { window.vdErrors.push('error: ' + a.join(' ')); error(...a); };
}"""


def trait_state(widget: Any) -> dict[str, Any]:
    """A widget's synced traits as JSON, bytes as ``{"__b64": ...}``."""
    out = {}
    for name in widget.keys:
        if name.startswith("_") and name != "_esm":
            continue
        value = getattr(widget, name)
        if isinstance(value, (bytes, memoryview)):
            out[name] = {"__b64": base64.b64encode(bytes(value)).decode("ascii")}
        elif isinstance(value, (str, int, float, bool, list, dict)) or value is None:
            out[name] = value  # (not ipywidgets' Layout and such: the view does not read them)
    return out


def mount(page: Any, widgets: list[Any], width: int = 900) -> None:
    """Render ``widgets`` (embedding widgets) into ``page``, each in a host ``width`` wide."""
    page.evaluate(ERRORS_JS)
    css = widgets[0]._css
    page.add_style_tag(content=css)
    states = [trait_state(w) for w in widgets]
    esm = states[0].pop("_esm")
    for s in states[1:]:
        s.pop("_esm")
    page.evaluate(MOUNT_JS, {"esm": esm, "states": states, "width": width})


UPDATE_JS = """({index, state}) => {
  const m = window.vdModels[index];
  for (const k in state) m.s[k] = window.vdDecode(state[k]);  // one message: all set, then events
  for (const k in state) (m.h['change:' + k] || []).forEach((f) => f());
}"""


def update(page: Any, widget: Any, names: list[str], index: int = 0) -> None:
    """Send the traits ``names`` of ``widget`` to the ``index``-th view's model, as the
    kernel's one state message would (every value set, then the change events)."""
    state = {k: v for k, v in trait_state(widget).items() if k in names}
    page.evaluate(UPDATE_JS, {"index": index, "state": state})


def plot_js(index: int, body: str) -> str:
    """A JS function of the ``index``-th view's plot ``p``, host ``h`` and model ``m``."""
    return (f"() => {{ const h = window.vdHosts[{index}].host; const m = window.vdModels[{index}];"
            f" const p = h.__vdPlot; {body} }}")


def drawn(page: Any, index: int = 0) -> int:
    return page.evaluate(plot_js(index, "return p && p.get('isPointsDrawn') ? "
                                        "p.get('points').length : 0;"))
