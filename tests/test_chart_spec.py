"""The chart spec (views/chart_spec.py and its JSON schema beside it): every chart the views
produce validates (the dashboard's panels, live and twin, of a session and of a stored run,
and the compare-runs chart), the typed dicts and the schema name the same keys, and a key
outside the spec is refused."""

from __future__ import annotations

import copy

import jsonschema
import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.views import chart_spec
from vizdebug.views._dashboard_figure import dashboard_panels, twin_figure
from vizdebug.views.dashboard import _live

VALIDATOR = jsonschema.Draft202012Validator(chart_spec.schema())


def _errors(spec: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
            for e in VALIDATOR.iter_errors(spec)]


def _train(store=None, steps: int = 120):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4)),
                                         batch_size=16)
    session = vd.watch(model, loader=loader, every=2, store=store)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        for (xb,) in loader:
            opt.zero_grad()
            loss = model(xb).pow(2).mean()
            loss.backward()
            opt.step()
            session.log(loss=loss, acc=min(1.0, step / steps),
                        **{"<b>evil</b>": float("nan") if step == 50 else 1.0})
        if step % 40 == 39:
            session.log(epoch=step // 40, val_loss=loss.item())
    return session


def test_the_typed_dicts_and_the_schema_name_the_same_keys():
    defs = chart_spec.schema()["$defs"]
    pairs = {"scatter": chart_spec.ScatterTrace, "heatmap": chart_spec.HeatmapTrace,
             "bar": chart_spec.BarTrace, "layout": chart_spec.Layout, "axis": chart_spec.Axis,
             "shape": chart_spec.Shape, "annotation": chart_spec.Annotation}
    for name, typed in pairs.items():
        keys = typed.__required_keys__ | typed.__optional_keys__
        assert keys == set(defs[name]["properties"]), name


def test_every_chart_the_views_produce_validates(tmp_path):
    session = _train(store=tmp_path / "run.vdrun")
    panels = dashboard_panels(session.records(), session.system.array())
    session.close()
    stored = vd.open_run(tmp_path / "run.vdrun")
    stored_panels = dashboard_panels(stored.records(), np.empty((0, 4)))
    charts = {f"session {n}": p for n, p in panels.items()}
    charts |= {f"live {n}": p for n, p in _live(panels).items()}
    charts |= {f"twin {n}": twin_figure(p) for n, p in panels.items()}
    charts |= {f"stored run {n}": p for n, p in stored_panels.items()}
    empty = dashboard_panels(vd.records.TrainingRecords(), np.empty((0, 4)))
    charts |= {f"empty {n}": p for n, p in empty.items()}
    second = _train(store=tmp_path / "b.vdrun", steps=60)
    second.close()
    runs = vd.compare_runs([tmp_path / "run.vdrun", tmp_path / "b.vdrun"])
    charts["compare"] = runs._figure(runs.shown)
    assert len(charts) >= 21
    bad = {name: _errors(spec) for name, spec in charts.items() if _errors(spec)}
    assert bad == {}, "\n".join(f"{k}: {v}" for k, v in bad.items())


def test_a_key_outside_the_spec_is_refused():
    spec = {"data": [{"type": "scatter", "x": [0, 1], "y": [1.0, None], "name": "loss"}],
            "layout": {"xaxis": {"title": {"text": "step"}}}}
    assert _errors(spec) == []
    for path, value in ((("data", 0, "fillcolor"), "red"), (("layout", "xaxis", "spikes"), True),
                        (("data", 0, "type"), "pie"), (("layout", "colorway"), [])):
        bad = copy.deepcopy(spec)
        node = bad
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        assert _errors(bad), path
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"data": [{"type": "scatter", "y": "not a list", "x": []}],
                             "layout": {}}, chart_spec.schema())
