"""``vd.compare_runs``: many stored runs overlaid, grouped, filtered, ranked, diffed."""

from __future__ import annotations

import sqlite3

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import vizdebug as vd
from vizdebug.analysis.runs import band, groups, new_findings
from vizdebug.errors import VizdebugError, VizdebugTypeError
from vizdebug.findings import Finding, Findings
from vizdebug.store.many import BUCKETS, read_entry
from vizdebug.views.compare import compare_runs


def _sweep(folder, losses: dict[str, list[float]], configs: dict[str, dict] | None = None):
    """Stored runs whose loss curves are exactly ``losses`` (name -> values per step)."""
    model = nn.Linear(2, 1)
    for name, values in losses.items():
        session = vd.watch(model, store=str(folder / f"{name}.sqlite"),
                           config=(configs or {}).get(name))
        for step, value in enumerate(values):
            session.log(step=step, loss=value)
        session.close()
    return folder


def test_a_spike_of_one_step_stays_on_the_chart_of_a_long_run(tmp_path):
    values = list(np.linspace(2.0, 0.1, 20_000))
    values[7777] = 50.0  # one step in 20,000: a mean per bucket would hide it
    _sweep(tmp_path, {"long": values})
    curve = read_entry(tmp_path / "long.sqlite", ["loss"]).curves["loss"]
    assert curve.step.size <= BUCKETS + 1 and curve.count == 20_000
    assert curve.high.max() == pytest.approx(50.0)
    view = compare_runs(tmp_path)
    ys = [y for t in view.figure()["data"] for y in t["y"] if y is not None]
    assert max(ys) == pytest.approx(50.0)
    assert view.figure()["layout"]["yaxis"]["type"] == "log"  # a loss over 2 decades


def test_short_runs_are_read_point_by_point(tmp_path):
    _sweep(tmp_path, {"a": [3.0, 2.0, 1.0], "b": [1.0, 0.5]})
    entry = read_entry(tmp_path / "a.sqlite")
    assert entry.curves["loss"].mean.tolist() == [3.0, 2.0, 1.0]
    assert entry.summary("loss") == {"final": 1.0, "best": 1.0, "best_step": 2}


def test_groups_of_a_config_key_give_the_mean_and_the_min_max_band(tmp_path):
    losses = {"s0": [4.0, 2.0, 1.0], "s1": [2.0, 1.0, 0.0], "t0": [9.0, 9.0, 9.0]}
    configs = {"s0": {"lr": 0.1, "seed": 0}, "s1": {"lr": 0.1, "seed": 1},
               "t0": {"lr": 1.0, "seed": 0}}
    _sweep(tmp_path, losses, configs)
    view = compare_runs(tmp_path, group_by="lr")
    by = groups(view.entries, "lr")
    assert sorted(len(v) for v in by.values()) == [1, 2]
    b = band("lr=0.1", by["lr=0.1"], "loss")
    assert b.mean.tolist() == [3.0, 1.5, 0.5]
    assert b.low.tolist() == [2.0, 1.0, 0.0] and b.high.tolist() == [4.0, 2.0, 1.0]
    names = [t["name"] for t in view.figure()["data"]]
    assert "lr=0.1 (2 runs)" in names and "lr=1.0 (1 runs)" in names
    table = view.table()
    assert list(table["lr"]) == [0.1, 0.1, 1.0]  # the varying key is a column
    assert "seed" in table.columns


def test_filter_and_rank_and_the_runs_table(tmp_path):
    losses = {"fast": [1.0, 0.1], "slow": [1.0, 0.6], "mid": [1.0, 0.3]}
    configs = {"fast": {"lr": 0.3}, "slow": {"lr": 0.01}, "mid": {"lr": 0.1}}
    _sweep(tmp_path, losses, configs)
    view = compare_runs(tmp_path)
    assert [e.name for e in view.shown] == ["fast", "mid", "slow"]  # best loss first
    view.query = "lr=0.01"
    assert [e.name for e in view.shown] == ["slow"]
    assert compare_runs(tmp_path, filter="mid").table()["run"].tolist() == ["mid"]


def test_a_run_with_a_fault_shows_its_new_findings_against_the_baseline(tmp_path):
    torch.manual_seed(0)
    for name, lr in (("good", 0.05), ("blown", 1e6)):
        model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        session = vd.watch(model, store=str(tmp_path / f"{name}.sqlite"), config={"lr": lr})
        for step in range(60):
            x = torch.randn(32, 4)
            loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(step=step, loss=loss)
        session.close()
    view = compare_runs(tmp_path, baseline="good")
    found = view.findings
    assert found and all(f.where.startswith("blown") for f in found)
    assert pd.isna(view.table().set_index("run").loc["good", "new vs baseline"])
    assert view.table().set_index("run").loc["blown", "new vs baseline"] >= 1
    html = view.to_html()
    assert "new vs baseline good" in html and "<svg" in html


def test_new_findings_keeps_only_what_the_baseline_lacks():
    base = Findings([Finding("dead-units", "warning", "m", "fc1")])
    run = Findings([Finding("dead-units", "warning", "m", "fc1"),
                    Finding("dead-units", "warning", "m", "fc2"),
                    Finding("exploding-gradients", "error", "m", None),
                    Finding("underfitting", "info", "m", None)])
    assert {(f.code, f.where) for f in new_findings(run, base)} == {
        ("dead-units", "fc2"), ("exploding-gradients", None)}


def test_user_strings_are_escaped(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    _sweep(tmp_path, {"r": [1.0, 0.5]}, {"r": {"note": evil}})
    _sweep(tmp_path, {"q": [1.0, 0.4]}, {"q": {"note": "plain"}})
    html = compare_runs(tmp_path).to_html()
    assert evil not in html and "&lt;img" in html


def test_one_unreadable_file_is_one_line_and_the_others_are_drawn(tmp_path):
    _sweep(tmp_path, {"ok": [1.0, 0.5]})
    _sweep(tmp_path, {"bad": [1.0, 0.5]})
    with sqlite3.connect(tmp_path / "bad.sqlite") as conn:
        conn.execute("DROP TABLE scalars")
    view = compare_runs(tmp_path)
    states = {e.name: e.state for e in view.entries}
    assert states["ok"] == "closed" and states["bad"] == "unreadable"
    assert "unreadable" in view.to_html()


@pytest.mark.parametrize("bad, error", [
    (42, VizdebugTypeError), ("no/such/folder", VizdebugError), ([object()], VizdebugTypeError)])
def test_bad_input_gets_a_clear_error(bad, error):
    with pytest.raises(error):
        compare_runs(bad)


def test_an_empty_folder_and_bad_options_say_what_works(tmp_path):
    with pytest.raises(VizdebugError, match="no vizdebug runs"):
        compare_runs(tmp_path)
    _sweep(tmp_path, {"a": [1.0]})
    with pytest.raises(VizdebugError, match="baseline"):
        compare_runs(tmp_path, baseline="nope")
    with pytest.raises(VizdebugError, match="sort"):
        compare_runs(tmp_path, sort="worst")


def test_the_command_line_writes_the_comparison_as_a_report(tmp_path, capsys):
    from vizdebug.__main__ import main

    _sweep(tmp_path, {"a": [1.0, 0.5], "b": [1.0, 0.2]},
           {"a": {"lr": 0.1}, "b": {"lr": 0.3}})
    assert main(["compare", str(tmp_path), "--group-by", "lr"]) == 0
    page = (tmp_path / "compare.html").read_text(encoding="utf-8")
    assert "2 of 2 runs, grouped by lr" in page and "<svg" in page
    assert "report written to" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "nothing-here")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_live_widget_answers_its_controls(tmp_path):
    _sweep(tmp_path, {"a": [1.0, 0.5], "b": [1.0, 0.2]},
           {"a": {"lr": 0.1}, "b": {"lr": 0.3}})
    view = compare_runs(tmp_path)
    widget = view.widget
    assert widget.metrics == ["loss"] and widget.config_keys == ["lr"]
    widget.group_by = "lr"
    assert view.group_by == "lr" and "grouped by lr" in widget.body_html
    widget.query = "lr=0.3"
    assert [e.name for e in view.shown] == ["b"]
    assert "1 of 2 runs" in widget.body_html
