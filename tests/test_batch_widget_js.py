"""show_batch's Next/Previous race, at the level that sees it: the widget's own script in
node, with a model that behaves like anywidget's, answered by the kernel side's real
``_on_message``. A Previous click right after a Next that asked the kernel for a batch
must not be overridden when that batch arrives."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import vizdebug as vd

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")
SCRIPT = Path(vd.__file__).parent / "views" / "static" / "batch_widget.js"

# A DOM just big enough for the widget, and a model like anywidget's (Backbone): set()
# fires change:<name> after all values of one update are in; save_changes() and send()
# are recorded for the test.
DRIVER = """
function El(tag) { this.tag = tag; this.children = []; this.listeners = {}; this.textContent = ""; this.innerHTML = ""; this.disabled = false; }
El.prototype.append = function (...c) { this.children.push(...c); };
El.prototype.appendChild = function (c) { this.children.push(c); return c; };
El.prototype.addEventListener = function (n, f) { this.listeners[n] = f; };
globalThis.document = { createElement: (t) => new El(t) };
const { default: widget } = await import(process.argv[2]);
const state = JSON.parse(process.argv[3]), steps = JSON.parse(process.argv[4]);
const handlers = {}, sent = [], saved = [];
const model = {
  get: (k) => state[k],
  set: (k, v) => { update({ [k]: v }); },
  on: (name, f) => { (handlers[name] = handlers[name] || []).push(f); },
  off: (name, f) => { handlers[name] = (handlers[name] || []).filter((g) => g !== f); },
  save_changes: () => saved.push(state.page),
  send: (m) => sent.push(m),
};
function update(values) {
  const changed = Object.keys(values).filter((k) => JSON.stringify(state[k]) !== JSON.stringify(values[k]));
  Object.assign(state, values);
  changed.forEach((k) => (handlers["change:" + k] || []).forEach((f) => f()));
}
const el = new El("div");
widget.render({ model, el });
const root = el.children[0], nav = root.children[0], body = root.children[1];
const button = { prev: nav.children[0], next: nav.children[2] };
for (const step of steps) {
  if (step.click) button[step.click].listeners.click();
  else {  // the kernel's custom messages come before its state update, as on the comm
    (step.msgs || []).forEach((m) => (handlers["msg:custom"] || []).forEach((f) => f(m)));
    update(step.reply.answered === "SEQ" ? { ...step.reply, answered: sent.filter((m) => m.type === "more").pop().seq } : step.reply);
  }
}
console.log(JSON.stringify({ page: state.page, shown: body.innerHTML, label: nav.children[1].textContent, sent, saved }));
"""


def _drive(tmp_path: Path, start: dict, steps: list[dict]) -> dict:
    driver, script = tmp_path / "driver.mjs", tmp_path / "batch_widget.mjs"
    driver.write_text(DRIVER)
    script.write_text(SCRIPT.read_text())  # .mjs: node reads it as the ES module it is
    out = subprocess.run([NODE, str(driver), script.as_uri(), json.dumps(start), json.dumps(steps)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def _kernel_reply(view, seq: int) -> dict:
    """What the kernel side sends back for the browser's {"type": "more", "seq": seq}:
    its custom messages (``msgs``) and its state update (``reply``)."""
    w = view.widget
    before = w.page
    msgs = []
    w.send = msgs.append
    view._on_message({"type": "more", "seq": seq})
    assert w.page == before  # the kernel leaves the paging to the browser
    return {"msgs": msgs, "reply": {"count": w.count, "more": w.more, "answered": w.answered}}


@pytest.fixture
def view():
    images = np.random.default_rng(0).random((12, 1, 8, 8)).astype(np.float32)
    loader = [(images[k:k + 4], np.arange(4)) for k in range(0, 12, 4)]
    return vd.show_batch(iter(loader))


def test_a_previous_click_right_after_a_next_is_not_overridden(tmp_path, view):
    w = view.widget
    start = {"pages": list(w.pages), "count": 1, "page": 0, "more": True, "status": "",
             "answered": -1}
    got = _kernel_reply(view, 7)
    reply = got["reply"]
    assert reply["count"] == 2 and reply["answered"] == 7
    assert [(m["start"], len(m["html"])) for m in got["msgs"]] == [(1, 1)]  # the new page only
    reply["answered"] = "SEQ"  # the driver puts in the seq the widget sent
    answer = {"reply": reply, "msgs": got["msgs"]}
    raced = _drive(tmp_path, start, [{"click": "next"}, {"click": "prev"}, answer])
    assert raced["sent"][0]["type"] == "more" and isinstance(raced["sent"][0]["seq"], int)
    assert raced["page"] == 0 and 'data-page="0"' in raced["shown"]  # where the user went
    assert "of 2" in raced["label"]
    plain = _drive(tmp_path, start, [{"click": "next"}, answer])
    assert plain["page"] == 1 and 'data-page="1"' in plain["shown"] and plain["saved"] == [1]
    assert [m["type"] for m in plain["sent"]] == ["more"]  # no resend: nothing was missing
    other = {"reply": dict(reply, answered=123), "msgs": got["msgs"]}  # another view asked
    stays = _drive(tmp_path, start, [{"click": "next"}, other])
    assert stays["page"] == 0 and 'data-page="0"' in stays["shown"]


def test_a_reloaded_page_asks_once_for_the_pages_its_state_lacks(tmp_path, view):
    w = view.widget
    _kernel_reply(view, 1)
    _kernel_reply(view, 2)  # the kernel holds 3 pages; the state still has the first only
    start = {"pages": list(w.pages), "count": w.count, "page": 2, "more": w.more,
             "status": "", "answered": 2}
    msgs = []
    w.send = msgs.append
    view._on_message({"type": "resend", "start": 1})  # what the reloaded widget asks
    assert [(m["start"], len(m["html"])) for m in msgs] == [(1, 2)]
    done = _drive(tmp_path, start, [{"reply": {}, "msgs": msgs}])
    assert [m for m in done["sent"]] == [{"type": "resend", "start": 1}]  # once
    assert 'data-page="2"' in done["shown"] and "of 3" in done["label"]


def test_the_kernel_answers_a_request_without_moving_the_page(view):
    w = view.widget
    reply = _kernel_reply(view, 1)["reply"]
    assert len(view.pages) == 2 and view.page == 0 and w.answered == 1
    w.page = 1  # the browser moves; the kernel side follows
    assert view.page == 1
    _kernel_reply(view, 2)
    assert w.count == 3 and w.answered == 2
    last = _kernel_reply(view, 3)  # nothing left: answered, nothing added, no more to ask
    assert w.count == 3 and w.answered == 3 and not w.more and last["msgs"] == []
    assert "could not" not in w.status
    assert reply["more"]
