"""The README's test commands work as written: the quick one needs no root and no apt,
a plain ``pytest`` after ``pip install -e ".[test]"`` gets past collection, and a test run
leaves the checkout as it found it.

``scripts/test.sh`` runs here against stubs on ``PATH`` (``python``, ``id``, ``sudo``,
``apt-get``, ``npm`` record their calls and succeed), with ``VIZDEBUG_CHROMIUM`` naming a browser
that is not there: these tests prove what the script would run, not that apt-get works.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STUB = '#!/bin/sh\necho "$(basename "$0") $*" >> "$CALLS"\n{out}\n'


def _run_test_sh(tmp_path: Path, *args: str, uid: int = 1000, sudo_ok: bool = False):
    """``bash scripts/test.sh ARGS`` with stubbed commands; (exit status, output, calls)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    outs = {"python": "exit 0", "apt-get": "exit 0", "npm": "exit 0", "id": f"echo {uid}",
            "sudo": "exit 0" if sudo_ok else "exit 1"}
    for name, out in outs.items():
        (bin_dir / name).write_text(STUB.format(out=out))
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls"
    calls.touch()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "HOME": str(tmp_path),
           "VIZDEBUG_CHROMIUM": str(tmp_path / "no-chromium")}
    done = subprocess.run(["bash", str(REPO / "scripts" / "test.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr, calls.read_text().splitlines()


def test_the_quick_command_needs_no_apt_and_no_sudo(tmp_path):
    status, out, calls = _run_test_sh(tmp_path, "-m", "not browser and not slow")
    assert status == 0, out
    assert not [c for c in calls if c.startswith(("sudo", "apt-get", "npm"))], calls
    assert calls[-1] == "python -m pytest -q -p no:cacheprovider -m not browser and not slow"
    installs = [c for c in calls if " pip install " in f" {c} "]
    assert installs[0].endswith("torch==2.13.0")  # torch pinned before the extras
    assert installs[1].endswith('-e .[torch,test,lightning,transformers]')


def test_the_full_command_without_root_says_so_and_goes_on(tmp_path):
    status, out, calls = _run_test_sh(tmp_path)
    assert status == 0, out
    assert not [c for c in calls if c.startswith("apt-get") or c.startswith("sudo apt")]
    assert "installing it needs root: the browser tests will be skipped" in out
    assert calls[-1] == "python -m pytest -q -p no:cacheprovider"


def test_the_full_command_installs_chromium_as_root(tmp_path):
    status, out, calls = _run_test_sh(tmp_path, uid=0)
    assert status == 0, out
    assert [c for c in calls if c.startswith("apt-get")] == [
        "apt-get update -qq", "apt-get install -y -qq chromium"]


def test_ci_runs_the_whole_suite_with_the_slow_and_browser_tests():
    ci = (REPO / ".ci" / "run").read_text()
    assert 'bash scripts/test.sh "$@"' in ci and "-m " not in ci  # nothing deselected
    assert "VIZDEBUG_REQUIRE_BROWSER=1" in ci  # a missing Chromium fails there, not skips
    no_torch = (REPO / "tests" / "test_install_no_torch.py").read_text()
    assert "@pytest.mark.slow\ndef test_install_without_the_torch_extra" in no_torch


ARTIFACT_PATHS = ("from tests.browser.conftest import ARTIFACTS; "
                  "from tests.browser.test_dashboard_browser import BUDGETS; "
                  "print(ARTIFACTS); print(BUDGETS)")


@pytest.mark.parametrize("keep", [False, True])
def test_artifacts_go_outside_the_checkout_unless_asked(tmp_path, keep):
    env = {k: v for k, v in os.environ.items() if k != "VIZDEBUG_TEST_ARTIFACTS"}
    if keep:
        env["VIZDEBUG_TEST_ARTIFACTS"] = str(tmp_path / "kept")
    done = subprocess.run([sys.executable, "-c", ARTIFACT_PATHS], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    paths = [Path(line) for line in done.stdout.split()]
    assert len(paths) == 2
    for path in paths:
        assert REPO not in path.parents, path
        assert (tmp_path / "kept" in path.parents) == keep, path


BLOCK_EXTRAS = """
import sys, pytest
# what pip install -e ".[test]" does not bring: the framework and benchmark extras
for name in ("lightning", "lightning.pytorch", "pytorch_lightning", "transformers",
             "accelerate", "matplotlib", "tensorboard", "livelossplot"):
    sys.modules[name] = None
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "--collect-only", "tests"]))
"""


@pytest.mark.slow
def test_pytest_collects_without_the_framework_extras():
    """The extras are hidden in the collecting process (a ``None`` in ``sys.modules``):
    this proves that no test module needs them to be collected, not that a fresh
    ``.[test]`` install resolves."""
    done = subprocess.run([sys.executable, "-c", BLOCK_EXTRAS], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "error" not in done.stdout.splitlines()[-1], done.stdout[-3000:]
