"""The example notebooks run top to bottom in a real kernel (nbclient)."""

from __future__ import annotations

import pytest

from tests.notebook_runs import execute, outputs_of


@pytest.mark.notebook
def test_show_batch_notebook():
    nb = execute("01_show_batch.ipynb")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert errors == []
    static, live = (o["data"] for o in outputs_of(nb, "vd.show_batch(loader"))
    assert "application/vnd.jupyter.widget-view+json" in live  # the widget ...
    assert "data-vd-fallback" in static["text/html"]  # ... after its static twin
    assert static["text/html"].count('class="vd-cell') == 64
    assert "blank-images" not in static["text/html"].split("Findings", 1)[1]
    bad = outputs_of(nb, "view = vd.show_batch(bad_loader")[0]["data"]["text/html"]
    assert bad.count('data-flags="blank"') >= 10
    findings = outputs_of(nb, "view.findings")[0]["data"]["text/html"]
    assert "blank-images" in findings
    assert "layout-channels-last" in outputs_of(nb, "permute(0, 2, 3, 1)")[0]["data"]["text/html"]
    assert "input-not-normalized" in outputs_of(nb, "Normalize forgotten")[0]["data"]["text/html"]
    none_html = outputs_of(nb, "vd.check_dataset(Leaky")[0]["data"]["text/html"]
    assert "input-none" in none_html and "7, 257, 507" in none_html
    # nbconvert keeps the static views even though the widget state was saved
    from nbconvert import HTMLExporter

    assert "widgets" in nb.metadata
    page, _ = HTMLExporter().from_notebook_node(nb)
    assert page.count('class="vd-cell') == 128 and "blank-images" in page
