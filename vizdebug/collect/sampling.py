"""Which training steps are sampled: every n-th, or ``"auto"``, which keeps a time budget.

``"auto"`` (the default of ``watch``) measures what the collectors cost (time spent inside
them, per sample) and how long a training step takes without them, and leaves enough
plain steps between two samples that sampling costs at most ``budget`` of the training
time. A small model with fast steps is sampled every few dozen steps; a large one, whose
steps dwarf the statistics, every few steps. Step 0 is always sampled.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from ..errors import VizdebugError

AUTO_BUDGET = 0.01  # of the training time; per-step costs (~0.5-1%) come on top
MAX_GAP = 200
FIRST_GAP = 10  # until a plain step has been timed


def check_every(every: object) -> int | str:
    """Validate ``every``: a positive int or ``"auto"``.

    Examples
    --------
    >>> check_every("auto"), check_every(10)
    ('auto', 10)
    """
    if isinstance(every, str) and every == "auto":
        return "auto"
    if isinstance(every, (int, np.integer)) and not isinstance(every, bool) and every >= 1:
        return int(every)
    raise VizdebugError(
        f"every must be a positive int (sample every n-th step) or 'auto', got {every!r}")


class StepSampler:
    """Decides, at the start of each training step, whether it is sampled.

    Examples
    --------
    >>> sampler = StepSampler(3)
    >>> [step for step in range(7) if sampler.start_step(step)]
    [0, 3, 6]
    """

    def __init__(self, every: int | str, *, budget: float = AUTO_BUDGET, max_gap: int = MAX_GAP,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.every = every
        self.auto = isinstance(every, str)
        self.budget = budget
        self.max_gap = max_gap
        self.clock = clock
        self.cost = 0.0  # collector seconds since the last sample was closed
        self.spent = 0.0  # collector seconds, all told
        self.step_time: float | None = None
        self.gap = FIRST_GAP
        self._next = 0
        self._last: tuple[float, float] | None = None

    def charge(self, seconds: float) -> None:
        """Account time spent inside the collectors."""
        self.cost += seconds
        self.spent += seconds

    def start_step(self, step: int) -> bool:
        """Time the step that just ended (net of collector time); True if ``step`` is sampled."""
        now = self.clock()
        if self._last is not None:
            plain = (now - self._last[0]) - (self.spent - self._last[1])
            if plain > 0:
                self.step_time = plain if self.step_time is None else (
                    0.8 * self.step_time + 0.2 * plain)
        self._last = (now, self.spent)
        if not self.auto:
            return step % int(self.every) == 0
        return step >= self._next

    def sample_done(self, step: int) -> None:
        """A sample was closed at ``step``: choose the gap to the next one."""
        if not self.auto:
            return
        if self.step_time:
            self.gap = math.ceil(self.cost / (self.budget * self.step_time) - 1e-9)
        self.gap = min(max(self.gap, 1), self.max_gap)
        self._next = step + self.gap - 1  # the sample itself ended one step ago
        self.cost = 0.0
