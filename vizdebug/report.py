"""``report``: one standalone HTML file that works offline (no script from the network)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import html
import os
from pathlib import Path
from typing import Any

from .errors import VizdebugError, VizdebugTypeError, describe, short_repr
from .findings import Finding, Findings, findings_html
from .progress import Progress
from .views._base import CSS, keep_first

MAX_NESTING = 8     # lists of lists of views a report unpacks
MAX_PARTS = 10_000  # parts of one report


def _parts(obj: Any, depth: int = 0, seen: frozenset = frozenset()) -> list[Any]:
    """The parts of a report: nested lists and tuples unpacked, a list that holds itself
    or nests deeper than :data:`MAX_NESTING` refused by name."""
    if not isinstance(obj, (list, tuple)) or isinstance(obj, Findings):
        return [obj]
    if id(obj) in seen:
        raise VizdebugTypeError("report() was given a list that contains itself; pass a flat "
                                "list of sessions, runs, views or findings")
    if depth >= MAX_NESTING:
        raise VizdebugTypeError(f"report() was given lists nested more than {MAX_NESTING} "
                                "deep; pass a flat list of sessions, runs, views or findings")
    if len(obj) > MAX_PARTS:
        raise VizdebugTypeError(f"report() was given {len(obj):,} parts; at most {MAX_PARTS:,}")
    inner = seen | {id(obj)}
    return [p for item in obj for p in _parts(item, depth + 1, inner)]


def _section(part: Any) -> str:
    """The HTML of one part of the report."""
    if isinstance(part, Findings) or (isinstance(part, list) and all(isinstance(f, Finding) for f in part)):
        title = html.escape(str(getattr(part, "title", "") or "Findings"))  # whose they are
        return f"<section><h2>{title}</h2>{_counts(part)}{findings_html(part)}</section>"
    if isinstance(part, type):  # (a class has to_html too: an unbound one)
        raise VizdebugTypeError(
            f"report() was given the class {part.__name__[:80]} itself; pass an instance: a "
            "Session from vd.watch, a Run from vd.open_run, a view, or Findings")
    to_html = getattr(part, "to_html", None)
    if to_html is None:
        raise VizdebugTypeError(
            f"report() cannot include a {describe(part)}; pass a Session, a Run, a view "
            "(show_batch, compare_distributions, ...), Findings, or a list of those"
        )
    title = html.escape(str(getattr(part, "title", "") or type(part).__name__))
    body = to_html()
    if callable(getattr(part, "rank_data", None)):  # a stored job: its ranks, merged
        from .views.ranks import show_ranks

        body += show_ranks(part).to_html()
    return f"<section><h2>{title}</h2>{body}</section>"


def _counts(found: list[Finding]) -> str:
    """The section's header line: the causes by severity, and how many findings they
    explain (folded under them, not counted beside them)."""
    found = found if isinstance(found, Findings) else Findings(found)
    return f"<p class='vd-note vd-counts'>{html.escape(found.summary())}</p>" if found else ""


def report(session_or_run: Any, path: str | os.PathLike, *,
           title: str | None = "vizdebug report", progress: bool | None = None) -> Path:
    """Write one standalone HTML file with the views and findings of ``session_or_run``.

    ``session_or_run`` may be a Session, a Run, any view, Findings, or a list of those.
    The file needs no network: the charts' scripts are inline. A report
    that takes more than 2 s (a long stored run) shows its progress (``progress=False``
    turns that off); Ctrl-C stops it and leaves no file behind.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from vizdebug import show_batch
    >>> out = report(show_batch(np.random.rand(4, 1, 8, 8)), os.path.join(tempfile.mkdtemp(), "r.html"))
    >>> out.exists()
    True
    """
    path = _html_path(path)
    if title is None:
        title = "vizdebug report"
    if not isinstance(title, str):
        raise VizdebugTypeError(f"title must be a string, got {describe(title)}: {short_repr(title)}")
    parts = _parts(session_or_run)
    sections = []
    with Progress("report", total=len(parts), unit="parts", progress=progress,
                  ticker=True) as bar:
        for p in parts:
            bar.stage = str(getattr(p, "title", "") or type(p).__name__)[:60]
            sections += [_section(p), *_embedding_sections(p)]
            bar.update()
    body = keep_first("".join(sections))  # the charts' library once, however many dashboards
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{CSS}"
        "body{max-width:1280px;margin:18px auto;padding:0 12px}"
        "section{margin:18px 0 28px 0;border-top:1px solid #ddd;padding-top:6px}"
        "h1{font-size:20px}h2{font-size:16px;color:#333}</style>"
        f"</head><body class='vd-view'><h1>{html.escape(title)}</h1>"
        f"<p class='vd-note'>written by vizdebug on {stamp}</p>{body}</body></html>"
    )
    _write_whole(path, page)
    return path


def _write_whole(path: Path, page: str) -> None:
    """Write ``page`` to a temporary file beside ``path`` and rename it into place: an
    interrupted write (Ctrl-C, a full disk) leaves no half report, and the temporary file
    (ours) is removed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.vizdebug-tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError, ValueError):
            tmp.unlink()
        if isinstance(exc, (OSError, ValueError)):  # ValueError: a NUL byte in the path
            raise VizdebugError(f"cannot write the report to {str(path)!r}: {exc}") from exc
        raise


def _html_path(path: Any) -> Path:
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        raise VizdebugTypeError(
            f"report() needs a path to write, e.g. report(view, 'report.html'); got "
            f"{describe(path)}"
        )
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        raise VizdebugTypeError(f"report path should end in .html, got {str(path)!r}")
    return path


# -- tracked embeddings (a Session's or a Run's), as static pictures ---------------------------
def _embedding_sections(part: Any) -> list[str]:
    """One section per tracked layer of a Session or Run: the timeline view's static
    picture (PCA layouts: the last frame, the separability curve, the findings)."""
    layers = getattr(part, "embedding_layers", None)
    if not callable(layers) or isinstance(part, type):
        return []
    try:
        names = layers()
    except VizdebugError as exc:  # a damaged run file
        return [f"<section><h2>Tracked embeddings</h2><p class='vd-note'>not shown: "
                f"{html.escape(str(exc))}</p></section>"]
    out = []
    for layer in names:
        try:
            view = part.embeddings(layer, method="pca")
            view.wait(timeout=60)  # the separability curve and the findings
            body = view.to_html()
        except VizdebugError as exc:
            body = f"<p class='vd-note'>not shown: {html.escape(str(exc))}</p>"
        out.append(f"<section><h2>Tracked embeddings: {html.escape(layer)}</h2>{body}</section>")
    return out
