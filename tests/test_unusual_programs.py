"""Valid programs of unusual shape (issue 20): no crash, no false alarm, training unchanged.

Each test is a small working program, attached the way the README shows; what it once did
(a traceback from inside vizdebug, a warning on a program that trains fine) is said in its
docstring.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import TensorDataset

import vizdebug as vd


def _xor_table(n: int, columns: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, columns)).astype(np.float32)
    return x, ((x[:, 0] > 0) ^ (x[:, 1] > 0)).astype(np.int64)


def test_xor_labels_among_noise_columns_are_not_called_shuffled() -> None:
    """Before: ``labels-shuffled`` (a warning) on XOR labels of two columns among 98 noise
    columns, which an MLP learns: no single column, class mean or distance shows them."""
    x, y = _xor_table(1000, 100)
    found = vd.check_dataset(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))
    assert "labels-shuffled" not in found.codes
    shuffled = np.random.default_rng(1).permutation(y)
    found = vd.check_dataset(TensorDataset(torch.from_numpy(x), torch.from_numpy(shuffled)))
    assert "labels-shuffled" in found.codes


def test_findings_text_follows_the_notebook_theme() -> None:
    """Before: hints in a fixed #444 and places in #555, unreadable on JupyterLab's dark
    background (#111); now JupyterLab's own text colours, the light ones as fallback."""
    import re

    from vizdebug.findings import Finding, Findings

    found = Findings([Finding("unstable-loss", "warning", "the loss jumped 9x", where="loss",
                              evidence={"series": {"stat": "loss", "values": [1, 9, 2]}},
                              hint="lower the learning rate")])
    found.profile = ["1 model, 1 optimizer"]
    page = found._repr_html_()
    assert "color:var(--jp-ui-font-color1,#444)" in page  # the hint and the profile
    assert "color:var(--jp-ui-font-color2,#555)" in page  # where, evidence
    assert not re.search(r"color:#[0-9a-f]{3,6}[;\"]", page.replace("color:#fff", ""))
