"""notebooks/04_embeddings.ipynb runs top to bottom in a real kernel and says what it should:
the tracked frames, the classes pulling apart, the flipped labels found, the top losses."""

from __future__ import annotations

import re

import pytest

from tests.notebook_runs import execute, outputs_of, plain_text


@pytest.mark.notebook
def test_embeddings_notebook_tracks_the_layer_and_finds_the_flipped_labels(monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the kernel's: tiny layers on shared cores
    nb = execute("04_embeddings.ipynb", 300, cleared=True)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                if o.output_type == "stream" and o.name == "stderr"]
    frames = plain_text(outputs_of(nb, "session.track_embeddings("))
    assert frames.startswith("[(0, 0), (1, 21)") and "(6, 126)" in frames
    timeline = [o["data"] for o in outputs_of(nb, "timeline = session.embeddings(")]
    assert "application/vnd.jupyter.widget-view+json" in timeline[-1]  # the widget ...
    assert "data-vd-fallback" in timeline[0]["text/html"]  # ... after its static twin
    silhouettes = [float(v) for v in re.findall(r"silhouette (-?[\d.]+)",
                                                 plain_text(outputs_of(nb, "silhouette_score(")))]
    assert len(silhouettes) == 7 and silhouettes[-1] > silhouettes[0] + 0.15
    assert "label-noise-suspects" in plain_text(outputs_of(nb, "view.findings"))
    precision, recall = map(float, re.findall(r"(?:precision|recall) ([\d.]+)",
                                              plain_text(outputs_of(nb, "intersect1d"))))
    assert precision >= 0.9 and recall >= 0.6
    top = plain_text(outputs_of(nb, "show_top_losses("))
    # the view shows where it is made (issue 22), before the printed count
    assert int(re.search(r"(\d+) of the top 16", top).group(1)) >= 8 and "TopLossesView" in top
