"""The layer and optimizer panels in the dashboard's HTML area: drawn as SVG in the static
twin, the saved page, the live widget and the report; bounded in size on a long run;
absent where nothing was sampled; user names escaped."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vizdebug as vd
from vizdebug.records import TrainingRecords
from vizdebug.views.panels_static import MAX_LAYERS, panels_html

torch = pytest.importorskip("torch")


class Odd(torch.nn.Module):
    """A module whose path and class name hold markup."""

    def __init__(self):
        super().__init__()
        self.add_module("<b>x</b>", torch.nn.Linear(3, 4))

    def forward(self, x):
        return getattr(self, "<b>x</b>")(x)


def _run(model, steps, every=1):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, max(1, steps // 3), 0.5)
    with vd.watch(model, every=every) as session:
        for _ in range(steps):
            opt.zero_grad()
            loss = model(torch.randn(8, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            sched.step()
            session.log(loss=loss.detach())
    return session


def test_the_panels_show_in_the_twin_the_page_the_widget_and_the_report(tmp_path):
    torch.manual_seed(0)
    session = _run(Odd(), 12)
    dash = session.dashboard(live=False)
    for html in (dash._twin_html(), dash.to_html(), dash.widget.findings_html):
        more = html.split('class="vd-more-panels"', 1)[1].split("</details>", 1)[0]
        assert more.count("<svg") == 3  # activations, weight scale, learning rate
        assert "momentum 0.9" in more and "group 0" in more
        assert "<b>x</b>" not in more and "&lt;b&gt;x&lt;/b&gt;" in more
    out = vd.report(session, tmp_path / "r.html", progress=False)
    assert "vd-more-panels" in out.read_text()


def test_a_long_run_draws_a_bounded_picture():
    torch.manual_seed(0)
    layers = [torch.nn.Linear(3, 3) for _ in range(MAX_LAYERS + 2)]
    short = panels_html(_run(torch.nn.Sequential(*layers), 40).records())
    long_run = _run(torch.nn.Sequential(*layers), 1500, every=2)
    long = panels_html(long_run.records(), long_run)
    assert len(long) < 3 * len(short) and len(long) < 80_000, (len(short), len(long))
    assert "2 more layers" in long  # the rest are named, not drawn
    assert len(re.findall(r"<polygon", long)) == MAX_LAYERS


def test_nothing_sampled_draws_nothing():
    assert panels_html(TrainingRecords()) == ""
    rec = TrainingRecords(scalars={"loss": (np.arange(3), np.ones(3))})
    assert panels_html(rec) == ""
