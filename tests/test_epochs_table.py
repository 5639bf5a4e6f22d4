"""The per-epoch metrics table: its rows from what a run records about epochs, and its
HTML in the dashboard's static twin, the saved page, the live widget and ``vd.report``."""

from __future__ import annotations

import numpy as np
import pytest

import vizdebug as vd
from vizdebug.analysis.training.epochs import epoch_table
from vizdebug.records import TrainingRecords
from vizdebug.views.epochs_table import MAX_ROWS, epochs_html

LOSS = np.array([4.0, 2.0, 3.0, 1.0, 2.0, 0.0, 5.0])


def _rec(**series):
    return TrainingRecords(scalars={k: (np.asarray(s), np.asarray(v, dtype=float))
                                    for k, (s, v) in series.items()})


def test_an_epoch_logged_at_its_end_or_at_every_step_gives_the_same_rows():
    steps = np.arange(6)
    at_end = epoch_table(_rec(loss=(steps, LOSS[:6]), epoch=([2, 5], [0, 1])))
    every = epoch_table(_rec(loss=(steps, LOSS[:6]), epoch=(steps, [0, 0, 0, 1, 1, 1])))
    for t in (at_end, every):
        assert t.epoch.tolist() == [0, 1] and not t.in_progress
        assert t.first_step.tolist() == [0, 3] and t.last_step.tolist() == [2, 5]
        assert t.columns["loss_mean"].tolist() == [3.0, 1.0]
        assert t.columns["loss_last"].tolist() == [3.0, 0.0]


def test_evaluation_logs_end_epochs_and_the_steps_after_the_last_are_in_progress():
    t = epoch_table(_rec(loss=(np.arange(7), LOSS), val_loss=([2, 5], [2.5, 1.5]),
                         val_acc=([2, 5], [0.5, 0.75])))
    assert t.source == "val_loss" or t.source == "val_acc"
    assert t.epoch.tolist() == [1, 2, -1] and t.in_progress
    assert t.last_step.tolist() == [2, 5, 6] and t.first_step.tolist() == [0, 3, 6]
    assert t.columns["loss_mean"].tolist() == [3.0, 1.0, 5.0]
    assert t.columns["val_acc"][:2].tolist() == [0.5, 0.75] and np.isnan(t.columns["val_acc"][2])
    assert not t.has("val_acc", 2) and t.has("loss_last", 2)


def test_no_epoch_boundary_means_no_table():
    rec = _rec(loss=(np.arange(7), LOSS))
    assert epoch_table(rec) is None and epochs_html(rec) == ""
    assert epoch_table(TrainingRecords()) is None


def test_a_nan_loss_shows_as_nan_and_a_missing_value_as_a_dash():
    loss = LOSS[:6].copy()
    loss[4] = np.nan
    rec = _rec(loss=(np.arange(6), loss), epoch=([2, 5], [0, 1]), val_loss=([5], [0.5]))
    t = epoch_table(rec)
    assert t.columns["loss_mean"][0] == 3.0 and np.isnan(t.columns["loss_mean"][1])
    page = epochs_html(rec)
    row0, row1 = page.split("<tr>")[2:4]
    assert "NaN" in row1 and "–" in row0 and "0.5" in row1


def test_user_names_are_escaped_and_a_long_run_is_cut_with_a_note():
    n = MAX_ROWS + 20
    steps = np.arange(n * 2)
    rec = _rec(**{"<img src=x onerror=alert(1)>": (steps, np.ones(n * 2)),
                  "epoch": (steps[1::2], np.arange(n))})
    page = epochs_html(rec)
    assert "<img" not in page and "&lt;img src=x" in page
    assert page.count("<tr>") == MAX_ROWS + 2  # the head, the rows, the note
    assert "20 more epochs" in page


@pytest.fixture(scope="module")
def trained():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model, every=1)
    for epoch in range(3):
        for _ in range(4):
            opt.zero_grad()
            loss = model(torch.randn(8, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            session.log(loss=loss.detach())
        session.log(val_loss=0.5 / (epoch + 1), epoch=epoch)
    session.close()
    return session


def test_the_dashboard_twin_page_widget_and_report_carry_the_table(trained, tmp_path):
    dash = trained.dashboard(live=False)
    frame = dash.to_frame("epochs")
    assert frame["epoch"].tolist() == [0, 1, 2]
    assert frame["val_loss"].tolist() == pytest.approx([0.5, 0.25, 0.5 / 3])
    assert frame["last_step"].tolist() == [3, 7, 11]
    for html in (dash._twin_html(), dash.to_html()):
        assert "vd-epoch-table" in html and "loss_mean" in html and "0.1667" in html
    widget = trained.dashboard(live=False).widget  # the live widget's HTML area
    assert "vd-epoch-table" in widget.findings_html
    out = vd.report(trained, tmp_path / "r.html", progress=False)
    assert "vd-epoch-table" in out.read_text()
