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
