"""Fused tensor-list operations for the gradient collector, each with a plain fallback,
and the two points of a training step torch offers no public callback for.

``torch._foreach_*`` run one kernel launch per device and dtype instead of one per
parameter; they are private API, so every call falls back to a loop if it is missing or
refuses the input (mixed devices, sparse gradients).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def at_end_of_backward(callback: Callable[[], None]) -> None:
    """Run ``callback`` when the running backward pass ends (as DDP does), else now."""
    import torch

    # torch has no public "backward finished" callback: ``queue_callback`` on the autograd
    # engine is what DistributedDataParallel uses for the same purpose (checked against
    # the pinned torch by tests/test_collect_hooks.py). Without it the callback runs at
    # once, with the gradients that have arrived so far.
    try:
        torch.autograd.Variable._execution_engine.queue_callback(callback)
    except (AttributeError, RuntimeError):
        callback()


class StepPreHook:
    """A global ``torch.optim`` step pre-hook that calls ``callback()`` before a step of an
    optimizer that ``applies(optimizer)`` accepts, registered only between :meth:`start`
    and :meth:`stop`: global hooks run on every optimizer step of the process. An
    exception goes to ``on_error``, never into ``optimizer.step()``.

    Examples
    --------
    >>> import torch
    >>> seen = []
    >>> opt = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    >>> hook = StepPreHook(lambda: seen.append(1), lambda o: o is opt, print)
    >>> hook.start(); opt.step(); hook.stop(); opt.step()
    >>> seen
    [1]
    """

    def __init__(self, callback: Callable[[], None], applies: Callable[[Any], bool],
                 on_error: Callable[[str, BaseException], None]) -> None:
        self.callback, self.applies, self.on_error = callback, applies, on_error
        self._handle: Any = None

    def start(self) -> None:
        if self._handle is None:
            import torch.optim.optimizer as optim

            self._handle = optim.register_optimizer_step_pre_hook(self._hook)

    def stop(self) -> None:
        """Not from inside the hook: torch iterates the hooks while it calls them."""
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.remove()

    def _hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        try:
            if self.applies(optimizer):
                self.callback()
        except Exception as exc:
            self.on_error("the step pre-hook", exc)


def norms(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """float32 L2 norms (accumulated in float32 whatever the input dtype), fused when the
    tensors allow it.

    Examples
    --------
    >>> import torch
    >>> [n.item() for n in norms([torch.ones(4), torch.full((2,), 1e4, dtype=torch.half)])]
    [2.0, 14142.1357421875]
    """
    import torch

    try:
        return list(torch._foreach_norm(tensors, 2, dtype=torch.float32))
    except (AttributeError, RuntimeError, TypeError):
        return [torch.linalg.vector_norm(_values(t), dtype=torch.float32) for t in tensors]


def _values(t: torch.Tensor) -> torch.Tensor:
    """The values whose norm is ``t``'s: a sparse tensor's stored values (coalesced
    first: an ``nn.Embedding(sparse=True)`` gradient repeats the index of a token seen
    twice in the batch), a complex tensor's real and imaginary parts (float32 norms of
    complex tensors raise), a dense tensor itself.

    >>> import torch
    >>> g = torch.sparse_coo_tensor([[0, 0, 2]], [3.0, 1.0, 3.0], (4,))
    >>> float(torch.linalg.vector_norm(_values(g)))  # (3 + 1, 3): 5
    5.0
    """
    import torch

    if t.layout == torch.strided:  # a complex tensor's norm is its real view's
        return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t
    if t.layout == torch.sparse_coo:
        return t.coalesce().values()
    return t.values()  # (compressed layouts store each index once)


def copies(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """New tensors with the same values (weights before the optimizer step).

    Examples
    --------
    >>> import torch
    >>> w = torch.ones(2)
    >>> c = copies([w])[0]; _ = w.add_(1)
    >>> c.tolist()
    [1.0, 1.0]
    """
    import torch

    try:
        return list(torch._foreach_mul(tensors, 1.0))
    except (AttributeError, RuntimeError, TypeError):
        return [t.clone() for t in tensors]


def differences(a: list[torch.Tensor], b: list[torch.Tensor]) -> list[torch.Tensor]:
    """``a[i] - b[i]`` for each pair (the update the optimizer made)."""
    import torch

    try:
        return list(torch._foreach_sub(a, b))
    except (AttributeError, RuntimeError, TypeError):
        return [x - y for x, y in zip(a, b)]
