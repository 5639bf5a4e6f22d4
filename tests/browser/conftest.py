from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..artifacts import artifacts_dir

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = artifacts_dir("screenshots")


@pytest.fixture
def lab_root(tmp_path):
    """A scratch folder with copies of the notebooks (JupyterLab autosaves what it opens)."""
    for nb in (REPO / "notebooks").glob("*.ipynb"):
        shutil.copy(nb, tmp_path / nb.name)
    return tmp_path


@pytest.fixture
def lab(lab_root):
    from .lab import JupyterLab

    with JupyterLab(lab_root, artifacts=ARTIFACTS) as running:
        yield running
