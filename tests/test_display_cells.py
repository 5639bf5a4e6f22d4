"""Views show where they are called in a notebook, once (issue 22).

The README's ```python blocks run in order as cells of one notebook in a real kernel
(nbclient), each after a small setup cell that defines the names the README leaves to the
reader (a digits loader, a model, data frames); a line that is only ``...`` ("train as
usual") becomes a real training step. Every view the block builds (``show_batch(``,
``.dashboard()``, ``compare_distributions(``, ...) must appear in that cell's outputs
exactly once: one static twin and one widget, whether it is the last expression, called
mid-cell, or assigned to a variable. Then the edge cases: a later cell shows the view
again, ``display(view)`` shows it once, a view built inside a library shows only when the
library displays it, ``vd.report`` shows nothing, and a plain script prints nothing.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
WIDGET = "application/vnd.jupyter.widget-view+json"
# the public calls that return a view: each promises one view where it is written
VIEW_CALLS = re.compile(r"\b(show_batch|show_embeddings|show_embedding_frames|show_predictions|"
                        r"show_top_losses|compare_distributions|compare_runs|show_ranks|lr_find)\(|\.(dashboard|embeddings)\(\)")
# README blocks for the training frameworks: they promise findings, not views (their
# callbacks are tested in tests/test_integration_*.py)
FRAMEWORK_BLOCK = re.compile(r"vizdebug\.integrations|accelerator\.")

PRELUDE = """
import numpy as np, pandas as pd, torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from sklearn.datasets import load_digits

torch.manual_seed(0)
digits = load_digits()
MEAN, STD = (0.3,), (0.4,)
x_all = torch.tensor(digits.images[:600, None] / 16.0, dtype=torch.float32)
y_all = torch.tensor(digits.target[:600])
x_norm = (x_all - MEAN[0]) / STD[0]
names = [str(i) for i in range(10)]
train_loader = DataLoader(TensorDataset(x_norm[:480], y_all[:480]), batch_size=32,
                          shuffle=True)
x_val, y_val = x_norm[480:], y_all[480:]

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten())
        self.embed = nn.Sequential(nn.Linear(8 * 64, 32), nn.ReLU())
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.embed(self.features(x)))

model = Net()
optimizer = torch.optim.Adam(model.parameters(), 1e-3)
loss_fn = nn.CrossEntropyLoss()
epochs = 1

def step(x, y):
    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    return loss

def evaluate():
    with torch.no_grad():
        out = model(x_val)
    return loss_fn(out, y_val).item(), (out.argmax(1) == y_val).float().mean().item()

def train(session):
    for epoch in range(epochs):
        for x, y in train_loader:
            session.log(loss=step(x, y))
        v, a = evaluate()
        session.log(val_loss=v, val_acc=a)

v, a = evaluate()
"""

# what a block needs defined just before it, keyed by a string the block contains
SETUP = {
    "compare_distributions(": """
rng = np.random.default_rng(0)
train_df = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400)})
prod_df = pd.DataFrame({"a": rng.normal(0.8, 1, size=400), "b": rng.normal(size=400),
                        "timestamp": pd.date_range("2024-01-01", periods=400, freq="h")})
""",
    "show_embeddings(": """
with torch.no_grad():
    features = model.embed(model.features(x_val))
    pred = model(x_val).argmax(1)
    loss = nn.functional.cross_entropy(model(x_val), y_val, reduction="none")
x, y = x_all[480:], y_val
""",
    "check_split(": """
X_train, X_test = x_norm[:480].flatten(1).numpy(), x_norm[480:].flatten(1).numpy()
y_train, y_test = y_all[:480].numpy(), y_all[480:].numpy()
""",
}


def _code(source: str) -> str:
    """A README block's code without its comments (a view named in a comment is no call)."""
    return "\n".join(line.split("#", 1)[0] for line in source.splitlines())


def _adapt(block: str) -> str:
    """The README's ``...`` made real: in a loop a training step, alone ``train(session)``."""
    lines = []
    for line in block.splitlines():
        bare = line.split("#", 1)[0]
        if bare.strip() == "...":
            indent = bare[: len(bare) - len(bare.lstrip())]
            line = indent + ("loss = step(x, y)" if indent else "train(session)")
        lines.append(line)
    return "\n".join(lines)


def readme_cells() -> list[tuple[str, int]]:
    """(cell source, views it promises) for the README's python blocks, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    cells = []
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if FRAMEWORK_BLOCK.search(block):
            assert not VIEW_CALLS.search(_code(block)), "a framework block promises a view"
            continue
        setup = "".join(code for key, code in SETUP.items() if key in block)
        if setup:
            cells.append((setup, 0))
        cells.append((_adapt(block), len(VIEW_CALLS.findall(_code(block)))))
    return cells


LIBRARY = '''
import vizdebug as vd

def build_views(loader, session):
    """What a library does: builds views, and displays none of them."""
    return vd.show_batch(loader), session.dashboard()
'''

# (cell source, views shown in it): the cases beyond the README
EDGE_CELLS = [
    ("session = vd.watch(model, loader=train_loader)\n"
     "dash = session.dashboard()          # assigned mid-cell: shows, like tqdm\n"
     "train(session)", 1),
    ("dash", 1),                                    # a later cell shows it again
    ("display(dash)", 1),                           # explicitly
    ("display(dash)\ndash", 1),                     # explicitly, and last: once
    ("batch = vd.show_batch(train_loader)\ndisplay(batch)\nbatch", 1),
    ("import display_library\n"
     "views = display_library.build_views(train_loader, session)", 0),  # inside a library
    ("display(views[0])", 1),                      # ... shown when someone displays it
    ("print(sorted(vd.compare_distributions(train_df, prod_df).drifted))", 0),  # as data
    ("def mine():\n    return vd.show_batch(train_loader)\n\nmine()\nNone", 1),
    ("session.close()\nvd.report(session, 'report.html')\nNone", 0),
]


def _notebook(cells: list[tuple[str, int]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source, _ in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def _issue_block(source: str) -> bool:
    """The README block of the issue: ``session.dashboard()`` before the training loop."""
    return re.search(r"session\.dashboard\(\).*\n\s*for ", source) is not None


def views_shown(outputs: list) -> int:
    """How many views ``outputs`` show: a widget after its own static twin, or the static
    HTML of a view without a widget; checks that no widget or twin comes twice."""
    html = [o.get("data", {}).get("text/html", "") for o in outputs]
    widgets = [o["data"][WIDGET]["model_id"] for o in outputs if WIDGET in o.get("data", {})]
    twins = [h for h in html if 'class="vd-static-fallback"' in h]
    assert len(widgets) == len(set(widgets)) == len(twins), (widgets, len(twins))
    return len(twins) + sum(h.startswith('<div class="vd-view"><style>') for h in html)


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> tuple[list, nbformat.NotebookNode]:
    folder = tmp_path_factory.mktemp("cells")
    (folder / "runs").mkdir()
    (folder / "display_library.py").write_text(LIBRARY, encoding="utf-8")
    cells = [("import vizdebug as vd\n" + PRELUDE, 0), *readme_cells(), *EDGE_CELLS]
    nb = _notebook(cells)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return cells, nb


def test_every_readme_block_runs_and_shows_each_view_it_promises_once(executed):
    cells, nb = executed
    readme = readme_cells()
    assert sum(n for _, n in readme) >= 7 and any(_issue_block(s) for s, _ in readme)
    for (source, promised), cell in zip(cells, nb.cells, strict=True):
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors == [], (source, errors[0]["evalue"] if errors else "")
        if (source, promised) in EDGE_CELLS:
            continue
        assert views_shown(cell.outputs) == promised, source


def test_a_view_shows_where_it_is_called_before_the_cell_ends(executed):
    cells, nb = executed
    i = next(i for i, (s, _) in enumerate(cells) if _issue_block(s))
    kinds = [("twin" if "vd-static-fallback" in o.get("data", {}).get("text/html", "")
              else "widget" if WIDGET in o.get("data", {}) else o.output_type)
             for o in nb.cells[i].outputs]
    # the dashboard comes first (before training), the findings (the last line) after it
    assert kinds[:2] == ["twin", "widget"] and kinds[-1] == "execute_result", kinds


@pytest.mark.parametrize("case", range(len(EDGE_CELLS)))
def test_views_show_once_in_each_case(executed, case):
    cells, nb = executed
    source, promised = EDGE_CELLS[case]
    cell = nb.cells[cells.index(EDGE_CELLS[case])]
    assert [o for o in cell.outputs if o.output_type == "error"] == [], source
    assert views_shown(cell.outputs) == promised, source


def test_a_script_shows_and_prints_nothing(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import vizdebug as vd\n" + PRELUDE + textwrap.dedent("""
        view = vd.show_batch(train_loader, classes=names, mean=MEAN, std=STD)
        session = vd.watch(model, loader=train_loader)
        session.dashboard()
        train(session)
        session.close()
        vd.report(session, "report.html")
        """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "", done.stdout[:500]
    assert (tmp_path / "report.html").exists()



def test_a_twin_says_what_to_do_where_its_widget_cannot_be_shown():
    """The rule that replaces "Error displaying widget: model not found" (seen in a real
    JupyterLab in tests/browser/test_reopened.py) comes with every twin, for its widget."""
    import numpy as np

    import vizdebug as vd
    from vizdebug.views._base import RERUN_NOTE

    html = vd.show_batch(np.zeros((2, 8, 8)))._static_bundle("ab12cd34")["text/html"]
    assert "run this cell again" in RERUN_NOTE and f'content:"{RERUN_NOTE}"' in html
    assert '.vd-static-fallback[data-vd-fallback="ab12cd34"]) + .jp-OutputArea-child' in html


def test_the_display_module_examples_run():
    import doctest

    from vizdebug.views import _display

    assert doctest.testmod(_display).failed == 0
