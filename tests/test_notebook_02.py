"""notebooks/02_live_training.ipynb runs top to bottom in a real kernel (nbclient)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.notebook_runs import execute

WIDGET = "application/vnd.jupyter.widget-view+json"

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    return execute("02_live_training.ipynb", 600, cleared=True)


def outputs(nb: nbformat.NotebookNode, source: str) -> list[dict]:
    return next(c.outputs for c in nb.cells if c.cell_type == "code" and c.source.strip() == source)


def text(outs: list[dict]) -> str:
    parts = []
    for o in outs:
        parts.append(o.get("text", ""))
        parts.append(o.get("data", {}).get("text/plain", ""))
        parts.append(o.get("data", {}).get("text/html", ""))
    return "\n".join(parts)


def test_runs_without_errors(executed):
    errors = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert errors == []


def test_dashboards_are_widgets_with_a_static_twin(executed):
    cells = [c for c in executed.cells if c.cell_type == "code" and "dashboard()" in c.source]
    assert len(cells) == 2
    for cell in cells:
        data = [o.get("data", {}) for o in cell.outputs]
        assert any(WIDGET in d for d in data)
        assert any("Training dashboard" in d.get("text/html", "") for d in data)


def test_clean_run_says_nothing_is_wrong(executed):
    found = text(outputs(executed, "session.findings()"))
    assert "nothing to report" in found


def test_buggy_run_is_explained(executed):
    found = text(outputs(executed, "bad_session.findings()"))
    assert "ERROR input-nonfinite" in found  # the cause, with its consequences folded under it
    assert "folded under it: nonfinite-activation" in found and "nonfinite-loss" in found
    assert "first module the batch reaches" in found  # the folded finding's hint (its HTML)
    strict = text(next(c.outputs for c in executed.cells if c.cell_type == "code"
                       and "on_anomaly=\"raise\"" in c.source))
    assert "WatchAnomaly" in strict and "'0' (Conv2d)" in strict and "Input: shape (64, 1, 8, 8)" in strict


def test_captured_batch_and_report(executed):
    batch = next(c.outputs for c in executed.cells if c.cell_type == "code"
                 and "captured_batches" in c.source)
    assert any(WIDGET in o.get("data", {}) for o in batch)
    report = text(outputs(executed, next(c.source.strip() for c in executed.cells
                                         if "vd.report" in c.source)))
    path = report.split("PosixPath('")[1].split("'")[0]
    page = Path(path).read_text(encoding="utf-8")
    assert "vdDrawStatic(" in page and "Training dashboard" in page  # the charts, inline
    assert len(page) < 1_000_000  # no plotly.js (4.8 MB)


def test_the_stored_run_reads_back_with_the_same_diagnosis(executed):
    cell = next(c for c in executed.cells if c.cell_type == "code" and "vd.open_run" in c.source)
    found = text(cell.outputs)
    assert "<vizdebug Run vizdebug-02-bad-run.sqlite: closed" in found
    assert "ERROR input-nonfinite" in found  # the same cause, the same consequences folded
    assert "folded under it: nonfinite-activation" in found and "nonfinite-loss" in found


def test_static_twins_show_the_final_state_in_a_light_notebook(executed):
    """What nbconvert, GitHub or a shared file shows: each dashboard's twin as it ended
    (not its first, empty state), with the buggy run's findings; no plotly.js inline."""
    twins = [o.data["text/html"] for c in executed.cells if c.cell_type == "code"
             and "dashboard()" in c.source for o in c.outputs
             if "vd-static-fallback" in o.get("data", {}).get("text/html", "")]
    assert len(twins) == 2
    for twin in twins:
        assert "Nothing logged yet" not in twin and "No gradients sampled yet" not in twin
        assert "closed" in twin and "<svg" in twin and "Plotly" not in twin
    clean, bad = twins
    assert "No findings" in clean
    for code in ("input-nonfinite", "nonfinite-activation", "nonfinite-loss"):
        assert f'data-code="{code}"' in bad
    assert "No findings" not in bad
    # no plotly.js anywhere: the twins are SVG, the live dashboard draws its own charts
    text_nb = nbformat.writes(executed)
    assert "plotly.js v" not in text_nb and "Plotly.newPlot" not in text_nb
    size = len(text_nb.encode())
    assert size <= 2_000_000, f"executed notebook is {size / 1e6:.1f} MB"


def test_the_anomaly_is_one_styled_finding_not_a_stderr_box(executed):
    fit = next(c.outputs for c in executed.cells if c.cell_type == "code"
               and c.source.startswith("fit(bad_model"))
    notices = [o for o in fit if "vd-anomaly-notice" in o.get("data", {}).get("text/html", "")]
    assert len(notices) == 1
    assert not [o for o in fit if o.output_type == "stream" and o.name == "stderr"]


@pytest.mark.browser
def test_the_offline_html_shows_the_final_dashboards(executed, tmp_path):
    """`jupyter nbconvert --to html` of the executed notebook, opened in Chromium with
    the network blocked: the final curves, the gradient panel, the four findings."""
    from nbconvert import HTMLExporter

    from .browser.lab import offline_page

    page_html, _ = HTMLExporter().from_notebook_node(executed)
    path = tmp_path / "02.html"
    path.write_text(page_html, encoding="utf-8")
    with offline_page(1300, 1000) as page:
        page.goto(path.as_uri())
        dashes = page.locator(".vd-dashboard-static")
        assert dashes.count() == 2 and dashes.nth(0).is_visible() and dashes.nth(1).is_visible()
        good, bad = dashes.nth(0), dashes.nth(1)
        # the curves panel (the first picture): the clean run's loss and its smoothed
        # line at least, the buggy run's loss up to where it went NaN
        for dash, lines in ((good, 2), (bad, 1)):
            assert "closed" in dash.locator(".vd-twin-status").inner_text()
            # the first chart picture (not the layer and optimizer panels above the charts)
            curves = dash.locator(".vd-twin-charts svg.vd-figure-svg").first
            assert curves.locator("polyline").count() >= lines
        assert good.locator("svg.vd-figure-svg rect[fill^='#']").count() > 100  # heatmap
        assert bad.locator(".vd-finding.vd-error").count() == 4
        assert "No findings" not in bad.inner_text()
