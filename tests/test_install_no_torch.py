"""``pip install vizdebug`` without the ``torch`` extra: no torch arrives, and the data and
drift side works.

A fresh virtual environment (no system site-packages) gets the checkout installed with no
extras; ``import torch`` must fail there, the numpy-only verbs (``compare_distributions``,
``check_split``, ``show_batch``, their HTML) must work, and ``vd.watch`` must say which
``pip install`` line brings the training side. This machine's pip reads its packages from a
local mirror, so the test proves what pip resolves from ``pyproject.toml``, not how large a
download from PyPI would be.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

NUMPY_ONLY = r"""
import sys
import numpy as np
import vizdebug as vd

assert "torch" not in sys.modules, "import vizdebug loaded torch"
rng = np.random.default_rng(0)
drift = vd.compare_distributions({"a": rng.normal(size=400), "b": rng.normal(size=400)},
                                 {"a": rng.normal(1.0, size=400), "b": rng.normal(size=400)})
assert list(drift.drifted) == ["a"], drift.table
assert "feature-drift" in drift.findings.codes and "<svg" in drift.to_html()
x = rng.normal(size=(200, 4))
leak = vd.check_split(x[:150], np.concatenate([x[150:], x[:10]]))
assert leak.codes == ["split-duplicates"], leak
images = rng.random((16, 1, 8, 8)).astype(np.float32)
images[:4] = 0.0
view = vd.show_batch(images)
assert "blank-images" in view.findings.codes and "vd-cell" in view.to_html()
for needs_torch in (lambda: vd.watch(object()), lambda: vd.show_top_losses(object(), [], None)):
    try:
        needs_torch()
    except vd.VizdebugError as err:
        assert 'pip install "vizdebug[torch]"' in str(err), err
        assert isinstance(err, ImportError)
        print("says:", err)
    else:
        raise AssertionError("a torch verb without torch raised nothing")
assert vd.set_seed(0)["seeded"] == ["random", "numpy"]
assert "torch" not in sys.modules
print("numpy side ok")
"""


def _venv_runner(tmp_path: Path):
    """A fresh venv under ``tmp_path`` and a function running commands in it."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}",
           "VIRTUAL_ENV": str(env_dir), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(name, None)

    def run(*args: str, check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess:
        done = subprocess.run([str(env_dir / "bin" / "python"), *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=timeout)
        if check:
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    return run


@pytest.mark.parametrize("verb", ["watch", "show_top_losses"])
def test_a_torch_verb_without_torch_names_the_extra(monkeypatch, verb):
    """In this process torch is installed; a ``None`` in ``sys.modules`` hides it."""
    import vizdebug as vd
    from vizdebug._env import MissingDependencyError

    monkeypatch.setitem(sys.modules, "torch", None)
    call = {"watch": lambda: vd.watch(object()),
            "show_top_losses": lambda: vd.show_top_losses(object(), [], None)}[verb]
    with pytest.raises(MissingDependencyError, match=re.escape('pip install "vizdebug[torch]"')):
        call()


@pytest.mark.slow
def test_install_without_the_torch_extra_has_no_torch_and_the_data_side_works(tmp_path):
    run = _venv_runner(tmp_path)
    run("-m", "pip", "install", "-q", "--no-cache-dir", str(REPO))
    where = run("-c", "import vizdebug, sys; print(vizdebug.__file__); print(sys.prefix)")
    assert str(tmp_path / "venv") in where.stdout  # the venv's own copy, not the checkout
    no_torch = run("-c", "import torch", check=False)
    assert no_torch.returncode != 0 and "No module named 'torch'" in no_torch.stderr
    listed = run("-m", "pip", "list", "--format=freeze").stdout.lower()
    assert not [line for line in listed.splitlines()
                if line.startswith(("torch", "nvidia-", "triton"))], listed
    done = run("-c", NUMPY_ONLY)
    assert "numpy side ok" in done.stdout
