"""What happens at an anomaly (a non-finite activation, a ``None`` input): the policy.

``warn`` records it and warns once per session, ``raise`` raises :class:`WatchAnomaly`
from inside the hook (so it propagates out of ``model(x)``, at the module that saw it),
``pdb`` opens a post-mortem debugger in the hook's frame (``module``, ``inputs`` and
``output`` are locals there) and then raises, ``ignore`` only records it. In every mode the
anomaly is kept and reported by ``Session.findings()``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

from ...errors import AnomalyError, VizdebugError
from ...records import AnomalyEvent

ON_ANOMALY = ("warn", "raise", "pdb", "ignore")


class AnomalyWarning(RuntimeWarning):
    """Warned once per session when a watched model shows an anomaly."""


class WatchAnomaly(AnomalyError):
    """Raised by ``watch(..., on_anomaly="raise")``; carries the anomaly's details.

    Attributes
    ----------
    kind : str
        ``"nonfinite-activation"`` or ``"input-none"``.
    module_path, module_class : str
        Where it happened (``"encoder.2.1"``, ``"Conv2d"``).
    step : int
        The training step (forward passes in training mode, counted from 0).
    """

    def __init__(self, message: str, *, kind: str, module_path: str, module_class: str,
                 step: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.module_path = module_path
        self.module_class = module_class
        self.step = step


def check_on_anomaly(value: object) -> str:
    """Validate the ``on_anomaly`` argument.

    Examples
    --------
    >>> check_on_anomaly("raise")
    'raise'
    """
    if not isinstance(value, str) or value not in ON_ANOMALY:
        raise VizdebugError(
            f"on_anomaly must be one of {', '.join(repr(v) for v in ON_ANOMALY)}; "
            f"got {value!r}"
        )
    return value


def _default_debugger(frame: Any) -> None:
    """A real ``pdb`` prompt in ``frame`` (the hook's, where ``module``, ``inputs`` and
    ``output`` are locals). ``reset()`` first: ``interaction`` alone leaves bdb's frame
    bookkeeping (``botframe``) unset, so the prompt failed before it appeared."""
    import pdb

    debugger = pdb.Pdb()
    debugger.reset()
    debugger.interaction(frame, None)


class AnomalyPolicy:
    """Applies ``on_anomaly`` to each :class:`AnomalyEvent`; keeps the first few events.

    Examples
    --------
    >>> policy = AnomalyPolicy("ignore")
    >>> policy.handle(AnomalyEvent("input-none", 3, "fc", "Linear", "fc got None"))
    >>> len(policy.events)
    1
    """

    max_events = 50

    def __init__(self, mode: str = "warn",
                 debugger: Callable[[Any], None] = _default_debugger) -> None:
        self.mode = check_on_anomaly(mode)
        self.debugger = debugger
        self.events: list[AnomalyEvent] = []
        self.kinds: set[str] = set()  # every kind seen (events beyond max_events too)
        self.warned = False
        # in a notebook the session shows the first anomaly itself (True: shown)
        self.notify: Callable[[AnomalyEvent], bool] | None = None

    @property
    def immediate(self) -> bool:
        """True when anomalies must be caught at once (a check, and a sync, every step)."""
        return self.mode in ("raise", "pdb")

    def record(self, event: AnomalyEvent) -> None:
        """Keep the event (bounded) and warn once in ``warn`` mode; never raises."""
        self.kinds.add(event.kind)
        if len(self.events) < self.max_events:
            self.events.append(event)
        if self.mode == "warn" and not self.warned:
            self.warned = True
            try:
                shown = self.notify is not None and self.notify(event)
            except Exception:  # a notice that fails falls back to the warning
                shown = False
            if shown:
                return
            warnings.warn(
                f"vizdebug: {event.message} (further anomalies are reported by "
                "session.findings(), without warnings)",
                AnomalyWarning, stacklevel=2,
            )

    def handle(self, event: AnomalyEvent, frame: Any = None) -> None:
        """Record the event, then raise or debug as the mode says (called inside a hook)."""
        self.record(event)
        if self.mode not in ("raise", "pdb"):
            return
        error = WatchAnomaly(event.message, kind=event.kind, module_path=event.module_path,
                             module_class=event.module_class, step=event.step)
        if self.mode == "pdb":
            # The hooks pass their own frame, where module, inputs and output are locals.
            try:
                self.debugger(frame if frame is not None else sys._getframe(1))
            except Exception as exc:  # a debugger that fails must not hide the anomaly
                raise error from exc
        raise error


def previous_sibling(calls: list[dict], paths: dict[int, str]) -> str | None:
    """In an ``nn.Sequential``, the child that ran just before the one that crashed."""
    if len(calls) < 2:
        return None
    parent, child = calls[-2]["self"], calls[-1]["self"]
    children = list(parent.children()) if type(parent).__name__ == "Sequential" else []
    for before, current in zip(children, children[1:]):
        if current is child:
            return paths.get(id(before))
    return None
