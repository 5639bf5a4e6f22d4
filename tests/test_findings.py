from __future__ import annotations

import pytest

from vizdebug import Finding, Findings


def test_findings_sorted_by_severity_and_codes_unique():
    fs = Findings([
        Finding("label-imbalance", "info", "a"),
        Finding("input-none", "error", "b"),
        Finding("blank-images", "warning", "c"),
        Finding("input-none", "error", "d"),
    ])
    assert [f.severity for f in fs] == ["error", "error", "warning", "info"]
    assert fs.codes == ["input-none", "blank-images", "label-imbalance"]
    assert len(fs.errors) == 2 and len(fs.warnings) == 1
    assert fs.at_least("warning").codes == ["input-none", "blank-images"]


def test_unknown_code_and_severity_rejected():
    with pytest.raises(ValueError, match="unknown finding code"):
        Finding("made-up", "error", "x")
    with pytest.raises(ValueError, match="severity"):
        Finding("input-none", "fatal", "x")
    with pytest.raises(TypeError):
        Findings(["not a finding"])


def test_html_escapes_every_user_string():
    evil = "<img src=x onerror=alert(1)>"
    html = Findings([Finding("feature-drift", "warning", evil, where=evil, hint=evil)])._repr_html_()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_round_trip_dict_and_empty_repr():
    f = Finding("blank-images", "warning", "m", where="1, 2", evidence={"indices": [1, 2]}, hint="h")
    assert Finding.from_dict(f.to_dict()) == f
    assert "nothing to report" in repr(Findings())
    assert "nothing looks wrong" in Findings()._repr_html_()


def test_evidence_target_samples_with_thumbnails_from_a_real_check():
    import numpy as np

    from vizdebug import check_batch
    from vizdebug.findings import evidence_target

    x = np.random.default_rng(0).random((6, 1, 8, 8)).astype(np.float32)
    x[[1, 4]] = 0.5  # blank
    (blank,) = [f for f in check_batch(x) if f.code == "blank-images"]
    assert evidence_target(blank) == {"kind": "samples", "name": None, "indices": [1, 4]}
    thumbs = blank.evidence["thumbnails"]
    assert len(thumbs) == 2 and all(t.startswith("data:image/png;base64,") for t in thumbs)
    html = Findings([blank]).to_html()
    assert html.count('<img src="data:image/png;base64,') == 2
    assert 'data-kind="samples"' in html and 'data-indices="1,4"' in html


def test_evidence_target_layer_metric_feature_and_nothing():
    from vizdebug.errors import VizdebugTypeError
    from vizdebug.findings import evidence_target

    grad = Finding("vanishing-gradients", "warning", "m", where="0.weight", evidence={"ratio": 1e-5})
    assert evidence_target(grad) == {"kind": "layer", "name": "0.weight", "indices": []}
    hook = Finding("input-none", "error", "m", where="fc", evidence={"step": 3, "class": "Linear"})
    assert evidence_target(hook)["kind"] == "layer"  # a module saw None: not samples
    loss = Finding("exploding-gradients", "error", "m", where="loss",
                   evidence={"first_step": 4, "target": "metric"})
    assert evidence_target(loss) == {"kind": "metric", "name": "loss", "indices": []}
    leak = Finding("split-target-leak", "warning", "m", where="id, x",
                   evidence={"features": ["id", "x"], "scores": [1.0, 0.99]})
    assert evidence_target(leak) == {"kind": "feature", "name": "id", "indices": []}
    batches = Finding("input-nonfinite", "error", "m", where="batch 7", evidence={"batches": [7, 9]})
    assert evidence_target(batches) == {"kind": "samples", "name": "batches", "indices": [7, 9]}
    assert evidence_target(Finding("layout-channels-last", "warning", "m")) is None
    assert evidence_target(Finding("dead-units", "warning", "m")) is None  # no place named
    with pytest.raises(VizdebugTypeError, match="takes a Finding, got dict"):
        evidence_target({"code": "dead-units"})


def test_evidence_html_sparkline_escaped_and_only_image_uris():
    from vizdebug.findings import evidence_series

    evil = '"><script>alert(1)</script>'
    series = evidence_series(evil, list(range(200)), [float(i % 7) for i in range(200)])
    assert len(series["values"]) == 64 and series["steps"][-1] == 199
    f = Finding("dead-units", "warning", "m", where=evil,
                evidence={"series": series, "thumbnails": ["javascript:alert(1)"]})
    html = Findings([f]).to_html()
    assert "<script" not in html and "javascript:" not in html
    assert html.count("<polyline") == 1 and "&lt;script&gt;" in html
    assert 'class="vd-thumbnails"' not in html


def test_a_repeated_hint_is_said_once_and_report_headings_say_whose(tmp_path):
    import numpy as np

    import vizdebug as vd

    rng = np.random.default_rng(0)
    ref = {f"f{k}": rng.normal(size=3000) for k in range(4)}
    cur = {f"f{k}": rng.normal(1.0, 1, 3000) for k in range(4)}
    view = vd.compare_distributions(ref, cur)
    hints = [f.hint for f in view.findings if f.where in ref]
    assert len(hints) == 4 and len(set(hints)) == 1  # each finding keeps its hint ...
    page = view.findings.to_html()
    assert page.count(hints[0][:60]) == 1  # ... and the list says it once
    assert page.count("the same as for") == 3
    data = vd.check_dataset([(np.zeros((1, 8, 8)), 0), (None, 1)] * 3)
    out = vd.report([data, view], tmp_path / "r.html").read_text()
    assert "<h2>Dataset check (check_dataset): 6 of 6 items of a list</h2>" in out
    assert "<h2>Findings</h2>" not in out


def test_a_dead_units_finding_links_its_layer_and_draws_its_recorded_share():
    import numpy as np

    from vizdebug.analysis.training.diagnose import rule_dead_units
    from vizdebug.findings import evidence_target
    from vizdebug.records import ACTIVATION_FIELDS, TrainingRecords

    acts = np.zeros((10, 2, len(ACTIVATION_FIELDS)))
    dead = np.linspace(0.2, 0.95, 10)
    acts[:, 1, ACTIVATION_FIELDS.index("dead")] = dead
    rec = TrainingRecords(module_paths=["fc", "act"], module_classes=["Linear", "ReLU"],
                          act_steps=np.arange(0, 100, 10), activations=acts)
    (f,) = rule_dead_units(rec)
    assert evidence_target(f) == {"kind": "layer", "name": "act", "indices": []}
    assert f.evidence["series"]["values"] == pytest.approx(dead.tolist())
    html = Findings([f]).to_html()
    assert "<polyline" in html and "dead share 0.2 &#8594; 0.95" in html
