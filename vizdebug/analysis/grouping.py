"""One cause, one finding: the findings that follow from another one are grouped under it.

A collapsed representation makes every class overlap every other; a NaN loss stops the
curve falling; a dead layer passes no gradient back. Each consequence is true, and each
buries the one finding that explains it. :func:`group_findings` names, on each consequence,
the finding that explains it (``Finding.cause``, its key) and why (``Finding.because``),
from the known cause -> consequence pairs of :data:`EXPLAINS`. The consequences keep their
severity and stay in the list (``.codes`` lists them); views fold them under their cause
and summaries count causes only (:func:`vizdebug.findings.fold`).

A cause speaks at ``warning`` or above: an ``info`` finding says something is fine (a
GradScaler skipping its overflowed steps) and explains nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..findings import Finding
from ..records import ACTIVATION_FIELDS, TrainingRecords

__all__ = ["EXPLAINS", "Explains", "Layers", "group_findings"]


@dataclass(frozen=True)
class Layers:
    """The watched modules, in the order a batch reaches them, and which of them are
    activations (what ``dead-units`` judges): what "downstream" and "most layers" mean."""

    order: tuple[str, ...] = ()
    activations: tuple[str, ...] = ()

    @classmethod
    def from_records(cls, rec: TrainingRecords, activation_classes: Collection[str]) -> Layers:
        """The modules of ``rec`` in their first sampled call order (registration order
        where a module was not called), and those whose class is an activation."""
        paths = list(rec.module_paths)
        if rec.activations.shape[0] and rec.activations.shape[1] == len(paths):
            called = rec.activations[0, :, ACTIVATION_FIELDS.index("order")]
            paths = [paths[i] for i in np.argsort(np.where(np.isfinite(called), called, np.inf),
                                                  kind="stable")]
        acts = tuple(p for p, c in zip(rec.module_paths, rec.module_classes)
                     if c in activation_classes)
        return cls(tuple(paths), acts)

    def position(self, path: str | None) -> int | None:
        """Where the module ``path`` (or the module of a parameter path) comes."""
        while path:
            if path in self.order:
                return self.order.index(path)
            path = path.rpartition(".")[0]
        return None


Holds = Callable[[Finding, Finding, Sequence[Finding], Layers], bool]


@dataclass(frozen=True)
class Explains:
    """``cause`` explains ``consequence`` (codes) for ``reason``, where ``holds(cause,
    consequence, findings, layers)``."""

    cause: str
    consequence: str
    reason: str
    holds: Holds


def _always(cause: Finding, consequence: Finding, found: Sequence[Finding], layers: Layers) -> bool:
    return True


def _step(f: Finding) -> int | None:
    """The step a finding dates from: its first bad step, a peak, or the step seen."""
    for key in ("first_step", "peak_step", "step"):
        value = f.evidence.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return None


def _ordered(cause: Finding, consequence: Finding) -> tuple[int, int] | None:
    """The steps the two date from, when both do."""
    first, then = _step(cause), _step(consequence)
    return None if first is None or then is None else (first, then)


def _from_the_nan_on(cause: Finding, consequence: Finding, found: Sequence[Finding],
                     layers: Layers) -> bool:
    """The consequence dates from the cause's first non-finite value or later, or is read
    from the very series that went non-finite."""
    steps = _ordered(cause, consequence)
    if steps is not None:
        return steps[1] >= steps[0]
    return consequence.where is not None and consequence.where == cause.where


def _after(cause: Finding, consequence: Finding, found: Sequence[Finding],
           layers: Layers) -> bool:
    """The consequence dates from strictly after the cause."""
    steps = _ordered(cause, consequence)
    return steps is not None and steps[1] > steps[0]


def _not_after(cause: Finding, consequence: Finding, found: Sequence[Finding],
               layers: Layers) -> bool:
    """The cause dates from the consequence's step or before (the one step that both
    saw: a loss read from a non-finite output)."""
    steps = _ordered(cause, consequence)
    return steps is not None and steps[0] <= steps[1]


def _first_layer_dominates(cause: Finding, consequence: Finding, found: Sequence[Finding],
                           layers: Layers) -> bool:
    """The exploding-gradient finding is the first layer's gradient dominating the last's,
    at the layer the unnormalised inputs reach."""
    ratio = consequence.evidence.get("ratio")
    if not isinstance(ratio, (int, float)) or not ratio > 1:
        return False
    first = layers.position(cause.where)
    return first is None or first == layers.position(consequence.where)


def _most_layers_dead(found: Sequence[Finding], layers: Layers) -> set[str]:
    """The dead activation layers, when they are more than half of them (else none)."""
    dead = {f.where for f in found if f.code == "dead-units" and f.severity != "info"}
    dead &= set(layers.activations)
    return dead if 2 * len(dead) > len(layers.activations) else set()


def _deepest_dead_downstream(cause: Finding, consequence: Finding, found: Sequence[Finding],
                             layers: Layers) -> bool:
    """Most activation layers are dead, and ``cause`` is the dead layer nearest the loss
    among those downstream of the consequence's parameter (any, for a finding about the
    whole model: all-zero gradients, a flat loss)."""
    dead = _most_layers_dead(found, layers)
    whole = consequence.where is None or consequence.code == "underfitting"  # a loss name
    at = -1 if whole else layers.position(consequence.where)
    if not dead or at is None:
        return False
    downstream = [(p, w) for w in dead if (p := layers.position(w)) is not None and p > at]
    return bool(downstream) and max(downstream)[1] == cause.where


_COLLAPSED = ("a collapsed representation no longer depends on the input, so each point's "
              "nearest neighbours are arbitrary: the classes they mix and the labels they "
              "vote for follow from the collapse, not from the data")
_NAN = "the first non-finite value came before: what follows it is "
_BLOCKED = ("a unit that outputs 0 for every sample passes no gradient back: dead layers at "
            "most activations starve every layer before them")
_OVERFLOW = ("the gradients grew before the values overflowed: the NaN/inf is where the "
             "explosion ended")
_BAD_INPUT = "the inputs hold NaN/inf: every value computed from them does too"

#: The known cause -> consequence pairs, first match wins (so a consequence has one cause).
EXPLAINS: tuple[Explains, ...] = (
    Explains("representation-collapse", "class-overlap", _COLLAPSED, _always),
    Explains("representation-collapse", "label-noise-suspects", _COLLAPSED, _always),
    Explains("input-nonfinite", "nonfinite-activation", _BAD_INPUT, _always),
    Explains("input-nonfinite", "nonfinite-loss", _BAD_INPUT, _always),
    Explains("loss-output-mismatch", "underfitting",
             "a loss computed on outputs it does not expect (probabilities for logits, a "
             "wrong target form) gives gradients that cannot fit the task", _always),
    Explains("input-not-normalized", "exploding-gradients",
             "the first layer's weight gradients scale with its inputs: inputs far off unit "
             "scale make them dominate", _first_layer_dominates),
    Explains("dead-units", "vanishing-gradients", _BLOCKED, _deepest_dead_downstream),
    Explains("dead-units", "zero-gradients", _BLOCKED, _deepest_dead_downstream),
    Explains("dead-units", "underfitting",
             "a network whose activations are mostly dead outputs (nearly) a constant, so "
             "its loss cannot fall", _deepest_dead_downstream),
    Explains("exploding-gradients", "nonfinite-loss", _OVERFLOW, _after),
    Explains("exploding-gradients", "nonfinite-activation", _OVERFLOW, _after),
    Explains("exploding-gradients", "unstable-loss",
             "updates from exploding gradients throw the weights around, so the loss spikes",
             _always),
    Explains("nonfinite-activation", "nonfinite-loss",
             "the loss is computed from the non-finite output", _not_after),
    Explains("nonfinite-loss", "nonfinite-activation",
             _NAN + "NaN weights, whose outputs are NaN too", _after),
    Explains("nonfinite-loss", "exploding-gradients",
             _NAN + "its gradients, which are NaN/inf too", _from_the_nan_on),
    Explains("nonfinite-activation", "exploding-gradients",
             _NAN + "its gradients, which are NaN/inf too", _from_the_nan_on),
    Explains("nonfinite-loss", "underfitting",
             _NAN + "a curve that stopped falling (NaN weights do not learn)", _from_the_nan_on),
    Explains("nonfinite-loss", "unstable-loss",
             _NAN + "a curve that breaks where it overflowed", _from_the_nan_on),
)


def group_findings(findings: Iterable[Finding], layers: Layers | None = None,
                   explains: Sequence[Explains] = EXPLAINS) -> list[Finding]:
    """``findings`` with each consequence naming the finding that explains it.

    Pure: the findings are not changed, the explained ones are copies with ``cause`` (the
    explaining finding's :attr:`~vizdebug.findings.Finding.key`) and ``because`` set. A
    finding that already names a cause keeps it; a finding explains nothing below
    ``warning``. ``layers`` (the model's, for a training diagnosis) says what "downstream"
    means; without it, the rules that need it do not apply.

    Examples
    --------
    >>> from vizdebug.findings import Findings
    >>> found = [Finding("class-overlap", "warning", "0 and 1 overlap", where="0 / 1"),
    ...          Finding("representation-collapse", "warning", "one vector")]
    >>> grouped = Findings(group_findings(found))
    >>> [f.cause for f in grouped], [f.code for f in grouped.causes]
    (['representation-collapse', None], ['representation-collapse'])
    """
    found = list(findings)
    layers = layers or Layers()
    return [_explained(f, found, layers, explains) for f in found]


def _explained(f: Finding, found: list[Finding], layers: Layers,
               explains: Sequence[Explains]) -> Finding:
    if f.cause is not None:
        return f
    for rule in explains:
        if rule.consequence != f.code:
            continue
        for cause in found:
            if (cause.code == rule.cause and cause is not f and cause.severity != "info"
                    and rule.holds(cause, f, found, layers)):
                return dataclasses.replace(f, cause=cause.key, because=rule.reason)
    return f
