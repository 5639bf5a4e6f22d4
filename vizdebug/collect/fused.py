"""Fused tensor-list operations for the gradient collector, each with a plain fallback.

``torch._foreach_*`` run one kernel launch per device and dtype instead of one per
parameter; they are private API, so every call falls back to a loop if it is missing or
refuses the input (mixed devices, sparse gradients).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

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
        return [torch.linalg.vector_norm(t, dtype=torch.float32) for t in tensors]


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
