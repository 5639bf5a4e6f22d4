"""binder/ describes a small, reproducible environment: every package pinned, PyTorch's CPU
build, Python named, vizdebug installed without pulling anything unpinned, and the
README's badge pointing at this repository's Binder.

What these tests do not prove: that mybinder.org builds it, that download.pytorch.org
serves ``torch==...+cpu`` (no machine here reaches it), or the size of the download there.
The slow test builds the environment from this machine's local package mirror (which holds
the CPU wheel), so it proves that the pins resolve together, form a closed set
(``pip check`` after ``--no-deps``), and run a notebook.
"""

from __future__ import annotations

import os
import re
import subprocess
import venv
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reads pyproject.toml with Python 3.11's tomllib")
REPO = Path(__file__).resolve().parents[1]
BINDER = REPO / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[A-Za-z0-9.+!-]+)$")


def requirement_lines() -> tuple[list[str], dict[str, str]]:
    """binder/requirements.txt as (pip options, {normalised name: pinned version});
    anything that is neither fails the test."""
    options, pins = [], {}
    for raw in (BINDER / "requirements.txt").read_text().splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            options.append(line)
            continue
        match = PIN.match(line)
        assert match, f"binder/requirements.txt: {raw!r} is not pinned as name==version"
        pins[re.sub(r"[-_.]+", "-", match["name"]).lower()] = match["version"]
    return options, pins


def test_every_package_is_pinned_and_torch_is_the_cpu_build():
    options, pins = requirement_lines()
    assert options == [f"--extra-index-url {CPU_INDEX}"]
    assert pins["torch"].endswith("+cpu"), pins["torch"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    needed = [re.split(r"[<>=!~\[ ;]", dep)[0] for dep in project["dependencies"]]
    missing = [n for n in [*needed, "torch", "jupyterlab", "ipykernel"]
               if re.sub(r"[-_.]+", "-", n).lower() not in pins]
    assert missing == [], f"not pinned in binder/requirements.txt: {missing}"
    assert not [n for n in pins if n.startswith(("nvidia-", "triton"))]


def test_runtime_and_postbuild_add_nothing_unpinned():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    post = (BINDER / "postBuild").read_text()
    assert os.access(BINDER / "postBuild", os.X_OK)
    installs = [line for line in post.splitlines() if "pip install" in line]
    assert installs and all("--no-deps" in line for line in installs), installs


def test_the_readme_badge_opens_this_repository_on_binder():
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    repo = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+)", urls["Repository"])
    assert repo, urls["Repository"]
    badge = re.search(r"\[!\[Binder\]\(https://mybinder\.org/badge_logo\.svg\)\]"
                      r"\((https://mybinder\.org/v2/gh/[^)]+)\)", (REPO / "README.md").read_text())
    assert badge, "no Binder badge in the README"
    target = re.fullmatch(r"https://mybinder\.org/v2/gh/([\w.-]+/[\w.-]+)/(\w+)"
                          r"\?urlpath=lab/tree/(\S+)", badge[1])
    assert target and target[1] == repo[1], badge[1]
    assert (REPO / target[3]).is_dir(), target[3]


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

    # the pins without the index line: download.pytorch.org cannot be reached from here,
    # and this machine's mirror serves the same CPU wheel
    _, pins = requirement_lines()
    local = tmp_path / "requirements.txt"
    local.write_text("".join(f"{name}=={version}\n" for name, version in pins.items()))
    run(str(py), "-m", "pip", "install", "-q", "--no-deps", "-r", str(local))
    run(str(py), "-m", "pip", "check")  # the pins are a closed, consistent set
    run("bash", str(BINDER / "postBuild"))
    # the venv must hold its own vizdebug, not borrow the test runner's
    where = run(str(py), "-c", "import vizdebug, torch, sys; print(vizdebug.__file__, "
                               "sys.prefix, torch.__version__)")
    assert str(env_dir) in where and "+cpu" in where
    run(str(py), "-m", "pip", "check")  # postBuild brought nothing that breaks them
    # a kernel of the venv's own python, so the notebook cannot fall back on the runner's
    run(str(py), "-m", "ipykernel", "install", "--prefix", str(env_dir), "--name", "vdbinder")
    out = tmp_path / "executed.ipynb"
    run(str(py), "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
        "--ExecutePreprocessor.timeout=600", "--ExecutePreprocessor.kernel_name=vdbinder",
        str(REPO / "notebooks" / "01_show_batch.ipynb"), "--output", str(out))
    text = out.read_text()
    assert '"output_type": "error"' not in text and "blank-images" in text
