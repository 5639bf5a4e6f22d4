"""One tick and number-format module per language: ``views/_ticks.py`` (the static
pictures) and ``views/static/chart_ticks.js`` (the live charts, the drift explorer) give the
same ticks and the same labels on the same ranges, run side by side (the JS in node); and
no other module makes ticks of its own."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vizdebug.views import _ticks as ticks

VIEWS = Path(ticks.__file__).parent
NODE = shutil.which("node")


def test_round_ticks_and_formats():
    assert ticks.nice_ticks(0.064, 0.6) == [0.2, 0.4, 0.6]
    assert ticks.nice_ticks(0, 5000, 4) == [0, 2000, 4000]
    assert ticks.nice_ticks(1, 1) == [1] and ticks.nice_ticks(math.nan, 1) == []
    assert [ticks.format_tick(v) for v in (2e6, -0.000012, 1e-4, 999999, 0, 2.5e-7)] == [
        "2e6", "-1.2e-5", "0.0001", "1000000", "0", "2.5e-7"]
    assert ticks.format_tick(None) == "null" and ticks.format_tick(math.inf) == "Infinity"
    assert ticks.tick_labels([0.1, 0.2], ".0%") == ["10%", "20%"]


def _ranges(seed: int = 0, count: int = 300) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        span = 10.0 ** rng.uniform(-6, 7)
        lo = float(rng.choice([0.0, rng.normal() * span * rng.choice([0.1, 10, 1000])]))
        out.append([lo, lo + span, int(rng.integers(2, 9))])
    return out + [[0, 1, 5], [0.0641, 0.9, 5], [413.47, 413.53, 6], [-3, -1, 4], [0, 1.02, 7]]


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_python_and_javascript_tick_alike():
    cases = _ranges()
    values = [float(v) for v in np.random.default_rng(1).normal(size=200)
              * 10.0 ** np.random.default_rng(2).uniform(-8, 9, size=200)]
    values += [0.0, 1e-4, 9.9995e-5, 999999.5, 1e6, 0.125, 0.005, -0.005, 0.3 + 0.0]
    script = (VIEWS / "static" / "chart_ticks.js").read_text(encoding="utf-8") + """
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
console.log(JSON.stringify({
  ticks: input.cases.map(([lo, hi, n]) => vdTicks(lo, hi, n)),
  labels: input.cases.map(([lo, hi, n]) => vdTickLabels(vdTicks(lo, hi, n))),
  log: input.cases.map(([lo, hi]) => vdLogTicks(Math.log10(Math.abs(lo) + 1e-3),
                                                  Math.log10(Math.abs(lo) + 1e-3) + Math.log10(hi - lo + 1))),
  formats: input.values.map((v) => [vdFormat(v), vdFormat(v, ".0%")]),
}));"""
    out = subprocess.run([NODE, "-e", script], input=json.dumps({"cases": cases, "values": values}),
                         capture_output=True, text=True, timeout=60, check=True)
    js = json.loads(out.stdout)
    for (lo, hi, n), want, labels in zip(cases, js["ticks"], js["labels"]):
        got = ticks.nice_ticks(lo, hi, n)
        assert got == want, (lo, hi, n)
        assert ticks.tick_labels(got) == labels, (lo, hi, n)
    for (lo, hi, _), want in zip(cases, js["log"]):
        a = math.log10(abs(lo) + 1e-3)
        assert ticks.log_ticks(a, a + math.log10(hi - lo + 1)) == pytest.approx(want, abs=1e-12)
    assert [[ticks.format_tick(v), ticks.format_tick(v, ".0%")] for v in values] == js["formats"]


def test_no_other_module_makes_ticks():
    """'Nice ticks' was written four times; now once per language, the rest import it."""
    own = re.compile(r"(def|function)\s+\w*(nice|Nice|log|Log|vd)_?[Tt]icks\s*\(")
    offenders = [str(path.relative_to(VIEWS)) for path in sorted(VIEWS.rglob("*"))
                 if path.suffix in (".py", ".js") and "vendor" not in path.parts
                 and path.name not in ("_ticks.py", "chart_ticks.js")
                 and own.search(path.read_text(encoding="utf-8"))]
    assert offenders == []
