"""Anomaly events: what a hook-time check observed (a non-finite activation, a ``None``
input, what reached the loss, the optimizer's protocol). An observation, never a verdict:
:mod:`vizdebug.analysis.training.events` turns each into its finding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_TEXT = ("kind", "module_path", "module_class", "message")


@dataclass(frozen=True)
class AnomalyEvent:
    """One anomaly seen by a hook (or found when sampled statistics were read).

    ``detail`` holds what was seen, JSON-able: the check that saw it (``check``), the
    function or module involved, numbers.

    Examples
    --------
    >>> ev = AnomalyEvent("input-none", 3, "fc", "Linear", "fc got None", {"position": 0})
    >>> AnomalyEvent.from_json(ev.to_json()) == ev
    True
    """

    kind: str
    step: int
    module_path: str
    module_class: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "step": self.step, "module_path": self.module_path,
                "module_class": self.module_class, "message": self.message,
                "detail": dict(self.detail)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AnomalyEvent:
        """Rebuild from :meth:`to_json` output; ``ValueError`` when it is not one."""
        if not (isinstance(d, dict) and all(isinstance(d.get(k), str) for k in _TEXT)
                and isinstance(d.get("step"), int) and not isinstance(d.get("step"), bool)
                and isinstance(d.get("detail", {}), dict)):
            raise ValueError(f"not an anomaly event: {str(d)[:200]}")
        return cls(d["kind"], d["step"], d["module_path"], d["module_class"], d["message"],
                   dict(d.get("detail", {})))
