"""show_batch paging: the bytes the kernel sends to the browser per Next click.

A loader of 20 batches of 64 RGB 32x32 images (CIFAR-sized); the widget's Next at the last
page asks the kernel for a batch (the message the browser sends), and every comm message
the kernel sends back (state updates and custom messages, as JSON) is counted. The
reference is the new page's own HTML: sending exactly it is a ratio of 1.0x.
Run: ``python benchmarks/bench_batch_paging.py`` (bytes are deterministic; no repeats).
"""

from __future__ import annotations

import json

import numpy as np


def main(pages: int = 20, batch: int = 64) -> dict:
    import vizdebug as vd
    from vizdebug import _env

    _env.set_renderer("widget")
    rng = np.random.default_rng(0)
    loader = [(rng.random((batch, 3, 32, 32), dtype=np.float32), rng.integers(0, 10, batch))
              for _ in range(pages)]
    view = vd.show_batch(iter(loader))
    w = view.widget
    sent: list[int] = []
    real_send = w._send

    def counting_send(msg, buffers=None):
        sent.append(len(json.dumps(msg, default=str)) + sum(len(b) for b in buffers or []))
        return real_send(msg, buffers)

    w._send = counting_send
    per_click, page_sizes = [], []
    for seq in range(1, pages):
        sent.clear()
        view._on_message({"type": "more", "seq": seq})
        w.page = len(view.pages) - 1  # the browser moves to the page it received
        per_click.append(sum(sent))
        page_sizes.append(len(json.dumps(view.pages[-1].html)))
    return {"per_click": per_click, "page_bytes": page_sizes}


if __name__ == "__main__":
    out = main()
    clicks, page = out["per_click"], out["page_bytes"]
    print(f"{'click':>5} {'sent (KB)':>10} {'new page (KB)':>14} {'ratio':>7}")
    for i, (s, p) in enumerate(zip(clicks, page), start=2):
        if i in (2, 5, 10, 15, 20):
            print(f"{i:>5} {s / 1e3:>10.1f} {p / 1e3:>14.1f} {s / p:>6.2f}x")
    print(f"total over {len(clicks)} clicks: {sum(clicks) / 1e6:.2f} MB "
          f"(the pages themselves: {sum(page) / 1e6:.2f} MB)")
