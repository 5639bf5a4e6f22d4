"""Running the example notebooks in a real kernel (nbclient), and reading their outputs:
what the notebook tests share."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute(name: str, timeout: int = 600, *, cleared: bool = False) -> nbformat.NotebookNode:
    """``notebooks/<name>`` run top to bottom, in the notebooks' folder. ``cleared``: first
    check that it is stored with its outputs cleared."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    if cleared:
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
            f"store {name} with outputs cleared"
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def outputs_of(nb: nbformat.NotebookNode, needle: str) -> list[dict]:
    """The outputs of the first code cell whose source contains ``needle``."""
    return next(c for c in nb.cells if c.cell_type == "code" and needle in c.source).outputs


def plain_text(outputs: list[dict]) -> str:
    """The stream text and plain-text results of ``outputs``, joined."""
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)
