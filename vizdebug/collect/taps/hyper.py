"""The optimizer's settings per parameter group over steps: learning rate, momentum and
weight decay (W&B's and Lightning's ``lr-*`` panels, with momentum and decay beside).

The tap listens to the step clock's optimizer steps (``StepClock.after_optimizer_step``,
already one Python call per step for the clock) and reads the counting optimizer's
``param_groups`` only at sampled steps (``ModelHooks.sampling``: the hook engine's own
schedule), and at least every :data:`EVERY` steps when the hooks sample less often. Momentum is ``momentum`` (SGD,
RMSprop) or ``betas[0]`` (Adam and its kin); an optimizer without one gives NaN.
Errors go to ``on_error``, never into the user's ``optimizer.step()``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np

HYPER_FIELDS = ("lr", "momentum", "weight_decay")
EVERY = 50  # steps between reads at most, when the hooks sample less often
CAPACITY = 10_000  # reads kept (the oldest go first)


def group_settings(group: dict[str, Any]) -> tuple[float, float, float]:
    """``(lr, momentum, weight_decay)`` of one ``param_groups`` entry (NaN when absent).

    >>> group_settings({"lr": 0.1, "betas": (0.9, 0.999), "weight_decay": 0.01})
    (0.1, 0.9, 0.01)
    >>> group_settings({"lr": 1e-3})[1]
    nan
    """
    momentum = group.get("momentum")
    if momentum is None and isinstance(group.get("betas"), (tuple, list)) and group["betas"]:
        momentum = group["betas"][0]
    return tuple(_number(v) for v in (group.get("lr"), momentum, group.get("weight_decay")))


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):  # a tensor lr reads as float; anything else is unknown
        return float("nan")


class HyperTap:
    """Reads each parameter group's settings at sampled steps (see the module docstring).

    ``step`` gives the training step the optimizer just made, ``sampling`` whether the
    hooks sample around it,
    ``optimizer`` the counting optimizer (or ``None``).

    Examples
    --------
    >>> import torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.SGD([w], lr=0.1, momentum=0.9, weight_decay=1e-4)
    >>> tap = HyperTap(lambda: 0, lambda: True, lambda: opt)
    >>> tap.on_step(); tap.columns()["momentum"].tolist()
    [0.9]
    """

    def __init__(self, step: Callable[[], int], sampling: Callable[[], bool],
                 optimizer: Callable[[], Any],
                 on_error: Callable[[str, BaseException], None] = lambda where, exc: None,
                 every: int = EVERY, capacity: int = CAPACITY) -> None:
        self.step, self.sampling, self.optimizer = step, sampling, optimizer
        self.on_error = on_error
        self.every = every
        self._last = -10**9
        # (step, ((lr, momentum, weight_decay) per group), wall time)
        self.trace: deque[tuple[int, tuple[tuple[float, float, float], ...], float]] = \
            deque(maxlen=capacity)

    def on_step(self) -> None:
        """After an optimizer step the clock counted (never raises)."""
        try:
            step = self.step()
            if step - self._last < self.every and not self.sampling():
                return  # (between reads: one comparison, the sampling flag not asked)
            optimizer = self.optimizer()
            if optimizer is None:
                return
            self._last = step
            groups = tuple(group_settings(g) for g in optimizer.param_groups)
            self.trace.append((step, groups, time.time()))
        except Exception as exc:
            self.on_error("the optimizer settings tap", exc)

    def columns(self) -> dict[str, np.ndarray]:
        """Long form: ``step``, ``group``, ``lr``, ``momentum``, ``weight_decay``, ``time``
        (one row per read and parameter group)."""
        rows = [(s, i, *g, t) for s, groups, t in list(self.trace) for i, g in enumerate(groups)]
        names = ("step", "group", *HYPER_FIELDS, "time")
        if not rows:
            return {n: np.empty(0, dtype=np.int64 if n in ("step", "group") else float)
                    for n in names}
        table = list(zip(*rows))
        return {n: np.asarray(col, dtype=np.int64 if n in ("step", "group") else float)
                for n, col in zip(names, table)}


def attach(session: Any) -> HyperTap:
    """A tap on ``session``'s step clock (what ``Session.__init__`` calls)."""
    hooks = session.hooks
    clock = hooks.clock
    # read inside optimizer.step()'s post-hook, the settings are those of the update just
    # made (a scheduler stepped after it changes the next one's): the step just completed,
    # one before the clock's (already the next step's number)
    tap = HyperTap(lambda: clock.step - 1, lambda: hooks.sampling,
                   lambda: clock.optimizer() if clock.optimizer is not None else None,
                   session._on_error)
    clock.after_optimizer_step.append(tap.on_step)
    return tap
