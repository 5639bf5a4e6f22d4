"""Diagnosis of a training run from collected records: pure numpy, no hooks, no widgets.

:class:`TrainingRecords` is the one narrow interface between collectors (or a stored run)
and the rules: scalars by name, sampled per-layer activation and gradient statistics,
anomaly events and loader timing. :func:`diagnose` applies every rule and returns
:class:`~vizdebug.findings.Findings`. Thresholds are module constants; each one says
where it comes from (an anchor, or the calibration runs in ``tests/test_training_rules.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...findings import Finding, Findings, evidence_series
from ...findings import fmt_number as _f
from ...records import ACTIVATION_FIELDS, GRAD_FIELDS, TrainingRecords
from ..grouping import Layers, group_findings
from .axes import rule_axis_order
from .compiled import rule_compiled
from .curves import (
    loss_instability,
    rule_input_bound,
    rule_lr_collapse,
    rule_overfitting,
    rule_underfitting,
    rule_unstable,
)
from .events import rule_events
from .inputs import rule_input_scale, rule_rows_standardised
from .metrics import rule_accuracy_against_loss
from .params import absent_grads, rule_parameters_not_updated, rule_zero_gradients
from .profile import profile_of
from .protocol import (
    rule_batchnorm_small_batch,
    rule_discriminator_wins,
    rule_frozen_batchnorm_training,
    rule_gan_range,
)

ACTIVATION_CLASSES = frozenset({
    "ReLU", "ReLU6", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Softplus", "Hardswish",
    "Threshold", "PReLU", "RReLU",
})

# dead-units: DeepDiagnosis/AUTOTRAINER flag a layer at >= 70% dead (output exactly 0 over
# the whole batch) in most of the recent samples. Clean digits CNNs stayed under 10%, but
# working networks ported from public programs showed 52-62%, so half was too strict.
DEAD_SHARE = 0.7
# exploding: AUTOTRAINER uses a loss >= 1e5; we also flag a total gradient norm that grew
# 100x above its early median (clean runs grew < 10x).
EXPLODE_LOSS = 1e5
EXPLODE_GROWTH = 100.0
EARLY_SAMPLES = 3  # samples, at least, that the early level is the median of
EXPLODE_RATIO = 70.0  # AUTOTRAINER: first/last layer gradient-norm ratio > 70
# vanishing: AUTOTRAINER's first/last gradient-norm ratio < 1e-3 (on per-element norms).
VANISH_RATIO = 1e-3
# A training loss that fell to this share of its start has learned the task: small early
# gradients there are a converged model's, not a blocked one's (a solved task at loss
# 0.003 was accused).
SOLVED_SHARE = 0.02


__all__ = [
    "ACTIVATION_FIELDS", "GRAD_FIELDS", "RULES", "TrainingRecords", "diagnose",
    "loss_instability", "rule_overfitting", "rule_underfitting",
]


# -- anomalies --------------------------------------------------------------------------
def rule_nonfinite_loss(rec: TrainingRecords) -> list[Finding]:
    """Any ``*loss*`` metric that went NaN or infinite."""
    out = []
    for name, (steps, values) in rec.scalars.items():
        bad = ~np.isfinite(values)
        if "loss" not in name or not bad.any():
            continue
        first = int(steps[np.argmax(bad)])
        before = values[: int(np.argmax(bad))]
        last_good = before[np.isfinite(before)]
        trend = f"; last finite value {_f(last_good[-1])}" if last_good.size else ""
        out.append(Finding(
            "nonfinite-loss", "error",
            f"{name} was NaN/inf at {int(bad.sum())} of {values.size} logged steps, "
            f"first at step {first}{trend}",
            where=name, evidence={"first_step": first, "count": int(bad.sum())},
            hint="Usually a learning rate too high (the loss grows, then overflows), log(0) "
                 "or a division by zero in the loss, or NaN in the inputs. Lower the learning "
                 "rate, clip gradients (torch.nn.utils.clip_grad_norm_), use "
                 "CrossEntropyLoss/log_softmax rather than log(softmax(x)).",
        ))
    return out


# -- gradients --------------------------------------------------------------------------
def _total_grad_norm(rec: TrainingRecords) -> np.ndarray:
    # a parameter without a gradient on a step is absent, not non-finite
    g = np.where(absent_grads(rec), 0.0, rec.grad("grad_norm"))
    with np.errstate(all="ignore"):
        return np.sqrt(np.nansum(g**2, axis=1)) + np.where(np.isfinite(g).all(axis=1), 0, np.nan)


def rule_exploding(rec: TrainingRecords) -> list[Finding]:
    """A loss that blew up, gradient norms that grew far above their early level, or
    gradients much larger at the input than at the output (AUTOTRAINER)."""
    hint = ("Lower the learning rate, clip gradients (clip_grad_norm_), check the init "
            "(a too-large std) and that inputs are normalised.")
    found = _exploding_from_loss(rec, hint)
    if found or rec.grads.shape[0] == 0:
        return found
    total = _total_grad_norm(rec)
    if not np.isfinite(total).all():
        return _nonfinite_gradients(rec, total, hint)
    found = _grown(rec, total, hint)
    if found:
        return found
    ratio = _first_last_ratio(rec)
    if ratio is not None and ratio[0] > EXPLODE_RATIO:
        return [Finding("exploding-gradients", "warning",
                        f"gradients at the first layer {ratio[1]!r} are {_f(ratio[0])}x those "
                        f"at the last layer {ratio[2]!r} (per element)",
                        where=ratio[1], evidence={"ratio": ratio[0], "series": ratio[3]},
                        hint=hint)]
    return []


def _grown(rec: TrainingRecords, total: np.ndarray, hint: str) -> list[Finding]:
    """A total gradient norm that rose, after the early samples, to ``EXPLODE_GROWTH``
    times their median and above everything they held: growth is a rise, not a first
    sample's peak that training brings down (a converging run's norm often starts at its
    highest and falls a thousandfold). The early level is the median of at least
    ``EARLY_SAMPLES`` samples: one first step's norm (a triplet loss whose margins all
    hold at init: 0.006, then 0.4-1.7 as it trains) is not a level."""
    early = max(EARLY_SAMPLES, total.size // 4)
    level = np.median(total[:early])
    later = total[early:]
    if later.size == 0 or not level > 0 or later.max() <= total[:early].max():
        return []
    growth = later.max() / level
    if growth < EXPLODE_GROWTH:
        return []
    peak = int(rec.grad_steps[early + int(np.argmax(later))])
    return [Finding("exploding-gradients", "warning",
                    f"total gradient norm reached {_f(later.max())} at step {peak}, "
                    f"{_f(growth)}x its early median {_f(level)}",
                    evidence={"growth": float(growth), "peak_step": peak,
                              "series": evidence_series("total gradient norm",
                                                        rec.grad_steps, total)},
                    hint=hint)]


def _nonfinite_gradients(rec: TrainingRecords, total: np.ndarray, hint: str) -> list[Finding]:
    """Non-finite gradients: an error, unless they follow a NaN already reported, or the
    steps that had them changed no weight and training went on finite: a ``GradScaler``
    skipping the steps its loss scale overflowed (as designed; its norms are scaled by a
    loss scale that changes, so their growth says nothing either)."""
    if _nonfinite_seen(rec):  # a consequence of the NaN already reported, not a cause
        return []
    bad = ~np.isfinite(total)
    first = int(rec.grad_steps[np.argmax(bad)])
    if _skipped_updates(rec, bad):
        return [Finding("exploding-gradients", "info",
                        f"gradients were NaN/inf at {int(bad.sum())} sampled steps (first "
                        f"{first}) that changed no weight, and finite after: a GradScaler's "
                        "loss scale overflowing, its optimizer step skipped as designed",
                        evidence={"first_step": first, "count": int(bad.sum())})]
    return [Finding("exploding-gradients", "error",
                    f"gradient norm became NaN/inf at sampled step {first}",
                    evidence={"first_step": first}, hint=hint)]


def _skipped_updates(rec: TrainingRecords, bad: np.ndarray) -> bool:
    """Every sampled step with non-finite gradients left the weights as they were (an
    update ratio of 0, or none), and the samples after the last of them are finite."""
    moved = rec.grad("update_ratio")[bad]
    unchanged = bool(np.all((moved == 0) | absent_grads(rec)[bad]))  # (NaN weights moved)
    after = bad[int(np.flatnonzero(bad)[-1]) + 1:]
    return unchanged and after.size >= 2 and not after.any()


def _nonfinite_seen(rec: TrainingRecords) -> bool:
    if any(ev.kind == "nonfinite-activation" for ev in rec.events):
        return True
    return any("loss" in n and not np.isfinite(v).all() for n, (_, v) in rec.scalars.items())


def _exploding_from_loss(rec: TrainingRecords, hint: str) -> list[Finding]:
    loss = rec.train_loss()
    if loss is None:
        return []
    name, steps, values = loss
    huge = np.isfinite(values) & (np.abs(values) >= EXPLODE_LOSS)
    if not huge.any():
        return []
    # a loss this large from its first steps is its scale, not a blow-up (a summed
    # reduction over 2000 points, prices in dollars: the tutorials' own losses start at
    # 1e6-1e10 and fall): from such a start it must grow EXPLODE_GROWTH times to count
    start = float(np.median(np.abs(values[np.isfinite(values)][:EARLY_SAMPLES])))
    if start >= EXPLODE_LOSS:
        huge &= np.abs(values) >= EXPLODE_GROWTH * start
        if not huge.any():
            return []
    first = int(steps[np.argmax(huge)])
    return [Finding("exploding-gradients", "error",
                    f"{name} reached {_f(np.max(np.abs(values[huge])))} (>= {EXPLODE_LOSS:g}), "
                    f"first at step {first}",
                    where=name, evidence={"first_step": first}, hint=hint)]


def _first_last_ratio(rec: TrainingRecords) -> tuple[float, str, str, dict] | None:
    """Median per-element gradient norm of the first weight over the last weight's, and
    the first weight's gradient norm at every sampled step (for the finding's sparkline)."""
    if rec.grads.shape[0] < 3:
        return None
    numel = np.asarray(rec.param_numel, dtype=float)
    weights = [i for i, n in enumerate(numel)
               if n > 1 and not rec.param_paths[i].endswith("bias")]
    weights = _one_network(rec, weights)
    if len(weights) < 2:
        return None
    first, last = weights[0], weights[-1]
    recent = rec.grad("grad_norm")[rec.grads.shape[0] // 2:]
    rms_first = recent[:, first] / np.sqrt(numel[first])
    rms_last = recent[:, last] / np.sqrt(numel[last])
    with np.errstate(all="ignore"):
        ratios = rms_first / rms_last
    ok = np.isfinite(ratios)
    if not ok.any():
        return None
    ratio = float(np.median(ratios[ok]))
    if not np.median(rms_first[ok]) > 0:
        # exactly zero gradients mean blocked (dead units, detached graph), not vanishing
        return None
    series = evidence_series("gradient norm", rec.grad_steps, rec.grad("grad_norm")[:, first])
    return ratio, rec.param_paths[first], rec.param_paths[last], series


def _one_network(rec: TrainingRecords, weights: list[int]) -> list[int]:
    """The weights trained by the optimizer that trains the first one, where several
    optimizers train parts of the watched model (a generator and its discriminator in one
    ModuleDict): the first layer of one network is not compared with another's last."""
    facts = rec.program
    held = [set(o.held) for o in (facts.optimizers if facts is not None else []) if o.held]
    if len(held) < 2:
        return weights
    own = next((h for h in held if weights[0] in h), None)
    return weights if own is None else [i for i in weights if i in own]


def _solved(rec: TrainingRecords) -> bool:
    """The training loss ended at or below ``SOLVED_SHARE`` of where it started."""
    loss = rec.train_loss()
    if loss is None:
        return False
    y = loss[2][np.isfinite(loss[2])]
    if y.size < 10:
        return False
    start = float(np.median(y[: max(3, y.size // 20)]))
    end = float(np.median(y[-max(3, y.size // 10):]))
    return start > 0 and end <= SOLVED_SHARE * start


def rule_vanishing(rec: TrainingRecords) -> list[Finding]:
    """The first layer's gradient a thousand times smaller (per element) than the last's."""
    found = _first_last_ratio(rec)
    if found is None or found[0] >= VANISH_RATIO or _solved(rec):
        return []
    ratio, first, last, series = found
    return [Finding(
        "vanishing-gradients", "warning",
        f"gradients at the first layer {first!r} are {_f(ratio)} times those at the last "
        f"layer {last!r} (per element, median over the recent samples)",
        where=first, evidence={"ratio": ratio, "series": series},
        hint="Saturating activations (sigmoid/tanh) in a deep stack or a too-small init: use "
             "ReLU-family activations, He/Xavier init, normalisation layers or residual "
             "connections.",
    )]


# -- activations ------------------------------------------------------------------------
def rule_dead_units(rec: TrainingRecords) -> list[Finding]:
    """Activation layers where most units output exactly zero for the whole batch."""
    if rec.activations.shape[0] < 3:
        return []
    every = rec.act("dead")
    dead = every[rec.activations.shape[0] // 2:]
    out = []
    # (names beyond the sampled columns, as a damaged or crafted run file may hold, have
    # no statistics to speak of)
    for m, cls in enumerate(rec.module_classes[:dead.shape[1]]):
        col = dead[:, m][np.isfinite(dead[:, m])]
        if cls not in ACTIVATION_CLASSES or col.size < 2:
            continue
        share = float(np.median(col))
        if share >= DEAD_SHARE:
            out.append(Finding(
                "dead-units", "warning",
                f"{share:.0%} of the units of {rec.module_paths[m]!r} ({cls}) output 0 for "
                f"every sample of the batch (median of the last {col.size} samples)",
                where=rec.module_paths[m],
                evidence={"dead_share": share,
                          "series": evidence_series("dead share", rec.act_steps, every[:, m])},
                hint="Dying ReLUs: a learning rate too high or a large negative bias pushed "
                     "units below zero for good. Lower the learning rate, check the init, "
                     "or use LeakyReLU/GELU.",
            ))
    return out


def rule_input_nonfinite(rec: TrainingRecords) -> list[Finding]:
    """Sampled input batches that hold NaN/inf."""
    bad = rec.loader.nonfinite_batches
    if not bad:
        return []
    return [Finding(
        "input-nonfinite", "error",
        f"{len(bad)} sampled input batches hold NaN/inf values, first batch {bad[0]}",
        where=f"batch {bad[0]}", evidence={"batches": bad[:20]},
        hint="Check the dataset and transforms (a division by a zero std, a corrupt "
             "sample); vd.check_dataset(dataset) names the samples.",
    )]


STORE_DROPPED = "StoreDropped: "  # how the run store reports points it dropped


def store_dropped(message: str) -> Finding:
    """``store-dropped``: logged points the run file does not hold (``message`` says how
    many and why); a live session's own curves still hold them."""
    return Finding(
        "store-dropped", "warning", f"the run file does not hold every logged point: {message}",
        where="the run store",
        hint="Logging outpaced the file's writer: log fewer points (every n-th step, fewer "
             "metrics per call). Or the file could not be written: free disk space, or end "
             "the process that holds it locked. The live session's curves are complete.")


def rule_collector_errors(rec: TrainingRecords) -> list[Finding]:
    """Exceptions inside collectors, reported instead of reaching the training loop (the
    run store's report of dropped points is its own finding)."""
    return [store_dropped(f"{message[len(STORE_DROPPED):]} ({count}x)")
            if message.startswith(STORE_DROPPED) else
            Finding("collector-error", "warning",
                    f"{where} raised {message} ({count}x); vizdebug skipped it, training was "
                    "not affected", where=where,
                    hint="A vizdebug bug or an unusual module output; please report it.")
            for where, message, count in rec.errors]


# Causes before consequences: bad data, then the first NaN, then the curves.
RULES: tuple[Callable[[TrainingRecords], list[Finding]], ...] = (
    rule_axis_order,  # a cause: a module reads its input's axes in the wrong order
    rule_input_scale,  # a cause: off-scale inputs that nothing normalises
    rule_rows_standardised,  # a cause: a z-score along the features erased them
    rule_input_nonfinite, rule_events, rule_nonfinite_loss, rule_exploding, rule_zero_gradients,
    rule_batchnorm_small_batch, rule_gan_range, rule_discriminator_wins,
    rule_frozen_batchnorm_training,
    rule_vanishing, rule_dead_units, rule_parameters_not_updated, rule_underfitting,
    rule_overfitting, rule_unstable, rule_lr_collapse, rule_input_bound, rule_collector_errors,
    rule_accuracy_against_loss,  # an accuracy its own loss rules out
    rule_compiled,  # info: what a compiled model's run does not hold
)


def diagnose(rec: TrainingRecords) -> Findings:
    """Apply every rule to ``rec``.

    Examples
    --------
    >>> diagnose(TrainingRecords()).codes
    []
    """
    profile = profile_of(rec)  # what the program is, before any rule speaks
    found: list[Finding] = []
    for rule in RULES:
        found.extend(rule(rec))
    found = group_findings(found, Layers.from_records(rec, ACTIVATION_CLASSES))  # one cause
    return Findings(found, profile=profile.lines())
