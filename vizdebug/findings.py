"""The Finding type and the vocabulary of finding codes, shared by every layer.

A finding says what was seen (``message``, with numbers), where (``where``: a module
path, a feature name, sample indices), and what to do about it (``hint``).
Codes are stable strings: new ones may be added, none is ever renamed.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["info", "warning", "error"]
SEVERITIES: tuple[str, ...] = ("info", "warning", "error")

CODES: dict[str, str] = {
    # inputs
    "layout-channels-last": "inputs",
    "input-not-normalized": "inputs",
    "input-nonfinite": "inputs",
    "input-none": "inputs",
    "blank-images": "inputs",
    "saturated-images": "inputs",
    "shape-inconsistent": "inputs",
    "label-imbalance": "inputs",
    "pairs-misaligned": "inputs",  # an image and its mask/target image are not one pair
    "labels-shuffled": "inputs",  # class labels carry no information about their inputs
    "dataset-error": "inputs",
    # splits
    "split-duplicates": "splits",
    "split-preprocessing-leak": "splits",
    "split-target-leak": "splits",
    "split-near-duplicates": "splits",  # test rows interpolated from / copied near train rows
    "split-overlap": "splits",  # overlapping windows of one series in both splits
    "split-time-leak": "splits",  # test times inside the training period
    "split-group-leak": "splits",  # the same patient / user / session in both splits
    # training
    "nonfinite-activation": "training",
    "nonfinite-loss": "training",
    "exploding-gradients": "training",
    "vanishing-gradients": "training",
    "dead-units": "training",
    "overfitting": "training",
    "underfitting": "training",
    "unstable-loss": "training",
    "input-bound": "training",
    "zero-gradients": "training",
    "parameters-not-updated": "training",
    "missing-zero-grad": "training",
    "train-eval-mode": "training",
    "lr-schedule-collapse": "training",
    "collector-error": "training",
    "run-interrupted": "training",
    "axis-order": "training",  # a module reads the batch (or another axis) on the wrong axis
    # loss
    "loss-output-mismatch": "loss",
    "labels-out-of-range": "loss",
    "target-shape-broadcast": "loss",
    # embeddings
    "label-noise-suspects": "embeddings",
    "class-overlap": "embeddings",
    "representation-collapse": "embeddings",
    # metrics
    "misleading-accuracy": "metrics",
    # drift
    "feature-drift": "drift",
}

_COLOURS = {"error": "#c62828", "warning": "#b26a00", "info": "#1565c0"}

TargetKind = Literal["layer", "metric", "feature", "samples"]
# What each code points at when its evidence does not say (``evidence["target"]``) and it
# lists no sample indices. Codes absent here (a channels-last layout, a collector error, a
# loss call) point at nothing that a view could open.
_TARGET_KIND: dict[str, str] = {
    **dict.fromkeys(("input-none", "input-nonfinite", "blank-images", "saturated-images",
                     "dataset-error", "shape-inconsistent", "label-noise-suspects",
                     "split-duplicates"), "samples"),
    **dict.fromkeys(("nonfinite-activation", "exploding-gradients", "vanishing-gradients",
                     "dead-units", "zero-gradients", "parameters-not-updated",
                     "missing-zero-grad", "train-eval-mode"), "layer"),
    **dict.fromkeys(("nonfinite-loss", "overfitting", "underfitting", "unstable-loss",
                     "lr-schedule-collapse", "misleading-accuracy"), "metric"),
    **dict.fromkeys(("feature-drift", "split-preprocessing-leak", "split-target-leak",
                     "input-not-normalized"), "feature"),
}
# evidence keys that list positions of samples (rows of a table, items of a batch or
# dataset, test items of a split), and ``batches``: numbers of the loader's batches
_SAMPLE_KEYS = ("indices", "test_indices", "rows", "batches")
# evidence keys that list feature (column) names, the first of which names the target
_FEATURE_KEYS = ("features", "drifted", "columns")
SERIES_POINTS = 64  # a sparkline's points at most (evidence stays small in stored runs)
THUMBNAILS = 8  # flagged images a finding carries as thumbnails at most


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what was seen, where, and the likely cause and fix.

    Examples
    --------
    >>> f = Finding("blank-images", "warning", "2 of 64 images are blank", where="3, 17")
    >>> f.code
    'blank-images'
    """

    code: str
    severity: Severity
    message: str
    where: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    hint: str = ""

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(
                f"unknown finding code {self.code!r}; known codes: {', '.join(sorted(CODES))}"
            )
        if self.severity not in SEVERITIES:
            raise ValueError(
                f"severity must be one of {SEVERITIES}, got {self.severity!r}"
            )

    def __str__(self) -> str:
        where = f" [{self.where}]" if self.where else ""
        hint = f"\n    hint: {self.hint}" if self.hint else ""
        return f"{self.severity.upper()} {self.code}{where}: {self.message}{hint}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (evidence values must already be JSON-friendly)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "where": self.where,
            "evidence": dict(self.evidence),
            "hint": self.hint,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            d["code"], d["severity"], d["message"], d.get("where"),
            dict(d.get("evidence") or {}), d.get("hint", ""),
        )


class Findings(list):
    """A list of :class:`Finding` with a readable HTML view.

    Examples
    --------
    >>> fs = Findings([Finding("input-none", "error", "sample 3 is None", where="3")])
    >>> fs.codes
    ['input-none']
    >>> len(fs.errors)
    1
    """

    #: What vizdebug understood about the run, one line per fact (a training diagnosis
    #: sets it; shown under the findings so a user sees why a rule spoke or stayed quiet).
    profile: tuple[str, ...] = ()

    def __init__(self, items: Iterable[Finding] = (), *, profile: Iterable[str] = ()) -> None:
        self.profile = tuple(str(line) for line in profile)
        items = list(items)
        for item in items:
            if not isinstance(item, Finding):
                raise TypeError(f"Findings holds Finding objects, got {type(item).__name__}")
        order = {s: i for i, s in enumerate(reversed(SEVERITIES))}
        super().__init__(sorted(items, key=lambda f: order[f.severity]))

    @property
    def codes(self) -> list[str]:
        """The codes, most severe first, each once."""
        return list(dict.fromkeys(f.code for f in self))

    @property
    def errors(self) -> Findings:
        return Findings(f for f in self if f.severity == "error")

    @property
    def warnings(self) -> Findings:
        return Findings(f for f in self if f.severity == "warning")

    def at_least(self, severity: Severity) -> Findings:
        """The findings at or above ``severity``."""
        rank = SEVERITIES.index(severity)
        return Findings(f for f in self if SEVERITIES.index(f.severity) >= rank)

    def __add__(self, other: Iterable[Finding]) -> Findings:  # type: ignore[override]
        return Findings([*self, *other],
                        profile=self.profile or getattr(other, "profile", ()))

    def __repr__(self) -> str:
        if not self:
            return "Findings: nothing to report"
        return "\n".join(str(f) for f in self)

    def to_html(self) -> str:
        return findings_html(self)

    def _repr_html_(self) -> str:
        return findings_html(self)


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


def evidence_target(finding: Finding) -> dict[str, Any] | None:
    """What a finding points at, for a view to open: ``{'kind', 'name', 'indices'}``.

    ``kind`` is ``'samples'`` (``indices`` are positions in the checked batch, dataset or
    test split; ``name`` is ``'target'`` when the targets are flagged, ``'test'`` for
    items of a split's test side, ``'batches'`` when the indices number the loader's
    batches, else ``None``), ``'layer'`` (``name`` is the
    module path, or for a gradient finding the parameter path, whose module is the part
    before its last dot), ``'metric'`` (a logged series, e.g. ``'val_loss'``) or
    ``'feature'`` (a column). ``None`` when the finding points at nothing a view shows.

    Examples
    --------
    >>> evidence_target(Finding("blank-images", "warning", "m", "3", {"indices": [3]}))
    {'kind': 'samples', 'name': None, 'indices': [3]}
    >>> evidence_target(Finding("dead-units", "warning", "m", where="features.2"))
    {'kind': 'layer', 'name': 'features.2', 'indices': []}
    """
    if not isinstance(finding, Finding):
        from .errors import VizdebugTypeError

        raise VizdebugTypeError(
            f"evidence_target() takes a Finding, got {type(finding).__name__}; pass one "
            "item of a Findings list (e.g. session.findings()[0])")
    ev = finding.evidence or {}
    for key in _SAMPLE_KEYS:
        indices = _int_list(ev.get(key))
        if indices:
            name = {"batches": "batches", "test_indices": "test"}.get(key, ev.get("part"))
            return {"kind": "samples", "name": name if isinstance(name, str) else None,
                    "indices": indices}
    kind = ev.get("target") if ev.get("target") in ("layer", "metric", "feature") else None
    kind = kind or _TARGET_KIND.get(finding.code)
    if kind == "samples":  # a sample-kind code that named a module (a hook saw it)
        kind = "layer" if finding.where else None
    name = finding.where
    if kind == "feature":
        listed = next((ev[k] for k in _FEATURE_KEYS if isinstance(ev.get(k), list) and ev[k]),
                      None)
        name = str(listed[0]) if listed else name
    if kind is None or not name:
        return None
    return {"kind": kind, "name": name, "indices": []}


def _int_list(value: Any) -> list[int]:
    if not isinstance(value, (list, tuple)):
        return []
    try:
        return [int(v) for v in value]
    except (TypeError, ValueError):
        return []


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


def findings_html(findings: Iterable[Finding], empty: str = "No findings: nothing looks wrong.") -> str:
    """Findings as an HTML list, each with what it points at (the flagged samples and their
    thumbnails, the layer and its recorded statistic, the feature, the metric); every
    user-derived string is escaped."""
    profile = _profile_html(getattr(findings, "profile", ()))
    findings = list(findings)
    if not findings:
        return (f'<div class="vd-findings vd-empty" style="color:#2e7d32">&#10003; '
                f'{html.escape(empty)}</div>{profile}')
    rows = []
    said: dict[str, str] = {}  # a hint already shown -> whose it was (said once, not per row)
    for f in findings:
        colour = _COLOURS[f.severity]
        where = f' <span style="color:#555">at {html.escape(f.where)}</span>' if f.where else ""
        hint = html.escape(f.hint) if f.hint else ""
        if f.hint in said:
            hint = f"the same as for {html.escape(said[f.hint])} above"
        elif f.hint:
            said[f.hint] = f.where or f.code
        hint = f'<div style="color:#444;margin-left:1.2em">&#8594; {hint}</div>' if hint else ""
        rows.append(
            f'<li class="vd-finding vd-{f.severity}" data-code="{html.escape(f.code)}" '
            f'style="margin:0.25em 0;list-style:none">'
            f'<span style="background:{colour};color:#fff;border-radius:3px;padding:0 0.4em;'
            f'font-size:0.85em">{f.severity}</span> '
            f'<code>{html.escape(f.code)}</code>{where}: {html.escape(f.message)}{hint}'
            f'{_evidence_html(f)}</li>'
        )
    return (f'<ul class="vd-findings" style="padding-left:0;font-family:sans-serif;font-size:13px">'
            f'{"".join(rows)}</ul>{profile}')


def _profile_html(lines: Sequence[str]) -> str:
    """The training profile under the findings: a closed block, one escaped line a fact."""
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in lines)
    return ('<details class="vd-profile" style="font-family:sans-serif;font-size:12px;'
            'color:#444;margin:0.3em 0"><summary>What vizdebug understood about this run'
            f'</summary><ul style="margin:0.2em 0 0 1em;padding:0">{items}</ul></details>')


def _evidence_html(f: Finding) -> str:
    """One line under the finding: what it points at, with a sparkline or thumbnails."""
    target = evidence_target(f)
    series = _sparkline(f.evidence.get("series"))
    thumbs = _thumbnails(f.evidence.get("thumbnails"))
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
        parts.append(f'<span class="vd-evidence-target" {attrs}>&#128269; '
                     f'{html.escape(label)}</span>')
    return ('<div class="vd-evidence" style="color:#555;margin-left:1.2em;font-size:12px">'
            + " ".join(parts) + series + thumbs + "</div>")


def _sparkline(series: Any, width: int = 120, height: int = 22) -> str:
    """An inline SVG line of ``evidence['series']`` (see :func:`evidence_series`)."""
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
            f'<polyline points="{points}" fill="none" stroke="#1565c0" stroke-width="1.3"/>'
            f'</svg> {stat} {fmt_number(ys[0])} &#8594; {fmt_number(ys[-1])}</span>')


def _thumbnails(uris: Any, size: int = 40) -> str:
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
