"""A saved notebook reopened with a fresh kernel (issue 22): each view's static picture
stays, and where its widget would be, the page says that the live view needs the cell run
again instead of "Error displaying widget: model not found". Running the cell brings the
widget back and it hides the picture again.

The notebook is executed by nbclient, saved without widget state (what a notebook saved
after its kernel is gone holds) and signed as trusted, as JupyterLab signs a notebook its
user saved. (An untrusted notebook's HTML loses its ``<style>``: there the front end's own
message stays.)
"""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.sign import NotebookNotary

from .conftest import ARTIFACTS
from .lab import JupyterLab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CELLS = [
    "import numpy as np\nimport vizdebug as vd\nrng = np.random.default_rng(0)",
    "vd.show_batch(rng.random((8, 3, 16, 16), dtype=np.float32), n=8)",
    "drift = vd.compare_distributions({'x': rng.normal(0, 1, 300)},"
    " {'x': rng.normal(1, 1, 300)})",
]
NOTE_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')]
  .filter(o => (o.textContent || '').includes('Error displaying widget'))
  .map(o => ({size: getComputedStyle(o).fontSize,
              note: getComputedStyle(o, '::before').content,
              shown: o.getBoundingClientRect().height}))"""


class SignedLab(JupyterLab):
    """JupyterLab with a private Jupyter data folder, where notebooks are signed."""

    def _env(self) -> dict[str, str]:
        env = super()._env()
        env["JUPYTER_DATA_DIR"] = str(self.tmp / "data")
        return env


def _saved_notebook(app: SignedLab, name: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(app.root)}}).execute()
    nb.metadata.pop("widgets", None)  # the kernel that held the models is gone
    (app.tmp / "data").mkdir(exist_ok=True)
    NotebookNotary(data_dir=str(app.tmp / "data")).sign(nb)
    nbformat.write(nb, app.root / name)


def test_a_reopened_notebook_keeps_the_pictures_and_says_to_run_the_cell(tmp_path):
    with SignedLab(tmp_path, artifacts=ARTIFACTS) as app:
        _saved_notebook(app, "reopened.ipynb")
        page = app.open("reopened.ipynb", timeout=120)
        page.wait_for_function(f"() => ({NOTE_JS})().length === 2", timeout=60_000)
        twins = page.locator(".jp-Notebook .vd-static-fallback")
        assert twins.count() == 2 and twins.nth(0).is_visible() and twins.nth(1).is_visible()
        assert page.locator(".jp-Notebook .vd-static-fallback .vd-cell").count() == 8
        for widget in page.evaluate(NOTE_JS):
            assert widget["size"] == "0px" and widget["shown"] > 10  # the words replaced ...
            assert "run this cell again" in widget["note"]  # ... by what to do
        app.screenshot(page, "reopened_notebook.png")

        state = app.run_all(page, timeout=180)  # the cells run again: live views are back
        assert [o for c in state["cells"] for o in c["outputs"] if o["type"] == "error"] == []
        page.locator(".jp-Notebook .vd-batch-widget").wait_for(timeout=30_000)
        page.wait_for_timeout(1000)
        assert page.evaluate(NOTE_JS) == [] and app.widget_errors(page) == []
        twins = page.locator(".jp-Notebook .vd-static-fallback")
        assert twins.count() == 2 and not twins.nth(0).is_visible()
        assert not twins.nth(1).is_visible()
        app.screenshot(page, "reopened_notebook_rerun.png")
