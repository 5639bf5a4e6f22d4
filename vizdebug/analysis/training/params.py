"""Training rules about parameters: gradients that are exactly zero, parameters that
never change. Pure numpy over :class:`~vizdebug.records.TrainingRecords`.

A parameter that got no gradient on a sampled step (an unused head, a branch taken on
some steps only) is recorded as NaN in both its gradient and its weight norm: that is
"absent", not "non-finite", and these rules (and the exploding-gradient rule) read it so.
"""

from __future__ import annotations

import numpy as np

from ...findings import Finding
from ...records import TrainingRecords
from .profile import TrainingProfile, profile_of

MIN_SAMPLES = 3  # sampled steps before a parameter is judged


def absent_grads(rec: TrainingRecords) -> np.ndarray:
    """``(samples, params)``: True where a parameter had no gradient on that step."""
    return np.isnan(rec.grad("grad_norm")) & np.isnan(rec.grad("weight_norm"))


def _recent(rec: TrainingRecords) -> slice:
    return slice(rec.grads.shape[0] // 2, None)


def rule_zero_gradients(rec: TrainingRecords) -> list[Finding]:
    """Every gradient of the recent samples exactly zero: the loss does not depend on the
    parameters (a constant output, a softmax over one unit, a cut graph)."""
    if rec.grads.shape[0] < MIN_SAMPLES:
        return []
    g = rec.grad("grad_norm")[_recent(rec)]
    present = ~absent_grads(rec)[_recent(rec)]
    if not present.any() or np.any(g[present] != 0):
        return []
    return [Finding(
        "zero-gradients", "error",
        f"every gradient is exactly 0 in the last {g.shape[0]} sampled steps "
        f"({int(present.sum())} parameter readings)",
        evidence={"samples": int(g.shape[0])},
        hint="the loss does not depend on the weights: a constant output (softmax over one "
             "unit, a saturated sigmoid), a graph cut by .detach()/.item()/.numpy() or "
             "torch.no_grad(), or a non-differentiable step (argmax, round, comparisons) "
             "before the loss")]


def rule_parameters_not_updated(rec: TrainingRecords) -> list[Finding]:
    """Parameters that receive non-zero gradients but never change: the optimizer does
    not hold them (built before the module was added, a plain list instead of
    ``nn.ModuleList``), or ``optimizer.step()`` is never called.

    The update of a sampled step is measured from the step's last backward pass to its
    end. With two optimizers over one model (a GAN wrapper holding G and D) a network
    whose optimizer stepped before that pass reads 0 although it trains: so when the
    program's facts are known, only the parameters no optimizer holds are named. The
    hint of "nothing changed" follows the profile (a loop that updates by hand has no
    optimizer to call)."""
    if rec.grads.shape[0] < MIN_SAMPLES:
        return []
    g = rec.grad("grad_norm")
    moved = rec.grad("update_ratio")
    with np.errstate(invalid="ignore"):
        graded = (np.nan_to_num(g) > 0).sum(axis=0) >= MIN_SAMPLES
        still = np.all(np.isnan(moved) | (moved == 0), axis=0)
    stuck = np.flatnonzero(graded & still)
    if stuck.size == 0:
        return _never_graded(rec)
    profile = profile_of(rec)
    if stuck.size == int(graded.sum()):
        return [_nothing_changed(rec, [rec.param_paths[i] for i in stuck], profile)]
    if profile.facts_known and profile.optimizers:
        stuck = np.asarray([i for i in stuck if i not in profile.held], dtype=int)
    if stuck.size == 0:
        return []
    names = [rec.param_paths[i] for i in stuck]
    return [Finding(
        "parameters-not-updated", "warning",
        f"{stuck.size} parameters receive gradients but never change: "
        f"{', '.join(names[:6])}{' ...' if stuck.size > 6 else ''}",
        where=names[0], evidence={"parameters": names[:50]},
        hint="the optimizer does not hold them: create the optimizer after every module is "
             "added, keep sub-modules in nn.ModuleList/ModuleDict (not a Python list), or "
             "add them with optimizer.add_param_group")]


def _nothing_changed(rec: TrainingRecords, names: list[str],
                     profile: TrainingProfile) -> Finding:
    hint = ("optimizer.step() is not called (or only before backward), or the optimizer "
            "was built for another copy of the model: build it from this model's "
            "parameters after moving the model to its device")
    if profile.hand_updates:
        hint = ("no optimizer steps and the weights updated by hand never move: the update "
                "must change the parameters in place (under torch.no_grad(): p -= lr * "
                "p.grad), not rebind a name to a new tensor")
    return Finding(
        "parameters-not-updated", "error",
        f"no parameter changed in {rec.grads.shape[0]} sampled steps although all "
        "received gradients",
        evidence={"parameters": names[:50]}, hint=hint)


def _never_graded(rec: TrainingRecords) -> list[Finding]:
    """Parameters without a gradient on every sampled step while others have one: a
    warning where the graph is cut before a module that trains (:func:`graph_cut`), info
    for the rest (a head used at test time only, tensors no optimizer holds)."""
    absent = absent_grads(rec)
    never = np.flatnonzero(absent.all(axis=0))
    if never.size == 0 or never.size == absent.shape[1]:
        return []
    cut = graph_cut(rec, never)
    found = [] if cut is None else [_cut_finding(rec, *cut)]
    quiet = [i for i in never if cut is None or rec.param_paths[i] not in cut[2]]
    if not quiet:
        return found
    names = [rec.param_paths[i] for i in quiet]
    return [*found, Finding(
        "parameters-not-updated", "info",
        f"{len(quiet)} parameters never received a gradient in {absent.shape[0]} sampled "
        f"steps: {', '.join(names[:6])}{' ...' if len(quiet) > 6 else ''}",
        where=names[0], evidence={"parameters": names[:50]},
        hint="they are not used in forward, or sit behind .detach()/torch.no_grad(): if they "
             "should train, keep the graph connected; if they are meant to be frozen, set "
             "requires_grad_(False)")]


def owner_module(rec: TrainingRecords, param: str) -> int | None:
    """Index (into ``rec.module_paths``) of the watched module that holds ``param``."""
    best, size = None, -1
    for m, path in enumerate(rec.module_paths):
        if (param.startswith(path + ".") or path == "") and len(path) > size:
            best, size = m, len(path)
    return best


def graph_cut(rec: TrainingRecords, never: np.ndarray) -> tuple[str, str, list[str]] | None:
    """Where the graph is cut: ``(cut module, first trained module after it, the cut
    parameters)``, or None.

    A parameter is cut off when an optimizer updates it (parameters outside every
    optimizer are someone else's: a target network, a teacher), its module ran in the
    sampled training forwards (a head called only at test time has no activation
    sample), and a module with gradients ran *after* it in the same forward: the loss
    reaches the graph downstream of it but not it, so something between (``.detach()``,
    ``.data``, ``torch.no_grad()``, a NumPy round trip) cut the path. The cut sits at the
    output of the last such module before the first trained one."""
    order = rec.act("order") if rec.activations.size else np.empty((0, 0))
    if order.shape[0] == 0:
        return None
    profile = profile_of(rec)
    held = profile.held if profile.facts_known and profile.optimizers else None
    owners = {i: owner_module(rec, rec.param_paths[i]) for i in range(len(rec.param_paths))}
    cut_mods = {owners[i] for i in never if owners[i] is not None
                and (held is None or i in held)}
    cut = set(never.tolist())
    graded = {m for i, m in owners.items() if m is not None and i not in cut}
    return _cut_point(rec, order, cut_mods - graded, graded, never, owners)


def _cut_point(rec: TrainingRecords, order: np.ndarray, cut_mods: set[int | None],
               graded: set[int | None], never: np.ndarray,
               owners: dict[int, int | None]) -> tuple[str, str, list[str]] | None:
    """The last cut module that ran before a trained module (per sampled forward)."""
    best: tuple[float, int, int] | None = None
    for row in order:
        trained = [(row[g], g) for g in graded if np.isfinite(row[g])]
        for m in cut_mods:
            later = [(o, g) for o, g in trained if np.isfinite(row[m]) and o > row[m]]
            if later and (best is None or row[m] > best[0]):
                best = (float(row[m]), m, min(later)[1])
        if best is not None:
            break
    if best is None:
        return None
    ran = {m for m in cut_mods if np.isfinite(order[:, m]).any()}
    params = [rec.param_paths[i] for i in never if owners[i] in ran]
    return rec.module_paths[best[1]], rec.module_paths[best[2]], params


def _cut_finding(rec: TrainingRecords, where: str, after: str, params: list[str]) -> Finding:
    return Finding(
        "graph-cut", "warning",
        f"{len(params)} parameters that the optimizer updates never received a gradient in "
        f"{rec.grads.shape[0]} sampled steps although their modules run in the training "
        f"forwards and {after!r}, which runs after them, does: the graph is cut at the output "
        f"of {where!r} ({', '.join(params[:4])}{' ...' if len(params) > 4 else ''})",
        where=where, evidence={"parameters": params[:50], "trained_after": after},
        hint="a .detach(), .data, .item()/.numpy() round trip or a torch.no_grad() block "
             "between them and the loss stops the gradient: remove it so these layers train; "
             "if they are meant to stay fixed, set requires_grad_(False) on them (or leave "
             "them out of the optimizer)")
