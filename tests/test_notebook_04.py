"""notebooks/04_embeddings.ipynb runs top to bottom in a real kernel and says what it should:
the tracked frames, the classes pulling apart, the flipped labels found, the top losses."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "04_embeddings.ipynb"


def _outputs(nb: nbformat.NotebookNode, needle: str) -> list[dict]:
    return next(c for c in nb.cells if c.cell_type == "code" and needle in c.source).outputs


def _text(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)


@pytest.mark.notebook
def test_embeddings_notebook_tracks_the_layer_and_finds_the_flipped_labels(monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the kernel's: tiny layers on shared cores
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit it with outputs cleared"
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                if o.output_type == "stream" and o.name == "stderr"]
    frames = _text(_outputs(nb, "session.track_embeddings("))
    assert frames.startswith("[(0, 0), (1, 21)") and "(6, 126)" in frames
    timeline = [o["data"] for o in _outputs(nb, "timeline = session.embeddings(")]
    assert "application/vnd.jupyter.widget-view+json" in timeline[-1]  # the widget ...
    assert "data-vd-fallback" in timeline[0]["text/html"]  # ... after its static twin
    silhouettes = [float(v) for v in re.findall(r"silhouette (-?[\d.]+)",
                                                 _text(_outputs(nb, "silhouette_score(")))]
    assert len(silhouettes) == 7 and silhouettes[-1] > silhouettes[0] + 0.15
    assert "label-noise-suspects" in _text(_outputs(nb, "view.findings"))
    precision, recall = map(float, re.findall(r"(?:precision|recall) ([\d.]+)",
                                              _text(_outputs(nb, "intersect1d"))))
    assert precision >= 0.9 and recall >= 0.6
    top = _text(_outputs(nb, "show_top_losses("))
    assert int(top.split(" of the top 16")[0]) >= 8 and "TopLossesView" in top
