"""The collector contract: each collector gives the typed records it added since a cursor.

A collector (the hook engine's samples, the optimizer checks' learning-rate trace, the
system sampler, the loader tap, the program tap, the anomaly events, the collectors' own
errors, the scalar log) implements one method, ``records_since(cursor)``: a
:class:`~vizdebug.records.RunDelta` holding only its own part, and the cursor after it.
``None`` is the start: everything collected so far. The cursor is the collector's own
(a step, a count, the last snapshot); whoever reads keeps it. Appended parts (samples,
system rows, scalar points) come as what is new; snapshot parts (events, errors, the
loader record, the program facts) come whole when they changed, ``None`` otherwise.

:func:`fold` reads a list of collectors into one delta: ``Session.records()`` folds them
all from the start (:mod:`~vizdebug.collect.session.folds`), the store feed folds them
from its cursors at each write, and a stored run is read into the same delta type
(:func:`~vizdebug.records.records_from_delta` turns one into the rules' records).
The contract is read by the feed's thread or by ``records()``, never on a training step.

The scalar log is the one collector that also pushes: its series are downsampled in
place (no stable cursor into them), so a run store receives its points as they resolve
(its ``sink``); its ``records_since`` gives every point from the start and, from a
cursor, resolves what is pending (into the sink) and adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from ..records import RunDelta

__all__ = ["Collector", "Snapshot", "fold"]


@runtime_checkable
class Collector(Protocol):
    """What every collector implements (see the module docstring)."""

    def records_since(self, cursor: Any) -> tuple[RunDelta, Any]:
        """The records added since ``cursor`` (``None``: from the start), and the new
        cursor."""
        ...


class Snapshot:
    """A collector of one whole-snapshot part of a delta (``events`` or ``errors``), read
    by ``read()``: handed over when it differs from the last one handed over.

    Examples
    --------
    >>> errors = []
    >>> part = Snapshot("errors", lambda: list(errors))
    >>> delta, cursor = part.records_since(None); delta.errors
    []
    >>> part.records_since(cursor)[0].errors is None   # unchanged
    True
    >>> errors.append(("the loader tap", "boom", 1)); part.records_since(cursor)[0].errors
    [('the loader tap', 'boom', 1)]
    """

    def __init__(self, field: str, read: Callable[[], list]) -> None:
        self.field = field
        self.read = read

    def records_since(self, cursor: list | None) -> tuple[RunDelta, list]:
        now = self.read()
        if cursor is not None and now == cursor:
            return RunDelta(), cursor
        return RunDelta(**{self.field: now}), now


def fold(collectors: Iterable[tuple[str, Collector]], cursors: dict[str, Any]) -> RunDelta:
    """One delta from each named collector's records since its cursor in ``cursors``
    (absent: from the start), which are moved on in place.

    Examples
    --------
    >>> cursors = {}
    >>> parts = [("errors", Snapshot("errors", lambda: [("x", "boom", 1)]))]
    >>> fold(parts, cursors).errors, fold(parts, cursors).errors
    ([('x', 'boom', 1)], None)
    """
    delta = RunDelta()
    for name, collector in collectors:
        part, cursors[name] = collector.records_since(cursors.get(name))
        delta = delta.absorb(part)
    return delta
