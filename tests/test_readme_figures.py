"""The README's pictures and quoted figures are the notebooks' own.

``scripts/readme_assets.py`` executes the notebooks and writes ``docs/img/figures.json``
(the figures, and each picture with its notebook, cell and SHA-256) and the README's marked
spans ``<!--fig:KEY-->value<!--/fig-->``. The fast tests hold the README to that JSON and
the JSON to the pictures on disk; the notebook test runs notebook 04 again and holds the
JSON to what it prints now, so a change that moves a figure fails until the script is rerun.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

from tests.notebook_runs import execute

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
RECORD = json.loads((REPO / "docs" / "img" / "figures.json").read_text())
MARK = re.compile(r"<!--fig:(?P<key>[\w.-]+)-->(?P<value>.*?)<!--/fig-->")
PICTURE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<path>docs/img/[^)]+)\)")


def _assets_script():
    spec = importlib.util.spec_from_file_location("readme_assets",
                                                  REPO / "scripts" / "readme_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_quoted_figure_is_the_recorded_one():
    quoted = [(m["key"], m["value"]) for m in MARK.finditer(README)]
    assert quoted, "the README marks no figures"
    wrong = [(k, v, RECORD["figures"].get(k)) for k, v in quoted if RECORD["figures"].get(k) != v]
    assert wrong == [], "README differs from docs/img/figures.json: rerun scripts/readme_assets.py"
    assert {k for k, _ in quoted} == set(RECORD["figures"])  # none recorded and left unquoted


def test_every_picture_comes_from_a_notebook_via_the_script():
    shown = {Path(m["path"]).name: m["alt"] for m in PICTURE.finditer(README)}
    assert set(shown) == set(RECORD["pictures"]), "a README picture the script does not make"
    for name, alt in shown.items():
        made = RECORD["pictures"][name]
        assert (REPO / "notebooks" / made["notebook"]).exists()
        assert alt == made["shows"], name
        digest = hashlib.sha256((REPO / "docs" / "img" / name).read_bytes()).hexdigest()
        assert digest == made["sha256"], f"docs/img/{name} was not written by the script"
    assert sorted(p.name for p in (REPO / "docs" / "img").glob("*.png")) == sorted(shown)


def test_the_script_knows_every_recorded_picture_and_rewrites_the_spans():
    script = _assets_script()
    assert set(script.PICTURES) == set(RECORD["pictures"])
    for name, (notebook, cell, shows) in script.PICTURES.items():
        assert RECORD["pictures"][name] | {"sha256": ""} == {
            "notebook": notebook, "cell": cell, "shows": shows, "sha256": ""}
    text = "a <!--fig:nb04.label_noise_recall-->0.1<!--/fig--> b"
    figures = {"nb04.label_noise_recall": "0.84"}
    assert script.rewrite_readme(figures, text) == text.replace("0.1", "0.84")
    with pytest.raises(SystemExit, match="unknown"):
        script.rewrite_readme(figures, "<!--fig:unknown-->1<!--/fig-->")


@pytest.mark.notebook
@pytest.mark.slow
def test_notebook_04_still_prints_the_recorded_label_noise_figures(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as the script runs it
    nb = execute("04_embeddings.ipynb", 600)
    now = _assets_script().label_noise(nb)
    assert now == {k: RECORD["figures"][k] for k in now}
