"""notebooks/02_live_training.ipynb runs top to bottom in a real kernel (nbclient)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "02_live_training.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"

pytestmark = [pytest.mark.notebook, pytest.mark.slow]


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "store the notebook with outputs cleared"
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return nb


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
    assert "ERROR input-nonfinite" in found
    assert "ERROR nonfinite-activation [0]" in found and "first module the batch reaches" in found
    assert "ERROR nonfinite-loss [loss]" in found
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
    assert Path(path).exists() and Path(path).stat().st_size > 1_000_000


def test_the_stored_run_reads_back_with_the_same_diagnosis(executed):
    cell = next(c for c in executed.cells if c.cell_type == "code" and "vd.open_run" in c.source)
    found = text(cell.outputs)
    assert "<vizdebug Run vizdebug-02-bad-run.sqlite: closed" in found
    assert "ERROR nonfinite-activation [0]" in found and "ERROR nonfinite-loss [loss]" in found
