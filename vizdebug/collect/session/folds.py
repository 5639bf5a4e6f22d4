"""A Session's collectors, and ``Session.records()`` as a fold over them.

The collector contract (:mod:`vizdebug.collect.contract`): each collector gives the typed
records it added since a cursor. :func:`collectors` names a session's collectors in one
place; ``Session.records()`` folds them from the start (:func:`session_records`), the
store feed (:mod:`.feed`) from its cursors at each write, on its own schedule for the
loader's whole record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...analysis.training.curves import is_lr_name
from ...records import TrainingRecords, records_from_delta
from ..contract import Collector, Snapshot, fold

if TYPE_CHECKING:
    from .core import Session


def collectors(session: Session) -> list[tuple[str, Collector]]:
    """The session's collectors, each with the name its cursor is kept under. The
    optimizer's learning-rate trace is one only while the program logs no learning rate
    of its own (the live view and a stored run then show the program's)."""
    hooks, log = session.hooks, session.log_store
    parts: list[tuple[str, Collector]] = [("scalars", log), ("samples", hooks)]
    if not any(is_lr_name(name) for name in log.names()):
        parts.append(("lr", hooks.optimizer_checks))
    policy = session.policy
    return [*parts, ("events", Snapshot("events", lambda: list(policy.events))),
            ("errors", Snapshot("errors", session.collector_errors)),
            ("loader", session.tap), ("program", session.program)]


def run_settings(session: Session) -> dict[str, Any]:
    """What is watched, as a run's settings name it (the records' module and parameter
    lists; a lazy module's sizes exist from its first forward)."""
    hooks = session.hooks
    return {"module_paths": hooks.module_paths, "module_classes": hooks.module_classes,
            "param_paths": hooks.param_paths, "param_numel": session.param_numel,
            "every": session.every}


def session_records(session: Session, *, flush: bool = True) -> TrainingRecords:
    """``Session.records()``: the step in progress sealed and read (``flush``, between
    steps), or only what is sealed; then every collector folded from the start."""
    if flush and not session.closed:
        session.hooks.flush()
    else:
        session.hooks.read_sealed()
    return records_from_delta(fold(collectors(session), {}), run_settings(session))
