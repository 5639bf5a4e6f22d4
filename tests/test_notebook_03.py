"""notebooks/03_drift.ipynb runs top to bottom in a real kernel and says what it should."""

from __future__ import annotations

import pytest

from tests.notebook_runs import execute, outputs_of, plain_text


@pytest.mark.notebook
def test_drift_notebook_runs_and_finds_the_drift() -> None:
    nb = execute("03_drift.ipynb", 600, cleared=True)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    static, live = (o["data"] for o in outputs_of(nb, "drift = vd.compare_distributions")[:2])
    assert "application/vnd.jupyter.widget-view+json" in live  # the widget, after ...
    assert "data-vd-fallback" in static["text/html"]  # ... its static twin
    view = static
    assert "vdDriftMount" in view["text/html"] and "Plotly.newPlot" not in view["text/html"]
    assert "DriftView: 3 of 8 features drifted" in view["text/plain"]
    for name in ("temperature", "vibration", "firmware"):
        assert name in view["text/plain"].split("drifted:", 1)[1]
    windows = plain_text(outputs_of(nb, "early = vd.compare_distributions"))
    assert "first two weeks: []" in windows
    assert all(n in windows.split("last two weeks:")[1] for n in ("temperature", "vibration", "firmware"))
    split = plain_text(outputs_of(nb, "split = vd.compare_distributions"))
    assert "0 of 30 features drifted" in split
    assert "No findings" in outputs_of(nb, "split = vd.compare_distributions")[-1]["data"]["text/html"]
    scanner = outputs_of(nb, "scanner = vd.compare_distributions")[0]["data"]["text/plain"]
    assert "mean radius" in scanner and "mean texture" in scanner
    # the cell's result (the table) comes last: the two views show first, where they are made
    sizes = outputs_of(nb, "big = vd.compare_distributions")[-1]["data"]["text/plain"]
    assert "False" in sizes and "True" in sizes
    assert "same verdicts as in memory: True" in plain_text(outputs_of(nb, "streamed = vd.compare_distributions"))
    # the exported page keeps the static views (which work offline) even though nbclient
    # saved the widget state, as `jupyter nbconvert --execute` does
    from nbconvert import HTMLExporter

    assert "widgets" in nb.metadata
    page, _ = HTMLExporter().from_notebook_node(nb)
    # every drift view shown (views show where they are made: the windows, the two sizes,
    # the streamed comparison too) keeps its static picture in the page
    shown = sum('class="vd-drift-app"' in o.get("data", {}).get("text/html", "")
                for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert shown >= 2 and page.count('class="vd-drift-app"') == shown
