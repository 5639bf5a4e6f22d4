"""``.figure()`` and ``.to_frame()`` on every chart view: the figure holds the frame's
numbers (a real training session, a real stored run, real drift / predictions /
embeddings / compare-runs views), and a missing plotly is an error naming the install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import vizdebug as vd
from vizdebug.errors import VizdebugError, VizdebugTypeError
from vizdebug.views._plotly_export import pivot
from vizdebug.views.panel_frames import FRAME_PANELS

torch = pytest.importorskip("torch")
go = pytest.importorskip("plotly.graph_objects")


def _train(store=None, epochs=3):
    """A small real loop: two parameter groups, AdamW, a scheduler, epochs and eval logs."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    opt = torch.optim.AdamW([{"params": model[0].parameters()},
                             {"params": model[2].parameters(), "lr": 1e-2}],
                            lr=1e-3, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=16)
    session = vd.watch(model, loader=loader, every=2, store=store)
    for epoch in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            sched.step()
            session.log(loss=loss.detach())
        session.log(val_loss=1.0 / (epoch + 1), val_acc=0.3 + 0.1 * epoch, epoch=epoch)
    session.close()
    return session


@pytest.fixture(scope="module")
def session():
    return _train()


def _arr(values):
    return np.asarray(values, dtype=float)


def _same(a, b):
    np.testing.assert_array_equal(_arr(a), _arr(b))


def _lines_match(fig, frame, x, y, by):
    """Each trace is one group of the frame, x and y unchanged, and nothing is left out."""
    groups = dict(tuple(frame.groupby(by, sort=False))) if by else {y: frame}
    assert sorted(t.name for t in fig.data) == sorted(str(k) for k in groups)
    for trace in fig.data:
        part = next(v for k, v in groups.items() if str(k) == trace.name)
        _same(trace.x, part[x])
        _same(trace.y, part[y])


def _heat_match(fig, frame, x, y, z):
    table = pivot(frame, x=x, y=y, z=z)
    (heat,) = fig.data
    _same(heat.customdata, table.to_numpy(dtype=float))
    with np.errstate(all="ignore"):
        want = np.log10(np.where(table.to_numpy(dtype=float) > 0, table.to_numpy(dtype=float),
                                 np.nan))
    _same(heat.z, want)
    assert list(heat.y) == [str(r) for r in table.index]
    _same(heat.x, table.columns)


def test_every_dashboard_panel_has_a_frame_and_a_figure_that_holds_it(session):
    dash = session.dashboard(live=False)
    frames = {p: dash.to_frame(p) for p in FRAME_PANELS}
    assert all(len(f) for p, f in frames.items() if p != "system"), {
        p: len(f) for p, f in frames.items()}
    _lines_match(dash.figure("curves"), frames["curves"], "step", "value", "name")
    scalars = session.scalars()  # the frame is the logged series, as scalars() has them
    loss = frames["curves"][frames["curves"]["name"] == "loss"]
    _same(loss["value"], scalars[scalars["name"] == "loss"]["value"])
    _heat_match(dash.figure("grads"), frames["grads"], "step", "param", "grad_norm")
    _heat_match(dash.figure("parameters"), frames["parameters"], "step", "layer", "weight_rms")
    health = dash.figure("health")
    for trace in health.data:
        _same(trace.x, frames["health"][trace.name])
        assert list(trace.y) == frames["health"]["module"].tolist()
    timing = frames["timing"].melt(id_vars="batch", var_name="part", value_name="ms")
    _lines_match(dash.figure("timing"), timing, "batch", "ms", "part")
    band = dash.figure("activations")
    acts = frames["activations"]
    for trace in band.data:
        part = acts[acts["layer"] == trace.meta["group"]]
        _same(trace.x, part["step"])
        _same(trace.y, part[trace.meta["column"]])
    assert {t.meta["group"] for t in band.data} == set(acts["layer"])


def test_the_optimizer_panel_shows_each_groups_settings_as_the_scheduler_moves_them(session):
    frame = session.to_frame("optimizer")
    assert sorted(set(frame["group"])) == [0, 1]
    g1 = frame[frame["group"] == 1]
    assert g1["lr"].iloc[0] == pytest.approx(1e-2)  # the step the group was made with
    assert g1["lr"].min() < 1e-2  # StepLR halved it
    assert set(frame["momentum"]) == {0.9} and set(frame["weight_decay"]) == {0.05}
    fig = session.figure("optimizer")
    for trace in fig.data:  # three rows (lr, momentum, weight_decay), a line per group
        setting = trace.yaxis
        column = {"y": "lr", "y2": "momentum", "y3": "weight_decay"}[setting]
        part = frame[frame["group"] == int(trace.name.split()[-1])]
        _same(trace.x, part["step"])
        _same(trace.y, part[column])
    assert fig.layout.yaxis.type == "log"


def test_the_whole_dashboard_is_one_figure_a_row_per_panel(session, tmp_path):
    fig = session.dashboard(live=False).figure()
    panels = {t.meta["panel"] for t in fig.data}
    assert {"curves", "grads", "health", "epochs", "activations", "parameters"} <= panels
    assert {"optimizer lr", "optimizer momentum", "optimizer weight_decay"} <= panels
    out = tmp_path / "dash.html"
    fig.write_html(out, include_plotlyjs=False)  # a user saves it as HTML
    assert out.stat().st_size > 1000 and "val_loss" in out.read_text()


def test_a_stored_runs_series_round_trip_through_figure_and_frame(tmp_path):
    _train(store=str(tmp_path / "run.sqlite"), epochs=2)
    run = vd.open_run(tmp_path / "run.sqlite")
    frame = run.to_frame()
    stored = run.scalars()
    for name in ("loss", "val_loss", "epoch"):
        _same(frame[frame["name"] == name]["value"], stored[stored["name"] == name]["value"])
    _lines_match(run.figure(), frame, "step", "value", "name")
    epochs = run.to_frame("epochs")
    assert epochs["epoch"].tolist() == [0, 1]
    assert epochs["val_loss"].tolist() == [1.0, 0.5]
    # a stored run keeps the traced learning rates; momentum and decay are not stored
    opt = run.to_frame("optimizer")
    assert len(opt) and opt["momentum"].isna().all()
    run.to_frame("curves").to_csv(tmp_path / "series.csv", index=False)
    back = pd.read_csv(tmp_path / "series.csv")
    _same(back["value"], frame["value"])


def test_drift_overlays_per_feature_round_trip():
    rng = np.random.default_rng(0)
    view = vd.compare_distributions(
        {"x": rng.normal(size=400), "c": rng.choice(list("abc"), 400)},
        {"x": rng.normal(1.0, size=400), "c": rng.choice(list("abd"), 400)})
    x = view.to_frame("x")
    assert x["ref_count"].sum() == 400 and x["cur_count"].sum() == 400
    assert (x["bin_low"].iloc[1:].to_numpy() == x["bin_high"].iloc[:-1].to_numpy()).all()
    fig = view.figure("x")
    ref, cur = fig.data
    _same(ref.y, x["ref_share"])
    _same(cur.y, x["cur_share"])
    _same(ref.x, (x["bin_low"] + x["bin_high"]) / 2)
    c = view.to_frame("c")
    assert set(c["category"]) >= {"a", "b", "c", "d"}
    ref, cur = view.figure("c").data
    assert list(ref.x) == c["category"].tolist()
    _same(cur.y, c["cur_share"])
    assert view.to_frame().equals(view.to_frame(view.results[0].feature))
    with pytest.raises(VizdebugError, match="no feature called 'nope'"):
        view.figure("nope")
    with pytest.raises(VizdebugTypeError, match="feature must be a column name"):
        view.to_frame(3)


def test_the_confusion_matrix_round_trips():
    view = vd.show_predictions(["cat", "dog", "dog", "<b>", "<b>", "<b>"],
                               ["cat", "dog", "<b>", "<b>", "<b>", "dog"])
    frame = view.to_frame()
    square = frame.pivot(index="true", columns="predicted", values="count")
    labels = [str(c) for c in view.report.classes]
    np.testing.assert_array_equal(square.loc[labels, labels].to_numpy(), view.report.confusion)
    (heat,) = view.figure().data
    np.testing.assert_array_equal(np.asarray(heat.z), view.report.confusion)
    assert list(heat.x) == labels == list(heat.y)


def test_the_embedding_picture_round_trips():
    rng = np.random.default_rng(1)
    feats = np.r_[rng.normal(0, 1, (30, 5)), rng.normal(4, 1, (30, 5))]
    view = vd.show_embeddings(feats, labels=["a"] * 30 + ["b"] * 30, method="pca").wait()
    frame = view.to_frame()
    _same(frame[["x", "y"]], view.layout)
    assert frame["row"].tolist() == list(range(60))
    fig = view.figure()
    assert sorted(t.name for t in fig.data) == ["a", "b"]
    for trace in fig.data:
        part = frame[frame["label"] == trace.name]
        _same(trace.x, part["x"])
        _same(trace.y, part["y"])
        _same(trace.customdata, part["row"])


def _sweep(folder, losses, configs=None):
    for name, values in losses.items():
        model = torch.nn.Linear(2, 1)
        s = vd.watch(model, store=str(folder / f"{name}.sqlite"), config=(configs or {}).get(name))
        for step, value in enumerate(values):
            s.log(step=step, loss=value)
        s.close()


@pytest.mark.parametrize("grouped", [False, True])
def test_compare_runs_round_trips_per_run_and_per_group(tmp_path, grouped):
    _sweep(tmp_path, {"s0": [4.0, 2.0, 1.0], "s1": [2.0, 1.0, 0.5], "t0": [900.0, 9.0, 0.1]},
           {"s0": {"lr": 0.1}, "s1": {"lr": 0.1}, "t0": {"lr": 1.0}})
    view = vd.compare_runs(tmp_path, group_by="lr" if grouped else None)
    frame = view.to_frame()
    expect = {"lr=0.1 (2 runs)", "lr=1.0 (1 runs)"} if grouped else {"s0", "s1", "t0"}
    assert set(frame["run"]) == expect
    if not grouped:
        s0 = frame[frame["run"] == "s0"]
        assert s0["mean"].tolist() == [4.0, 2.0, 1.0] and s0["step"].tolist() == [0, 1, 2]
    fig = view.figure()
    for trace in fig.data:
        part = frame[frame["run"] == trace.meta["group"]]
        _same(trace.x, part["step"])
        _same(trace.y, part[trace.meta["column"]])
    assert fig.layout.yaxis.type == "log"  # a positive loss over four decades


def test_a_bad_panel_name_says_which_panels_there_are(session):
    with pytest.raises(VizdebugError, match=r"no panel called 'loss'.*'curves'"):
        session.to_frame("loss")
    with pytest.raises(VizdebugTypeError, match="panel must be a panel's name"):
        session.dashboard(live=False).figure(3)


BLOCK_PLOTLY = textwrap.dedent("""
    import sys
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == "plotly" or name.startswith("plotly."):
                raise ModuleNotFoundError(f"No module named {name!r}")
    sys.meta_path.insert(0, Block())
    import numpy as np
    import vizdebug as vd
    from vizdebug.errors import VizdebugError
    view = vd.show_predictions([0, 1, 1], [0, 1, 0])
    assert len(view.to_frame()) == 4  # the numbers need no plotly
    try:
        view.figure()
    except VizdebugError as exc:
        print("ERROR:", exc)
    rng = np.random.default_rng(0)
    drift = vd.compare_distributions({"x": rng.normal(size=50)}, {"x": rng.normal(size=50)})
    try:
        drift.figure()
    except VizdebugError as exc:
        print("ERROR:", exc)
""")


@pytest.mark.slow  # a fresh interpreter imports vizdebug (several seconds on a shared machine)
def test_without_plotly_figure_names_the_install_and_to_frame_still_works():
    out = subprocess.run([sys.executable, "-c", BLOCK_PLOTLY], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    errors = [line for line in out.stdout.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 2
    assert all("pip install plotly" in e and "to_frame()" in e for e in errors), errors
