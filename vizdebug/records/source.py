"""What the views read: a live Session or a stored Run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .training import TrainingRecords

# -- what the views read --------------------------------------------------------------------


class ArraySource(Protocol):
    """Something that gives an array now (a Session's system sampler, a Run's samples)."""

    def array(self) -> np.ndarray: ...


@runtime_checkable
class TrainingSource(Protocol):
    """What the views read: a live ``Session`` or a stored ``Run``.

    ``state`` is ``running``, ``closed`` or ``failed`` (a stored run also ``ended`` or
    ``interrupted``); ``version`` changes whenever something new was collected or written;
    ``system.array()`` gives the ``(n, 4)`` process samples (time, cpu %, RSS MiB, GPU MiB);
    ``state_findings()`` lists findings about the run's state itself (``Finding`` objects).
    """

    title: str
    closed: bool
    failed: str | None
    state: str
    system: ArraySource

    @property
    def version(self) -> Any: ...

    def records(self, *, flush: bool = True) -> TrainingRecords: ...

    def state_findings(self) -> Sequence[Any]: ...

    def scalars(self) -> Any: ...

    def captured_batches(self) -> list[Any]: ...


