"""Issue 24's views in both front ends, Notebook 7 and JupyterLab (one server per front end
for the module): ``compare_runs`` of stored runs draws its curves and table and sorts;
``show_ranks`` of a real 2-rank gloo job (rank 1 sleeps before each step and its loss is
NaN at step 5) draws each rank's curve and names rank 1 for both; shown while a real job
trains in another process (the cell ends at once), the view is redrawn as the ranks write,
up to the straggler only the whole job names; a stored run of 200,000
steps opens in the dashboard and two drag-zooms bring the file's own points of that range.

Each view's static twin (the HTML nbconvert and GitHub show, read from the notebook's
outputs) holds its final picture, and is drawn in a page of its own; ``vd.report`` of the
comparison and of the job holds the same pictures, drawn offline.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import pytest

from .conftest import ARTIFACTS
from .lab import JupyterLab

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::FutureWarning")]

EVIL = "<img src=x onerror=alert(1)>"
LONG_STEPS = 200_000
KNOWN_PAGE_ERRORS = ("reading 'schema'",)  # Notebook 7's own (BROWSER-NOTES)


def _loss(step: int) -> float:
    return 1.0 + math.sin(step / 500.0) + 0.1 * math.cos(step * 1.7)


def _sweep(folder) -> None:
    import torch

    import vizdebug as vd

    for i, lr in enumerate((0.3, 0.1, 0.3, 0.1)):
        s = vd.watch(torch.nn.Linear(2, 1), store=str(folder / f"r{i}.sqlite"),
                     config={"lr": lr, "seed": i // 2, "note": EVIL})
        for step in range(60):
            s.log(step=step, loss=1.0 / (1 + lr * step) + 0.01 * i)
        s.close()


def _long_run(path) -> None:
    """``loss`` at every step through the store (what vd.watch writes), flushed every
    4,000 steps so a tight loop does not outpace the writer."""
    import torch

    import vizdebug as vd

    with vd.watch(torch.nn.Linear(2, 1), store=str(path)) as session:
        for step in range(LONG_STEPS):
            session.log(step=step, loss=_loss(step))
            if step % 4000 == 3999:
                session.log_store.resolve()
                session.store.tick()
    assert vd.open_run(path).meta.get("dropped_points", 0) == 0


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from tests.ranks_jobs import run_job

    root = tmp_path_factory.mktemp("issue24")
    (root / "runs").mkdir()
    _sweep(root / "runs")
    (root / "job").mkdir()
    run_job(str(root / "job" / "ddp.sqlite"), 2, "slow,nan", 48)
    _long_run(root / "long.sqlite")
    return root


@pytest.fixture(scope="module", params=["notebook", "lab"])
def app(request, data):
    with JupyterLab(data, artifacts=ARTIFACTS, frontend=request.param) as running:
        yield running


def _clean(app: JupyterLab, page, state) -> None:
    errors = [o for c in state["cells"] for o in c["outputs"] if o["type"] == "error"]
    assert errors == []
    assert app.widget_errors(page) == []
    page_errors = [e for e in app.page_errors if not any(k in e for k in KNOWN_PAGE_ERRORS)]
    assert page_errors == [] and app.dialogs == []
    assert page.locator('.jp-Notebook img[src="x"]').count() == 0  # names stay text


# every text/html output of the first cell, as the notebook file keeps it
HTML_OUTPUTS_JS = """() => {
  const outs = window.jupyterapp.shell.currentWidget.content.model.cells.get(0).outputs;
  const found = [];
  for (let j = 0; j < outs.length; j++) {
    const d = outs.get(j).toJSON().data || {};
    if (d['text/html']) found.push(Array.isArray(d['text/html']) ? d['text/html'].join('')
                                                                 : d['text/html']);
  }
  return found;
}"""


def _static_render(app: JupyterLab, fragment: str, name: str) -> dict:
    """Draw a static twin in a page of its own (what a page without widgets shows)."""
    page = app.context.new_page()
    page.set_content(f"<!DOCTYPE html><html><body>{fragment}</body></html>")
    seen = page.evaluate("""() => ({
      svgs: [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width),
      lines: document.querySelectorAll('svg polyline').length,
      rows: document.querySelectorAll('table tbody tr').length,
      imgs: document.querySelectorAll('img[src="x"]').length})""")
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    page.close()
    return seen


def test_compare_runs_draws_its_curves_and_table_and_sorts(app):
    page = app.start_notebook(f"{app.frontend}_compare.ipynb", [
        f"import vizdebug as vd\nview = vd.compare_runs({str(app.root / 'runs')!r})"])
    widget = page.locator(".jp-Notebook .vd-compare-widget").first
    widget.locator("table.vd-compare-table").wait_for(timeout=90_000)
    state = app.wait_done(page, timeout=90)
    _clean(app, page, state)
    assert widget.locator("svg polyline").count() == 4  # one line per run
    assert widget.locator("table.vd-compare-table tbody tr").count() == 4
    first = widget.locator("table.vd-compare-table tbody tr td:first-child")
    before = first.all_inner_texts()
    widget.locator("table.vd-compare-table th").first.click()
    assert first.all_inner_texts() == sorted(before)
    widget.locator("table.vd-compare-table th").first.click()
    assert first.all_inner_texts() == sorted(before, reverse=True)
    twins = page.locator(".jp-Notebook .vd-static-fallback")
    assert twins.count() == 1 and not twins.first.is_visible()  # hidden by its widget
    app.screenshot(page, f"issue24_compare_{app.frontend}.png", widget)

    twin = [h for h in page.evaluate(HTML_OUTPUTS_JS) if "vd-static-fallback" in h]
    assert len(twin) == 1 and "vd-compare-table" in twin[0]
    drawn = _static_render(app, twin[0], f"issue24_compare_twin_{app.frontend}.png")
    assert drawn["lines"] == 4 and drawn["rows"] == 4 and drawn["imgs"] == 0, drawn
    assert drawn["svgs"] and min(drawn["svgs"]) > 300, drawn


def test_show_ranks_of_a_real_job_names_the_straggler_and_the_nan_rank(app):
    page = app.start_notebook(f"{app.frontend}_ranks.ipynb", [
        f"import vizdebug as vd\nvd.show_ranks({str(app.root / 'job' / 'ddp.sqlite')!r})"])
    table = page.locator(".jp-Notebook table.vd-rank-table")
    table.wait_for(timeout=90_000)
    state = app.wait_done(page, timeout=90)
    _clean(app, page, state)
    out = page.locator(".jp-Notebook .jp-OutputArea-output").filter(
        has=page.locator("table.vd-rank-table")).first
    legend = out.locator("svg text").all_text_contents()
    assert "rank 0" in legend and "rank 1" in legend, legend
    assert "non-finite from step 5 (rank 1)" in legend, legend  # where the lines stop
    assert out.locator("svg polyline").count() >= 2  # a line per rank (NaN steps as gaps)
    rows = {r.locator("td").first.inner_text(): r.locator("td").last.inner_text()
            for r in table.locator("tbody tr").all()}
    assert rows == {"0": "", "1": "straggler"}, rows
    text = out.inner_text()
    assert "on rank 1 at step 5" in text and "rank 1 holds the other ranks up" in text, text
    app.screenshot(page, f"issue24_ranks_{app.frontend}.png", out)

    twin = [h for h in page.evaluate(HTML_OUTPUTS_JS) if "vd-rank-table" in h]
    assert len(twin) == 1 and "on rank 1 at step 5" in twin[0]
    drawn = _static_render(app, twin[0], f"issue24_ranks_twin_{app.frontend}.png")
    assert drawn["lines"] >= 2 and drawn["rows"] == 2 and min(drawn["svgs"]) > 300, drawn


def _follow_cell(root, frontend: str) -> str:
    """A cell that starts a real 2-rank job in another process (rank 1 slow), waits for
    rank 0's file and shows the job while it trains; the cell ends long before the job
    (the view's redraws are display updates from its follower thread)."""
    repo = str(Path(__file__).resolve().parents[2])
    path = str(root / "job" / f"live_{frontend}.sqlite")
    return f"""
import os, subprocess, sys, time
import vizdebug as vd
path = {path!r}
job = subprocess.Popen([sys.executable, "-c", "from tests.ranks_jobs import run_job; "
                        f"run_job({{path!r}}, 2, 'slow', 160)"], cwd={repo!r},
                       env={{**os.environ, "PYTHONPATH": {repo!r}}})
from pathlib import Path
from vizdebug.store.schema import is_run_file
while not (os.path.exists(path) and is_run_file(Path(path))):
    assert job.poll() is None, "the job ended before rank 0's file was a run"
    time.sleep(0.1)  # (a file just created has no tables yet: not a run file until then)
view = vd.show_ranks(path)
display(view)  # (an assigned view is shown by display, as any object)
print("running when shown:", view.running(), "| findings then:", [f.code for f in view.findings])
"""


def test_a_running_jobs_view_follows_every_rank_to_its_end(app):
    page = app.start_notebook(f"{app.frontend}_live.ipynb", [_follow_cell(app.root, app.frontend)])
    state = app.wait_done(page, timeout=120)
    _clean(app, page, state)
    printed = page.locator(".jp-Notebook .jp-OutputArea-output").filter(
        has_text="running when shown:").inner_text()
    assert "running when shown: True" in printed and "rank-straggler" not in printed, printed
    out = page.locator(".jp-Notebook .jp-OutputArea-output").filter(has_text="of 2 ranks").first
    # redrawn by the follower thread after the cell ended, as the job ran: both ranks, and
    # the straggler that only the whole job's timing names (not there when it was shown)
    out.filter(has_text="rank 1 holds the other ranks up").wait_for(timeout=150_000)
    legend = out.locator("svg text").all_text_contents()
    assert "rank 0" in legend and "rank 1" in legend and "2 of 2 ranks" in out.inner_text()
    rows = {r.locator("td").first.inner_text(): r.locator("td").last.inner_text()
            for r in out.locator("table.vd-rank-table tbody tr").all()}
    assert rows == {"0": "", "1": "straggler"}, rows
    app.screenshot(page, f"issue24_ranks_live_{app.frontend}.png", out)


RAW_JS = """() => {
  const gd = document.querySelector('.jp-Notebook .vd-panel-curves');
  const t = gd.data.find((d) => d.name === 'loss' && d.meta && d.meta.raw);
  return [t.x, t.y];
}"""

# the smoothed loss as drawn: its steps, and its values inside [lo, hi]
SMOOTH_JS = """([lo, hi]) => {
  const gd = document.querySelector('.jp-Notebook .vd-panel-curves');
  const t = gd.data.find((d) => d.meta && d.meta.smooth && d.visible !== false);
  return [t.x, t.y.filter((_, i) => t.x[i] >= lo && t.x[i] <= hi)];
}"""


ZOOMED_JS = "() => document.querySelector('.jp-Notebook .vd-panel-curves').dataset.zoomed || ''"


def _drag(page, curves, start: float, stop: float) -> tuple[int, int]:
    """Drag across the curves from ``start`` to ``stop`` (fractions of the plot's width);
    waits for the kernel's answer to be drawn; the range it answered (``data-zoomed``)."""
    before = page.evaluate(ZOOMED_JS)
    area = curves.locator(".vd-plot-area").bounding_box()
    y = area["y"] + area["height"] / 2
    page.mouse.move(area["x"] + start * area["width"], y)
    page.mouse.down()
    page.mouse.move(area["x"] + stop * area["width"], y, steps=4)
    page.mouse.up()
    page.wait_for_function(f"([was]) => {{ const z = ({ZOOMED_JS})(); return z && z !== was; }}",
                           arg=[before], timeout=30_000)
    lo, hi = (int(v) for v in page.evaluate(ZOOMED_JS).split("-"))
    return lo, hi


def test_a_stored_long_run_zooms_to_the_files_own_points(app):
    path = app.root / "long.sqlite"
    page = app.start_notebook(f"{app.frontend}_long.ipynb", [
        f"import vizdebug as vd\nrun = vd.open_run({str(path)!r})\nrun.dashboard()"])
    curves = page.locator(".jp-Notebook .vd-panel-curves")
    curves.locator(".uplot").wait_for(timeout=90_000)
    state = app.wait_done(page, timeout=90)
    _clean(app, page, state)
    curves.scroll_into_view_if_needed()
    whole, _ = page.evaluate(RAW_JS)
    assert max(whole) > 0.99 * LONG_STEPS and len(whole) < 20_000  # the run, not every step
    lo, hi = _drag(page, curves, 0.86, 0.94)  # ~16,000 steps around step 180,000
    assert hi - lo > 4_000
    lo, hi = _drag(page, curves, 0.46, 0.50)  # then ~600 steps: fewer than pixels
    assert hi - lo < curves.locator(".vd-plot-area").bounding_box()["width"]
    x, y = page.evaluate(RAW_JS)
    inside = [(a, b) for a, b in zip(x, y) if lo <= a <= hi]
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT step, value FROM scalars WHERE name='loss' AND step "
                              "BETWEEN ? AND ? ORDER BY step", (lo, hi))
        stored = stored.fetchall()
    assert len(stored) > 300
    assert [a for a, _ in inside] == [s for s, _ in stored]  # every step, none made up
    assert all(abs(b - v) <= 1e-6 * max(1.0, abs(v)) for (_, b), (_, v) in zip(inside, stored))
    assert all(abs(b - _loss(int(a))) < 1e-5 for a, b in inside)
    smooth_x, smooth_y = page.evaluate(SMOOTH_JS, [lo, hi])
    assert smooth_x == x  # the smoothed curve is drawn over the zoomed points
    assert max(abs(v - _loss(int(a))) for a, v in zip([a for a, _ in inside][20:],
                                                      smooth_y[20:])) < 0.2
    app.screenshot(page, f"issue24_long_zoomed_{app.frontend}.png", curves)
    curves.locator(".vd-plot-area").dblclick()  # back to the whole run
    assert curves.get_attribute("data-zoomed") is None


def test_reports_of_the_comparison_and_the_job_hold_their_pictures(app, tmp_path):
    import vizdebug as vd

    data = app.root
    compare = vd.report(vd.compare_runs(data / "runs"), tmp_path / "compare.html").read_text()
    job = vd.report(vd.open_run(data / "job" / "ddp.sqlite"), tmp_path / "job.html").read_text()
    assert "vd-compare-table" in compare and compare.count("<polyline") >= 4
    assert EVIL not in compare
    assert "vd-rank-table" in job and "on rank 1 at step 5" in job and ">rank 1<" in job
    for name in ("compare", "job"):  # drawn by the browser of this module (one at a time)
        page, outside = app.context.new_page(), []
        page.route("**/*", lambda r, outside=outside: r.continue_()
                   if r.request.url.startswith("file:")
                   else (outside.append(r.request.url), r.abort()))
        page.goto((tmp_path / f"{name}.html").as_uri())
        widths = page.evaluate("() => [...document.querySelectorAll('svg')]"
                               ".map(s => s.getBoundingClientRect().width)")
        assert widths and max(widths) > 300, (name, widths)
        assert page.locator('img[src="x"]').count() == 0 and outside == []  # offline
        page.screenshot(path=str(ARTIFACTS / f"issue24_report_{name}_{app.frontend}.png"),
                        full_page=True)
        page.close()
