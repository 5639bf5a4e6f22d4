"""No input to show_embeddings / track_embeddings can kill the kernel (issue 25).

scikit-learn's ``TSNE(init="pca")`` segfaults on collapsed features (identical points,
values of scale 1e-100) and on tiny but spread-out ones (its float32 PCA start turns 1e-30
into 0 and divides by it): each crashing input runs in a subprocess, so a segfault fails
the test instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vizdebug.analysis.embeddings.findings import feature_geometry, geometry_findings
from vizdebug.analysis.embeddings.project import (
    checked_start,
    conditioned,
    is_collapsed,
    layout_plan,
)
from vizdebug.errors import VizdebugError

REPO = Path(__file__).resolve().parents[1]

PRELUDE = """
import json, sys, warnings
import numpy as np
warnings.simplefilter("error", RuntimeWarning)  # a 'divide' warning fails the run
rng = np.random.default_rng(0)
"""


def run_isolated(body: str, timeout: float = 240) -> dict:
    """Run ``body`` in a fresh interpreter; it prints one JSON line as its result."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "VIZDEBUG_RENDERER": "text"}
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    assert proc.returncode == 0, f"exit {proc.returncode} (-11 is a segfault):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


SHOW = """
import vizdebug as vd
x = {features}
y = np.arange(len(x)) % 4
view = vd.show_embeddings(x, labels=y, method="{method}").wait(200)
f = view.findings
print(json.dumps({{"error": view.error, "name": view.layout_name, "notes": view.notes,
                  "codes": f.codes, "finite": bool(np.isfinite(view.layout).all()),
                  "overlap_causes": [g.cause for g in f if g.code == "class-overlap"]}}))
"""

COLLAPSED = {
    "identical": "np.ones((60, 8))",
    "zeros": "np.zeros((60, 8), dtype=np.float32)",
    "scale_1e-120": "rng.normal(size=(60, 8)) * 1e-120",
    "near_constant_float32": "(1000 + rng.normal(size=(200, 8)) * 1e-5).astype(np.float32)",
    "near_constant_float64": "1 + rng.normal(size=(200, 8)) * 1e-9",
}


@pytest.mark.parametrize("case", sorted(COLLAPSED))
def test_collapsed_features_do_not_crash_tsne_and_name_the_collapse(case):
    out = run_isolated(SHOW.format(features=COLLAPSED[case], method="tsne"))
    assert out["error"] == "" and out["finite"]
    assert out["name"] == "PCA" and any("t-SNE skipped" in n for n in out["notes"])
    assert "representation-collapse" in out["codes"]
    # the overlaps its arbitrary neighbours give are grouped under the collapse, not a flood
    assert all(c == "representation-collapse" for c in out["overlap_causes"])


@pytest.mark.parametrize("features", ["rng.normal(size=(80, 6)) * 1e-30",
                                      "rng.normal(size=(80, 6)) * 1e300",
                                      "(rng.normal(size=(80, 6)) * 1e-30).astype(np.float32)"])
def test_tiny_or_huge_spread_features_are_fitted_by_tsne(features):
    out = run_isolated(SHOW.format(features=features, method="tsne"))
    assert out["error"] == "" and out["finite"] and out["name"] == "t-SNE"
    assert "representation-collapse" not in out["codes"]


def test_timeline_of_a_collapsing_layer_refines_every_frame_without_crashing():
    out = run_isolated("""
    from vizdebug.records import EmbeddingFrame
    from vizdebug.views.embedding_timeline import show_embedding_frames
    x = rng.normal(size=(60, 8))
    frames = [EmbeddingFrame("fc", s, s, v) for s, v in
              enumerate([x, x * 1e-30, x * 1e-120, np.zeros_like(x), x])]
    view = show_embedding_frames(frames, labels=np.arange(60) % 3, method="tsne").wait(200)
    print(json.dumps({"error": view.error, "n": len(view.layouts),
                      "finite": all(bool(np.isfinite(v).all()) for v in view.layouts)}))
    """)
    assert out == {"error": "", "n": 5, "finite": True}


def test_track_embeddings_of_a_dead_layer_does_not_kill_the_kernel():
    out = run_isolated("""
    import torch
    from torch import nn
    import vizdebug as vd
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    with torch.no_grad():  # a dead layer: every ReLU input is negative
        model[0].weight.zero_()
        model[0].bias.fill_(-1.0)
    x, y = torch.randn(64, 8), torch.randint(0, 4, (64,))
    session = vd.watch(model)
    session.track_embeddings("1", x, labels=y, every=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        session.log(loss=loss)
    view = session.embeddings("1", method="tsne").wait(200)
    session.close()
    print(json.dumps({"error": view.error, "codes": view.findings.codes}))
    """)
    assert out["error"] == "" and "representation-collapse" in out["codes"]


def test_umap_refinement_is_guarded_too():
    pytest.importorskip("umap")
    out = run_isolated("""
    import warnings
    warnings.simplefilter("ignore")  # numba and umap's own deprecation chatter
    warnings.simplefilter("error", RuntimeWarning)
    from vizdebug.analysis.embeddings.project import refined_layout
    got = {}
    for name, x in {"zeros": np.zeros((40, 5)), "tiny": rng.normal(size=(40, 5)) * 1e-160,
                    "near": 1 + rng.normal(size=(40, 5)) * 1e-12}.items():
        got[name] = bool(np.isfinite(refined_layout(x, "umap", {"n_neighbors": 5})).all())
    print(json.dumps(got))
    """, timeout=400)
    assert out == {"zeros": True, "tiny": True, "near": True}


def test_plan_and_rules_in_process():
    assert layout_plan("auto", np.ones((30, 3)))[0] == "pca"
    assert layout_plan("tsne", np.eye(30)) == ("tsne", None)
    assert layout_plan("umap", np.eye(4))[1] == "4 points are too few for umap: PCA shown"
    tiny = np.random.default_rng(0).normal(size=(30, 3)) * 1e-200
    assert is_collapsed(tiny) and not is_collapsed(tiny * 1e170)
    c = conditioned(np.random.default_rng(1).normal(size=(20, 3)) * 1e-150)
    assert np.abs(c).max() == 1 and abs(c.mean()) < 1
    huge = conditioned(np.array([[1.7e308, 0.0], [-1.7e308, 1.0]]))
    assert np.isfinite(huge).all() and np.abs(huge).max() == 1


def test_a_non_finite_start_is_refused_by_name():
    with pytest.raises(VizdebugError, match="init must be .*5 x 2 array of finite"):
        checked_start(np.full((5, 2), np.nan), 5)
    with pytest.raises(VizdebugError, match="init must be"):
        checked_start(np.zeros((4, 2)), 5)
    assert checked_start(np.zeros((5, 2)), 5) == "random"  # no spread: sklearn's random start


def test_collapse_finding_groups_overlaps_for_near_constant_noise():
    rng = np.random.default_rng(0)
    x = (1000 + rng.normal(size=(300, 16)) * 1e-5).astype(np.float32)
    geo = feature_geometry(x, np.arange(300) % 10)
    found = geometry_findings(geo, np.arange(300))
    assert geo.collapsed and found.codes[0] == "representation-collapse"
    assert all(f.cause == "representation-collapse" for f in found if f.code == "class-overlap")
