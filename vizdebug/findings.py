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
    "dataset-error": "inputs",
    # splits
    "split-duplicates": "splits",
    "split-preprocessing-leak": "splits",
    "split-target-leak": "splits",
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

    def __init__(self, items: Iterable[Finding] = ()) -> None:
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
        return Findings([*self, *other])

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


def findings_html(findings: Iterable[Finding], empty: str = "No findings: nothing looks wrong.") -> str:
    """Findings as an HTML list; every user-derived string is escaped."""
    findings = list(findings)
    if not findings:
        return f'<div class="vd-findings vd-empty" style="color:#2e7d32">&#10003; {html.escape(empty)}</div>'
    rows = []
    for f in findings:
        colour = _COLOURS[f.severity]
        where = f' <span style="color:#555">at {html.escape(f.where)}</span>' if f.where else ""
        hint = (
            f'<div style="color:#444;margin-left:1.2em">&#8594; {html.escape(f.hint)}</div>'
            if f.hint else ""
        )
        rows.append(
            f'<li class="vd-finding vd-{f.severity}" data-code="{html.escape(f.code)}" '
            f'style="margin:0.25em 0;list-style:none">'
            f'<span style="background:{colour};color:#fff;border-radius:3px;padding:0 0.4em;'
            f'font-size:0.85em">{f.severity}</span> '
            f'<code>{html.escape(f.code)}</code>{where}: {html.escape(f.message)}{hint}</li>'
        )
    return f'<ul class="vd-findings" style="padding-left:0;font-family:sans-serif;font-size:13px">{"".join(rows)}</ul>'
