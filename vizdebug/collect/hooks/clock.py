"""The step clock of a watched model: which training step is running.

Steps are counted by the optimizer that updates the model's parameters: a global
``torch.optim`` step post-hook (one Python call per optimizer step; ``Optimizer.step`` runs
its hook loop anyway), so between samples no hook needs to run in the model. Until such an
optimizer has stepped (or in a loop that updates the weights by hand), forward passes in
training mode are counted instead, by a root pre-hook that :mod:`vizdebug.collect.hooks.engine`
owns and reports through :meth:`StepClock.forward`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any


class StepClock:
    """Counts training steps; calls ``on_step()`` when one starts and ``on_optimizer()``
    when an optimizer takes over the counting (from the forward passes, or from another
    optimizer). An error inside the optimizer hook goes to ``on_error``, never into the
    user's ``optimizer.step()``.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Linear(2, 2)
    >>> started = []
    >>> clock = StepClock({id(p) for p in model.parameters()}, lambda: started.append(1))
    >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> clock.forward(training=True); clock.optimizer_stepped(opt); clock.steps
    1
    >>> clock.unhook()
    """

    def __init__(self, param_ids: set[int], on_step: Callable[[], None],
                 on_optimizer: Callable[[], None] = lambda: None,
                 on_error: Callable[[str, BaseException], None] = lambda where, exc: None
                 ) -> None:
        self.param_ids = frozenset(param_ids)
        self.on_error = on_error
        self.on_step = on_step
        self.on_optimizer = on_optimizer
        self.step = -1
        self.optimizer: weakref.ref | None = None  # the optimizer whose steps count
        self._owners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._others = 0  # steps of another owning optimizer since the clock's last one
        self._handle: Any = None
        self.marked = False  # the training loop says where steps begin (begin())
        # called after each step of any optimizer, with its step() arguments
        self.any_step: Callable[[Any, Any, Any], None] | None = None
        # called after each step the optimizer counts, from inside its step post-hook
        self.after_optimizer_step: list[Callable[[], None]] = []
        # while True, hook()/unhook() leave the global hook as it is: a listener pausing
        # the session runs while torch iterates the global hooks (changing them then fails)
        self.held = False
        self.hook()

    @property
    def steps(self) -> int:
        """Training steps so far: forward passes in training mode, or with an optimizer
        counting, its steps (``step`` is then already the next step's number)."""
        return self.step + (0 if self.optimizer is not None else 1)

    def hook(self) -> None:
        """Listen to every optimizer's steps (the global hook holds this clock weakly)."""
        import torch.optim.optimizer as optim

        if self._handle is None and not self.held:
            self._handle = optim.register_optimizer_step_post_hook(_optimizer_hook(
                weakref.ref(self)))

    def unhook(self) -> None:
        """Stop listening (harmless when called twice)."""
        if self.held:
            return
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.remove()

    def forward(self, training: bool) -> None:
        """A forward pass of the model started: a step, while no optimizer counts and the
        loop does not mark its steps."""
        if training and self.optimizer is None and not self.marked:
            self._tick()

    def begin(self) -> None:
        """The training loop says a step begins (a framework's callback): from now on this
        counts instead of forward passes, until an optimizer counts.

        >>> clock = StepClock(set(), lambda: None)
        >>> clock.begin(); clock.forward(training=True); clock.steps
        1
        >>> clock.unhook()
        """
        self.marked = True
        if self.optimizer is None:
            self._tick()

    def optimizer_stepped(self, optimizer: Any) -> None:
        """After any optimizer's step: a new training step starts when it is the optimizer
        that updates this model (the first one seen stepping; another owner that steps
        twice while it does not takes over, e.g. a re-created optimizer)."""
        clock = self.optimizer() if self.optimizer is not None else None
        if clock is not optimizer:
            if not self._owns(optimizer):
                return
            if clock is not None:
                self._others += 1
                if self._others < 2:
                    return  # e.g. a second optimizer over other layers, same step
                self.step += self._others - 1
            self.optimizer = weakref.ref(optimizer)
            self.on_optimizer()
        self._others = 0
        self._tick()
        for listener in self.after_optimizer_step:
            listener()

    def counts(self, optimizer: Any) -> bool:
        """Whether a step of ``optimizer`` is (or, while none counts yet, would be) a step
        of this clock: the counting optimizer, or before one, one that holds the model's
        parameters."""
        clock = self.optimizer
        if clock is not None:
            return clock() is optimizer
        return self._owns(optimizer)

    def _owns(self, optimizer: Any) -> bool:
        owns = self._owners.get(optimizer)
        if owns is None:
            owns = self._owners[optimizer] = any(
                id(p) in self.param_ids for g in optimizer.param_groups for p in g["params"])
        return owns

    def _tick(self) -> None:
        self.step += 1
        self.on_step()


def _optimizer_hook(ref: weakref.ref) -> Callable:
    """The global optimizer step post-hook of one :class:`StepClock` (held weakly)."""
    def hook(optimizer: Any, args: Any, kwargs: Any) -> None:
        clock = ref()
        if clock is not None:
            try:
                if clock.any_step is not None:
                    clock.any_step(optimizer, args, kwargs)  # every optimizer (the profile)
                clock.optimizer_stepped(optimizer)
            except Exception as exc:
                clock.on_error("the step counter", exc)
    return hook
