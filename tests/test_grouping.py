"""One cause, one finding: consequences of a finding that explains them fold under it.

A real collapsed representation (a dead layer's outputs on digits) gives one
``representation-collapse`` and dozens of ``class-overlap``; a real diverging run gives
``exploding-gradients`` then a NaN loss and a flat curve. The consequences keep their
severity in the data but are shown folded, and summaries (``vizdebug ls``, the dashboard
badge, the report) count causes.
"""

from __future__ import annotations

import doctest
import re

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

import vizdebug as vd
from vizdebug.analysis import grouping
from vizdebug.analysis.grouping import Layers, group_findings
from vizdebug.cli import ls as cli_ls
from vizdebug.findings import Finding, Findings, findings_html, fold
from vizdebug.views.dashboard import worst_finding


def _dead_layer_features(n: int = 600) -> tuple[torch.Tensor, np.ndarray]:
    """Digits through a Linear + ReLU whose units are all below zero: every output is 0."""
    x, y = load_digits(return_X_y=True)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU())
    with torch.no_grad():
        net[0].bias.fill_(-1e3)  # dead for every input (a bias driven far below zero)
        feats = net(torch.tensor(x[:n], dtype=torch.float32))
    return feats, y[:n]


@pytest.fixture(scope="module")
def collapsed() -> Findings:
    feats, y = _dead_layer_features()
    return vd.show_embeddings(feats, labels=y, method="pca").wait(60).findings


# -- the embedding view -----------------------------------------------------------------
def test_a_collapsed_representation_is_one_cause_with_the_overlaps_folded(collapsed):
    overlaps = [f for f in collapsed if f.code == "class-overlap"]
    assert len(overlaps) >= 20 and all(f.severity == "warning" for f in overlaps)  # kept
    assert collapsed.codes == ["representation-collapse", "class-overlap"]  # still listed
    assert [f.code for f in collapsed.causes] == ["representation-collapse"]
    assert {f.cause for f in overlaps} == {"representation-collapse"}
    assert all("collapsed representation" in f.because for f in overlaps)
    assert collapsed.counts() == {"error": 0, "warning": 1, "info": 0}
    assert collapsed.summary() == f"1 warning ({len(overlaps)} consequences folded under it)"
    cause = collapsed.causes[0]
    assert len(collapsed.consequences(cause)) == len(overlaps)


def test_the_html_and_the_text_fold_the_consequences(collapsed):
    page = collapsed.to_html()
    assert page.count('<details class="vd-consequences"') == 1
    summary = re.search(r"<summary>\+ (\d+) consequences \(class-overlap x(\d+)\)</summary>", page)
    n = len(collapsed) - 1
    assert summary and int(summary[1]) == int(summary[2]) == n
    top, folded = page.split('<details class="vd-consequences"', 1)
    assert 'data-code="class-overlap"' not in top  # every overlap row is inside the fold
    assert folded.count('data-cause="representation-collapse"') == n
    assert "because a collapsed representation" in folded
    text = repr(collapsed)
    assert len(text.splitlines()) == 3 and f"+ {n} consequences folded" in text


def test_user_strings_stay_escaped_in_the_fold():
    feats, y = _dead_layer_features(200)
    names = np.array(["<b>cat</b>", "dog&co"])[y % 2]
    found = vd.show_embeddings(feats, labels=names, method="pca").wait(60).findings
    page = found.to_html()
    assert found[1].cause == "representation-collapse" and "<b>cat</b>" in found[1].message
    assert "<b>cat" not in page and "&lt;b&gt;cat&lt;/b&gt;" in page and "dog&amp;co" in page


def test_a_healthy_representation_groups_nothing():
    x, y = load_digits(return_X_y=True)
    found = vd.show_embeddings(x[:600], labels=y[:600], method="pca").wait(60).findings
    assert all(f.cause is None for f in found) and "vd-consequences" not in found.to_html()


def test_a_tracked_dead_layer_folds_too():
    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    probe = torch.tensor(x[:200] / 16, dtype=torch.float32)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    with torch.no_grad():
        model[0].bias.fill_(-1e3)
    session = vd.watch(model)
    session.track_embeddings("1", probe, labels=y[:200], every=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(probe), torch.tensor(y[:200])).backward()
        opt.step()
    found = session.embeddings(method="pca").wait(60).findings
    session.close()
    assert [f.code for f in found.causes] == ["representation-collapse"]
    assert len(found) > 1 and found.counts()["warning"] == 1


# -- training ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def diverged(tmp_path_factory):
    """A regression whose learning rate is too high: the loss reaches 1e36, then NaN."""
    path = tmp_path_factory.mktemp("runs") / "diverged.sqlite"
    torch.manual_seed(0)
    x = torch.randn(512, 8)
    y = x.sum(1, keepdim=True)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    with pytest.warns(Warning), vd.watch(model, every=1, store=path) as session:
        for _ in range(150):
            i = torch.randint(0, len(x), (32,))
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x[i]), y[i])
            loss.backward()
            opt.step()
            session.log(loss=loss)
        found = session.findings()
    return found, path


def test_a_diverged_run_is_one_cause(diverged):
    found, _ = diverged
    assert {"exploding-gradients", "nonfinite-loss", "underfitting"} <= set(found.codes)
    (cause,) = found.causes
    assert cause.code == "exploding-gradients" and cause.severity == "error"
    nan = next(f for f in found if f.code == "nonfinite-loss")
    assert nan.severity == "error" and nan.cause == cause.key  # the NaN came after
    flat = next(f for f in found if f.code == "underfitting")
    assert flat.cause == nan.key  # through the NaN: folded under the first cause
    assert found.counts()["error"] == 1 and found.profile  # the profile kept


def test_ls_and_the_stored_run_count_causes(diverged):
    found, path = diverged
    stored = vd.open_run(path).findings()
    assert [f.code for f in stored.causes] == ["exploding-gradients"]
    row = cli_ls.describe(path)
    assert row["findings"] == {"error": 1, "warning": 0, "info": 0}
    assert row["folded"] == len(stored) - 1 >= 2
    text = cli_ls.table([row], path.parent)
    assert f"1 error (+{row['folded']} folded)" in text


def test_the_badge_names_the_cause_as_severe_as_its_group():
    cause = Finding("exploding-gradients", "warning", "norm grew 300x", "loss",
                    {"peak_step": 10})
    nan = Finding("nonfinite-loss", "error", "loss was NaN", "loss", {"first_step": 40})
    other = Finding("overfitting", "warning", "val rose", "val_loss")
    found = Findings(group_findings([nan, other, cause]))
    badge = worst_finding(found)
    assert badge["code"] == "exploding-gradients" and badge["severity"] == "error"
    assert badge["more"] == 1 and badge["explains"] == 1 and "+ 1 consequence folded" in badge["title"]
    assert worst_finding(Findings()) == {}


def test_the_report_header_counts_causes(collapsed, tmp_path):
    page = vd.report(collapsed, tmp_path / "r.html").read_text()
    n = len(collapsed) - 1
    assert f"1 warning ({n} consequences folded under it)" in page
    assert page.count("<details class=\"vd-consequences\"") == 1


# -- the pairs, one at a time -----------------------------------------------------------
def _causes(found: list[Finding], layers: Layers | None = None) -> dict[str, str | None]:
    return {f.code: f.cause for f in group_findings(found, layers)}


def test_the_first_non_finite_value_decides_which_explains_which():
    grew = Finding("exploding-gradients", "warning", "grew", "loss", {"peak_step": 5})
    nan = Finding("nonfinite-loss", "error", "NaN", "loss", {"first_step": 20})
    assert _causes([grew, nan]) == {"exploding-gradients": None,
                                    "nonfinite-loss": "exploding-gradients@loss"}
    late = Finding("exploding-gradients", "error", "NaN grads", "w", {"first_step": 20})
    assert _causes([late, nan]) == {"exploding-gradients": "nonfinite-loss@loss",
                                    "nonfinite-loss": None}
    act = Finding("nonfinite-activation", "error", "NaN out", "fc", {"step": 20})
    assert _causes([act, nan])["nonfinite-loss"] == "nonfinite-activation@fc"
    flat = Finding("underfitting", "warning", "flat", "val_loss")
    assert _causes([flat, nan])["underfitting"] is None  # another series: not explained


def test_an_info_finding_explains_nothing():
    skipped = Finding("exploding-gradients", "info", "GradScaler skipped steps", None,
                      {"first_step": 1})
    spiky = Finding("unstable-loss", "warning", "spikes", "loss")
    assert _causes([skipped, spiky])["unstable-loss"] is None
    loud = Finding("exploding-gradients", "warning", "grew", None, {"peak_step": 1})
    assert _causes([loud, spiky])["unstable-loss"] == "exploding-gradients"


def test_dead_layers_explain_starved_gradients_upstream_only_at_most_layers():
    layers = Layers(("fc1", "act1", "fc2", "act2", "out"), ("act1", "act2"))
    dead = [Finding("dead-units", "warning", "dead", w) for w in ("act1", "act2")]
    vanish = Finding("vanishing-gradients", "warning", "small", "fc1.weight")
    zero = Finding("zero-gradients", "error", "all zero")
    got = _causes([*dead, vanish, zero], layers)
    assert got["vanishing-gradients"] == got["zero-gradients"] == "dead-units@act2"
    assert _causes([dead[0], vanish], layers)["vanishing-gradients"] is None  # 1 of 2 layers
    assert _causes([*dead, vanish])["vanishing-gradients"] is None  # layers unknown
    below = Finding("vanishing-gradients", "warning", "small", "out.weight")
    assert _causes([*dead, below], layers)["vanishing-gradients"] is None  # nothing downstream


def test_unnormalised_inputs_explain_a_dominant_first_layer():
    raw = Finding("input-not-normalized", "warning", "0..255", "fc1")
    ratio = Finding("exploding-gradients", "warning", "first 300x last", "fc1.weight",
                    {"ratio": 300.0})
    layers = Layers(("fc1", "act", "fc2"), ("act",))
    assert _causes([raw, ratio], layers)["exploding-gradients"] == "input-not-normalized@fc1"
    grew = Finding("exploding-gradients", "warning", "grew", None, {"growth": 500.0})
    assert _causes([raw, grew], layers)["exploding-gradients"] is None


def test_a_loss_on_the_wrong_outputs_explains_a_flat_curve():
    wrong = Finding("loss-output-mismatch", "warning", "softmax into CE", "loss (cross_entropy)")
    flat = Finding("underfitting", "warning", "flat", "loss")
    assert _causes([wrong, flat])["underfitting"] == "loss-output-mismatch@loss (cross_entropy)"


def test_every_pair_is_known_codes_with_a_reason():
    from vizdebug.findings import CODES

    for rule in grouping.EXPLAINS:
        assert rule.cause in CODES and rule.consequence in CODES and rule.reason
    heads = {(r.cause, r.consequence) for r in grouping.EXPLAINS}
    assert len(heads) == len(grouping.EXPLAINS)


# -- the data ---------------------------------------------------------------------------
def test_cause_round_trips_and_old_dicts_load():
    f = Finding("class-overlap", "warning", "0 and 1", "0 / 1", {"crossing": 0.5},
                cause="representation-collapse", because="all one vector")
    assert Finding.from_dict(f.to_dict()) == f
    old = {k: v for k, v in f.to_dict().items() if k not in ("cause", "because")}
    assert Finding.from_dict(old).cause is None and Finding.from_dict(old).because == ""
    assert "follows from representation-collapse: all one vector" in str(f)


def test_fold_survives_filtering_and_loops():
    a = Finding("nonfinite-loss", "error", "NaN", "loss", cause="exploding-gradients@loss")
    b = Finding("exploding-gradients", "warning", "grew", "loss", cause="nonfinite-loss@loss")
    assert [len(more) for _, more in fold([a, b])] == [0, 0]  # a loop: two causes
    grew = Finding("exploding-gradients", "warning", "grew", "loss")
    both = Findings([a, grew])
    assert [f.code for f in both.causes] == ["exploding-gradients"]
    assert [f.code for f in both.errors.causes] == ["nonfinite-loss"]  # its cause filtered out
    assert fold(both)[0][0] is grew  # the group is as severe as its error
    assert "vd-consequences" in findings_html(list(both))  # a plain list folds too


def test_grouping_is_pure():
    found = [Finding("representation-collapse", "warning", "one vector"),
             Finding("class-overlap", "warning", "0 / 1", "0 / 1")]
    before = [f.to_dict() for f in found]
    grouped = group_findings(found)
    assert [f.to_dict() for f in found] == before and grouped[1] is not found[1]
    assert group_findings(grouped) == grouped  # a named cause is kept


@pytest.mark.parametrize("module", ["vizdebug.analysis.grouping", "vizdebug.findings_format"])
def test_docstring_examples(module):
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
