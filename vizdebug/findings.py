"""The Finding type and the vocabulary of finding codes, shared by every layer.

A finding says what was seen (``message``, with numbers), where (``where``: a module
path, a feature name, sample indices), and what to do about it (``hint``); a finding that
follows from another names it (``cause``, ``because``) and is shown folded under it.
Codes are stable strings: new ones may be added, none is ever renamed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from .findings_format import (
    SERIES_POINTS,
    SEVERITIES,
    THUMBNAILS,
    code_counts,
    evidence_series,
    fmt_indices,
    fmt_number,
    fold,
    list_html,
    severity_counts,
    worst_severity,
)

# the public names (several live in findings_format, the helpers below; import them here)
__all__ = [
    "CODES", "SERIES_POINTS", "SEVERITIES", "THUMBNAILS", "Finding", "Findings", "Severity",
    "evidence_series", "evidence_target", "findings_html", "fmt_indices", "fmt_number",
    "fold", "worst_severity",
]

Severity = Literal["info", "warning", "error"]

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
    "pairs-misaligned": "inputs",  # an image and its mask/target image are not one pair
    "labels-shuffled": "inputs",  # class labels carry no information about their inputs
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
    "lr-too-high": "training",  # the rate trained with is where the LR range test diverged
    "collector-error": "training",
    "compiled-model": "training",  # info: no activation statistics inside compiled code
    "store-dropped": "training",  # logged points the run file does not hold (and why)
    "run-interrupted": "training",
    "rank-straggler": "training",  # one rank of a distributed job holds the others up
    "rank-nonfinite": "training",  # the first NaN/inf of a job, named with its rank
    "replica-drift": "training",  # DDP replicas (parameters, buffers) that differ
    "axis-order": "training",  # a module reads the batch (or another axis) on the wrong axis
    "graph-cut": "training",  # optimised parameters cut off from the loss (.detach, no_grad)
    "batchnorm-small-batch": "training",  # a training batch too small for BatchNorm statistics
    "frozen-batchnorm-training": "training",  # frozen BatchNorm whose running stats move
    "gan-range-mismatch": "training",  # real and generated samples in different ranges
    "discriminator-wins": "training",  # the discriminator's loss ~0 while G's grows
    # loss
    "loss-output-mismatch": "loss",
    "labels-out-of-range": "loss",
    "target-shape-broadcast": "loss",
    "padding-in-loss": "loss",  # a class loss counting targets at the input's padding
    # embeddings
    "label-noise-suspects": "embeddings",
    "class-overlap": "embeddings",
    "representation-collapse": "embeddings",
    # metrics
    "misleading-accuracy": "metrics",
    "predictions-misaligned": "metrics",  # an accuracy its own loss rules out (order mixed up)
    # drift
    "feature-drift": "drift",
}

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
                     "lr-schedule-collapse", "misleading-accuracy", "predictions-misaligned"),
                    "metric"),
    **dict.fromkeys(("feature-drift", "split-preprocessing-leak", "split-target-leak",
                     "input-not-normalized"), "feature"),
}
# evidence keys that list positions of samples (rows of a table, items of a batch or
# dataset, test items of a split), and ``batches``: numbers of the loader's batches
_SAMPLE_KEYS = ("indices", "test_indices", "rows", "batches")
# evidence keys that list feature (column) names, the first of which names the target
_FEATURE_KEYS = ("features", "drifted", "columns")


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what was seen, where, and the likely cause and fix.

    ``cause`` names the finding that explains this one (its :attr:`key`), and
    ``because`` says why: such a consequence keeps its severity and its place in the
    list, but is shown folded under its cause and not counted in summaries (see
    :func:`vizdebug.analysis.grouping.group_findings`, which sets both).

    Examples
    --------
    >>> f = Finding("blank-images", "warning", "2 of 64 images are blank", where="3, 17")
    >>> f.code, f.key
    ('blank-images', 'blank-images@3, 17')
    """

    code: str
    severity: Severity
    message: str
    where: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    hint: str = ""
    cause: str | None = None  # the key of the finding that explains this one
    because: str = ""  # why that finding explains this one

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
        cause = f"\n    follows from {self.cause}: {self.because}" if self.cause else ""
        return f"{self.severity.upper()} {self.code}{where}: {self.message}{hint}{cause}"

    @property
    def key(self) -> str:
        """How another finding names this one as its ``cause``: the code, and
        ``@where`` when it has a place (codes never hold an ``@``)."""
        return f"{self.code}@{self.where}" if self.where else self.code

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (evidence values must already be JSON-friendly)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "where": self.where,
            "evidence": dict(self.evidence),
            "hint": self.hint,
            "cause": self.cause,
            "because": self.because,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            d["code"], d["severity"], d["message"], d.get("where"),
            dict(d.get("evidence") or {}), d.get("hint", ""),
            d.get("cause"), d.get("because", ""),  # absent in dicts written before them
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

    def __call__(self) -> Findings:
        """The findings themselves: ``view.findings()`` works as ``session.findings()``
        does (a view's ``findings`` is an attribute, a session's a method).

        >>> fs = Findings(); fs() is fs
        True
        """
        return self

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

    @property
    def causes(self) -> Findings:
        """The findings no other one in this list explains (a consequence whose cause was
        filtered out is a cause here)."""
        return Findings((cause for cause, _ in fold(self)), profile=self.profile)

    def consequences(self, of: Finding) -> Findings:
        """The findings folded under ``of``: those it explains, directly or through another."""
        return Findings(next((more for cause, more in fold(self) if cause == of), []))

    def counts(self) -> dict[str, int]:
        """Causes by severity, most severe first: a cause counts once, as severe as the
        worst finding it explains (its consequences are not counted)."""
        found = dict.fromkeys(reversed(SEVERITIES), 0)
        for cause, more in fold(self):
            found[worst_severity([cause, *more])] += 1
        return found

    def summary(self) -> str:
        """The counts as a line, with the consequences folded: ``'1 warning (39
        consequences folded under it)'``."""
        return severity_counts(self.counts(), len(self) - len(self.causes))

    def __add__(self, other: Iterable[Finding]) -> Findings:  # type: ignore[override]
        return Findings([*self, *other],
                        profile=self.profile or getattr(other, "profile", ()))

    def __repr__(self) -> str:
        if not self:
            return "Findings: nothing to report"
        lines = []
        for cause, more in fold(self):
            lines.append(str(cause))
            if more:
                lines.append(f"    + {len(more)} consequence{'s' if len(more) != 1 else ''} "
                             f"folded under it: {code_counts([f.code for f in more])}")
        return "\n".join(lines)

    def to_html(self) -> str:
        return findings_html(self)

    def _repr_html_(self) -> str:
        return findings_html(self)


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


def findings_html(findings: Iterable[Finding], empty: str = "No findings: nothing looks wrong.") -> str:
    """Findings as an HTML list, each with what it points at (the flagged samples and their
    thumbnails, the layer and its recorded statistic, the feature, the metric: see
    :func:`evidence_target`), and the consequences of a cause folded under it
    (``+ N consequences``); every user-derived string is escaped."""
    return list_html(findings, empty, evidence_target)
