"""on_anomaly="pdb" with the real debugger, driven through stdin in a subprocess."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import torch, vizdebug as vd
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())
session = vd.watch(model, on_anomaly="pdb")
x = torch.randn(2, 4)
x[0, 0] = float("nan")
try:
    model(x)
except vd.AnomalyError as exc:
    print("RAISED", type(exc).__name__, exc.module_path)
print("ERRORS", session.collector_errors())
"""


@pytest.mark.parametrize(("commands", "after"), [
    ("p type(module).__name__\nc\n", "'Linear'"),  # look around, then continue
    ("q\n", None),                                  # quit the debugger
])
def test_a_real_pdb_prompt_opens_in_the_hook_and_the_anomaly_is_raised(commands, after):
    out = subprocess.run([sys.executable, "-c", SCRIPT], input=commands, capture_output=True,
                         text=True, timeout=120)
    text = out.stdout + out.stderr
    assert "(Pdb)" in text and "forward_hook()" in text, text
    if after:
        assert after in text
    assert "RAISED WatchAnomaly 0" in text and "ERRORS []" in text, text
