"""The one place where anomaly events become findings.

A hook-time check records an :class:`~vizdebug.records.AnomalyEvent`: what it saw, where,
at which step, and in ``detail["check"]`` which check saw it. The verdict (severity, the
hint with the fix) is written here, for a live session, a stored run and the notebook's
immediate notice alike. Events stored by an older vizdebug that carried their own
``severity`` and ``hint`` still read as they were written.
"""

from __future__ import annotations

from ...findings import Finding
from ...records import AnomalyEvent, TrainingRecords
from .loss_verdicts import loss_event_finding

ZERO_GRAD_HINT = ("call optimizer.zero_grad() (or model.zero_grad()) once per step, before "
                  "loss.backward(); with gradient accumulation, right after optimizer.step()")

# check -> (severity, hint) of the protocol checks (the optimizer's, the eval passes')
_PROTOCOL: dict[str, tuple[str, str]] = {
    "stale-gradient": ("error", ZERO_GRAD_HINT),
    "trained-in-eval": (
        "warning", "call model.train() after validation (a validate() that ends with "
                   "model.eval() leaves the next training steps in eval mode)"),
    "validation-in-train-mode": (
        "warning", "call model.eval() before validating (and model.train() after); "
                   "torch.no_grad() turns off gradients, not dropout or BatchNorm's training "
                   "behaviour"),
    "functional-dropout": (
        "warning", "define an nn.Dropout in __init__ and call it in forward(), or pass "
                   "training=self.training to the functional dropout (a Monte Carlo dropout "
                   "kept on at inference on purpose can ignore this)"),
}

_FIRST_MODULE_NAN = ("This is the first module the batch reaches, so the input itself holds "
                     "NaN/inf: fix the data or the transform (a division by a zero std, a "
                     "corrupt sample); vd.check_dataset(dataset) names the samples.")
_MODULE_NAN = ("The first module whose output is NaN/inf. If its input was already non-finite, "
               "look at the data; otherwise its weights diverged (lower the learning rate, "
               "clip gradients) or it computes log/sqrt/division of values that reach 0 or "
               "below (add an epsilon, clamp).")


def event_finding(ev: AnomalyEvent) -> Finding:
    """The finding an event stands for.

    Examples
    --------
    >>> ev = AnomalyEvent("input-none", 3, "fc", "Linear", "'fc' (Linear) received None")
    >>> event_finding(ev).severity, event_finding(ev).where
    ('error', 'fc')
    """
    worded = loss_event_finding(ev)  # what reached the loss, worded by its rules
    if worded is not None:
        return worded
    detail = ev.detail
    evidence = {"step": ev.step, "class": ev.module_class}
    if ev.kind == "nonfinite-activation":
        hint = _FIRST_MODULE_NAN if detail.get("order") == 0 else _MODULE_NAN
        return Finding(ev.kind, "error", ev.message, where=ev.module_path, evidence=evidence,
                       hint=hint)
    verdict = _PROTOCOL.get(str(detail.get("check")))
    if verdict is None and detail.get("severity") in ("info", "warning", "error"):
        verdict = (detail["severity"], str(detail.get("hint", "")))  # an older stored run
    if verdict is not None:
        return Finding(ev.kind, verdict[0], ev.message, where=ev.module_path,
                       evidence={"step": ev.step, "function": detail.get("function")},
                       hint=verdict[1])
    source = detail.get("source")
    hint = ("A forward() that forgot its `return` hands None to the next module"
            + (f" (here {source!r} returned None)" if source else "")
            + "; also check a dataset/collate_fn that yields None.")
    return Finding(ev.kind, "error", ev.message, where=ev.module_path, evidence=evidence,
                   hint=hint)


def rule_events(rec: TrainingRecords) -> list[Finding]:
    """Anomalies the hooks saw, once per kind and place: the first non-finite activation,
    modules fed ``None``, what reached the loss, the optimizer's and the eval passes'
    protocol."""
    out, seen = [], set()
    for ev in rec.events:
        key = (ev.kind, ev.module_path)
        if key not in seen:
            seen.add(key)
            out.append(event_finding(ev))
    return out
