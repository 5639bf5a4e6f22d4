"""binder/ builds a working environment: a fresh venv, its files, one notebook executed."""

from __future__ import annotations

import os
import subprocess
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_binder_environment_runs_a_notebook(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "VIRTUAL_ENV": str(env_dir)}
    env.pop("PYTHONPATH", None)

    def run(*cmd, timeout=900):
        done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=timeout)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
        return done.stdout

    run(str(py), "-m", "pip", "install", "-q", "-r", str(REPO / "binder" / "requirements.txt"))
    run("bash", str(REPO / "binder" / "postBuild"))
    # the venv must hold its own vizdebug, not borrow the test runner's
    where = run(str(py), "-c", "import vizdebug, sys; print(vizdebug.__file__, sys.prefix)")
    assert str(env_dir) in where
    # a kernel of the venv's own python, so the notebook cannot fall back on the runner's
    run(str(py), "-m", "ipykernel", "install", "--prefix", str(env_dir), "--name", "vdbinder")
    out = tmp_path / "executed.ipynb"
    run(str(py), "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
        "--ExecutePreprocessor.timeout=600", "--ExecutePreprocessor.kernel_name=vdbinder",
        str(REPO / "notebooks" / "01_show_batch.ipynb"), "--output", str(out))
    text = out.read_text()
    assert '"output_type": "error"' not in text and "blank-images" in text
