"""One rule for printing p-values (issue 23): under 1e-300 (0 or a subnormal such as
2.81e-317) reads "< 1e-300" in the findings, the static table and the browser's explorer,
so one table never shows both forms."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import numpy as np
import pytest

from vizdebug.analysis.drift.findings import format_p
from vizdebug.views.drift import _cell, _js_source, compare_distributions

VALUES = [0.0, 2.81e-317, 5e-324, 1e-300, 3.2e-45, 0.0123, 0.5, 1.0]
WANT = ["< 1e-300", "< 1e-300", "< 1e-300", "1e-300", "3.2e-45", "0.012", "0.5", "1"]


def test_python_prints_p_values_by_one_rule():
    assert [format_p(p) for p in VALUES] == WANT
    assert [_cell(p, "p_adjusted") for p in VALUES] == WANT  # the static table's cells
    assert _cell(float("nan"), "p_value") == "–"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_browser_uses_the_same_floor():
    code = f"{_js_source()}\nconsole.log(JSON.stringify({json.dumps(VALUES)}.map(vdDriftPlots.fmtP)));"
    # on stdin: the drift scripts are past the 128 KB an argument may hold
    out = subprocess.run([shutil.which("node")], input=code, capture_output=True, text=True,
                         timeout=60, check=True)
    got = json.loads(out.stdout)
    assert got[:3] == ["< 1e-300"] * 3  # 0 and the subnormals
    assert all(g != "< 1e-300" for g in got[3:])  # (digits: chart_ticks.js's format)


def test_a_table_with_a_subnormal_p_shows_one_form():
    rng = np.random.default_rng(0)
    shifts = np.linspace(0.9, 1.4, 26)  # from p ~ 1e-268 through subnormals to 0
    ref = {f"f{i}": rng.normal(size=4000) for i in range(len(shifts))}
    cur = {f"f{i}": rng.normal(s, 1, 4000) for i, s in enumerate(shifts)}
    view = compare_distributions(ref, cur)
    p = np.array([r.p_adjusted for r in view.results])
    assert ((p > 0) & (p < 1e-300)).any() and (p == 0).any()  # both kinds are here
    cells = re.findall(r"<td>([^<]*e-\d+|&lt; 1e-300)</td>", view._table_html())
    tiny = [c for c in cells if html.unescape(c) == "< 1e-300"]
    assert len(tiny) == int((p < 1e-300).sum())
    assert not [c for c in cells if c not in tiny and float(c) < 1e-300]  # no 5.8e-321
