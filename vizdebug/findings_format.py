"""How findings are written: numbers and index lists for messages, the fold of
consequences under their cause, and a findings list's HTML (with its sparklines,
thumbnails, the training profile and the folded consequences).

This module sits below :mod:`vizdebug.findings` and reads findings by their attributes
only; :mod:`vizdebug.findings` re-exports the public names. Every user-derived string is
escaped here.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

F = TypeVar("F")  # a Finding: read here by its key, cause and severity only
SEVERITIES: tuple[str, ...] = ("info", "warning", "error")  # least severe first
COLOURS = {"error": "#c62828", "warning": "#b26a00", "info": "#1565c0"}
# Text colours from the notebook's theme (JupyterLab's variables), with the light theme's
# as fallback where none is defined (GitHub, nbconvert): a fixed dark grey is unreadable
# on a dark theme's background.
TEXT = "var(--jp-ui-font-color1,#444)"     # hints, the profile
SOFT = "var(--jp-ui-font-color2,#555)"     # where, evidence, reasons
OK = "var(--jp-success-color1,#2e7d32)"
LINE = "var(--jp-brand-color1,#1565c0)"    # a sparkline
THUMBNAILS = 8  # flagged images a finding carries as thumbnails at most
SERIES_POINTS = 64  # a sparkline's points at most (evidence stays small in stored runs)


def fmt_number(x: float) -> str:
    """A number in three significant digits, for messages.

    >>> fmt_number(0.0123456)
    '0.0123'
    """
    return f"{x:.3g}"


def fmt_indices(idx: Sequence[int], limit: int = 12) -> str:
    """Indices for a message: the first ``limit``, then how many in all.

    >>> fmt_indices(list(range(20)), limit=3)
    '0, 1, 2, ... (20 in all)'
    """
    shown = ", ".join(str(i) for i in idx[:limit])
    return shown + (f", ... ({len(idx)} in all)" if len(idx) > limit else "")


def worst_severity(findings: Iterable[Any]) -> str:
    """The most severe severity among ``findings`` (``'info'`` for none)."""
    return max((f.severity for f in findings), key=SEVERITIES.index, default="info")


def fold(findings: Iterable[F]) -> list[tuple[F, list[F]]]:
    """The findings grouped under the causes that explain them: ``(cause, consequences)``
    for each finding that no other one in ``findings`` explains, worst group first (a
    group is as severe as its worst member), then in list order. A consequence of a
    consequence folds under the first cause of the chain; a cause that is not in the list
    (filtered out) or a loop leaves a finding a cause of its own.

    Examples
    --------
    >>> from vizdebug.findings import Finding
    >>> a = Finding("representation-collapse", "warning", "all points are one vector")
    >>> b = Finding("class-overlap", "warning", "0 and 1 overlap", cause=a.key)
    >>> [(cause.code, len(more)) for cause, more in fold([b, a])]
    [('representation-collapse', 1)]
    """
    items = list(findings)
    first: dict[str, int] = {}
    for i, f in enumerate(items):
        first.setdefault(f.key, i)
    roots = [_root(i, items, first) for i in range(len(items))]
    groups: dict[int, list[F]] = {i: [] for i, r in enumerate(roots) if r == i}
    for i, r in enumerate(roots):
        if r != i:
            groups[r].append(items[i])
    rank = {i: SEVERITIES.index(worst_severity([items[i], *more])) for i, more in groups.items()}
    return [(items[i], groups[i]) for i in sorted(groups, key=lambda i: (-rank[i], i))]


def _root(i: int, items: list[Any], first: dict[str, int]) -> int:
    """Where the chain of causes from ``items[i]`` ends (``i`` itself on a loop)."""
    chain = [i]
    while items[chain[-1]].cause is not None:
        nxt = first.get(items[chain[-1]].cause)
        if nxt is None:
            break
        if nxt in chain:
            return i
        chain.append(nxt)
    return chain[-1]


def evidence_series(stat: str, steps: Sequence[int], values: Sequence[float]) -> dict[str, Any]:
    """A recorded statistic for a finding's sparkline, thinned to ``SERIES_POINTS`` points
    (non-finite values become ``None``, so it stays JSON).

    >>> evidence_series("dead share", [0, 10, 20], [0.1, 0.5, float("nan")])["values"]
    [0.1, 0.5, None]
    """
    n = min(len(steps), len(values))
    keep = range(n) if n <= SERIES_POINTS else sorted(
        {round(i * (n - 1) / (SERIES_POINTS - 1)) for i in range(SERIES_POINTS)})
    vals = [float(values[i]) for i in keep]
    return {"stat": stat, "steps": [int(steps[i]) for i in keep],
            "values": [v if v == v and abs(v) != float("inf") else None for v in vals]}


def code_counts(codes: Sequence[str]) -> str:
    """``['a', 'b', 'a']`` -> ``'a x2, b'``: each code once, in first-seen order.

    >>> code_counts(["class-overlap", "label-noise-suspects", "class-overlap"])
    'class-overlap x2, label-noise-suspects'
    """
    counts: dict[str, int] = {}
    for code in codes:
        counts[code] = counts.get(code, 0) + 1
    return ", ".join(c if n == 1 else f"{c} x{n}" for c, n in counts.items())


def severity_counts(counts: Mapping[str, int], folded: int = 0) -> str:
    """A summary line: ``'1 warning (39 consequences folded under it)'``.

    >>> severity_counts({"error": 0, "warning": 2, "info": 1}, folded=39)
    '2 warnings, 1 info (39 consequences folded under them)'
    >>> severity_counts({"error": 0, "warning": 0})
    'none'
    """
    parts = [f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts.items() if n]
    causes = sum(counts.values())
    under = "it" if causes == 1 else "them"
    more = f" ({folded} consequence{'s' if folded != 1 else ''} folded under {under})"
    return (", ".join(parts) or "none") + (more if folded else "")


def folded_html(rows: Sequence[str], codes: Sequence[str], reasons: Sequence[str]) -> str:
    """The consequences of one cause, closed under it: ``+ N consequences`` and, when
    opened, why they follow from it and their rows (already rendered and escaped)."""
    if not rows:
        return ""
    why = "".join(f'<div class="vd-because" style="color:{SOFT}">because {html.escape(r)}</div>'
                  for r in dict.fromkeys(r for r in reasons if r))
    plural = "s" if len(rows) != 1 else ""
    return ('<details class="vd-consequences" style="margin-left:1.2em;font-size:12px">'
            f'<summary>+ {len(rows)} consequence{plural} ({html.escape(code_counts(codes))})'
            f'</summary>{why}<ul style="padding-left:0;margin:0.2em 0">{"".join(rows)}</ul>'
            '</details>')


def profile_html(lines: Sequence[str]) -> str:
    """The training profile under the findings: a closed block, one escaped line a fact."""
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return ('<details class="vd-profile" style="font-family:sans-serif;font-size:12px;'
            f'color:{TEXT};margin:0.3em 0"><summary>What vizdebug understood about this run'
            f'</summary><ul style="margin:0.2em 0 0 1em;padding:0">{items}</ul></details>')


def sparkline(series: Any, width: int = 120, height: int = 22) -> str:
    """An inline SVG line of ``evidence['series']`` (see
    :func:`vizdebug.findings.evidence_series`)."""
    if not isinstance(series, dict) or not isinstance(series.get("values"), list):
        return ""
    ys = [v for v in series["values"] if isinstance(v, (int, float)) and v == v]
    if len(ys) < 2:
        return ""
    lo, hi = min(ys), max(ys)
    span = (hi - lo) or 1.0
    step = (width - 2) / (len(ys) - 1)
    points = " ".join(f"{1 + i * step:.1f},{height - 2 - (y - lo) / span * (height - 4):.1f}"
                      for i, y in enumerate(ys))
    stat = html.escape(str(series.get("stat", "")))
    return (f' <span class="vd-sparkline" title="{stat}: {fmt_number(lo)} to {fmt_number(hi)}">'
            f'<svg width="{width}" height="{height}" style="vertical-align:middle">'
            f'<polyline points="{points}" fill="none" style="stroke:{LINE}" stroke-width="1.3"/>'
            f'</svg> {stat} {fmt_number(ys[0])} &#8594; {fmt_number(ys[-1])}</span>')


def thumbnails(uris: Any, size: int = 40) -> str:
    """The flagged images as small pictures (only PNG/JPEG data URIs are shown)."""
    if not isinstance(uris, list):
        return ""
    ok = [u for u in uris[:THUMBNAILS] if isinstance(u, str)
          and u.startswith(("data:image/png;base64,", "data:image/jpeg;base64,"))]
    imgs = "".join(
        f'<img src="{html.escape(u)}" width="{size}" height="{size}" alt="flagged image" '
        f'style="object-fit:contain;image-rendering:pixelated;border:1px solid #ccc;'
        f'margin-right:2px;background:#fff">' for u in ok)
    return f'<div class="vd-thumbnails" style="margin-top:2px">{imgs}</div>' if imgs else ""


def list_html(findings: Iterable[Any], empty: str,
              target: Callable[[Any], dict[str, Any] | None]) -> str:
    """The HTML list of :func:`vizdebug.findings.findings_html`; ``target`` says what a
    finding points at (:func:`vizdebug.findings.evidence_target`)."""
    profile = profile_html(getattr(findings, "profile", ()))
    findings = list(findings)
    if not findings:
        return (f'<div class="vd-findings vd-empty" style="color:{OK}">&#10003; '
                f'{html.escape(empty)}</div>{profile}')
    rows = []
    said: dict[str, str] = {}  # a hint already shown -> whose it was (said once, not per row)
    for cause, more in fold(findings):
        inner = [_row(f, said, target) for f in more]
        fold_html = folded_html(inner, [f.code for f in more], [f.because for f in more])
        rows.append(_row(cause, said, target, fold_html))
    return (f'<ul class="vd-findings" style="padding-left:0;font-family:sans-serif;font-size:13px">'
            f'{"".join(rows)}</ul>{profile}')


def _row(f: Any, said: dict[str, str], target: Callable[[Any], dict[str, Any] | None],
         folded: str = "") -> str:
    """One finding's ``<li>`` (a consequence's carries ``data-cause``)."""
    colour = COLOURS[f.severity]
    where = f' <span style="color:{SOFT}">at {html.escape(f.where)}</span>' if f.where else ""
    hint = html.escape(f.hint) if f.hint else ""
    if f.hint in said:
        hint = f"the same as for {html.escape(said[f.hint])} above"
    elif f.hint:
        said[f.hint] = f.where or f.code
    hint = f'<div class="vd-hint" style="color:{TEXT};margin-left:1.2em">&#8594; {hint}</div>' if hint else ""
    cause = f' data-cause="{html.escape(f.cause)}"' if f.cause else ""
    return (f'<li class="vd-finding vd-{f.severity}" data-code="{html.escape(f.code)}"{cause} '
            f'style="margin:0.25em 0;list-style:none">'
            f'<span style="background:{colour};color:#fff;border-radius:3px;padding:0 0.4em;'
            f'font-size:0.85em">{f.severity}</span> '
            f'<code>{html.escape(f.code)}</code>{where}: {html.escape(f.message)}{hint}'
            f'{_evidence_html(f, target(f))}{folded}</li>')


# The mark before what a finding points at: a small drawn lens, not the emoji (U+1F50D),
# which a machine without an emoji font shows as an empty box.
_LENS = ('<svg width="11" height="11" viewBox="0 0 12 12" aria-hidden="true" '
         'style="vertical-align:-1px"><circle cx="5" cy="5" r="3.6" fill="none" '
         'stroke="currentColor" stroke-width="1.5"/><path d="M7.7 7.7L11 11" '
         'stroke="currentColor" stroke-width="1.7" stroke-linecap="round"/></svg>')


def _evidence_html(f: Any, target: dict[str, Any] | None) -> str:
    """One line under the finding: what it points at, with a sparkline or thumbnails."""
    series = sparkline(f.evidence.get("series"))
    thumbs = thumbnails(f.evidence.get("thumbnails"))
    if target is None and not series and not thumbs:
        return ""
    parts = []
    if target is not None:
        kind = target["kind"]
        if kind == "samples":
            what = {"batches": "batches", "target": "targets", "test": "test samples"}.get(
                target["name"] or "", "samples")
            label = f"{what} {fmt_indices(target['indices'])}"
        else:
            label = f"{kind} {target['name']}"
        attrs = (f'data-kind="{html.escape(kind)}" data-name="{html.escape(target["name"] or "")}"'
                 f' data-indices="{",".join(str(i) for i in target["indices"][:256])}"')
        parts.append(f'<span class="vd-evidence-target" {attrs}>{_LENS} '
                     f'{html.escape(label)}</span>')
    return (f'<div class="vd-evidence" style="color:{SOFT};margin-left:1.2em;font-size:12px">'
            + " ".join(parts) + series + thumbs + "</div>")
