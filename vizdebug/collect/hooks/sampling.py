"""Which training steps are sampled: every n-th, or ``"auto"``, which keeps a time budget.

``"auto"`` (the default of ``watch``) measures what a sample costs (how much longer the
sampled step took than a plain one, and at least the time spent inside the collectors)
and how long a training step takes without them, and leaves enough plain steps between
two samples that sampling costs about ``budget`` of the training time. A small model with
fast steps is sampled every few dozen steps; a large one, whose steps dwarf the
statistics, every few steps. Step 0 is always sampled, and early steps more densely.
Between samples the decision is one comparison: the clock is read only when a sample
starts and ends."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from ...errors import VizdebugError

AUTO_BUDGET = 0.01  # of the training time; per-step costs (~1%) come on top
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
        self.paused = 0.0  # seconds the collectors were paused (see exclude)
        # (clock - paused, spent, step) when the last sample closed; (clock - paused,
        # spent) when the current one began
        self._mark: tuple[float, float, int] | None = None
        self._began: tuple[float, float] | None = None
        self.sample_cost: float | None = None  # seconds a sample adds to its step

    def exclude(self, seconds: float) -> None:
        """Leave out time the collectors were paused: neither a step nor a sample."""
        self.paused += seconds

    def charge(self, seconds: float) -> None:
        """Account time spent inside the collectors."""
        self.cost += seconds
        self.spent += seconds

    def start_step(self, step: int) -> bool:
        """True if ``step`` is sampled. Cheap: no clock is read (it runs every step)."""
        if not self.auto:
            return step % self.every == 0
        return step >= self._next

    def begin_sample(self) -> None:
        """A sampled step starts (before its hooks are attached)."""
        if self.auto:
            self._began = (self.clock() - self.paused, self.spent)

    def sample_done(self, step: int) -> None:
        """A sample was closed at the start of ``step``: time the plain steps since the
        previous one closed (net of collector time), take what the sampled step cost
        beyond a plain one, and choose the gap.

        The cost is the sampled step's own duration minus a plain step's, when plain steps
        came before it: that counts what the hooks cost in torch's module machinery and in
        the caches they disturb, not only the time inside vizdebug's functions (about half
        of it on a small CNN). Both are averaged over the last few samples."""
        if not self.auto:
            return
        now = self.clock() - self.paused
        cost, began, self._began = self.cost, self._began, None
        if self._mark is not None:
            then, spent, first = self._mark
            plain_steps = step - 1 - first  # those before the sampled step
            if began is not None and plain_steps > 0:
                plain = ((began[0] - then) - (began[1] - spent)) / plain_steps
                cost = max(cost, (now - began[0]) - plain)
            elif step > first:
                plain = ((now - then) - (self.spent - spent)) / (step - first)
            else:
                plain = 0.0
            if plain > 0:
                self.step_time = plain if self.step_time is None else (
                    0.5 * self.step_time + 0.5 * plain)
        self.sample_cost = cost if self.sample_cost is None else (
            0.5 * self.sample_cost + 0.5 * cost)
        self._mark = (now, self.spent, step)
        if self.step_time:
            self.gap = math.ceil(self.sample_cost / (self.budget * self.step_time) - 1e-9)
        # Early steps are sampled more densely: the gap stays under half the steps so far
        # (or FIRST_GAP): 0, 10, 20, 30, 45, 68, 102, ... so a short run still gets a few
        # samples; over a long run this adds a logarithmic number of them.
        self.gap = min(max(self.gap, 1), self.max_gap, max(step // 2, FIRST_GAP))
        self._next = step + self.gap - 1  # the sample itself ended one step ago
        self.cost = 0.0
