"""Regenerate the README's pictures and quoted figures from the example notebooks.

    python scripts/readme_assets.py            # execute the notebooks, write everything
    python scripts/readme_assets.py --figures  # figures only (no browser needed)

Each notebook in ``notebooks/`` is executed with a real kernel (nbclient, one thread, in the
notebooks' folder, as ``tests/notebook_runs.py`` does). From their outputs it takes

- the figures the README quotes (executed sizes, notebook 04's label-noise precision and
  recall), written to ``docs/img/figures.json`` and into the README's marked spans
  ``<!--fig:KEY-->value<!--/fig-->``;
- the pictures: the static twin (the HTML a view shows without a widget front end) of one
  cell per picture, drawn by headless Chromium (Playwright) into ``docs/img/*.png``, each
  recorded in the JSON with its notebook, cell and SHA-256.

``tests/test_readme_figures.py`` checks the README against the JSON (and the JSON against
a fresh run of notebook 04), so the README cannot drift from the notebooks silently.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
IMG = REPO / "docs" / "img"
FIGURES = IMG / "figures.json"
README = REPO / "README.md"
MARK = re.compile(r"<!--fig:(?P<key>[\w.-]+)-->(?P<value>.*?)<!--/fig-->")
CHROMIUM = os.environ.get("VIZDEBUG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--no-proxy-server", "--disable-dev-shm-usage"]

# picture -> (notebook, a snippet of the cell whose static view it shows, what it shows)
PICTURES: dict[str, tuple[str, str, str]] = {
    "show_batch.png": ("01_show_batch.ipynb", "view = vd.show_batch(bad_loader",
                       "show_batch flags the digits a too-strong random crop cut out"),
    "dashboard.png": ("02_live_training.ipynb", "session = vd.watch(model, loader=train_loader",
                      "the training dashboard of notebook 02's clean run, once it has trained"),
    "drift.png": ("03_drift.ipynb", "drift = vd.compare_distributions(",
                  "the drift explorer on notebook 03's sensor data"),
    "embeddings.png": ("04_embeddings.ipynb", "view = vd.show_embeddings(",
                       "the penultimate layer of notebook 04's CNN, coloured by the noisy labels"),
}
WIDTH = 1100  # the widest picture, in CSS pixels (GitHub shows the README about 900 wide)
WIDTHS = {"drift.png": 1400}  # its table and plot side by side, the table's columns uncut
LABEL_NOISE = re.compile(r"precision (?P<precision>[\d.]+), recall (?P<recall>[\d.]+)")


def execute(name: str, timeout: int = 900) -> nbformat.NotebookNode:
    """``notebooks/<name>`` executed top to bottom by a fresh kernel, on one thread."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    os.environ["OMP_NUM_THREADS"] = "1"  # the kernel's; as the notebook tests run them
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    if errors:
        raise SystemExit(f"{name} raised {errors[0].ename}: {errors[0].evalue}")
    return nb


def cell_outputs(nb: nbformat.NotebookNode, snippet: str) -> list[dict[str, Any]]:
    """The outputs of the first code cell whose source contains ``snippet``."""
    for cell in nb.cells:
        if cell.cell_type == "code" and snippet in cell.source:
            return cell.outputs
    raise SystemExit(f"no code cell contains {snippet!r}")


def cell_text(nb: nbformat.NotebookNode, snippet: str) -> str:
    """The printed text and plain-text results of the cell containing ``snippet``."""
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "")
                   for o in cell_outputs(nb, snippet))


def static_view(nb: nbformat.NotebookNode, snippet: str) -> str:
    """The static twin of the view the cell shows (its latest redraw, as nbclient keeps
    display updates in place)."""
    for out in cell_outputs(nb, snippet):
        html = out.get("data", {}).get("text/html", "")
        if "data-vd-fallback" in html:
            return html
    raise SystemExit(f"the cell with {snippet!r} shows no static view")


def executed_mb(nb: nbformat.NotebookNode) -> str:
    """The size of the executed notebook as saved (``nbconvert --execute --to notebook``)."""
    return f"{len(nbformat.writes(nb).encode()) / 1e6:.2f}"


def label_noise(nb: nbformat.NotebookNode) -> dict[str, str]:
    """Notebook 04's printed precision and recall of the label-noise suspects."""
    text = cell_text(nb, "np.intersect1d(")
    found = LABEL_NOISE.search(text)
    if found is None:
        raise SystemExit(f"notebook 04 printed no precision/recall: {text!r}")
    return {"nb04.label_noise_precision": found["precision"],
            "nb04.label_noise_recall": found["recall"]}


def figures_of(executed: dict[str, nbformat.NotebookNode]) -> dict[str, str]:
    """Every figure the README quotes, by key, as the README prints it."""
    figures = {f"nb{name[:2]}.executed_mb": executed_mb(nb) for name, nb in executed.items()}
    figures.update(label_noise(executed["04_embeddings.ipynb"]))
    return figures


def page_for(view_html: str, width: int = WIDTH) -> str:
    """A page showing one static view on white, as wide as it needs up to ``width``."""
    return ("<!doctype html><html><head><meta charset='utf-8'></head>"
            "<body style='margin:0;background:#fff'>"
            f"<div id='picture' style='display:inline-block;max-width:{width}px;padding:8px'>"
            f"{view_html}</div></body></html>")


def render_pictures(executed: dict[str, nbformat.NotebookNode]) -> dict[str, dict[str, str]]:
    """Draw each picture's static view in headless Chromium into ``docs/img``."""
    from playwright.sync_api import sync_playwright

    made: dict[str, dict[str, str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": max(WIDTHS.values()) + 40,
                                              "height": 800})
            for png, (name, snippet, alt) in PICTURES.items():
                html = page_for(static_view(executed[name], snippet), WIDTHS.get(png, WIDTH))
                page.set_content(html, wait_until="load")
                page.locator("#picture").screenshot(path=str(IMG / png))
                made[png] = {"notebook": name, "cell": snippet, "shows": alt,
                             "sha256": sha256(IMG / png)}
        finally:
            browser.close()
    return made


def sha256(path: Path) -> str:
    """The file's SHA-256, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rewrite_readme(figures: dict[str, str], text: str) -> str:
    """``text`` with every marked span set to its figure; an unknown key is an error."""
    def value(match: re.Match[str]) -> str:
        key = match["key"]
        if key not in figures:
            raise SystemExit(f"README quotes {key!r}, which {FIGURES.name} does not have")
        return f"<!--fig:{key}-->{figures[key]}<!--/fig-->"

    return MARK.sub(value, text)


def main(argv: list[str] | None = None) -> int:
    """Execute the notebooks, then write the JSON, the pictures and the README."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", action="store_true", help="figures only, no pictures")
    args = parser.parse_args(argv)
    executed: dict[str, nbformat.NotebookNode] = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        start = time.perf_counter()
        executed[path.name] = execute(path.name)
        print(f"executed {path.name} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    old = json.loads(FIGURES.read_text()) if FIGURES.exists() else {}
    record = {"figures": figures_of(executed), "pictures": old.get("pictures", {})}
    if not args.figures:
        record["pictures"] = render_pictures(executed)
    IMG.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    README.write_text(rewrite_readme(record["figures"], README.read_text()))
    print(json.dumps(record["figures"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
